"""Running a pipeline once on a temporary executor, where a reference user imports it
(``rayorch.runner``)."""

from ._executor import run

__all__ = ["run"]
