"""C++ UDFs (CppModule) in Python pipelines, next to Python UDFs."""

from __future__ import annotations

from typing import Any

import pytest

import rayorch_cpp as ro
from conftest import make_executor
from rayorch_cpp import F, _core


class Exclaim:
    def run(self, xs: list[str]) -> list[str]:
        return [x + "!" for x in xs]


class Count:
    """Python: a document -> its page numbers."""

    def run(self, docs: list[tuple[int, int]]) -> list[list[int]]:
        return [list(range(n)) for _, n in docs]


def test_a_pipeline_mixing_cpp_and_python_udfs(executor_kind: str) -> None:
    upper = ro.CppModule("Upper", batch_size=4, replicas=2)
    exclaim = ro.RayModule(Exclaim)
    with make_executor(executor_kind, lambda x: exclaim(upper(x))) as ex:
        assert ex.run(["ab", "", "Cd"]).outputs == ["AB!", "!", "CD!"]


def sim_documents() -> Any:
    render = ro.CppModule("SimRender").pre_init(0.05)
    ocr = ro.CppModule("SimOcr", replicas=3, batch_size=8).pre_init(1.0, 0.05)
    assemble = ro.CppModule("SimAssemble").pre_init(0.2, 0.01)
    total = ro.CppModule("SumNonEmpty")
    pages = ro.RayModule(Count)

    def forward(doc: ro.Port) -> tuple[ro.Port, ro.Port, ro.Port]:
        values = F.reduce(ocr(F.expand(render(doc))))
        python_pages = F.reduce(F.expand(pages(doc)))  # a Python branch of the same roots
        return assemble(values, doc), total(values), python_pages

    return forward


def test_the_simulated_document_workload_in_cpp(executor_kind: str) -> None:
    docs = [(0, 3), (1, 0), (2, 2)]
    with make_executor(executor_kind, sim_documents()) as ex:
        assembled, totals, python_pages = ex.run(docs).outputs
    assert assembled == [(0, [0, 1, 2]), (1, []), (2, [2000000, 2000001])]
    assert totals[0] == 3 and totals[2] == 4000001
    # A C++ ro::Row failure arrives as a RecordFailure outcome with its message.
    assert totals[1] == ro.OutputIssue(ro.ItemOutcome.FAILED, "empty group")
    assert python_pages == [[0, 1, 2], [], [0, 1]]


def test_cpp_and_python_outputs_are_schedule_independent() -> None:
    docs = [(i, (i * 7) % 5) for i in range(20)]
    with ro.SyncExecutor(sim_documents()) as ex:
        expected = ex.run(docs).outputs
    with ro.Executor(sim_documents()) as ex:
        assert ex.run(docs, input_batch_size=3, max_active_input_batches=2).outputs == expected


def test_an_input_of_the_wrong_type_is_a_type_error_cause() -> None:
    upper = ro.CppModule("Upper").ray_options(recovery=ro.RecoveryPolicy.isolate_tail())
    out = ro.SyncExecutor(lambda x: upper(x)).run(["a", 3]).outputs
    assert out[0] == "A"
    assert out[1].outcome is ro.ItemOutcome.FAILED
    assert out[1].cause.startswith("TypeError: CppModule(Upper): input 0 does not convert")


def test_cpp_module_misuse_is_a_compile_error() -> None:
    with pytest.raises(ValueError, match="no C\\+\\+ UDF named 'Nope'"):
        ro.CppModule("Nope")
    ocr = ro.CppModule("SimOcr").pre_init("fast", 1)
    with pytest.raises(ro.CompileError, match="do not convert to \\(per_batch_ms: float"):
        ro.compile(lambda x: ocr(x))
    upper = ro.CppModule("Upper")
    with pytest.raises(ro.CompileError, match="takes 1 positional Port input"):
        ro.compile(lambda x: upper(x, x))
    with pytest.raises(ro.CompileError, match="takes 1 positional Port input"):
        ro.compile(lambda x: upper(x, mode="fast"))


def test_the_cpp_udfs_are_listed() -> None:
    udfs = ro.cpp_udfs()
    assert {"Upper", "SumNonEmpty", "SimRender", "SimOcr", "SimAssemble"} <= set(udfs)
    assert udfs["SimAssemble"]["inputs"] == 2 and udfs["SimOcr"]["outputs"] == 1


def test_a_built_workload_registers_exactly_its_listed_stages() -> None:
    udfs = set(ro.cpp_udfs())
    workloads = _core.optional_stages()
    assert {w["workload"] for w in workloads} == {"pdf2md", "video"}
    for w in workloads:
        prefix = {"pdf2md": "Pdf2md", "video": "Video"}[w["workload"]]
        registered = {name for name in udfs if name.startswith(prefix)}
        assert registered == (set(w["stages"]) if w["built"] else set())


def test_a_stage_of_a_workload_left_out_names_the_libraries_it_needs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    left_out = [
        {"workload": "pdf2md", "stages": ["Pdf2mdOcr"], "needs": "poppler-cpp, x", "built": False}
    ]
    monkeypatch.setattr(_core, "optional_stages", lambda: left_out)
    monkeypatch.setattr(_core, "cpp_udfs", lambda: {"Upper": {}})
    with pytest.raises(
        ValueError, match=r"'Pdf2mdOcr' is a stage of the pdf2md workload.*poppler-cpp, x"
    ):
        ro.CppModule("Pdf2mdOcr")
    with pytest.raises(ValueError, match=r"no C\+\+ UDF named 'Nope'; available: \['Upper'\]"):
        ro.CppModule("Nope")
