"""The built-in model benchmarks' pipelines, run on the local backend with the model engines
replaced by stand-ins (the tests have no GPU and no weights): everything around the model
is real. MinerU renders a real document from a Debian package with pdfium; pdfinfo, poppler's
own tool, is the oracle of its page count, and the Markdown holds one section per page in
page order. The two-model pipeline hands each answer to the second model."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rayorch_cpp.benchmark import DualVllmBench, MinerUBench

DOCUMENT = Path("/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf")


class FakeLLM:
    """vLLM's LLM as the stages use it: generate(prompts, sampling) -> results whose
    outputs[0].text is the completion."""

    built: list[dict[str, Any]] = []

    def __init__(self, model: str, **options: Any) -> None:
        self.model = Path(model).name
        FakeLLM.built.append({"model": self.model, **options})

    def generate(self, prompts: list[str], sampling: Any) -> list[Any]:
        return [
            SimpleNamespace(outputs=[SimpleNamespace(text=f"{self.model} says {p}")])
            for p in prompts
        ]


class FakeMinerUClient:
    """mineru-vl-utils' client: one list of blocks per image, in reading order."""

    calls: list[int] = []

    def __init__(self, backend: str, vllm_llm: FakeLLM) -> None:
        assert backend == "vllm-engine" and isinstance(vllm_llm, FakeLLM)

    def batch_two_step_extract(self, images: list[Any]) -> list[list[dict[str, Any]]]:
        FakeMinerUClient.calls.append(len(images))
        return [
            [
                {"type": "header", "bbox": [0, 0, 1, 0.05], "content": "running header"},
                {"type": "title", "bbox": [0, 0.1, 1, 0.2], "content": f"{im.width}x{im.height}"},
                {"type": "text", "bbox": [0, 0.3, 1, 0.9], "content": "body text"},
            ]
            for im in images
        ]


@pytest.fixture
def fake_engines(monkeypatch: pytest.MonkeyPatch) -> None:
    FakeLLM.built.clear()
    FakeMinerUClient.calls.clear()
    monkeypatch.setitem(
        sys.modules, "vllm", SimpleNamespace(LLM=FakeLLM, SamplingParams=lambda **kw: kw)
    )
    monkeypatch.setitem(
        sys.modules, "mineru_vl_utils", SimpleNamespace(MinerUClient=FakeMinerUClient)
    )


def pdfinfo_pages(path: Path) -> int:
    info = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True, check=True).stdout
    return int(next(line.split()[-1] for line in info.splitlines() if line.startswith("Pages:")))


def test_mineru_reads_every_page_of_a_real_document_in_order(
    fake_engines: None, tmp_path: Path
) -> None:
    pytest.importorskip("pypdfium2", reason="MinerU renders with pdfium")
    pytest.importorskip("PIL", reason="MinerU's pages are images")
    if not DOCUMENT.is_file() or shutil.which("pdfinfo") is None:
        pytest.skip("needs shared-mime-info's PDF and poppler-utils (scripts/install-deps.sh)")
    pdfs = tmp_path / "pdfs"
    pdfs.mkdir()
    shutil.copy(DOCUMENT, pdfs / "spec.pdf")
    model = tmp_path / "MinerU2.5"
    model.mkdir()
    bench = MinerUBench(
        input_path=pdfs,
        output_dir=tmp_path / "md",
        model=model,
        render_dpi=24,
        batch_size=5,
        stage_options={"ocr": {"num_gpus": 0}},  # no GPU here: the stand-in needs none
    )
    report = bench.run(run_id="r", profile=False)
    pages = pdfinfo_pages(DOCUMENT)
    [record] = report.outputs
    assert (record["pdf"], record["pages"]) == ("spec", pages)
    assert record["page_order"] == list(range(pages))
    assert report.metrics["pages"] == pages
    assert max(FakeMinerUClient.calls) <= 5 and sum(FakeMinerUClient.calls) == pages
    assert FakeLLM.built == [{"model": "MinerU2.5", "gpu_memory_utilization": 0.8}]
    sections = (tmp_path / "md" / "spec.md").read_text().split("\n\n---\n\n")
    assert len(sections) == pages
    for section in sections:  # a title per page (its rendered size), no running header
        title, body = section.strip().split("\n\n")
        assert title.startswith("# ") and "x" in title and body == "body text"


def test_the_second_model_refines_the_first_models_answer(
    fake_engines: None, tmp_path: Path
) -> None:
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("What is a parent?\n\nWhat is a child?\nWhat is a grain?\n")
    bench = DualVllmBench(
        input_path=prompts,
        output_dir=tmp_path / "out",
        model_a=tmp_path / "a",
        model_b=tmp_path / "b",
        batch_size=2,
        input_limit=2,
        stage_options={"model_a": {"num_gpus": 0}, "model_b": {"num_gpus": 0}},
    )
    report = bench.run(run_id="r", profile=False)
    assert [r["prompt"] for r in report.outputs] == ["What is a parent?", "What is a child?"]
    for record in report.outputs:
        assert record["answer_a"] == f"a says {record['prompt']}"
        # model B was asked to refine model A's answer to the same prompt
        assert record["answer_b"].startswith("b says Improve the following answer")
        assert f"Answer:\na says {record['prompt']}\n" in record["answer_b"]
    assert report.metrics["prompts"] == 2
    assert sorted(b["model"] for b in FakeLLM.built) == ["a", "b"]
