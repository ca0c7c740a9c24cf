"""The failure values a UDF returns for a row, where a reference user imports them
(``rayorch.failures``)."""

from ._values import GroupFailure, RecordFailure

__all__ = ["GroupFailure", "RecordFailure"]
