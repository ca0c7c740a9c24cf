"""Ray cases: the workloads (pdf2md, video) on the cluster give the local results.

Run only through test_ray.py (ray_cluster.py starts the cluster)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ray_cluster import EXAMPLES, on_ray

import rayorch_cpp as ro


@pytest.mark.skipif("Pdf2mdOcr" not in ro.cpp_udfs(), reason="built without the pdf2md stages")
def test_pdf2md_on_ray_gives_the_local_markdown(cluster: Any, tmp_path: Path) -> None:
    from pdf2md import convert

    samples = ro._core.pdf2md_make_samples(str(tmp_path), docs=3, seed=3, max_pages=3, corrupt=1)
    paths = [p for p, _ in samples] + [str(tmp_path / "corrupt.pdf")]
    expected = convert(paths)
    got = convert(paths, backend="ray")
    assert [d.text for d in got[:-1]] == [d.text for d in expected[:-1]]
    assert all(f"## Page {len(pages)}" in d.text for (_, pages), d in zip(samples, got))
    assert isinstance(got[-1], ro.OutputIssue) and got[-1].cause == expected[-1].cause


@pytest.mark.skipif("VideoOcrFrame" not in ro.cpp_udfs(), reason="built without the video stages")
def test_the_video_stages_on_ray_give_the_local_records(cluster: Any, tmp_path: Path) -> None:
    from test_video import VideoToRecords

    samples = ro._core.video_make_samples(str(tmp_path), videos=2, seed=5, corrupt=1)
    paths = [p for p, _ in samples] + [str(tmp_path / "corrupt.mp4")]
    with ro.Executor(VideoToRecords()) as ex:
        expected = ex.run(paths, progress=False).outputs
    with on_ray(VideoToRecords()) as ex:
        got = ex.run(paths, progress=False).outputs
    assert [r.to_json() for r in got[:-1]] == [r.to_json() for r in expected[:-1]]
    assert isinstance(got[-1], ro.OutputIssue) and got[-1].cause == expected[-1].cause


@pytest.mark.skipif("Pdf2mdOcr" not in ro.cpp_udfs(), reason="built without the pdf2md stages")
def test_the_documented_pdf2md_command_on_ray(cluster: Any, tmp_path: Path) -> None:
    script = EXAMPLES / "pdf2md.py"

    def convert(out: str, *extra: str) -> dict[str, str]:
        done = subprocess.run(
            [sys.executable, str(script), str(tmp_path / "in"), str(tmp_path / out), *extra],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 1 and "corrupt.pdf" in done.stderr, done.stderr
        return {p.name: p.read_text() for p in (tmp_path / out).glob("*.md")}

    local_md = convert("local", "--samples", "2")
    ray_md = convert("ray", "--backend", "ray", "--address", cluster.address)
    assert len(local_md) == 2 and ray_md == local_md


OCR_STACK = ("onnxruntime", "pypdfium2", "rapidocr_onnxruntime")


@pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in OCR_STACK), reason="no ocr extra installed"
)
def test_the_ocr_pipeline_on_ray_gives_the_local_markdown(cluster: Any, tmp_path: Path) -> None:
    from rayorch_cpp.workloads.ocr_pdf import OcrPdf, PipelineConfig, StageOptions, recall, samples

    corpus = samples.make_corpus(tmp_path, 2, seed=6, max_pages=2, corrupt=1, blank_pages=1)
    paths = [d.path for d in corpus] + [str(tmp_path / "corrupt0.pdf")]
    # Two recognition actors of 2 CPUs each: their sessions run 2 threads.
    config = PipelineConfig(recognize=StageOptions(replicas=2, batch_size=8, num_cpus=2))
    with ro.Executor(OcrPdf(config)) as ex:
        expected = ex.run(paths, progress=False).outputs
    with on_ray(OcrPdf(config)) as ex:
        got = ex.run(paths, progress=False).outputs
    assert [d.text for d in got[:-1]] == [d.text for d in expected[:-1]]
    assert [d.pages_without_text for d in got[:-1]] == [d.pages_without_text for d in expected[:-1]]
    assert isinstance(got[-1], ro.OutputIssue) and got[-1].cause == expected[-1].cause
    for document, markdown in zip(corpus, got):
        found, total = recall.word_recall(document.text, markdown.text)
        assert found >= 0.9 * total


@pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in OCR_STACK), reason="no ocr extra installed"
)
def test_the_ocr_benchmark_starts_its_own_ray_on_loopback(cluster: Any, tmp_path: Path) -> None:
    # python/bench/ocr_pdf.py --backend ray starts a cluster of its own (beside the suite's,
    # in this loopback-only namespace), checks every node is on 127.0.0.1 and prints them.
    script = Path(__file__).resolve().parents[2] / "bench" / "ocr_pdf.py"
    command = [sys.executable, str(script), "--backend", "ray", "--docs", "4", "--max-pages", "3"]
    command += ["--seed", "3", "--work-dir", str(tmp_path), "--json", str(tmp_path / "r.json")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Ray nodes: 1, addresses: 127.0.0.1\n" in done.stdout, done.stdout
    assert "CPU of the driver, Ray's processes and the actors" in done.stdout, done.stdout
    # What ocr_peers.py prints per arm: the page images crossed the object store (render and
    # detection are apart here), and the actors spent CPU on the stages.
    figures = json.loads((tmp_path / "r.json").read_text())
    assert figures["store_created_bytes"] > figures["pages"] * 1_000_000, figures["pages"]
    assert figures["stage_cpu_seconds"] > 0
    recall = re.search(r"word recall [0-9.]+ \((\d+)/(\d+)\)", done.stdout)
    assert recall is not None, done.stdout
    found, total = int(recall[1]), int(recall[2])
    assert total > 0 and found >= 0.9 * total, done.stdout
