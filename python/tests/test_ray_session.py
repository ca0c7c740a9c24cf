"""Which clusters get this machine's Ray token (rayorch_cpp._ray_session.send_token_to): one
on this machine started with token authentication, read from its own process; never one
without it, whatever token file an earlier cluster left."""

from __future__ import annotations

import importlib
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rayorch_cpp._ray_session import local_cluster_auth_mode, send_token_to


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def gcs_processes(tmp_path: Path) -> Iterator[dict[str, int]]:
    """Two stand-ins for a cluster's GCS server (a process named gcs_server with its port on
    its command line, as Ray starts it), one started in token mode; their ports by mode."""
    script = tmp_path / "gcs_server"
    script.write_text("import sys, time\nprint('up', flush=True)\ntime.sleep(60)\n")
    ports = {"token": free_port(), "": free_port()}
    children = []
    for mode, port in ports.items():
        env = {k: v for k, v in os.environ.items() if k != "RAY_AUTH_MODE"}
        if mode:
            env["RAY_AUTH_MODE"] = mode
        child = subprocess.Popen(
            [sys.executable, str(script), f"--gcs_server_port={port}"],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None and child.stdout.readline() == "up\n"
        children.append(child)
    try:
        yield ports
    finally:
        for child in children:
            child.kill()
            child.wait()


def test_the_mode_a_local_cluster_was_started_with_is_read_from_its_process(
    gcs_processes: dict[str, int],
) -> None:
    assert local_cluster_auth_mode(gcs_processes["token"]) == "token"
    assert local_cluster_auth_mode(gcs_processes[""]) == ""
    assert local_cluster_auth_mode(free_port()) is None  # nothing of Ray listens there


def test_only_a_local_cluster_in_token_mode_gets_the_token_at_hand(
    gcs_processes: dict[str, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("0" * 64)  # left by an earlier cluster
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    monkeypatch.delenv("RAY_AUTH_TOKEN_PATH", raising=False)
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    assert not send_token_to("127.0.0.1", gcs_processes[""])
    assert "RAY_AUTH_MODE" not in os.environ
    assert not send_token_to("127.0.0.1", None)
    assert not send_token_to("192.0.2.1", gcs_processes["token"])  # not this machine
    assert "RAY_AUTH_MODE" not in os.environ
    try:
        assert send_token_to("127.0.0.1", gcs_processes["token"])
        assert os.environ["RAY_AUTH_MODE"] == "token"
        assert send_token_to("127.0.0.1", gcs_processes[""])  # RAY_AUTH_MODE set: as it says
    finally:
        monkeypatch.undo()
        if "ray._raylet" in sys.modules:  # Ray's cached mode back to this process's
            importlib.import_module("ray._raylet").Config.initialize("")
