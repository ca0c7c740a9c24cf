"""The reference's Benchmark packaging (rayorch_cpp.benchmark): the registry loads a
benchmark's class only when asked, configurations are JSON and round-trip, a run writes its
report and artifacts, submit builds a Ray job without building anything, and a submitted
run's handle reads the report, reports a failure with its logs and leaves a job it timed out
on running (as the reference's does)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rayorch_cpp.benchmark import (
    BenchmarkReport,
    BenchmarkRun,
    DocumentTopologyBench,
    LocalSource,
    MinerUBench,
    benchmark_config,
    registry,
)
from rayorch_cpp.benchmark._job import main as job_main

BUILTINS = (
    "document_topology",
    "dual_vllm",
    "mineru",
    "mineru_scale",
    "video_panda70m",
    "sglang_vllm",
    "video_caption_topology",
    "video_multimodal_topology",
    "yolo_sam",
)


def imported_after(code: str, watched: tuple[str, ...]) -> list[str]:
    found = f"sorted(m for m in {watched!r} if m in sys.modules)"
    probe = f"import json, sys\n{code}\nprint(json.dumps({found}))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return list(json.loads(done.stdout))


def test_the_package_and_every_pipeline_import_without_their_model_libraries() -> None:
    heavy = ("ray", "numpy", "torch", "vllm", "sglang", "PIL", "pypdfium2", "cv2", "pyarrow")
    assert imported_after("import rayorch_cpp, rayorch_cpp.benchmark", heavy) == []
    for name in BUILTINS:
        module = registry.class_path(name).split(":")[0].rsplit(".", 1)[0]
        assert imported_after(f"import {module}.pipeline, {module}.benchmark", heavy) == [], name


def test_the_registry_lists_in_order_and_loads_on_first_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert registry.available() == BUILTINS
    for public, name in registry.public_names().items():
        assert registry.load(name).__name__ == public
    (tmp_path / "my_bench.py").write_text("class MyBench:\n    pass\nNOT_A_CLASS = 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.register(
        "mine",
        public_name="MyBench",
        benchmark_class="my_bench:MyBench",
        runtime_package="rayorch_cpp.benchmarks.mineru",
    )
    try:
        assert "my_bench" not in sys.modules
        assert registry.available()[-1] == "mine"
        assert registry.load("mine").__name__ == "MyBench"
        with pytest.raises(ValueError, match="already registered"):
            registry.register(
                "mine",
                public_name="X",
                benchmark_class="my_bench:MyBench",
                runtime_package="rayorch_cpp.benchmarks.mineru",
            )
        registry.register(
            "mine",
            public_name="MyBench",
            benchmark_class="my_bench:NOT_A_CLASS",
            runtime_package="rayorch_cpp.benchmarks.mineru",
            exist_ok=True,
        )
        with pytest.raises(TypeError, match="is not a class"):
            registry.load("mine")
    finally:
        registry._SPECS.pop("mine")
        sys.modules.pop("my_bench", None)
    with pytest.raises(KeyError, match="unknown benchmark 'nope'; available: document_topology"):
        registry.class_path("nope")
    with pytest.raises(ValueError, match="must be non-empty"):
        registry.register("x", public_name="", benchmark_class="a:b", runtime_package="p")


def test_each_builtin_names_its_runtime_environment() -> None:
    assert registry.runtime_env("document_topology") == {}
    mineru = registry.runtime_env("mineru")
    assert "vllm==0.10.1.1" in mineru["pip"]["packages"]
    assert mineru["env_vars"] == {"TOKENIZERS_PARALLELISM": "false"}
    for name in BUILTINS:
        assert isinstance(registry.runtime_env(name), dict)


def test_a_configuration_is_json_and_rebuilds_the_same_benchmark(tmp_path: Path) -> None:
    bench = MinerUBench(
        input_path=tmp_path / "pdfs",
        output_dir="out",
        num_gpus=2,
        stage_options={"ocr": {"batch_size": 8, "resources": {"x": 1}}},
    )
    config = benchmark_config(bench)
    assert json.loads(json.dumps(config)) == config
    assert MinerUBench(**config) == bench
    assert config["output_dir"] == str(Path("out").resolve())
    with pytest.raises(TypeError, match="dataclass instance"):
        benchmark_config(MinerUBench)
    with pytest.raises(ValueError, match="unknown MinerU stage 'orc'; expected one of render, ocr"):
        MinerUBench(input_path="p", output_dir="o", stage_options={"orc": {}})
    with pytest.raises(ValueError, match="cannot override num_outputs"):
        MinerUBench(input_path="p", output_dir="o", stage_options={"ocr": {"num_outputs": 2}})
    with pytest.raises(ValueError, match="num_gpus must be a positive integer"):
        MinerUBench(input_path="p", output_dir="o", num_gpus=True)


def test_a_run_writes_its_report_and_artifacts(tmp_path: Path) -> None:
    bench = DocumentTopologyBench(
        output_dir=tmp_path,
        document_count=4,
        pages_per_document=3,
        tables_per_page=2,
        workers=2,
        batch_size=3,
    )
    report = bench.run(run_id="r1", profile=False)
    assert [o["document"] for o in report.outputs] == [0, 1, 2, 3]
    assert report.outputs[2]["page_order"] == ["doc2/page0", "doc2/page1", "doc2/page2"]
    assert (report.metrics["pages"], report.metrics["tables"]) == (12, 24)
    assert report.metrics["input_rows"] == 4 and report.metrics["output_rows"] == 4
    run_dir = tmp_path / ".rayorch-benchmark" / "r1"
    assert json.loads((run_dir / "config.json").read_text()) == benchmark_config(bench)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert list(summary) == [
        "benchmark",
        "run_id",
        "config",
        "metrics",
        "profile",
        "artifacts",
        "outputs",
    ]
    # summary.json keeps the outputs and leaves the samples to gpu_samples.jsonl
    assert BenchmarkReport.from_dict(summary) == replace(report, profile={"status": "disabled"})
    assert (run_dir / "gpu_samples.jsonl").read_text() == ""
    assert report.profile == {"status": "disabled", "samples": []}


class FakeClient:
    def __init__(self, statuses: list[str], logs: str = "") -> None:
        self.statuses = statuses
        self.log_text = logs
        self.stopped = 0
        self.submitted: dict[str, Any] = {}

    def get_job_status(self, job: str) -> str:
        return self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]

    def get_job_logs(self, job: str) -> str:
        return self.log_text

    def stop_job(self, job: str) -> bool:
        self.stopped += 1
        return True


def test_a_submitted_run_is_followed_to_its_report(tmp_path: Path) -> None:
    summary = tmp_path / "summary.json"
    BenchmarkReport("b", "r", {}, {"measured_wall_s": 2.0}, {}, {}, outputs=[1, 2]).write_json(
        summary, include_outputs=True
    )
    run = BenchmarkRun(
        "job", summary, FakeClient(["PENDING", "JobStatus.RUNNING", "JobStatus.SUCCEEDED"])
    )
    report = run.wait(poll_interval_s=0.01)
    assert report.outputs == [1, 2] and report.elapsed_s == 2.0
    failed = BenchmarkRun("job", summary, FakeClient(["FAILED"], logs="Traceback: boom"))
    with pytest.raises(RuntimeError, match="finished with status FAILED\nTraceback: boom"):
        failed.wait()
    client = FakeClient(["RUNNING"])
    with pytest.raises(TimeoutError, match="the Job was not stopped"):
        BenchmarkRun("job", summary, client).wait(timeout_s=0.05, poll_interval_s=0.01)
    assert client.stopped == 0
    missing = BenchmarkRun("job", tmp_path / "nowhere.json", FakeClient(["SUCCEEDED"]))
    with pytest.raises(FileNotFoundError, match="cluster-visible shared storage"):
        missing.wait()


def test_submit_sends_the_configuration_in_the_entrypoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    class Client:
        def __init__(self, address: str) -> None:
            seen["address"] = address

        def submit_job(self, **kwargs: Any) -> str:
            seen.update(kwargs)
            return "raysubmit_1"

    monkeypatch.setitem(
        sys.modules, "ray.job_submission", SimpleNamespace(JobSubmissionClient=Client)
    )
    bench = DocumentTopologyBench(output_dir=tmp_path, document_count=3)
    project = tmp_path / "project"
    project.mkdir()
    run = bench.submit(
        "http://head:8265",
        run_id="r2",
        profile=False,
        source=LocalSource(project, install_dependencies=False),
    )
    assert run.job_id == "raysubmit_1" and seen["address"] == "http://head:8265"
    assert run.report_path == tmp_path / ".rayorch-benchmark" / "r2" / "summary.json"
    words = seen["entrypoint"].split()
    assert words[:3] == ["python", "-m", "rayorch_cpp.benchmark._job"]
    config = json.loads(base64.urlsafe_b64decode(words[words.index("--config") + 1]))
    assert config == benchmark_config(bench)
    assert seen["runtime_env"]["working_dir"] == str(project.resolve())
    assert seen["metadata"]["rayorch_cpp.benchmark"] == "document_topology"
    with pytest.raises(FileNotFoundError, match="project source does not exist"):
        LocalSource(tmp_path / "missing").runtime_env({})


def test_the_job_entrypoint_builds_the_class_from_its_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "recorded_bench.py").write_text(
        "from rayorch_cpp.benchmark import BenchmarkReport\n"
        "class Recorded:\n"
        "    def __init__(self, **config):\n"
        "        self.config = config\n"
        "    def run(self, **options):\n"
        "        return BenchmarkReport('recorded', options['run_id'], self.config,\n"
        "                               {'options': {k: v for k, v in options.items()}}, {}, {})\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    encoded = base64.urlsafe_b64encode(json.dumps({"size": 3}).encode()).decode()
    assert (
        job_main(
            [
                "--benchmark-class",
                "recorded_bench:Recorded",
                "--config",
                encoded,
                "--run-id",
                "r9",
                "--profile",
                "0",
                "--profile-interval-s",
                "0.5",
            ]
        )
        == 0
    )
    printed = json.loads(capsys.readouterr().out)
    assert printed["config"] == {"size": 3}
    assert printed["metrics"]["options"] == {
        "ray_address": "auto",
        "run_id": "r9",
        "profile": False,
        "profile_interval_s": 0.5,
    }
