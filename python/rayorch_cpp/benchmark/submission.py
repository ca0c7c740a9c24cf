"""Sending a benchmark to a Ray cluster's job server (Ray Jobs), as the reference does: the
configuration travels in the entrypoint's arguments, the runtime environment is the
benchmark's own (``env.json``) or, with a LocalSource, that plus the user's code; nothing is
built (no wheel). ``BenchmarkRun`` follows the job and reads its ``summary.json`` from storage
both sides see.

For a pipeline of one's own, ``python -m rayorch_cpp submit`` (docs/JOBS.md) is the command;
its ``--timeout`` stops the job, where ``BenchmarkRun.wait``'s, as the reference's, does not."""

from __future__ import annotations

import base64
import copy
import json
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import registry
from .execution import new_run_id
from .report import BenchmarkReport

_INSTALLING_KEYS = ("pip", "conda", "uv", "py_modules", "working_dir")
JOB_MODULE = "rayorch_cpp.benchmark._job"


def _installed_environment(workload_env: dict[str, Any]) -> dict[str, Any]:
    """The environment without what installs or ships code: the cluster's own is used."""
    return {k: copy.deepcopy(v) for k, v in workload_env.items() if k not in _INSTALLING_KEYS}


@dataclass(frozen=True, slots=True)
class LocalSource:
    """Code from this machine shipped with the job: ``project_root`` as the working folder,
    ``modules`` as extra Python modules (folders or wheels); ``install_dependencies=False``
    keeps the benchmark's pip/conda packages out (the cluster has them)."""

    project_root: str | Path
    modules: tuple[str | Path, ...] = ()
    install_dependencies: bool = True
    excludes: tuple[str, ...] = (
        ".git/**",
        "**/__pycache__/**",
        "**/*.pyc",
        "build/**",
        "dist/**",
    )

    def runtime_env(self, workload_env: dict[str, Any]) -> dict[str, Any]:
        """The job's runtime environment: the benchmark's, plus this source."""
        root = Path(self.project_root).expanduser().resolve()
        if not root.is_dir():
            raise FileNotFoundError(f"project source does not exist: {root}")
        modules = [Path(m).expanduser().resolve() for m in self.modules]
        for path in modules:
            if not path.exists():
                raise FileNotFoundError(f"module source does not exist: {path}")
        env = (
            copy.deepcopy(dict(workload_env))
            if self.install_dependencies
            else _installed_environment(dict(workload_env))
        )
        env["working_dir"] = str(root)
        if modules:
            env["py_modules"] = [str(p) for p in modules]
        if self.excludes:
            env["excludes"] = list(self.excludes)
        return env


@dataclass(slots=True)
class BenchmarkRun:
    """A submitted benchmark: its job and where its report will be."""

    job_id: str
    report_path: Path
    _client: Any

    def status(self) -> str:
        return str(self._client.get_job_status(self.job_id))

    def logs(self) -> str:
        return str(self._client.get_job_logs(self.job_id))

    def stop(self) -> bool:
        return bool(self._client.stop_job(self.job_id))

    def wait(
        self, *, timeout_s: float | None = None, poll_interval_s: float = 1.0
    ) -> BenchmarkReport:
        """The job's report once it succeeded; RuntimeError (with its logs) when it failed or
        was stopped; TimeoutError after ``timeout_s`` (the job is not stopped: ``stop()``)."""
        if timeout_s is not None and timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        if poll_interval_s <= 0:
            raise ValueError("poll_interval_s must be positive")
        started = time.monotonic()
        while True:
            raw = self.status()
            status = raw.rsplit(".", 1)[-1]
            if status == "SUCCEEDED":
                if not Path(self.report_path).is_file():
                    raise FileNotFoundError(
                        f"Ray Job succeeded but its Benchmark report is not visible at "
                        f"{self.report_path}; use cluster-visible shared storage"
                    )
                return BenchmarkReport.from_dict(json.loads(Path(self.report_path).read_text()))
            if status in ("FAILED", "STOPPED"):
                raise RuntimeError(
                    f"Ray Job {self.job_id} finished with status {raw}\n{self.logs()}"
                )
            if timeout_s is not None and time.monotonic() - started >= timeout_s:
                raise TimeoutError(
                    f"timed out waiting for Ray Job {self.job_id}; the Job was not stopped"
                )
            time.sleep(poll_interval_s)


def submit_benchmark(
    *,
    benchmark: str,
    config: dict[str, Any],
    artifact_root: str | Path,
    target: str,
    source: LocalSource | None = None,
    profile: bool = True,
    profile_interval_s: float = 1.0,
    run_id: str | None = None,
) -> BenchmarkRun:
    """Submits the registered ``benchmark`` with ``config`` to the job server ``target``
    (``http://HOST:PORT``); its report goes to ``artifact_root/RUN_ID/summary.json``."""
    from ray.job_submission import JobSubmissionClient

    if not target:
        raise ValueError("Ray Jobs target must be non-empty")
    run_id = run_id or new_run_id()
    benchmark_class = registry.class_path(benchmark)
    workload_env = registry.runtime_env(benchmark)
    runtime_env = (
        source.runtime_env(workload_env)
        if source is not None
        else _installed_environment(workload_env)
    )
    encoded = base64.urlsafe_b64encode(
        json.dumps(dict(config), separators=(",", ":")).encode()
    ).decode()
    entrypoint = shlex.join(
        [
            "python", "-m", JOB_MODULE,
            "--benchmark-class", benchmark_class,
            "--config", encoded,
            "--run-id", run_id,
            "--profile", "1" if profile else "0",
            "--profile-interval-s", str(profile_interval_s),
        ]
    )  # fmt: skip
    client = JobSubmissionClient(target)
    job_id = client.submit_job(
        entrypoint=entrypoint,
        runtime_env=runtime_env,
        metadata={
            "rayorch_cpp.benchmark": benchmark,
            "rayorch_cpp.benchmark_class": benchmark_class,
            "rayorch_cpp.run_id": run_id,
        },
    )
    report_path = Path(artifact_root).resolve() / run_id / "summary.json"
    return BenchmarkRun(str(job_id), report_path, client)
