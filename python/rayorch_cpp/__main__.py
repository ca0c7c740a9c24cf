"""``python -m rayorch_cpp COMMAND``: the package's commands.

``report RUN.json [-o run.html]`` draws a run's JSON report as its report page
(docs/REPORT.md), as ``rayorch report`` does. ``run MODULE:PIPELINE ...`` runs a pipeline as a
job, ``submit`` sends it to a Ray cluster's job server, ``status``, ``logs`` and ``stop`` follow
a submitted job (docs/JOBS.md).
"""

from __future__ import annotations

import argparse
import sys

from ._run_result import write_report_page
from .jobs._run_command import add_run_parser, run_command
from .jobs._submit_command import JOB_COMMANDS, add_submit_parsers, job_command


def _report(args: argparse.Namespace) -> int:
    try:
        page = write_report_page(args.report, args.output)
    except (ValueError, OSError, RuntimeError) as error:
        print(f"python -m rayorch_cpp report: error: {error}", file=sys.stderr)
        return 2
    print(f"python -m rayorch_cpp report: wrote {page}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rayorch_cpp")
    commands = parser.add_subparsers(dest="command", required=True)
    report = commands.add_parser(
        "report", help="draw a run's JSON report (run(..., report=...)) as one HTML page"
    )
    report.add_argument("report", help="the JSON report")
    report.add_argument(
        "-o", "--output", help="the page to write (default: the report's path with .html)"
    )
    add_run_parser(commands)
    add_submit_parsers(commands)
    args = parser.parse_args(argv)
    if args.command == "report":
        return _report(args)
    if args.command == "run":
        return run_command(args, parser.prog)
    if args.command in JOB_COMMANDS:
        return job_command(args, parser.prog)
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
