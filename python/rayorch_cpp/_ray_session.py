"""Connecting the driver to a Ray cluster and shipping the pipeline to the Ray actors."""

from __future__ import annotations

import importlib
import ipaddress
import os
import socket
import sys
from pathlib import Path
from typing import Any

from ._compile import CompiledProgram
from ._values import ExecutionError


def import_ray() -> Any:
    """The ray module (imported on first use: Ray is needed by the Ray backend only)."""
    try:
        import ray
    except ImportError as error:  # pragma: no cover - ray is a pinned test dependency
        raise ExecutionError(
            "the Ray backend needs the 'ray' package: install the package with its "
            "'ray' extra (pip install 'rayorch-cpp[ray]', which pins ray==2.60.0)"
        ) from error
    return ray


def auth_token_at_hand() -> bool:
    """Whether this process has a Ray token to send: RAY_AUTH_TOKEN, the file
    RAY_AUTH_TOKEN_PATH names, or ~/.ray/auth_token (which ``ray start --head`` and any
    ``ray.init()`` that started a cluster write on their machine)."""
    if os.environ.get("RAY_AUTH_TOKEN"):
        return True
    path = os.environ.get("RAY_AUTH_TOKEN_PATH") or str(Path.home() / ".ray" / "auth_token")
    return Path(path).is_file()


def on_this_machine(host: str) -> bool:
    """Whether ``host`` names this machine (loopback, its name, or one of its addresses)."""
    if host in ("localhost", socket.gethostname()):
        return True
    try:
        if ipaddress.ip_address(host).is_loopback:
            return True
        return host in socket.gethostbyname_ex(socket.gethostname())[2]
    except (ValueError, OSError):
        return False


def local_cluster_auth_mode(port: int) -> str | None:
    """The RAY_AUTH_MODE that the Ray cluster on this machine listening at ``port`` was
    started with ("" when none), read from its GCS server's or dashboard's process
    (``--gcs_server_port=PORT``, ``dashboard.py ... --port=PORT``); None when no such process
    can be read here (another machine, PID namespace or user)."""
    wanted = (f"--gcs_server_port={port}", f"--port={port}")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
            if not any(a.decode(errors="replace") in wanted for a in args):
                continue
            if not any(b"gcs_server" in a or b"dashboard.py" in a for a in args[:2]):
                continue
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        for variable in environ:
            if variable.startswith(b"RAY_AUTH_MODE="):
                return variable.partition(b"=")[2].decode(errors="replace").lower()
        return ""
    return None


def send_token_to(host: str, port: int | None) -> bool:
    """Turns Ray's token authentication on for this process (RAY_AUTH_MODE=token, and Ray's
    cached configuration refreshed, as Ray does itself) when it joins a cluster on this
    machine that was started with token authentication (local_cluster_auth_mode), a token is
    at hand and RAY_AUTH_MODE is not set: such a cluster (``ray start --head`` in token mode)
    refuses a driver or client without its token, and Ray sends ~/.ray/auth_token unasked
    only to a cluster it finds by itself. A token file alone says nothing (an earlier cluster
    may have left it), so a cluster without token authentication is joined without one. A
    cluster on another machine never gets this machine's token unasked; say
    RAY_AUTH_MODE=token (and RAY_AUTH_TOKEN) for it. Returns whether the mode is token now."""
    if "RAY_AUTH_MODE" in os.environ:
        return os.environ["RAY_AUTH_MODE"].lower() == "token"
    if port is None or not (on_this_machine(host) and auth_token_at_hand()):
        return False
    if local_cluster_auth_mode(port) != "token":
        return False
    os.environ["RAY_AUTH_MODE"] = "token"
    if "ray._raylet" in sys.modules:  # Ray read the mode already: read it again
        importlib.import_module("ray._raylet").Config.initialize("")
    return True


def _send_token_when_joining(address: str | None) -> None:
    """send_token_to the cluster at ``address`` (or RAY_ADDRESS, for None and "auto") when
    it is host:port."""
    target = address if address not in (None, "auto") else os.environ.get("RAY_ADDRESS")
    if not target or target in ("auto", "local") or target.startswith("ray://"):
        return  # Ray sends the token to a cluster it finds by itself
    host, _, port = target.rpartition(":")
    send_token_to(host or target, int(port) if port.isdigit() else None)


def _why_not_joined(address: str | None, error: Exception) -> str:
    """What failed when ray.init could not join, and what to do. A cluster that refuses a
    driver's token (or its lack of one) does not say so to the caller: Ray retries for about
    20 s and raises a bare ConnectionError, so the token is named as the likely cause whenever
    something does listen at the address."""
    text = str(error).strip()
    first_line = text.splitlines()[0] if text else type(error).__name__
    where = repr(address or os.environ.get("RAY_ADDRESS") or "auto")
    if "version mismatch" in text.lower():
        return (
            f"the Ray cluster at {where} runs another Ray or Python version than this driver "
            f"({first_line}); the driver and the cluster must match exactly (this package "
            "pins ray==2.60.0)"
        )
    if os.environ.get("RAY_AUTH_MODE") == "token":
        token = (
            "this driver sent the token at hand (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or "
            "~/.ray/auth_token), which the cluster may have refused"
            if auth_token_at_hand()
            else "this driver has no token at hand"
        )
    else:
        token = "this driver has no token at hand and sent none"
    return (
        f"could not join the Ray cluster at {where} ({first_line}). A cluster with token "
        f"authentication (RAY_AUTH_MODE=token where it was started) refuses a driver without "
        f"its token, and {token}: run `ray get-auth-token` on the head node and set "
        "RAY_AUTH_TOKEN to it (or put it in ~/.ray/auth_token) with RAY_AUTH_MODE=token. "
        "Otherwise check that the address is the cluster's GCS (host:port, as `ray start "
        "--head` prints it), or pass address=None to start a local Ray instance"
    )


def connect(address: str | None, init_kwargs: dict[str, Any]) -> None:
    """Connects this process to a Ray cluster unless it already is: ``address`` (host:port,
    ``"auto"``, ``ray://...``), else RAY_ADDRESS, else a new local instance.

    An ``address`` of the form ``host:port`` is probed first, so a missing cluster is a
    clear error instead of a long retry loop inside ``ray.init``; a cluster that wants a
    token gets the one at hand (see _send_token_when_joining), and a failure says whether
    it was the token, a version mismatch or nothing listening.
    """
    ray = import_ray()
    if ray.is_initialized():
        return
    _send_token_when_joining(address)
    if address and address not in ("auto", "local") and not address.startswith("ray://"):
        host, _, port = address.rpartition(":")
        try:
            with socket.create_connection((host or "127.0.0.1", int(port)), timeout=2.0):
                pass
        except (OSError, ValueError) as error:
            raise ExecutionError(
                f"no Ray cluster answers at {address!r} ({error}): nothing listens there; "
                "start one with `ray start --head` and pass its GCS address (host:port), or "
                "pass address=None to start a local Ray instance"
            ) from error
    try:
        ray.init(address=address, **init_kwargs)
    except (ConnectionError, RuntimeError) as error:
        raise ExecutionError(_why_not_joined(address, error)) from error


def snapshot(pipeline: Any) -> bytes:
    """The pipeline as the actors will compile it, taken before the driver traces it (a
    forward() that draws from state it carries then draws the same on every actor)."""
    ray = import_ray()
    source = pipeline.source if isinstance(pipeline, CompiledProgram) else pipeline
    if source is None:
        raise ExecutionError("the Ray backend needs a Pipeline or forward callable to ship")
    try:
        blob: bytes = ray.cloudpickle.dumps(source)
    except Exception as error:
        raise ExecutionError(
            f"the pipeline cannot be shipped to the Ray workers: pickling it failed with "
            f"{type(error).__name__}: {error}; keep locks, files and clients out of the "
            "pipeline object and its forward() closure (build them in a UDF's constructor)"
        ) from error
    return blob
