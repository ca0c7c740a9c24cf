"""What a run returns, where a reference user imports it (``rayorch.result``)."""

from ._run_result import CallMetrics, InputBatchMetrics, RunResult
from ._values import OutputIssue

__all__ = ["CallMetrics", "InputBatchMetrics", "OutputIssue", "RunResult"]
