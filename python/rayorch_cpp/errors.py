"""The errors of compiling and running a pipeline, where a reference user imports them
(``rayorch.errors``)."""

from ._values import CompileError, ExecutionError

__all__ = ["CompileError", "ExecutionError"]
