"""The OCR workload (rayorch_cpp.workloads.ocr_pdf): PP-OCRv4 on onnxruntime in a three-level
pipeline, the same Markdown on every executor, its word recall on generated pages, per-document
outcomes, a crash of a render process contained to its document, model threads from the
Module's resources, and the command's outputs, journal, exit codes, isolation and its report
of documents read far worse than their text layer.

Runs when the ``ocr`` extra is installed (scripts/python-env.sh installs it)."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("pypdfium2")
pytest.importorskip("rapidocr_onnxruntime")

import rayorch_cpp as ro  # noqa: E402
from rayorch_cpp._output_lock import OutputLock  # noqa: E402
from rayorch_cpp.workloads.ocr_pdf import (  # noqa: E402
    Markdown,
    OcrPdf,
    PipelineConfig,
    StageOptions,
    recall,
    samples,
)
from rayorch_cpp.workloads.ocr_pdf.__main__ import STAGES, main, options_from, parser  # noqa: E402
from rayorch_cpp.workloads.ocr_pdf.convert import ConvertOptions, convert  # noqa: E402
from rayorch_cpp.workloads.ocr_pdf.models import (  # noqa: E402
    open_session,
    providers_for,
    session_threads,
)
from rayorch_cpp.workloads.ocr_pdf.stages import JoinLines, RenderPage, join_hyphenated  # noqa: E402

# Small stages so that several Grains share a call even on a few pages.
CONFIG = PipelineConfig(
    render=StageOptions(batch_size=2),
    recognize=StageOptions(replicas=2, batch_size=8),
)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[samples.SampleDocument]:
    """Three documents (one page of one of them is blank, with no image) and a corrupt file."""
    directory = tmp_path_factory.mktemp("corpus")
    return samples.make_corpus(directory, 3, seed=6, max_pages=3, corrupt=1, blank_pages=1)


def paths_of(corpus: list[samples.SampleDocument]) -> list[str]:
    return [d.path for d in corpus] + [str(Path(corpus[0].path).parent / "corrupt0.pdf")]


@pytest.fixture(scope="module")
def sync_outputs(corpus: list[samples.SampleDocument]) -> list[Any]:
    return list(ro.SyncExecutor(OcrPdf(CONFIG)).run(paths_of(corpus), progress=False).outputs)


def test_the_local_executor_gives_the_synchronous_cores_markdown(
    corpus: list[samples.SampleDocument], sync_outputs: list[Any]
) -> None:
    with ro.Executor(OcrPdf(CONFIG)) as ex:
        local = ex.run(paths_of(corpus), progress=False).outputs
    assert [d.text for d in local[:-1]] == [d.text for d in sync_outputs[:-1]]
    assert local[-1] == sync_outputs[-1]


def test_a_recognition_stage_that_waits_for_fuller_batches_gives_the_same_markdown(
    corpus: list[samples.SampleDocument], sync_outputs: list[Any]
) -> None:
    waiting = PipelineConfig(
        render=CONFIG.render,
        recognize=StageOptions(replicas=2, batch_size=8, batch_wait=0.5),
    )
    pipeline = OcrPdf(waiting)
    assert pipeline.recognize.options["batch_wait"] == 0.5
    # A stage without a wait leaves the option to the engine's default (none).
    assert "batch_wait" not in OcrPdf(CONFIG).recognize.options
    with ro.Executor(pipeline) as ex:
        local = ex.run(paths_of(corpus), progress=False).outputs
    assert [d.text for d in local[:-1]] == [d.text for d in sync_outputs[:-1]]
    # The command keeps the workload's default wait of its recognition stage.
    command = options_from(parser().parse_args(["in.pdf", "-o", "out"])).pipeline
    assert command.recognize.batch_wait == PipelineConfig().recognize.batch_wait > 0


def test_word_recall_on_generated_pages_is_at_least_0_9(
    corpus: list[samples.SampleDocument], sync_outputs: list[Any]
) -> None:
    found = expected = 0
    for document, markdown in zip(corpus, sync_outputs):
        assert isinstance(markdown, Markdown), markdown
        assert markdown.pages == len(document.pages)
        hit, total = recall.word_recall(document.text, markdown.text)
        found, expected = found + hit, expected + total
    assert expected > 50
    assert found / expected >= 0.9


def test_pages_keep_their_order_and_lines_their_reading_order(
    corpus: list[samples.SampleDocument], sync_outputs: list[Any]
) -> None:
    for document, markdown in zip(corpus, sync_outputs):
        sections = markdown.text.split("\n## Page ")[1:]
        assert [int(s.split("\n", 1)[0]) for s in sections] == list(range(1, len(sections) + 1))
        for lines, section in zip(document.pages, sections):
            body = section.split("\n", 1)[1].split("<!--")[0].strip().splitlines()
            assert len(body) == len(lines)
            for want, got in zip(lines, body):  # each line its own row, in drawing order
                hit, total = recall.word_recall(want, got)
                assert hit >= total - 1, (want, got)


def test_a_corrupt_pdf_and_a_blank_page_have_their_own_outcomes(
    corpus: list[samples.SampleDocument], sync_outputs: list[Any]
) -> None:
    corrupt = sync_outputs[-1]
    assert isinstance(corrupt, ro.OutputIssue)
    assert corrupt.outcome is ro.ItemOutcome.SUPPRESSED
    assert "corrupt0.pdf" in corrupt.cause and "cannot open" in corrupt.cause
    assert corrupt.origin is not None and corrupt.origin.call.startswith("open")
    blank = [
        (row, number)
        for row, document in enumerate(corpus)
        for number, lines in enumerate(document.pages, start=1)
        if not lines
    ]
    assert len(blank) == 1
    [(row, number)] = blank
    for r, markdown in enumerate(sync_outputs[:-1]):
        assert isinstance(markdown, Markdown), markdown
        assert markdown.pages_without_text == ((number,) if r == row else ())
    assert f"## Page {number}\n\n\n" in sync_outputs[row].text


class SessionThreads:
    """Opens a model session as a model stage does and reports its threads."""

    def __init__(self) -> None:
        self.session = open_session("detection")

    def run(self, xs: list[int]) -> list[int]:
        return [session_threads(self.session) for _ in xs]


@pytest.mark.parametrize(
    "num_cpus, threads, isolation",
    [(2, 2, "threads"), (1, 1, "threads"), (0.5, 1, "threads"), (2, 2, "process")],
)
def test_model_threads_follow_the_modules_num_cpus(
    num_cpus: float, threads: int, isolation: str
) -> None:
    stage = ro.Module(SessionThreads, num_cpus=num_cpus, isolation=isolation)
    assert ro.run(lambda x: stage(x), [0], progress=False).outputs == [threads]


def test_a_gpu_request_without_the_cuda_provider_says_what_to_install() -> None:
    assert providers_for(0, (), ["CPUExecutionProvider"]) == ["CPUExecutionProvider"]
    with pytest.raises(RuntimeError, match="install onnxruntime-gpu"):
        providers_for(1, ("0",), ["CPUExecutionProvider"])
    cuda = providers_for(1, ("1",), ["CUDAExecutionProvider", "CPUExecutionProvider"])
    assert cuda[0][0] == "CUDAExecutionProvider" and cuda[-1] == "CPUExecutionProvider"


def test_the_command_writes_markdown_failures_and_a_journal_it_resumes_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = tmp_path / "in"
    [document] = samples.make_corpus(inputs, 1, seed=7, max_pages=1, corrupt=1)
    out = tmp_path / "out"
    report = tmp_path / "run.json"
    assert main([str(inputs), "-o", str(out), "--no-progress", "--report", str(report)]) == 1
    # The report page beside the report, drawn from it (docs/REPORT.md).
    page = (tmp_path / "run.html").read_text()
    for call in json.loads(report.read_text())["calls"]:
        assert f"<td class='call-name'>{call['call']}</td>" in page
    markdown = (out / f"{document.stem}.md").read_text()
    assert markdown.startswith(f"# {document.stem}\n") and "complete, 1 pages" in markdown
    [failure] = [json.loads(line) for line in (out / "failures.jsonl").read_text().splitlines()]
    # The document failed; its root is suppressed by the failed open stage (the engine's
    # dead letter, as every conversion command writes it: docs/CONVERSION.md).
    assert failure["stem"] == "corrupt0" and failure["failed"] is True
    assert failure["outcome"] == "suppressed" and failure["call"].startswith("open")
    assert failure["input"].endswith("corrupt0.pdf") and "cannot open" in failure["cause"]
    assert (out / ".ocr_pdf-journal").is_file()
    first = capsys.readouterr().out
    assert "1 converted, 1 failed, 0 restored" in first
    assert "pages: 1 in" in first and "first finished document after" in first
    assert "corrupt0 (suppressed): cannot open" in first

    # Resumed: the converted document comes from the journal, the corrupt one is tried again.
    assert main([str(inputs), "-o", str(out), "--no-progress", "--resume"]) == 1
    resumed = capsys.readouterr().out
    assert "0 converted, 1 failed, 1 restored" in resumed
    # The restored document's pages and time are the first run's, not this one's.
    assert "pages: 0 in" in resumed and "first finished document" not in resumed
    assert (out / f"{document.stem}.md").read_text() == markdown

    (inputs / "corrupt0.pdf").unlink()
    assert main([str(inputs), "-o", str(out), "--no-progress", "-q"]) == 0
    assert (out / "failures.jsonl").read_text() == ""


def test_the_command_refuses_bad_inputs_before_converting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main([str(tmp_path / "missing"), "-o", str(out)]) == 2
    assert "input not found" in capsys.readouterr().err
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for d in ("a", "b"):
        (tmp_path / d / "same.pdf").write_bytes(b"%PDF-1.7")
    assert main([str(tmp_path / "a"), str(tmp_path / "b"), "-o", str(out)]) == 2
    assert "duplicate document name 'same'" in capsys.readouterr().err
    samples.make_corpus(tmp_path / "in", 1, seed=1, max_pages=1)
    assert main([str(tmp_path / "in"), "-o", str(out), "--recognize-gpus", "1"]) == 2
    assert "onnxruntime-gpu" in capsys.readouterr().err
    # Another run holds the output directory (a second job of a split pointed at it).
    with OutputLock(out, "ocr_pdf"):
        assert main([str(tmp_path / "in"), "-o", str(out), "--no-progress"]) == 2
    assert f"output directory {out} is in use by another ocr_pdf run" in capsys.readouterr().err
    assert not list(out.glob("*.md"))


def test_jobs_of_a_split_convert_every_document_once(tmp_path: Path) -> None:
    # The same input list in every job (a folder, or a manifest of it), each job its share.
    inputs = tmp_path / "in"
    documents = samples.make_corpus(inputs, 3, seed=11, max_pages=1)
    stems = sorted(d.stem for d in documents)
    shares = []
    for i in range(2):
        out = tmp_path / f"out{i}"
        assert main([str(inputs), "-o", str(out), "--shard", f"{i}/2", "--no-progress", "-q"]) == 0
        shares.append(sorted(p.stem for p in out.glob("*.md")))
    assert shares == [[stems[0], stems[2]], [stems[1]]]
    manifest = inputs / "docs.jsonl"  # relative paths: from the manifest's folder
    manifest.write_text("".join(json.dumps({"file": f"{s}.pdf"}) + "\n" for s in stems))
    out = tmp_path / "listed"
    argv = ["--manifest", str(manifest), "--path-field", "file", "--row-range", "1:"]
    assert main([*argv, "-o", str(out), "--no-progress", "-q"]) == 0
    assert sorted(p.stem for p in out.glob("*.md")) == stems[1:]


def test_the_command_names_the_extra_when_a_package_of_it_is_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    real_find_spec = importlib.util.find_spec

    def without_pypdfium2(name: str, *args: Any) -> Any:
        return None if name == "pypdfium2" else real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_pypdfium2)
    assert main([str(tmp_path), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "needs pypdfium2" in err and "pip install 'rayorch-cpp[ocr]'" in err


class RenderThatCrashes(RenderPage):
    """Renders as the workload does, but takes its process down on a document named crash*
    (as a PDF that crashes pdfium would)."""

    def run(self, paths: list[str], pages: list[int]) -> list[Any]:
        if any(Path(p).stem.startswith("crash") for p in paths):
            os.abort()
        return super().run(paths, pages)


class OcrPdfWithACrashingRender(OcrPdf):
    def __init__(self, config: PipelineConfig) -> None:
        super().__init__(config)
        self.render = config.render.module(RenderThatCrashes, "render").pre_init(config.dpi)


def test_a_pdf_that_crashes_a_render_process_fails_that_document_not_the_run(
    tmp_path: Path,
) -> None:
    documents = samples.make_corpus(tmp_path, 3, seed=4, max_pages=2)
    crash = tmp_path / "crash.pdf"
    crash.write_bytes(Path(documents[0].path).read_bytes())
    config = PipelineConfig(render=StageOptions(batch_size=2, isolation="process"))
    paths = [d.path for d in documents] + [str(crash)]
    with ro.Executor(OcrPdfWithACrashingRender(config)) as ex:
        outputs = ex.run(paths, progress=False).outputs
    assert all(isinstance(o, Markdown) for o in outputs[:3]), outputs
    assert isinstance(outputs[3], ro.OutputIssue), outputs[3]
    assert outputs[3].origin is not None and outputs[3].origin.call.startswith("render")
    assert "worker crashed: SIGABRT" in str(outputs[3].cause)


def test_the_commands_isolation_puts_the_pdfium_stages_in_worker_processes() -> None:
    local = options_from(parser().parse_args(["in.pdf", "-o", "out", "--isolation", "process"]))
    isolated = {s for s in STAGES if getattr(local.pipeline, s).isolation == "process"}
    assert isolated == {"open", "render"}
    default = options_from(parser().parse_args(["in.pdf", "-o", "out"]))
    assert all(getattr(default.pipeline, s).isolation is None for s in STAGES)
    # On Ray every actor is a process of its own; the option changes nothing there.
    ray = options_from(
        parser().parse_args(["in.pdf", "-o", "out", "--isolation", "process", "--backend", "ray"])
    )
    assert all(getattr(ray.pipeline, s).isolation is None for s in STAGES)


def test_the_ray_defaults_are_scaled_to_fit_a_small_cluster() -> None:
    # The defaults with an actor of the recognize stage per CPU of a 2-CPU cluster ask for
    # 0.25 + 0.5 + 1 + 2 + 0.25 + 0.25 = 4.25 CPUs; fitted, every stage keeps its share.
    sized = replace(PipelineConfig(), recognize=replace(PipelineConfig().recognize, replicas=2))
    assert sized.cpus_asked() == 4.25
    fitted = sized.fitted_to(2.0)
    assert fitted.cpus_asked() <= 2.0
    assert [getattr(fitted, s).num_cpus for s in STAGES] == [0.117, 0.235, 0.47, 0.47, 0.117, 0.117]
    assert [getattr(fitted, s).replicas for s in STAGES] == [
        getattr(sized, s).replicas for s in STAGES
    ]
    assert sized.fitted_to(4.25) is sized and sized.fitted_to(16) is sized
    # The command fits only its own defaults, on Ray: a resource the user gives is kept.
    args = ["in.pdf", "-o", "out", "--backend", "ray"]
    assert options_from(parser().parse_args(args)).fit_to_cluster
    assert not options_from(parser().parse_args([*args, "--detect-cpus", "1"])).fit_to_cluster
    assert not options_from(parser().parse_args([*args, "--join-replicas", "2"])).fit_to_cluster
    assert not options_from(parser().parse_args(args[:3])).fit_to_cluster  # local
    chosen = options_from(parser().parse_args([*args, "--detect-cpus", "1.5"])).pipeline
    assert chosen.detect.num_cpus == 1.5 and chosen.open.num_cpus == PipelineConfig().open.num_cpus


def test_a_document_read_far_worse_than_its_text_layer_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pypdfium2 as pdfium

    source = pdfium.PdfDocument("/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf")
    cut = pdfium.PdfDocument.new()
    cut.import_pages(source, [2])
    (tmp_path / "in").mkdir()
    cut.save(str(tmp_path / "in" / "spec.pdf"))
    cut.close()
    source.close()
    samples.make_corpus(tmp_path / "in", 1, seed=7, max_pages=1)  # an image PDF: no layer
    out = tmp_path / "out"
    read: dict[str, Any] = {}
    summary = convert(
        ConvertOptions([str(tmp_path / "in")], str(out), progress=False),
        on_document=read.__setitem__,
    )
    assert read["doc000"].text_layer_recall is None
    assert read["spec"].text_layer_recall >= 0.95
    assert summary.poor_reads == []
    # At 40 dpi the page's 10-point lines are 6 pixels tall: too small to read.
    assert main([str(tmp_path / "in"), "-o", str(out), "--no-progress", "-q", "--dpi", "40"]) == 0
    printed = capsys.readouterr().out
    assert "warning: 1 documents hold less than 85% of the words of their own text layer" in printed
    assert "  spec: " in printed and "doc000" not in printed.split("warning:")[1]


def test_the_command_says_an_interrupted_run_was_interrupted(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rayorch_cpp.workloads.ocr_pdf import convert as convert_module

    def interrupted(options: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(convert_module, "convert", interrupted)
    assert main([str(tmp_path), "-o", str(tmp_path / "out")]) == 3
    err = capsys.readouterr().err
    assert "ocr_pdf: the run stopped: interrupted\n" in err and "--resume" in err


def test_a_word_hyphenated_across_rows_is_joined_and_nothing_else_moves() -> None:
    rows = ["for non-", "developers and", "the well-", "Known A-", "1 x-", "ray"]
    assert join_hyphenated(rows) == [
        "for nondevelopers",
        "and",
        "the well-",  # the next row starts with a capital: a compound, left as it is
        "Known A-",
        "1 xray",
    ]
    assert join_hyphenated(["re-", "run"]) == ["rerun"]  # the emptied row is dropped
    assert join_hyphenated(["", "a-", "b"]) == ["", "ab"]  # an empty row of its own stays
    assert JoinLines().run([["one re-", "run", "two"]], [[0, 1, 2]]) == ["one rerun\ntwo"]
