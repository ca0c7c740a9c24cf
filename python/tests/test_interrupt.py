"""Ctrl-C (SIGINT) stops a local run() within a second or so and leaves the executor usable.

The SIGINT scenarios run in a child process: the child's UDF prints one line per call, the
test sends SIGINT after the first, and the child reports what it saw."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import rayorch_cpp as ro
from conftest import Ident, make_executor

CHILD = r"""
import sys
import threading
import time

import rayorch_cpp as ro

calls = []
lock = threading.Lock()


class Slow:
    def run(self, xs):
        with lock:
            calls.append(time.monotonic())
            print("call", flush=True)
        time.sleep(0.05)
        return [x * 2 for x in xs]


slow = ro.RayModule(Slow).ray_options(batch_size=1, replicas=2)
ex = ro.Executor(lambda x: slow(x))
try:
    ex.run(list(range(200)), progress=False)
except KeyboardInterrupt:
    with lock:
        seen = len(calls)
    print(f"interrupted after {seen} calls", flush=True)
    if sys.argv[1] == "exit":
        raise
    time.sleep(0.5)
    with lock:
        print(f"calls started after the interrupt: {len(calls) - seen}", flush=True)
    out = ex.run([1, 2, 3], progress=False).outputs
    print(f"again {out}", flush=True)
else:
    print("finished", flush=True)
"""


def interrupt_child(scenario: str) -> tuple[int, list[str], str, float]:
    """Runs the child, sends SIGINT after its first UDF call; returns its exit status, its
    stdout lines, its stderr and the seconds from SIGINT to its 'interrupted' line."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent))
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, scenario],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert child.stdout is not None
    lines = [child.stdout.readline().strip()]
    assert lines == ["call"], lines
    child.send_signal(signal.SIGINT)
    sent = time.monotonic()
    latency = float("inf")
    for line in child.stdout:
        lines.append(line.strip())
        if line.startswith("interrupted"):
            latency = time.monotonic() - sent
    try:
        _, err = child.communicate(timeout=60)  # a guard against a hang only
    except subprocess.TimeoutExpired:
        child.kill()
        pytest.fail("the child did not exit")
    return child.returncode, lines, err, latency


def interrupted_after(lines: list[str]) -> int:
    marks = [line for line in lines if line.startswith("interrupted after ")]
    assert len(marks) == 1, lines
    return int(marks[0].split()[2])


def test_sigint_stops_a_local_run_within_a_second_or_two() -> None:
    status, lines, err, latency = interrupt_child("exit")
    assert status != 0 and "KeyboardInterrupt" in err, (status, err)
    assert "finished" not in lines
    assert interrupted_after(lines) < 100, lines  # the whole run makes 200 calls
    assert latency < 2.0, latency


def test_the_executor_runs_again_after_an_interrupt() -> None:
    status, lines, err, latency = interrupt_child("again")
    assert status == 0, err
    assert interrupted_after(lines) < 100, lines
    assert latency < 2.0, latency
    assert "calls started after the interrupt: 0" in lines, lines
    assert lines[-1] == "again [2, 4, 6]", lines


def test_a_keyboard_interrupt_from_on_row_keeps_the_executor(executor_kind: str) -> None:
    ident = ro.RayModule(Ident)

    def stop(index: int, output: object) -> None:
        raise KeyboardInterrupt

    with make_executor(executor_kind, lambda x: ident(x)) as ex:
        with pytest.raises(KeyboardInterrupt):
            ex.run([1, 2, 3], on_row=stop, progress=False)
        assert not ex.closed
        assert ex.run([1, 2, 3], progress=False).outputs == [1, 2, 3]
