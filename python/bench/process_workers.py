"""Python Modules on threads against worker processes (isolation="process") on the local
backend.

    .venv/bin/python python/bench/process_workers.py [--rows N] [--repeats R] [--skip-stages]

1. A CPU-bound pure-Python stage (a tokeniser-like loop of about 20 ms per row) and a numpy
   stage (small-array arithmetic, mostly under the GIL), with 1 and 2 replicas on threads
   and in processes: rows/s (best of R runs) and the speed-up of 2 replicas over 1.
2. Echoes of one value per call (an int, then numpy arrays of 64 KiB, 1 MiB, 8 MiB) through
   one worker process against the same calls on a thread and in line (the synchronous core:
   the UDF on the driver's own thread, no hop at all): the round trip (processes minus in
   line, per call; for the int, the fixed cost of a call to another process), the payload
   rate both ways, and the round trip in copies of the payload: one memcpy between two warm
   buffers (in the cache when the payload fits it) and one between buffers the cache does not
   hold (a pass over 256 MiB of pairs, as a round trip's own buffers are for large payloads).
   By construction an array of 256 KiB or more is copied 3 times per round trip (into the
   shared memory by the executor, read there in place by the worker, its echo written into
   the shared memory and copied out by the executor), a smaller one 4 times. Each echo is
   dropped as it is delivered (on_row), as in a streaming run.
3. Short calls: a pure-Python stage of about 0.2 ms per row (batch 1) in 1 and 2 worker
   processes, rows/s: what the fixed cost of a call to another process leaves of a fast UDF.

--skip-stages leaves out part 1 (the slow one).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

import rayorch_cpp as ro

WORDS = "the quick brown fox jumps over the lazy dog while tokenisers count every byte".split()


class Tokenise:
    """About 20 ms of pure-Python work per row on this machine (no GIL release)."""

    def run(self, rows: list[int]) -> list[int]:
        out = []
        for row in rows:
            vocabulary: dict[str, int] = {}
            for i in range(150_000):
                word = WORDS[(row + i) % len(WORDS)]
                vocabulary[word] = vocabulary.get(word, 0) + len(word) * (i & 7)
            out.append(sum(vocabulary.values()))
        return out


class Normalise:
    """Many small numpy operations per row: the GIL is taken between them."""

    def run(self, rows: list[int]) -> list[float]:
        out = []
        for row in rows:
            tile = np.full((16, 16), float(row))
            acc = 0.0
            for _ in range(1500):
                tile = (tile - tile.mean()) / (tile.std() + 1.0) + 1.0
                acc += float(tile[0, 0])
            out.append(acc)
        return out


class Short:
    """About 0.2 ms of pure-Python work per row on this machine."""

    def run(self, rows: list[int]) -> list[int]:
        out = []
        for row in rows:
            acc = 0
            for i in range(3000):
                acc += i * row
            out.append(acc)
        return out


class Echo:
    def run(self, arrays: list[Any]) -> list[Any]:
        return arrays


def rows_per_second(udf: type, replicas: int, isolation: str, rows: int, repeats: int) -> float:
    module = ro.Module(udf).ray_options(replicas=replicas, isolation=isolation, batch_size=1)
    with ro.Executor(lambda x: module(x)) as ex:
        ex.run(list(range(2 * replicas)), progress=False)  # warm
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            ex.run(list(range(rows)), progress=False)
            best = min(best, time.perf_counter() - start)
    return rows / best


def seconds_per_call(isolation: str, payload: Any, calls: int, repeats: int) -> float:
    """Per call, best of `repeats`; isolation "inline" runs the UDF on the driver's thread."""
    if isolation == "inline":
        echo = ro.Module(Echo)
        executor: Any = ro.SyncExecutor(lambda x: echo(x))
    else:
        echo = ro.Module(Echo).ray_options(isolation=isolation)
        executor = ro.Executor(lambda x: echo(x))
    with executor as ex:
        ex.run([payload] * 4, progress=False)  # warm
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            # Each echo is dropped when delivered, so memory is reused as a streaming run's
            # would be (a run that keeps every output also pays for fresh pages).
            ex.run([payload] * calls, input_batch_size=1, on_row=drop, progress=False)
            best = min(best, time.perf_counter() - start)
    return best / calls


def drop(row: int, value: Any) -> None:
    del row, value


def memcpy_seconds(size: int) -> float:
    source = np.ones(size, dtype=np.uint8)
    target = np.empty_like(source)
    np.copyto(target, source)
    best = float("inf")
    for _ in range(50):
        start = time.perf_counter()
        np.copyto(target, source)
        best = min(best, time.perf_counter() - start)
    return best


def cold_memcpy_seconds(size: int) -> float:
    """The median copy of `size` bytes between buffers that are not in the cache: a pass over
    pairs of buffers of 256 MiB in all, three times."""
    pairs = max(2, (256 << 20) // (2 * size))
    sources = [np.ones(size, dtype=np.uint8) for _ in range(pairs)]
    targets = [np.ones(size, dtype=np.uint8) for _ in range(pairs)]
    times = []
    for _ in range(3):
        for source, target in zip(sources, targets):
            start = time.perf_counter()
            np.copyto(target, source)
            times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-stages", action="store_true", help="leave out part 1")
    args = parser.parse_args()

    if not args.skip_stages:
        print("stage       isolation  1 replica rows/s  2 replicas rows/s  speed-up")
        for udf in (Tokenise, Normalise):
            for isolation in ("threads", "process"):
                one = rows_per_second(udf, 1, isolation, args.rows, args.repeats)
                two = rows_per_second(udf, 2, isolation, args.rows, args.repeats)
                print(
                    f"{udf.__name__:<11} {isolation:<10} {one:>16.1f} {two:>18.1f}"
                    f" {two / one:>9.2f}x"
                )

    print()
    print(
        "payload  calls  in line us/call  threads us/call  processes us/call  round trip us"
        "  GiB/s  memcpy us warm / cold  round trip in memcpys warm / cold"
    )
    inline = seconds_per_call("inline", 7, 2000, args.repeats)
    threads = seconds_per_call("threads", 7, 2000, args.repeats)
    processes = seconds_per_call("process", 7, 2000, args.repeats)
    print(
        f"{'an int':>9} {2000:>6} {inline * 1e6:>16.1f} {threads * 1e6:>16.1f} "
        f"{processes * 1e6:>18.1f} {(processes - inline) * 1e6:>14.1f}"
    )
    for size, calls in ((64 << 10, 400), (1 << 20, 200), (8 << 20, 40)):
        payload = np.ones(size, dtype=np.uint8)
        inline = seconds_per_call("inline", payload, calls, args.repeats)
        threads = seconds_per_call("threads", payload, calls, args.repeats)
        processes = seconds_per_call("process", payload, calls, args.repeats)
        round_trip = max(processes - inline, 1e-9)
        warm, cold = memcpy_seconds(size), cold_memcpy_seconds(size)
        print(
            f"{size >> 10:>5} KiB {calls:>6} {inline * 1e6:>16.1f} {threads * 1e6:>16.1f} "
            f"{processes * 1e6:>18.1f} "
            f"{round_trip * 1e6:>14.1f} {2 * size / round_trip / (1 << 30):>6.2f} "
            f"{warm * 1e6:>11.1f} / {cold * 1e6:>6.1f} "
            f"{round_trip / warm:>22.1f} / {round_trip / cold:>5.1f}"
        )

    print()
    one = rows_per_second(Short, 1, "process", 3000, args.repeats)
    two = rows_per_second(Short, 2, "process", 3000, args.repeats)
    print(f"short calls (about 0.2 ms per row), process: 1 replica {one:.0f} rows/s,")
    print(f"  2 replicas {two:.0f} rows/s ({two / one:.2f}x)")


if __name__ == "__main__":
    main()
