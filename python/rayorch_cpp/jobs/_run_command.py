"""``python -m rayorch_cpp run MODULE:PIPELINE --input ... --output DIR``: the arguments a job
takes, shared with ``submit`` (which passes them on to ``run`` on the cluster)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .._values import ExecutionError
from ._resolve import JobRequest, resolve
from ._run import EXIT_ABORTED, EXIT_USAGE, run_job
from ._typed import ConfigError

EXIT_CODES = (
    "Exit status: 0 every row was written (or restored by --resume); 1 the run finished but "
    "some rows failed (listed in OUT/_run/failures.jsonl); 2 a bad configuration, pipeline, "
    "input or output folder, or a stage that cannot start (nothing ran); 3 the run stopped "
    "(rows finished before are written; rerun with --resume)."
)


def add_job_arguments(p: argparse.ArgumentParser, *, cluster_address: bool = True) -> None:
    """The arguments that say what a job is (``run``'s, and ``submit``'s too)."""
    p.add_argument(
        "pipeline",
        nargs="?",
        help="the Pipeline class: MODULE:CLASS or path/file.py:CLASS (or pipeline = in --config)",
    )
    p.add_argument(
        "-i",
        "--input",
        action="extend",
        nargs="+",
        default=[],
        metavar="PATH",
        help="input rows: a .jsonl or .parquet manifest, a sink's output folder, a folder or "
        "glob pattern of files (one row per file, column 'path'); overrides input.paths",
    )
    p.add_argument("-o", "--output", help="the output folder (results, and _run/ for the run)")
    p.add_argument("-c", "--config", help="a TOML or JSON configuration file (docs/JOBS.md)")
    p.add_argument(
        "--set",
        dest="assignments",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one value: STAGE.OPTION (replicas, batch_size, num_cpus, ...), a "
        "PARAMETER of the pipeline's constructor (dotted into a dataclass), run.OPTION, "
        "input.OPTION, output.OPTION; repeatable",
    )
    p.add_argument("--backend", choices=("local", "ray"), default=None)
    if cluster_address:
        p.add_argument(
            "--address", default=None, help="the Ray cluster to run on (host:port, auto, ray://)"
        )
    p.add_argument("--resume", action="store_true", help="continue an interrupted run")


def add_run_parser(commands: Any) -> None:
    """Adds run to ``commands`` (argparse's subparsers)."""
    p = commands.add_parser(
        "run",
        help="run a pipeline as a job: inputs in, results out, locally or on Ray",
        description="Run a Pipeline class on its inputs and write its results into the "
        "output folder, exactly once across a crash and --resume. The run folder OUT/_run "
        "holds the configuration as resolved, the journal, failures.jsonl, report.json, "
        "report.html and summary.json.",
        epilog=EXIT_CODES,
    )
    add_job_arguments(p)
    p.add_argument("--no-progress", action="store_true", help="no progress on stderr")
    p.add_argument("-q", "--quiet", action="store_true", help="print the summary only on failures")


def request_from(args: argparse.Namespace) -> JobRequest:
    return JobRequest(
        pipeline=args.pipeline,
        config=args.config,
        assignments=list(args.assignments),
        inputs=list(args.input),
        output=args.output,
        backend=args.backend,
        address=getattr(args, "address", None),
    )


def run_command(args: argparse.Namespace, prog: str) -> int:
    try:
        job = resolve(request_from(args))
        summary = run_job(job, resume=args.resume, progress=not args.no_progress)
    except ConfigError as error:
        print(f"{prog} run: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except ExecutionError as error:  # the backend could not start (no cluster, no resources)
        print(f"{prog} run: the run stopped: {error}", file=sys.stderr)
        return EXIT_ABORTED
    if summary.exit_code == EXIT_ABORTED:
        print(f"{prog} run: {summary.describe()}", end="", file=sys.stderr)
    elif not args.quiet or summary.failed:
        print(summary.describe(), end="")
    return summary.exit_code
