"""``python -m rayorch_cpp submit|status|logs|stop``: a job sent to a Ray cluster's job server
and followed there. ``submit`` checks the configuration here, ships the working folder
(_package.py) and runs ``python -m rayorch_cpp run ... --backend ray`` on the cluster."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from ._job_client import JobClientError, connect, pending_reasons
from ._package import PackageError, excludes_for, plan_package
from ._resolve import ResolvedJob, resolve
from ._run import EXIT_ABORTED, EXIT_OK, EXIT_USAGE, RUN_FOLDER, SUMMARY
from ._run_command import add_job_arguments, request_from
from ._typed import ConfigError

JOB_COMMANDS = ("submit", "status", "logs", "stop")
TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")


def _add_address(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--address",
        default=os.environ.get("RAY_API_SERVER_ADDRESS"),
        help="the job server: the cluster's dashboard, http://HOST:PORT (default: "
        "RAY_API_SERVER_ADDRESS)",
    )


def add_submit_parsers(commands: Any) -> None:
    """Adds submit, status, logs and stop to ``commands`` (argparse's subparsers)."""
    p = commands.add_parser(
        "submit",
        help="send a job to a Ray cluster's job server",
        description="Check the job's configuration here, ship the working folder (less .git, "
        "virtual environments, build folders and the output) and run it on the cluster with "
        "`python -m rayorch_cpp run ... --backend ray`. Paths are the cluster's: a relative "
        "input inside the working folder travels with it; the output folder is made absolute.",
    )
    add_job_arguments(p, cluster_address=False)
    _add_address(p)
    p.add_argument("--working-dir", default=".", help="the folder shipped to the cluster")
    p.add_argument(
        "--exclude", action="append", default=[], metavar="PATTERN", help="also leave out this"
    )
    p.add_argument("--submission-id", default=None, help="the job's id (default: Ray's)")
    p.add_argument("--entrypoint-num-cpus", type=float, default=None)
    p.add_argument("--entrypoint-num-gpus", type=float, default=None)
    p.add_argument("--entrypoint-resources", default=None, metavar="JSON", help='e.g. {"head": 1}')
    p.add_argument("--wait", action="store_true", help="wait for the job, printing its logs")
    p.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="with --wait: stop the job when it has not ended by then (and say so)",
    )
    p.add_argument(
        "--pending-after",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="with --wait: report a job still waiting for resources after this long",
    )
    for name, text in (
        ("status", "a submitted job's status (and why it is pending)"),
        ("logs", "a submitted job's logs"),
        ("stop", "stop a submitted job"),
    ):
        q = commands.add_parser(name, help=text)
        q.add_argument("job", help="the job's submission id")
        _add_address(q)
        if name == "logs":
            q.add_argument("-f", "--follow", action="store_true", help="until the job ends")
        if name == "stop":
            q.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS")


def _cluster_path(path: str, working_dir: Path) -> str:
    """A path as the job on the cluster must see it: relative to the shipped working folder
    when it lies inside it, else absolute."""
    p = Path(path).resolve()
    if p.is_relative_to(working_dir):
        return p.relative_to(working_dir).as_posix() or "."
    return str(p)


def entrypoint(args: argparse.Namespace, job: ResolvedJob, working_dir: Path) -> list[str]:
    """The ``run`` command line the job runs on the cluster. The inputs and the output are
    the resolved ones (from the flags or the configuration file), as the cluster must see
    them: the job's working folder is a copy, so the output is always absolute."""
    directory = job.sections.output.directory
    if not directory:
        raise ConfigError("output.directory", "no output folder: --output DIR")
    command = ["python", "-m", "rayorch_cpp", "run", job.pipeline_ref]
    if args.config:
        config = Path(args.config).resolve()
        if not config.is_relative_to(working_dir):
            raise ConfigError("--config", f"{args.config} is outside the working folder shipped")
        command += ["--config", config.relative_to(working_dir).as_posix()]
    for assignment in args.assignments:
        command += ["--set", assignment]
    if job.sections.input.paths:
        command += ["--input", *(_cluster_path(p, working_dir) for p in job.sections.input.paths)]
    command += ["--output", str(Path(directory).resolve()), "--backend", "ray"]
    if args.resume:
        command.append("--resume")
    return command


def _status_line(info: Any) -> str:
    return f"{info.submission_id}: {info.status.value}" + (
        f" ({info.message})" if info.message else ""
    )


def _print_new_logs(client: Any, job: str, printed: int) -> int:
    try:
        text = client.get_job_logs(job)
    except Exception:
        return printed
    if len(text) > printed:
        sys.stdout.write(text[printed:])
        sys.stdout.flush()
    return max(printed, len(text))


def wait_for(client: Any, job: str, timeout: float | None, pending_after: float, prog: str) -> int:
    """Follows the job to its end, printing its logs as they come and, once, why it is
    waiting for resources; past ``timeout`` it is stopped. Returns the exit code."""
    started = time.monotonic()
    printed, reported = 0, False
    while True:
        info = client.get_job_info(job)
        printed = _print_new_logs(client, job, printed)
        status = info.status.value
        if status in TERMINAL:
            break
        waited = time.monotonic() - started
        if not reported and waited >= pending_after:
            reasons = pending_reasons(client.get_address(), job, info.job_id)
            if reasons:
                reported = True
                print(f"{prog}: job {job} is {status} and waiting:", file=sys.stderr)
                for reason in reasons:
                    print(f"  {reason.describe()}", file=sys.stderr)
        if timeout is not None and waited >= timeout:
            client.stop_job(job)
            end = _await_terminal(client, job, 30.0)
            print(
                f"{prog}: job {job} had not ended after {timeout:g} s (--timeout): stopped it "
                f"(now {end})",
                file=sys.stderr,
            )
            return EXIT_ABORTED
        time.sleep(0.5)
    print(f"{prog}: {_status_line(info)}", file=sys.stderr)
    summary = _summary(info)
    if summary is not None:  # the job's own account, where its output is readable here
        return int(summary.get("exit_code", EXIT_ABORTED))
    code = getattr(info, "driver_exit_code", None)
    if status == "SUCCEEDED":
        return EXIT_OK
    return int(code) if code is not None and 0 < int(code) <= 3 else EXIT_ABORTED


def _summary(info: Any) -> dict[str, Any] | None:
    """The job's ``summary.json`` when its output folder is readable from here."""
    output = (info.metadata or {}).get("rayorch_cpp.output")
    path = Path(output) / RUN_FOLDER / SUMMARY if output else None
    if path is None or not path.is_file():
        return None
    try:
        document = json.loads(path.read_text())
    except ValueError:
        return None
    # A summary left by an earlier run of the same output is not this job's.
    started = getattr(info, "start_time", None)
    if started and path.stat().st_mtime * 1000 < started:
        return None
    return document if isinstance(document, dict) else None


def _await_terminal(client: Any, job: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    status = str(client.get_job_status(job).value)
    while status not in TERMINAL and time.monotonic() < deadline:
        time.sleep(0.3)
        status = str(client.get_job_status(job).value)
    return status


def _submit(args: argparse.Namespace, prog: str) -> int:
    working_dir = Path(args.working_dir).resolve()
    job = resolve(request_from(args))  # the configuration is checked here, before any upload
    command = entrypoint(args, job, working_dir)
    package = plan_package(
        str(working_dir), excludes_for(str(working_dir), args.output, tuple(args.exclude))
    )
    client = connect(args.address)
    options: dict[str, Any] = {}
    if args.entrypoint_num_cpus is not None:
        options["entrypoint_num_cpus"] = args.entrypoint_num_cpus
    if args.entrypoint_num_gpus is not None:
        options["entrypoint_num_gpus"] = args.entrypoint_num_gpus
    if args.entrypoint_resources:
        try:
            options["entrypoint_resources"] = json.loads(args.entrypoint_resources)
        except ValueError as error:
            raise ConfigError("--entrypoint-resources", f"not JSON: {error}") from None
    job = client.submit_job(
        entrypoint=shlex.join(command),
        submission_id=args.submission_id,
        runtime_env={"working_dir": str(working_dir), "excludes": list(package.excludes)},
        metadata={"rayorch_cpp.output": command[command.index("--output") + 1]},
        **options,
    )
    print(
        f"{prog}: submitted job {job} ({len(package.files)} files, "
        f"{package.zip_bytes / (1 << 20):.1f} MiB shipped from {working_dir})",
        file=sys.stderr,
    )
    print(job)
    if not args.wait:
        return EXIT_OK
    return wait_for(client, job, args.timeout, args.pending_after, prog)


def _status(args: argparse.Namespace, prog: str) -> int:
    client = connect(args.address)
    info = client.get_job_info(args.job)
    print(_status_line(info))
    if info.status.value in ("PENDING", "RUNNING"):
        for reason in pending_reasons(args.address, args.job, info.job_id):
            print(f"  {reason.describe()}")
    document = _summary(info)
    if document is not None:
        print(
            f"  {document.get('status')}: {document.get('written')} written, "
            f"{document.get('failed')} failed of {document.get('rows')} rows; "
            f"{document.get('run_folder')}/{SUMMARY}"
        )
    return EXIT_OK


def _logs(args: argparse.Namespace, prog: str) -> int:
    client = connect(args.address)
    if not args.follow:
        sys.stdout.write(client.get_job_logs(args.job))
        return EXIT_OK
    printed = 0
    while True:
        status = client.get_job_status(args.job).value
        printed = _print_new_logs(client, args.job, printed)
        if status in TERMINAL:
            return EXIT_OK
        time.sleep(0.5)


def _stop(args: argparse.Namespace, prog: str) -> int:
    client = connect(args.address)
    client.stop_job(args.job)
    status = _await_terminal(client, args.job, args.timeout)
    if status not in TERMINAL:
        print(
            f"{prog}: job {args.job} is still {status} {args.timeout:g} s after it was asked to "
            "stop",
            file=sys.stderr,
        )
        return EXIT_ABORTED
    print(f"{args.job}: {status}")
    return EXIT_OK


def job_command(args: argparse.Namespace, prog: str) -> int:
    commands = {"submit": _submit, "status": _status, "logs": _logs, "stop": _stop}
    if args.command != "submit" and not args.address:
        print(
            f"{prog} {args.command}: error: --address http://HOST:PORT is needed", file=sys.stderr
        )
        return EXIT_USAGE
    if args.command == "submit" and not args.address:
        print(f"{prog} submit: error: --address http://HOST:PORT is needed", file=sys.stderr)
        return EXIT_USAGE
    try:
        return commands[args.command](args, prog)
    except (ConfigError, PackageError, JobClientError) as error:
        print(f"{prog} {args.command}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except RuntimeError as error:  # the job server refused (an unknown job id, ...)
        print(f"{prog} {args.command}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
