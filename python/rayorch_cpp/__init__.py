"""rayorch_cpp: the RayOrch C++ engine behind the authoring API of the ``rayorch`` package.

Pipelines written for ``rayorch`` 0.1.1 run with only the import line changed
(``import rayorch_cpp as ro``): Pipeline subclasses with a traced ``forward``, RayModules
wrapping UDF classes, ``F.expand / expand_aligned / reduce / reduce_aligned / filter /
broadcast``, ``compile()``, ``explain_text()``, ``Executor(...).run(...)``, RecordFailure,
GroupFailure, RecoveryPolicy and OutputIssue. Execution is the engine's embedded local
backend (no Ray needed) or, with ``Executor(..., backend="ray")``, pools of Ray actors;
``SyncExecutor`` is its deterministic core for tests, and
``Executor.stream`` / ``run(on_row=...)`` deliver each row as soon as it is terminal.
"""

from . import api, benchmark, errors, failures, recovery, result, runner
from . import functional as F
from ._compile import CompiledProgram, compile
from ._delivery import RowStream
from ._executor import Executor, SyncExecutor, run
from ._modules import CppModule, Module, RayModule, cpp_udfs, function
from ._pipeline import Pipeline
from ._replica_context import ReplicaContext, replica_context
from ._run_options import Journal
from ._run_result import (
    ActorStartMetrics,
    CallMetrics,
    ExpandMetrics,
    InputBatchMetrics,
    NodeLoss,
    PoolMetrics,
    RunResult,
    write_report_page,
)
from ._tracing import Port
from ._values import (
    ActorLost,
    CompileError,
    ExecutionError,
    GroupFailure,
    IssueOrigin,
    ItemOutcome,
    OutputIssue,
    RecordFailure,
    RecoveryPolicy,
    UdfTraceback,
)

__version__ = "0.1.0"
#: ``__version__`` as a tuple of ints, as the reference spells it
version_info: tuple[int, ...] = tuple(int(part) for part in __version__.split("."))

__all__ = [
    "ActorLost",
    "ActorStartMetrics",
    "CallMetrics",
    "CompileError",
    "CompiledProgram",
    "CppModule",
    "ExecutionError",
    "Executor",
    "ExpandMetrics",
    "F",
    "GroupFailure",
    "InputBatchMetrics",
    "Journal",
    "IssueOrigin",
    "ItemOutcome",
    "Module",
    "OutputIssue",
    "Pipeline",
    "NodeLoss",
    "PoolMetrics",
    "Port",
    "RayModule",
    "RecordFailure",
    "RecoveryPolicy",
    "ReplicaContext",
    "RowStream",
    "RunResult",
    "write_report_page",
    "SyncExecutor",
    "UdfTraceback",
    "__version__",
    "api",
    "benchmark",
    "errors",
    "failures",
    "compile",
    "cpp_udfs",
    "function",
    "recovery",
    "result",
    "replica_context",
    "run",
    "runner",
    "version_info",
]
