"""Converting a set of PDFs into a directory of Markdown files with the OCR pipeline, as
``rayorch pdf2md`` does with its C++ one: the same inputs, outputs, run journal, failure list
and exit codes (the command is ``python -m rayorch_cpp.workloads.ocr_pdf``, __main__.py).

Each finished document is written as soon as its own pages are done as ``OUT/<stem>.md``,
through a sink (rayorch_cpp.io.FileSink, docs/IO.md): the file is committed together with its
record in the run journal ``OUT/.ocr_pdf-journal`` (keyed by the stem plus the options that
shape the Markdown: dpi and detection side), and ``OUT/_manifest.json`` lists the committed
files. A run without ``resume`` starts a new journal and a new output; with it, the documents
recorded finished are restored instead of converted (their file left as it is, or written
again from the journal when missing) and the rest converted, failed ones included. Every
document without output gets one line in ``OUT/failures.jsonl``, the engine's dead letters as
every conversion command writes them (docs/CONVERSION.md): its stem and input, then key, row,
outcome (the engine's outcome of its root: a PDF that cannot be opened fails the open stage,
and its Markdown, which needed it, is "suppressed"), failed (the document's verdict: true
unless it was dropped on purpose), output, cause, call, entity, attempts and restored; the file
is replaced when the run starts, and a resumed run lists the failures it restores too."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ... import ExecutionError, Executor, Journal, OutputIssue, RunResult, write_report_page
from ..._output_lock import OutputInUse, OutputLock
from ..._ray_session import connect, import_ray
from ...io import FileSink
from .._input_selection import InputRules, InputSelection, SelectionError, select_inputs
from .stages import Markdown, OcrPdf, PipelineConfig

# A document whose Markdown holds fewer of its text layer's words than this is reported: on
# real manuals the workload reads 0.94 to 1.0 of them (BENCHMARKS.md), so a far lower figure
# means pages the model cannot read at this resolution, or a text layer that is itself wrong.
POOR_READ_BELOW = 0.85
JOURNAL_NAME = ".ocr_pdf-journal"
FAILURES_NAME = "failures.jsonl"
PROBE_PREFIX = ".ocr_pdf-probe-"


class InputError(ValueError):
    """A problem with the inputs, the output directory, the options or the models, found
    before anything is converted (exit code 2)."""


@dataclass
class ConvertOptions:
    """What ``convert`` does; the defaults are the command's."""

    inputs: list[str]  # files, folders (searched for *.pdf), glob patterns
    out_dir: str
    manifests: list[str] = field(default_factory=list)  # JSON-lines files or sink folders
    path_field: str = "path"  # the manifests' field holding a document's path
    shard: tuple[int, int] | None = None  # (i, n): this job converts inputs i, i + n, ...
    row_range: tuple[int, int | None] | None = None  # inputs [start, stop) of the list
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)
    input_batch_size: int = 16  # documents per input batch; 0: all in one
    max_active_input_batches: int = 2
    resume: bool = False
    journal: bool = True
    trace_path: str | None = None
    report_path: str | None = None
    # The report page beside the JSON report (run.json -> run.html), docs/REPORT.md.
    report_page: bool = True
    # The live page while the run lasts: a port, "HOST:PORT" or None (off); docs/REPORT.md.
    live: str | None = None
    progress: bool = True
    backend: str = "local"
    address: str | None = None
    # On Ray: the recognize stage gets an actor per CPU of the cluster and every stage's CPUs
    # are scaled down to fit it (PipelineConfig.fitted_to); for default stage resources only.
    fit_to_cluster: bool = False


@dataclass(frozen=True, slots=True)
class FailedDocument:
    stem: str
    input: str
    outcome: str  # the engine's outcome of the document's root: failed, suppressed
    cause: str


@dataclass
class ConvertSummary:
    """What a conversion did."""

    documents: int = 0
    # Stems of the documents written, in delivery order: the restored ones (the journal's,
    # delivered first) and then those this run converted.
    written: list[str] = field(default_factory=list)
    restored: int = 0
    failures: list[FailedDocument] = field(default_factory=list)  # sorted by stem
    dropped: list[str] = field(default_factory=list)  # stems dropped on purpose, sorted
    pages: int = 0  # of the documents this run converted (restored ones not counted)
    # (stem, share of its text layer's words read) of the documents read far worse than their
    # text layer (POOR_READ_BELOW), in delivery order
    poor_reads: list[tuple[str, float]] = field(default_factory=list)
    pages_without_text: int = 0
    startup_seconds: float = 0.0
    run_seconds: float = 0.0
    first_document_seconds: float = -1.0
    result: RunResult | None = None
    out_dir: str = ""


PDF_INPUTS = InputRules(
    extensions=(".pdf",),
    none_given="no input given: name PDF files, directories, patterns or --manifest",
    none_found="no PDF files found in the inputs",
    duplicate_stem=lambda stem, first, second: (
        f"duplicate document name '{stem}': {first} and {second} would both be written as "
        f"{stem}.md; rename one of them or convert them into different output directories"
    ),
)


def resolve_inputs(options: ConvertOptions) -> list[str]:
    """This job's PDFs (rayorch_cpp/workloads/_input_selection.py, as the C++ commands
    choose theirs): files as given, directories searched recursively for ``*.pdf`` (any
    case), glob patterns, sorted by path, then the manifests' rows; the same file once; then
    the row range and the shard. Raises InputError for a missing input, no PDF at all, or two
    files with the same stem anywhere in the list (their outputs would clash)."""
    selection = InputSelection(
        paths=options.inputs,
        manifests=options.manifests,
        path_field=options.path_field,
        shard=options.shard,
        row_range=options.row_range,
    )
    try:
        return select_inputs(selection, PDF_INPUTS)
    except SelectionError as error:
        raise InputError(str(error)) from None


def prepare_output_dir(out: Path, resume: bool, journal: bool) -> tuple[str | None, OutputLock]:
    """Creates the output directory, checks it is writable, locks it for this run and
    removes an interrupted run's temporaries; returns the journal's path (None without one)
    and the lock (held until it is closed). Without ``resume`` an old journal is removed: a
    new run starts a new one. Another run holding the directory is an InputError."""
    if resume and not journal:
        raise InputError("--resume needs the run journal; drop --no-journal")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f"{PROBE_PREFIX}{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise InputError(f"output directory {out} is not writable: {error}") from error
    try:
        lock = OutputLock(out, "ocr_pdf")
    except OutputInUse as error:
        raise InputError(str(error)) from None
    for leftover in out.glob(".*.md.*"):  # an interrupted write's temporaries
        leftover.unlink(missing_ok=True)
    path = out / JOURNAL_NAME
    if not resume:
        for old in (path, Path(f"{path}.modules.json")):
            old.unlink(missing_ok=True)
    return (str(path) if journal else None), lock


def fitted_to_cluster(pipeline: PipelineConfig, address: str | None) -> PipelineConfig:
    """The default configuration sized for the Ray cluster at ``address``: an actor of the
    recognize stage per CPU, and every stage's CPUs scaled down to fit (said on stderr), so
    that the defaults run on a cluster of any size (2 CPUs too)."""
    connect(address, {})
    cpus = float(import_ray().cluster_resources().get("CPU", 0.0))
    if cpus < 1:
        return pipeline
    sized = replace(pipeline, recognize=replace(pipeline.recognize, replicas=int(cpus)))
    fitted = sized.fitted_to(cpus)
    if fitted is not sized:
        print(
            f"ocr_pdf: the Ray cluster has {cpus:g} CPUs; the stages' defaults asked for "
            f"{sized.cpus_asked():g}, so each stage's CPUs are scaled by "
            f"{fitted.cpus_asked() / sized.cpus_asked():.3g} (set --*-cpus or --*-replicas to "
            "choose)",
            file=sys.stderr,
        )
    return fitted


def start_executor(options: ConvertOptions) -> Executor:
    """The executor of the pipeline; a model that cannot load is an InputError, before any
    output is written (the executor returns before its actors are ready: eager start)."""
    try:
        pipeline = options.pipeline
        if options.backend == "ray" and options.fit_to_cluster:
            pipeline = fitted_to_cluster(pipeline, options.address)
        executor = Executor(OcrPdf(pipeline), backend=options.backend, address=options.address)
        executor.await_actors()
        return executor
    except (ExecutionError, RuntimeError, ImportError) as error:
        raise InputError(f"cannot start the pipeline: {error}") from error


def convert(
    options: ConvertOptions, on_document: Callable[[str, Any], None] | None = None
) -> ConvertSummary:
    """Converts every input document (see the module docstring); ``on_document(stem,
    output)`` sees each as it is delivered. Raises InputError before converting anything
    when the inputs, the output directory or the models are unusable, and ExecutionError
    when the run aborts (documents finished before are complete; resume converts the rest)."""
    files = resolve_inputs(options)
    stems = [Path(f).stem for f in files]
    out = Path(options.out_dir)
    journal_path, lock = prepare_output_dir(out, options.resume, options.journal)
    with lock:
        summary = ConvertSummary(documents=len(files), out_dir=str(out))
        started = time.monotonic()
        executor = start_executor(options)
        summary.startup_seconds = time.monotonic() - started
        pipeline = options.pipeline
        suffix = f"|dpi={pipeline.dpi:g}|detect_side={pipeline.detect_side}"
        journal = (
            Journal(journal_path, key=lambda row: stems[row] + suffix, allow_other_inputs=True)
            if journal_path is not None
            else None
        )
        start = time.monotonic()

        def deliver(row: int, doc: Any, restored: bool = False) -> None:
            if on_document is not None:
                on_document(stems[row], doc)
            if isinstance(doc, OutputIssue):  # its line in failures.jsonl is the engine's
                if doc.outcome.value == "dropped":  # on purpose: not a failure
                    summary.dropped.append(stems[row])
                else:
                    summary.failures.append(
                        FailedDocument(stems[row], files[row], doc.outcome.value, str(doc.cause))
                    )
                return
            assert isinstance(doc, Markdown)
            summary.written.append(stems[row])
            if doc.text_layer_recall is not None and doc.text_layer_recall < POOR_READ_BELOW:
                summary.poor_reads.append((stems[row], doc.text_layer_recall))
            if restored:  # converted by an earlier run: not this run's pages or latency
                return
            if summary.first_document_seconds < 0:
                summary.first_document_seconds = time.monotonic() - start
            summary.pages += doc.pages
            summary.pages_without_text += len(doc.pages_without_text)

        try:
            with executor:
                try:
                    result = executor.run(
                        files,
                        on_row=deliver,
                        on_restored_row=lambda row, doc: deliver(row, doc, restored=True),
                        input_batch_size=options.input_batch_size or None,
                        max_active_input_batches=options.max_active_input_batches,
                        progress=options.progress,
                        trace=options.trace_path,
                        report=options.report_path,
                        live=options.live,
                        journal=journal,
                        dead_letters=str(out / FAILURES_NAME),
                        dead_letter_fields=lambda row: {"stem": stems[row], "input": files[row]},
                        # One file per document, committed with its journal record (docs/IO.md):
                        # after a crash and --resume each is there once, complete; a restored
                        # document's file stays as it is.
                        sink=FileSink(
                            directory=out,
                            name=lambda key, row, doc: f"{stems[row]}.md",
                            contents=lambda doc: doc.text,
                        ),
                    )
                except ValueError as error:  # before anything ran
                    if "dead_letters" in str(error):  # the failure list cannot be written
                        raise InputError(str(error)) from error
                    raise InputError(
                        f"cannot use the run journal {journal_path}: {error}; rerun without "
                        "--resume to convert every document again"
                    ) from error
        finally:
            if options.report_path and options.report_page and os.path.exists(options.report_path):
                _draw_report_page(options.report_path)
        summary.run_seconds = time.monotonic() - start
        summary.result = result
        summary.restored = result.roots_restored
        summary.failures.sort(key=lambda f: f.stem)
        summary.dropped.sort()
        return summary


def _draw_report_page(report_path: str) -> None:
    """The report page beside the report the run wrote (an aborted run's too). A page that
    cannot be drawn costs the run nothing: its outputs and report stand; stderr says why."""
    try:
        write_report_page(report_path)
    except (ValueError, OSError, RuntimeError) as error:
        print(f"the report page beside {report_path} was not written: {error}", file=sys.stderr)


def format_summary(s: ConvertSummary) -> str:
    """The human-readable end-of-run summary."""
    converted = len(s.written) - s.restored
    text = (
        f"ocr_pdf: {s.documents} documents: {converted} converted, {len(s.failures)} failed, "
        f"{s.restored} restored from the journal"
        + (f", {len(s.dropped)} dropped on purpose" if s.dropped else "")
        + "\n"
    )
    if s.run_seconds > 0:
        text += (
            f"pages: {s.pages} in {s.run_seconds:.2f} s = {s.pages / s.run_seconds:.2f} pages/s "
            f"(models loaded in {s.startup_seconds:.2f} s); {s.pages_without_text} without text\n"
        )
    if s.first_document_seconds >= 0:
        text += f"first finished document after {s.first_document_seconds:.2f} s\n"
    if s.result is not None:
        text += "stages: " + "; ".join(
            f"{c.call} {c.rpcs} rpcs/{c.grain_dispatches} grains busy {c.busy_s:.2f} s"
            for c in s.result.calls
        )
        text += "\n"
    text += f"markdown: {s.out_dir}/<stem>.md\n"
    if s.poor_reads:
        text += (
            f"warning: {len(s.poor_reads)} documents hold less than {POOR_READ_BELOW:.0%} of "
            "the words of their own text layer (pages too small to read at this --dpi, or a "
            "text layer that is itself wrong; compare with pdftotext):\n"
        )
        for stem, share in s.poor_reads:
            text += f"  {stem}: {share:.0%} of its text layer's words\n"
    if s.failures:
        text += f"failures ({len(s.failures)}), listed in {Path(s.out_dir) / FAILURES_NAME}:\n"
        for f in s.failures:
            text += f"  {f.stem} ({f.outcome}): {f.cause}\n"
    return text
