"""The modules and names a reference user imports: ``rayorch.failures``, ``errors``,
``recovery``, ``result``, ``runner``, ``api`` and ``version_info``."""

from __future__ import annotations

import importlib

import pytest

import rayorch_cpp as ro

# The reference's public modules and the names each exports.
MODULES = {
    "failures": ["GroupFailure", "RecordFailure"],
    "errors": ["CompileError", "ExecutionError"],
    "recovery": ["RecoveryPolicy"],
    "result": ["CallMetrics", "InputBatchMetrics", "OutputIssue", "RunResult"],
    "runner": ["run"],
    "api": ["Pipeline", "Port", "RayModule", "function"],
}
# The reference's own __all__, but `benchmark` (its job packaging, not in this package).
REFERENCE_ALL = [
    "CompileError",
    "ExecutionError",
    "Executor",
    "F",
    "GroupFailure",
    "ItemOutcome",
    "OutputIssue",
    "Pipeline",
    "Port",
    "RayModule",
    "RecordFailure",
    "RecoveryPolicy",
    "RunResult",
    "__version__",
    "function",
    "run",
    "version_info",
]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_each_public_module_exports_the_package_names(name: str) -> None:
    module = importlib.import_module(f"rayorch_cpp.{name}")
    assert sorted(module.__all__) == sorted(MODULES[name])
    for attr in MODULES[name]:
        assert getattr(module, attr) is getattr(ro, attr), f"rayorch_cpp.{name}.{attr}"


def test_the_package_exports_every_name_of_the_reference() -> None:
    assert set(REFERENCE_ALL) <= set(ro.__all__)
    for name in REFERENCE_ALL:
        assert hasattr(ro, name), name
    assert ro.version_info == tuple(int(p) for p in ro.__version__.split("."))
