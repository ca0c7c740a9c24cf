"""Runs the job-server cases (cases_job_server.py) in a private network and PID namespace with
only loopback, where they start a Ray cluster with `ray start --head` and its job server; when
the namespace ends, nothing it started can outlive it. Each case is reported as its own test."""

from __future__ import annotations

import ast
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases_job_server.py"
RESULTS_PLUGIN = HERE.parent / "ray_backend"  # case_results.py
TIMEOUT_S = 900
CASE_IDS = [
    node.name
    for node in ast.parse(CASES.read_text()).body
    if isinstance(node, ast.FunctionDef) and node.name.startswith("test")
]


def unavailable() -> str | None:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "needs unshare and ip for a private loopback-only namespace"
    if os.geteuid() != 0:
        return "needs root for a private loopback-only namespace (unshare --net --pid)"
    try:
        import aiohttp  # noqa: F401  # the job server's, from ray[default]
    except ImportError:
        return "needs ray[default] (the job server)"
    return None


@pytest.fixture(scope="session")
def namespaced_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    results = tmp_path_factory.mktemp("job_cases") / "results.json"
    python_path = os.pathsep.join(
        p for p in (str(RESULTS_PLUGIN), os.environ.get("PYTHONPATH")) if p
    )
    command = (
        f"ip link set lo up && RAYORCH_CASE_RESULTS={shlex.quote(str(results))} "
        f"PYTHONPATH={shlex.quote(python_path)} "
        f"{shlex.quote(sys.executable)} -m pytest -q -p no:cacheprovider -p case_results "
        f"-o python_files=cases_*.py --rootdir {shlex.quote(str(HERE))} {shlex.quote(str(CASES))}"
    )
    try:
        done = subprocess.run(
            ["unshare", "--net", "--pid", "--fork", "--mount-proc", "sh", "-c", command],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
        output = done.stdout[-20000:] + done.stderr[-5000:]
    except subprocess.TimeoutExpired as expired:
        output = f"timed out after {TIMEOUT_S} s: " + str(expired.stdout or "")[-20000:]
    cases = json.loads(results.read_text())["cases"] if results.exists() else {}
    return {"cases": cases, "output": output}


@pytest.mark.parametrize("case", CASE_IDS)
def test_job_server_case(namespaced_run: dict[str, Any], case: str) -> None:
    found = namespaced_run["cases"].get(case)
    if found is None:
        pytest.fail(
            f"no result for {case}; the namespaced run's output:\n{namespaced_run['output']}"
        )
    if found["outcome"] == "failed":
        pytest.fail(found["message"], pytrace=False)
    if found["outcome"] == "skipped":
        pytest.skip(found["message"])
