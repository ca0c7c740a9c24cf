"""Python Modules in worker processes (isolation="process", docs/ISOLATION.md): results as on
threads, replicas in processes of their own, worker losses that cost one worker, values that
cross pickled with out-of-band buffers, and no process left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rayorch_cpp as ro
from process_udfs import (
    ArrayFacts,
    BrokenConstructor,
    Culprit,
    Descriptors,
    Devices,
    Plus,
    hierarchy,
    rendered_pages,
    squares,
)


def test_replicas_run_in_worker_processes_with_their_own_replica_index() -> None:
    workers: set[tuple[int, int]] = set()
    with ro.Executor(squares(2, "process")) as ex:
        # Eager start: the second worker may join after a run ended; run until both worked.
        for _ in range(50):
            out = ex.run(list(range(40)), progress=False).outputs
            assert [o[0] for o in out] == [x * x for x in range(40)]
            workers |= {(pid, index) for _, pid, index in out}
            if len(workers) == 2:
                break
    assert os.getpid() not in {pid for pid, _ in workers}
    assert {index for _, index in workers} == {0, 1}
    assert len({pid for pid, _ in workers}) == 2


def test_an_executor_wide_isolation_applies_to_every_module() -> None:
    with ro.Executor(squares(1, None), isolation="process") as ex:
        out = ex.run([1, 2, 3], progress=False).outputs
    assert [o[0] for o in out] == [1, 4, 9]
    assert all(pid != os.getpid() for _, pid, _ in out)
    with ro.Executor(squares(1, None)) as ex:
        assert all(pid == os.getpid() for _, pid, _ in ex.run([1], progress=False).outputs)


@pytest.mark.parametrize("isolation", ["threads", "process"])
def test_a_hierarchy_gives_the_same_outputs_on_threads_processes_and_the_sync_core(
    isolation: str,
) -> None:
    data = [0, 3, 1, 7, 2, 5]
    with ro.SyncExecutor(hierarchy("threads")) as ex:
        expected = ex.run(data).outputs
    with ro.Executor(hierarchy(isolation)) as ex:
        assert ex.run(data, input_batch_size=2, progress=False).outputs == expected
    assert expected == [sum(range(n)) + 5 * n for n in data]


def test_a_cpp_module_and_python_modules_mix_threads_and_processes() -> None:
    upper = ro.CppModule("Upper")
    upper_isolated = ro.CppModule("Upper", isolation="process")
    tag = ro.Module(lambda xs: [f"<{x}>" for x in xs]).ray_options(isolation="process")

    def forward(s: ro.Port) -> Any:
        return upper_isolated(tag(upper(s)))

    with ro.Executor(forward) as ex:
        assert ex.run(["ab", "c"], progress=False).outputs == ["<AB>", "<C>"]


@pytest.mark.parametrize(
    ("how", "cause"),
    [
        ("segfault", "worker crashed: SIGSEGV"),
        ("abort", "worker crashed: SIGABRT"),
        ("exit", "worker exited with status 3"),
        ("memory", "worker exceeded its memory limit (512 MiB)"),
        ("hang", "Timeout: the RPC ran past the 1000 ms timeout"),
    ],
)
def test_a_row_that_ends_its_worker_costs_that_row_only(how: str, cause: str) -> None:
    options: dict[str, Any] = {"isolation": "process", "batch_size": 4, "replicas": 2}
    if how == "memory":
        options["memory_limit"] = 512 << 20
    if how == "hang":
        options["timeout"] = 1.0
    culprit = ro.Module(Culprit).pre_init(how, 6).ray_options(**options)
    with ro.Executor(lambda x: culprit(x)) as ex:
        out = ex.run(list(range(12)), progress=False).outputs
        # The executor keeps its (replaced) workers: a second run works.
        assert ex.run([1, 2], progress=False).outputs == [10, 20]
    assert [o for i, o in enumerate(out) if i != 6] == [x * 10 for x in range(12) if x != 6]
    issue = out[6]
    assert isinstance(issue, ro.OutputIssue) and issue.outcome is ro.ItemOutcome.FAILED
    assert issue.cause is not None and cause in issue.cause
    if how != "hang":
        assert f"row 6 ends this worker ({how})" in issue.cause  # the worker's stderr tail


@pytest.mark.parametrize(
    ("how", "message"),
    [("raise", "ValueError: no model file"), ("crash", "worker crashed: SIGSEGV")],
)
def test_a_constructor_failure_is_an_error_naming_the_module(how: str, message: str) -> None:
    broken = ro.Module(BrokenConstructor).pre_init(how).ray_options(isolation="process")
    # Eager start: the executor returns at once and the constructors' failure reaches the
    # first run (or await_actors()).
    ex = ro.Executor(lambda x: broken(x))
    with pytest.raises(ro.ExecutionError) as info:
        ex.run([1], progress=False)
    assert "BrokenConstructor" in str(info.value)
    assert message in str(info.value)


def test_arrays_cross_once_each_way_and_arrive_read_only() -> None:
    facts = ro.Module(ArrayFacts).ray_options(isolation="process")
    big = np.arange(1 << 20, dtype=np.float64)  # 8 MiB
    with ro.Executor(lambda a: facts(a)) as ex:
        (writable, base, size, mean, where, echo), small = ex.run(
            [big, np.ones(3)], progress=False
        ).outputs
    # In the worker, read-only as on Ray: a large array is read in place, in the memory the
    # worker shares with the executor (no copy); a small one is one bytes object holding
    # exactly its data (the decoder's one copy out of the shared memory).
    assert (writable, base, size, mean) == (False, "InPlaceBuffer", big.nbytes, big.mean())
    assert where == "rayorch-worker-arena"
    assert small[:3] == (False, "bytes", 24) and small[4] == "private"
    # Back in the driver: the same structure, equal values, and the caller's array untouched.
    assert np.array_equal(echo, big) and not echo.flags.writeable
    assert big.flags.writeable


def test_an_unpicklable_pipeline_is_a_clear_error() -> None:
    lock = __import__("threading").Lock()
    plus = ro.Module(Plus).pre_init(1).ray_options(isolation="process")

    def forward(x: ro.Port) -> Any:
        with lock:
            return plus(x)

    with pytest.raises(ro.ExecutionError, match="cannot be sent to the worker processes of Plus"):
        ro.Executor(forward)


def test_a_forward_that_differs_in_the_worker_server_is_a_clear_error() -> None:
    driver = os.getpid()
    plus = ro.Module(Plus).pre_init(1).ray_options(isolation="process")

    def forward(x: ro.Port) -> Any:
        return plus(x) if os.getpid() == driver else plus(plus(x))

    with pytest.raises(ro.ExecutionError, match="differs from the executor's"):
        ro.Executor(forward)


def _descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found: set[int] = set()
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.add(child)
            stack.append(child)
    return found


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(pid)
    return alive


def _wait_until_gone(pids: set[int], seconds: float = 10.0) -> set[int]:
    deadline = time.monotonic() + seconds
    while _alive(pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return _alive(pids)


def test_no_worker_outlives_close_or_an_exception_in_on_row() -> None:
    before = _descendants(os.getpid())
    ex = ro.Executor(squares(2, "process"))
    ex.run([1, 2], progress=False)
    deadline = time.monotonic() + 30
    while len(_descendants(os.getpid()) - before) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)  # eager start: the second worker joins in the background
    workers = _descendants(os.getpid()) - before
    assert len(workers) >= 3  # the server and two workers

    def stop(_: int, __: Any) -> None:
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        ex.run(list(range(10)), on_row=stop, progress=False)
    assert _alive(workers) == workers  # an exception in on_row keeps the executor's workers
    ex.close()
    assert _wait_until_gone(workers) == set()


def test_no_worker_outlives_a_killed_driver(tmp_path: Path) -> None:
    script = tmp_path / "driver.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys, time
            import rayorch_cpp as ro

            class Pid:
                def run(self, xs):
                    import os
                    time.sleep(0.005)
                    return [os.getpid() for _ in xs]

            pid = ro.Module(Pid).ray_options(isolation="process", replicas=2, batch_size=1)
            ex = ro.Executor(lambda x: pid(x))
            pids = set()
            while len(pids) < 2:  # both workers started (eager start)
                pids |= set(ex.run([0, 1, 2, 3], progress=False).outputs)
            print("ready", flush=True)
            time.sleep(600)
            """
        )
    )
    driver = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=tmp_path
    )
    try:
        assert driver.stdout is not None
        assert driver.stdout.readline().strip() == "ready"
        workers = _descendants(driver.pid)
        assert len(workers) >= 3
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
        assert _wait_until_gone(workers) == set()
    finally:
        driver.kill()
        driver.wait()


def test_each_worker_sees_only_its_replicas_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7")
    devices = ro.Module(Devices).ray_options(
        replicas=2, num_gpus=2, batch_size=1, isolation="process"
    )
    seen: set[tuple[str, tuple[str, ...]]] = set()
    with ro.Executor(lambda x: devices(x)) as ex:
        for _ in range(50):  # until both replicas worked (eager start)
            seen |= set(ex.run(list(range(30)), progress=False).outputs)
            if len(seen) >= 2:
                break
    assert seen == {("4,5", ("4", "5")), ("6,7", ("6", "7"))}
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "4,5,6,7"  # the executor's own is unchanged


def test_cpp_values_cross_to_python_workers_through_their_codec(tmp_path: Path) -> None:
    samples = ro._core.pdf2md_make_samples(str(tmp_path), docs=2, seed=5, max_pages=3, corrupt=0)
    paths = [p for p, _ in samples]
    results = []
    for isolation in ("threads", "process"):
        with ro.Executor(rendered_pages(isolation)) as ex:
            results.append(ex.run(paths, progress=False).outputs)
    threads, processes = results
    facts = [[page[:4] for page in doc] for doc in threads]
    assert facts == [[page[:4] for page in doc] for doc in processes]
    assert [len(doc) for doc in facts] == [len(pages) for _, pages in samples]
    # The image that came back from the worker is the C++ type with the same pixels.
    back = processes[0][0][4]
    assert isinstance(back, ro._core.PageImage) and back.pixels == threads[0][0][4].pixels


def test_a_worker_holds_its_own_socket_and_none_of_the_servers() -> None:
    descriptors = ro.Module(Descriptors).ray_options(isolation="process")
    with ro.Executor(lambda x: descriptors(x)) as ex:
        [targets] = ex.run([0], progress=False).outputs
    assert sum(t.startswith("socket:") for t in targets) == 1, targets
    assert not any("signalfd" in t for t in targets), targets
    assert sum("rayorch-worker-arena" in t for t in targets) == 1, targets


CTRL_C_CHILD = r"""
import time

import rayorch_cpp as ro


class Slow:
    def run(self, xs):
        print("call", flush=True)
        time.sleep(0.05)
        return [x * 2 for x in xs]


slow = ro.Module(Slow).ray_options(batch_size=1, replicas=2, isolation="process")
ex = ro.Executor(lambda x: slow(x))
try:
    ex.run(list(range(200)), progress=False)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    print(f"again {ex.run([1, 2, 3], progress=False).outputs}", flush=True)
else:
    print("finished", flush=True)
"""


def test_ctrl_c_stops_the_run_and_the_workers_stay_for_the_next_one() -> None:
    # Ctrl-C in a terminal signals the whole process group: the driver, the worker server
    # and the workers. Only the driver acts on it.
    child = subprocess.Popen(
        [sys.executable, "-c", CTRL_C_CHILD],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert child.stdout is not None
    assert "call" in child.stdout.readline()  # the workers run: send the Ctrl-C
    os.killpg(child.pid, signal.SIGINT)
    try:
        out, err = child.communicate(timeout=60)  # a guard against a hang only
    except subprocess.TimeoutExpired:
        child.kill()
        pytest.fail("the child did not exit")
    # The workers' "call" lines may interleave on the shared pipe.
    lines = [line for line in out.replace("call", "").splitlines() if line]
    assert child.returncode == 0, err
    assert lines == ["interrupted", "again [2, 4, 6]"], (lines, err)
