"""Running a resolved job: the output folder, its run folder (``OUT/_run``: the configuration
as resolved, the journal, the failures, the JSON report and its page, the summary), progress,
and the exit code of every conversion command (docs/CONVERSION.md: 0 every row written,
restored or dropped on purpose, 1 some failed, 2 bad input or configuration or a stage that
cannot start, nothing run, 3 the run stopped; rerun with ``--resume``)."""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .._atomic_file import write_text_atomically
from .._executor import Executor
from .._output_lock import OutputInUse, OutputLock
from .._run_options import Journal
from .._run_result import RunResult, report_page_beside, write_report_page
from .._values import CompileError, ExecutionError
from ._io import make_reader, make_sink
from ._resolve import ResolvedJob
from ._typed import ConfigError

EXIT_OK, EXIT_SOME_FAILED, EXIT_USAGE, EXIT_ABORTED = 0, 1, 2, 3
RUN_FOLDER = "_run"
JOURNAL = "journal"
SUMMARY = "summary.json"


@dataclass
class JobSummary:
    """What a job did; written as ``OUT/_run/summary.json`` at its end, whatever the end."""

    pipeline: str
    status: str  # "succeeded", "some_failed", "aborted"
    exit_code: int
    rows: int = 0
    written: int = 0
    failed: int = 0
    dropped: int = 0
    restored: int = 0
    seconds: float = 0.0
    output: str = ""
    run_folder: str = ""
    report: str = ""
    report_page: str = ""
    failures: str = ""
    error: str = ""
    outcomes: dict[str, int] = field(default_factory=dict)

    def describe(self) -> str:
        if self.status == "aborted":
            return (
                f"the run stopped: {self.error}\nrows finished before it are in {self.output}; "
                "rerun with --resume to do the rest\n"
            )
        text = (
            f"{self.rows} rows in {self.seconds:.1f} s: {self.written} written to {self.output}"
            + (f" ({self.restored} restored from the journal)" if self.restored else "")
            + (f", {self.dropped} dropped by a filter" if self.dropped else "")
            + "\n"
        )
        if self.failed:
            text += f"{self.failed} failed: listed in {self.failures}\n"
        if self.report_page:
            text += f"report: {self.report_page}\n"
        return text


def write_json_atomically(path: Path, document: Any) -> None:
    """``path`` replaced by the JSON document at once."""
    write_text_atomically(path, json.dumps(document, indent=2) + "\n")


def _prepare_folders(job: ResolvedJob, resume: bool) -> tuple[Path, Path, OutputLock]:
    directory = job.sections.output.directory
    if not directory:
        raise ConfigError("output.directory", "no output folder: --output DIR")
    out = Path(directory)
    run_folder = out / RUN_FOLDER
    try:
        run_folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError("output.directory", f"{directory}: cannot be created ({error})") from None
    if not os.access(run_folder, os.W_OK):
        raise ConfigError("output.directory", f"{directory}: not writable")
    try:  # held for the run: two jobs writing one output would lose each other's parts
        lock = OutputLock(out, "rayorch_cpp run")
    except OutputInUse as error:
        raise ConfigError("output.directory", str(error)) from None
    if not resume:  # a new output: the journal of an earlier run must not restore anything
        for stale in run_folder.glob(f"{JOURNAL}*"):
            stale.unlink()
    return out, run_folder, lock


def _differences(old: Any, new: Any, key: str) -> list[str]:
    """The keys whose values differ between two resolved configurations."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for k in sorted(set(old) | set(new)):
            out += _differences(old.get(k), new.get(k), f"{key}.{k}" if key else k)
        return out
    return [] if old == new else [f"{key} {json.dumps(old)} -> {json.dumps(new)}"]


def _check_resumable(job: ResolvedJob, run_folder: Path) -> None:
    """A resumed job must compute what the interrupted one did: the same pipeline,
    parameters and inputs (stage options, which tune how, may change)."""
    stored = run_folder / "config.json"
    if not stored.is_file():
        return
    try:
        old = json.loads(stored.read_text())
    except ValueError:
        return
    changed = []
    for section in ("pipeline", "parameters", "input"):
        changed += _differences(old.get(section), job.resolved.get(section), section)
    if changed:
        raise ConfigError(
            "--resume",
            f"the configuration differs from the run being resumed ({stored}): "
            + "; ".join(changed)
            + ". Resume with the same values, or run without --resume to start a new output",
        )


def _count(result: RunResult | None, summary: JobSummary) -> None:
    if result is None:
        return
    outcomes = dict(result.roots_by_outcome)
    summary.outcomes = outcomes
    summary.rows = sum(outcomes.values())
    summary.written = outcomes.get("present", 0)
    summary.failed = outcomes.get("failed", 0) + outcomes.get("suppressed", 0)
    summary.dropped = outcomes.get("dropped", 0)
    summary.restored = result.roots_restored
    summary.seconds = round(result.elapsed_s, 3)


def _started_executor(job: ResolvedJob) -> Executor:
    """The job's executor once every stage has an actor whose Module constructed (its model
    loaded): a stage that cannot start is a problem with the job, not a failed run, so it is
    a ConfigError (exit 2, nothing run), as for the conversion commands (docs/CONVERSION.md)."""
    run, backend = job.sections.run, job.sections.backend
    try:
        executor = Executor(
            job.pipeline,
            backend=backend.name,
            address=backend.address,
            isolation=run.isolation if backend.name == "local" else None,
        )
        executor.await_actors()  # closes the executor when it raises
    except (ExecutionError, RuntimeError, ImportError) as error:
        raise ConfigError("stages", f"cannot start the pipeline: {error}") from None
    return executor


def run_job(job: ResolvedJob, *, resume: bool = False, progress: bool = True) -> JobSummary:
    """Runs ``job`` once; ConfigError (before anything ran) for bad input, otherwise the
    summary (also in ``OUT/_run/summary.json``) with the exit code the command returns."""
    reader = make_reader(job.sections.input)  # before any folder is made: a missing input
    out, run_folder, lock = _prepare_folders(job, resume)
    with lock:
        if resume:
            _check_resumable(job, run_folder)
        sink = make_sink(job.sections.output, job.pipeline, str(out))
        run = job.sections.run
        try:
            program = job.pipeline.compile()
            reader.source_columns(program.source_names)
        except (CompileError, ValueError) as error:
            key = "stages" if isinstance(error, CompileError) else "input"
            raise ConfigError(key, str(error)) from None
        write_json_atomically(run_folder / "config.json", job.resolved)
        report = run_folder / "report.json"
        summary = JobSummary(
            pipeline=job.pipeline_ref,
            status="succeeded",
            exit_code=EXIT_OK,
            output=str(out),
            run_folder=str(run_folder),
            report=str(report),
            failures=str(run_folder / "failures.jsonl"),
        )
        started = time.monotonic()
        result: RunResult | None = None
        executor = _started_executor(job)
        try:
            with executor:
                result = executor.run(
                    reader,
                    input_batch_size=run.input_batch_size,
                    max_active_input_batches=run.max_active_input_batches,
                    backpressure=run.backpressure,
                    queue_order=run.queue_order,
                    max_failed_roots=run.max_failed_roots,
                    max_failed_fraction=run.max_failed_fraction,
                    min_roots_for_failed_fraction=run.min_roots_for_failed_fraction,
                    progress=progress,
                    progress_log_interval_s=run.progress_log_interval_s,
                    trace=str(run_folder / "trace.json") if run.trace else None,
                    report=str(report),
                    live=run.live,
                    journal=Journal(str(run_folder / JOURNAL)),
                    dead_letters=str(run_folder / "failures.jsonl"),
                    sink=sink,
                )
        except ValueError as error:
            if "run journal" in str(error):  # found before anything ran: the code changed since
                raise ConfigError("--resume", str(error)) from None
            summary.status, summary.exit_code, summary.error = "aborted", EXIT_ABORTED, str(error)
            summary.seconds = round(time.monotonic() - started, 3)
        except (ExecutionError, OSError, KeyboardInterrupt) as error:
            why = (
                "interrupted" if isinstance(error, KeyboardInterrupt) else str(error) or repr(error)
            )
            summary.status, summary.exit_code, summary.error = "aborted", EXIT_ABORTED, why
            summary.seconds = round(time.monotonic() - started, 3)
        _count(result, summary)
        if result is not None and summary.failed:
            summary.status, summary.exit_code = "some_failed", EXIT_SOME_FAILED
        if report.is_file():
            try:
                summary.report_page = write_report_page(report, report_page_beside(report))
            except (ValueError, OSError, RuntimeError) as error:
                print(f"warning: the report page could not be drawn: {error}", file=sys.stderr)
        write_json_atomically(run_folder / SUMMARY, asdict(summary))
        return summary
