"""The Ray backend's suite (ray_cluster/cases_ray.py), run in a private network and PID
namespace with only loopback, so the Ray cluster it starts binds nothing but 127.0.0.1 and
none of its processes can outlive it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def namespace_available() -> bool:
    if shutil.which("unshare") is None or shutil.which("ip") is None or os.geteuid() != 0:
        return False
    probe = subprocess.run(
        ["unshare", "--net", "--pid", "--fork", "--mount-proc", "true"], capture_output=True
    )
    return probe.returncode == 0


def test_ray_backend_on_a_loopback_cluster() -> None:
    pytest.importorskip("ray")
    if not namespace_available():
        pytest.skip("needs root with unshare and ip for a private loopback-only namespace")
    command = (
        "ip link set lo up && "
        f"{sys.executable} -m pytest -q -p no:cacheprovider -o python_files=cases_*.py "
        f"--rootdir {HERE} {HERE / 'ray_cluster' / 'cases_ray.py'} "
        + os.environ.get("RAYORCH_RAY_TEST_ARGS", "")
    )
    result = subprocess.run(
        ["unshare", "--net", "--pid", "--fork", "--mount-proc", "sh", "-c", command],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    print(result.stdout[-20000:], result.stderr[-5000:])
    assert result.returncode == 0, result.stdout[-20000:] + result.stderr[-5000:]
