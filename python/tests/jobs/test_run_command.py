"""``python -m rayorch_cpp run`` on the local backend (docs/JOBS.md): the configuration from a
file and --set, checked whole before anything runs (exit 2 naming the key), the results and
the run folder, resume, failures (exit 1), progress in a log; and what ``submit`` would ship."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from rayorch_cpp.__main__ import main
from rayorch_cpp._output_lock import OutputLock
from rayorch_cpp.io import read_manifest

ROOT = Path(__file__).resolve().parents[3]
PIPELINE = f"{ROOT / 'python' / 'examples' / 'job_chunks.py'}:Chunks"


def command(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    path = tmp_path / "docs.jsonl"
    with path.open("w") as f:
        for i in range(12):
            text: object = " ".join(f"w{j % 4}" for j in range(i * 5)) if i != 7 else None
            f.write(json.dumps({"id": f"doc{i}", "text": text}) + "\n")
    return path


def records(out: Path) -> list[dict[str, object]]:
    rows = []
    for name in read_manifest(out).parts:
        rows += [json.loads(line) for line in (out / name).read_text().splitlines()]
    return sorted(rows, key=lambda r: str(r["id"]))


def test_a_job_writes_its_records_and_its_run_folder(manifest: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, stdout, stderr = command(
        "run",
        PIPELINE,
        "-i",
        str(manifest),
        "-o",
        str(out),
        "--set",
        "chunk_words=4",
        "--set",
        "count.batch_size=3",
    )
    assert code == 1, stderr  # doc7 has no text
    rows = records(out)
    assert [r["id"] for r in rows] == sorted(f"doc{i}" for i in range(12) if i != 7)
    doc3 = next(r for r in rows if r["id"] == "doc3")
    assert (doc3["chunks"], doc3["words"]) == (4, 15)  # 15 words in chunks of 4
    run = out / "_run"
    config = json.loads((run / "config.json").read_text())
    assert config["parameters"] == {"chunk_words": 4, "lowercase": True}
    assert config["stages"]["count"]["batch_size"] == 3
    assert config["stages"]["count"]["replicas"] == 2  # the Module's own, not overridden
    failures = [json.loads(line) for line in (run / "failures.jsonl").read_text().splitlines()]
    assert [f["row"] for f in failures] == [7] and "text must be a string" in failures[0]["cause"]
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["rows"], summary["written"], summary["failed"]) == (12, 11, 1)
    assert (run / "report.json").is_file() and (run / "report.html").is_file()
    assert "11 written to" in stdout and "1 failed: listed in" in stdout


def test_a_configuration_file_is_read_and_set_overrides_it(manifest: Path, tmp_path: Path) -> None:
    config = tmp_path / "job.toml"
    config.write_text(
        f'pipeline = "{PIPELINE}"\n[parameters]\nchunk_words = 2\nlowercase = false\n'
        "[stages.count]\nreplicas = 3\n[run]\ninput_batch_size = 5\n"
    )
    out = tmp_path / "out"
    code, _, stderr = command(
        "run",
        "-c",
        str(config),
        "-i",
        str(manifest),
        "-o",
        str(out),
        "--set",
        "chunk_words=3",
        "--no-progress",
    )
    assert code == 1, stderr
    resolved = json.loads((out / "_run" / "config.json").read_text())
    assert resolved["parameters"] == {"chunk_words": 3, "lowercase": False}
    assert resolved["stages"]["count"]["replicas"] == 3
    assert resolved["run"]["input_batch_size"] == 5
    doc3 = next(r for r in records(out) if r["id"] == "doc3")
    assert doc3["chunks"] == 5  # 15 words in chunks of 3


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["--set", "cuont.replicas=2"],
            "cuont.replicas: the pipeline has no parameter or stage 'cuont'; did you mean 'count'?",
        ),
        (
            ["--set", "count.replica=2"],
            "stages.count.replica: no such stage option; did you mean 'replicas'",
        ),
        (["--set", "count.batch_size=many"], "count.batch_size: 'many' is not an int"),
        (["--set", "chunk_words=1.5"], "chunk_words: '1.5' is not an int"),
        (["--set", "chunk_wrds=3"], "did you mean 'chunk_words'?"),
        (
            ["--set", "run.input_batch=3"],
            "run.input_batch: no such option; did you mean 'input_batch_size'",
        ),
        (["--set", "count.num_cpus=-1"], "stages.count.num_cpus: must be at least 0, not -1.0"),
        (
            ["--set", "chunk_words=0"],
            "Chunks(chunk_words=...) raised ValueError: chunk_words must be at least 1",
        ),
        (["-i", "missing.jsonl"], "input.paths: missing.jsonl: no such file or folder"),
    ],
)
def test_a_bad_configuration_fails_before_anything_runs(
    manifest: Path, tmp_path: Path, arguments: list[str], message: str
) -> None:
    out = tmp_path / "out"
    if "-i" not in arguments:
        arguments = ["-i", str(manifest), *arguments]
    code, _, stderr = command("run", PIPELINE, "-o", str(out), *arguments)
    assert code == 2
    assert message in stderr, stderr
    assert not out.exists()


def test_a_bad_configuration_file_names_the_key(manifest: Path, tmp_path: Path) -> None:
    for text, message in (
        (
            '[stages.count]\nreplicas = "two"\n',
            "stages.count.replicas: 'two' is not a replica count",
        ),
        ("[stagez.count]\nreplicas = 2\n", "stagez: no such section"),
        ('[parameters]\nlowercase = "yes"\n', "lowercase: 'yes' is not a bool"),
        ("[input]\nformat = 'csv'\n", "input.format: 'csv' is not one of"),
        ("[parameters\n", "not valid TOML"),
    ):
        config = tmp_path / "job.toml"
        config.write_text(text)
        code, _, stderr = command(
            "run", PIPELINE, "-c", str(config), "-i", str(manifest), "-o", str(tmp_path / "o")
        )
        assert code == 2 and message in stderr, (text, stderr)


def test_resume_restores_and_refuses_other_parameters(manifest: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    base = ("run", PIPELINE, "-i", str(manifest), "-o", str(out), "--no-progress")
    assert command(*base, "--set", "chunk_words=4")[0] == 1
    first = records(out)
    code, stdout, _ = command(
        *base, "--set", "chunk_words=4", "--set", "count.batch_size=1", "--resume"
    )
    assert code == 1 and "(11 restored from the journal)" in stdout
    assert records(out) == first
    code, _, stderr = command(*base, "--set", "chunk_words=5", "--resume")
    assert code == 2 and "parameters.chunk_words 4 -> 5" in stderr, stderr
    assert command(*base, "--set", "chunk_words=5")[0] == 1  # a new output without --resume
    assert next(r for r in records(out) if r["id"] == "doc3")["chunks"] == 3


def test_a_second_job_on_an_output_in_use_is_refused_before_it_touches_it(
    manifest: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    base = ("run", PIPELINE, "-i", str(manifest), "-o", str(out), "--no-progress")
    assert command(*base)[0] == 1
    first = records(out)
    with OutputLock(out, "rayorch_cpp run"):  # another job writing there
        code, _, stderr = command(*base, "--set", "chunk_words=5")
    assert code == 2 and f"output directory {out} is in use by another" in stderr, stderr
    assert records(out) == first  # nothing of it was removed or replaced


STAGES_THAT_CANNOT_START = """
import rayorch_cpp as ro


class Model:
    def __init__(self) -> None:
        raise OSError("model weights not found at /models/m.onnx")

    def run(self, texts: list[object]) -> list[object]:
        return texts


class Keep:
    def run(self, texts: list[object]) -> list[bool]:
        return [text != "" for text in texts]


class Broken(ro.Pipeline):
    def __init__(self) -> None:
        self.model = ro.Module(Model)

    def forward(self, text: ro.Port) -> ro.Port:
        return self.model(text)


class Filtered(ro.Pipeline):
    def __init__(self) -> None:
        self.keep = ro.Module(Keep)

    def forward(self, text: ro.Port) -> ro.Port:
        return ro.F.filter(text, self.keep(text))
"""


def test_a_stage_that_cannot_start_is_a_bad_job_and_a_dropped_row_no_failure(
    tmp_path: Path,
) -> None:
    # docs/CONVERSION.md: exit 2 when a stage cannot start (nothing ran), as the conversion
    # commands; a row the pipeline drops on purpose leaves the exit status 0.
    pipelines = tmp_path / "stages.py"
    pipelines.write_text(STAGES_THAT_CANNOT_START)
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"text": t}) + "\n" for t in ("a", "", "c")))
    out = tmp_path / "broken"
    code, _, stderr = command(
        "run", f"{pipelines}:Broken", "-i", str(docs), "-o", str(out), "--no-progress"
    )
    assert code == 2, stderr
    assert "cannot start the pipeline" in stderr and "model weights not found" in stderr, stderr
    assert not (out / "_run" / "summary.json").exists()  # nothing ran

    out = tmp_path / "filtered"
    code, stdout, stderr = command(
        "run", f"{pipelines}:Filtered", "-i", str(docs), "-o", str(out), "--no-progress"
    )
    assert code == 0, stderr
    assert "1 dropped by a filter" in stdout
    summary = json.loads((out / "_run" / "summary.json").read_text())
    assert summary["dropped"] == 1 and summary["failed"] == 0 and summary["exit_code"] == 0
    [letter] = map(json.loads, (out / "_run" / "failures.jsonl").read_text().splitlines())
    assert letter["row"] == 1 and letter["outcome"] == "dropped" and letter["failed"] is False


def test_the_command_line_runs_a_pipeline_by_import_path(manifest: Path, tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python" / "examples"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rayorch_cpp",
            "run",
            "job_chunks:Chunks",
            "-i",
            str(manifest),
            "-o",
            str(tmp_path / "out"),
            "-q",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert len(records(tmp_path / "out")) == 11


def test_submit_ships_the_project_without_git_environments_builds_or_output(tmp_path: Path) -> None:
    from rayorch_cpp.jobs._package import excludes_for, plan_package

    root = tmp_path / "project"
    for name, size in (
        (".git/objects/pack", 100),
        (".venv/lib/x.py", 10),
        ("env2/pyvenv.cfg", 10),
        ("build/x.o", 10),
        ("out/part-00000.jsonl", 10),
        ("job.py", 10),
        ("data/docs.jsonl", 10),
    ):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"x" * size)
    package = plan_package(str(root), excludes_for(str(root), str(root / "out")))
    assert package.files == ("data/docs.jsonl", "job.py")


def test_submit_refuses_a_working_folder_over_the_limit_before_uploading(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / "data").mkdir(parents=True)
    (root / "data" / "big.bin").write_bytes(os.urandom(3 << 20))
    (root / "job.py").write_text("")
    env = dict(os.environ, RAY_max_grpc_message_size=str(1 << 20))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rayorch_cpp",
            "submit",
            PIPELINE,
            "-i",
            "data",
            "-o",
            str(tmp_path / "o"),
            "--working-dir",
            str(root),
            "--address",
            "http://127.0.0.1:9",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=root,
    )
    assert done.returncode == 2, done.stderr
    assert "over Ray's limit of 1.0 MiB" in done.stderr and "data/ 3.0 MiB" in done.stderr


def test_submit_and_status_need_the_job_servers_address() -> None:
    code, _, stderr = command("status", "raysubmit_x")
    assert code == 2 and "--address http://HOST:PORT" in stderr
    code, _, stderr = command("status", "raysubmit_x", "--address", "127.0.0.1:8265")
    assert code == 2 and "the dashboard's, http://HOST:PORT" in stderr


def test_the_ocr_workload_is_a_job_configured_through_its_dataclass() -> None:
    pytest.importorskip("onnxruntime", reason="the OCR workload needs the ocr extra")
    from rayorch_cpp.jobs import JobRequest, resolve

    job = resolve(
        JobRequest(
            pipeline="rayorch_cpp.workloads.ocr_pdf.stages:OcrPdf",
            assignments=["config.dpi=100", "config.recognize.batch_size=16", "render.replicas=3"],
        )
    )
    assert job.resolved["parameters"]["config"]["dpi"] == 100.0
    assert job.resolved["parameters"]["config"]["recognize"]["batch_size"] == 16
    assert job.stages["recognize"].options["batch_size"] == 16
    assert job.stages["render"].options["replicas"] == 3
    assert type(job.pipeline).job_sink  # each document as OUT/<stem>.md
    with pytest.raises(ValueError, match=r"config.recognize.batch_sise: .*'batch_size'"):
        resolve(
            JobRequest(
                pipeline="rayorch_cpp.workloads.ocr_pdf.stages:OcrPdf",
                assignments=["config.recognize.batch_sise=16"],
            )
        )


def test_the_pdf2md_example_runs_as_a_job_writing_one_markdown_per_document(tmp_path: Path) -> None:
    import rayorch_cpp as ro
    from rayorch_cpp import _core

    if "Pdf2mdOcr" not in ro.cpp_udfs():
        pytest.skip("built without the pdf2md stages")
    pdfs = tmp_path / "in"
    pdfs.mkdir()
    _core.pdf2md_make_samples(str(pdfs), docs=3, seed=1, max_pages=2)
    pipeline = f"{ROOT / 'python' / 'examples' / 'pdf2md.py'}:PdfToMarkdown"
    out = tmp_path / "md"
    # the sample folder also holds each document's known text: its PDFs only
    only_pdfs = ["--set", "input.glob=*.pdf", "--set", "ocr_replicas=1", "--no-progress"]
    code, _, stderr = command("run", pipeline, "-i", str(pdfs), "-o", str(out), *only_pdfs)
    assert code == 1, stderr  # the sample corpus has one corrupt PDF
    written = sorted(p.name for p in out.glob("*.md"))
    assert len(written) == 3 and sorted(read_manifest(out).parts) == written
    assert all("## Page 1" in (out / name).read_text() for name in written)
    failures = (out / "_run" / "failures.jsonl").read_text().splitlines()
    assert len(failures) == 1 and "corrupt" in failures[0]


def test_submit_passes_inputs_and_output_as_the_cluster_sees_them(
    manifest: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import argparse

    from rayorch_cpp.jobs import resolve
    from rayorch_cpp.jobs._run_command import request_from
    from rayorch_cpp.jobs._submit_command import entrypoint

    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    (project / "data" / "docs.jsonl").write_text(manifest.read_text())
    (project / "job.toml").write_text(
        f'[input]\npaths = ["data/docs.jsonl", "{manifest}"]\n[output]\ndirectory = "out"\n'
    )
    monkeypatch.chdir(project)
    args = argparse.Namespace(
        pipeline=PIPELINE,
        config="job.toml",
        assignments=["count.replicas=3"],
        input=[],
        output=None,
        backend=None,
        resume=True,
    )
    command = entrypoint(args, resolve(request_from(args)), project)
    # the shipped input stays relative to the working folder, the other and the output are
    # made absolute (the job runs in a copy of the folder)
    at = command.index("--input")
    assert command[at + 1 : at + 3] == ["data/docs.jsonl", str(manifest)]
    assert command[command.index("--output") + 1] == str(project / "out")
    assert command[command.index("--config") + 1] == "job.toml"
    assert command[-3:] == ["--backend", "ray", "--resume"]
    assert "count.replicas=3" in command
