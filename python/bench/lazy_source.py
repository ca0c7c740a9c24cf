"""A lazy source (a generator) against the same rows in a list: rows per second through one
Python no-op Call, the most source rows alive at once (pulled, not yet delivered), and the
growth of the process's peak memory.

    .venv/bin/python python/bench/lazy_source.py [--rows N] [--bytes B] [--batch-rows R]

Each row is a fresh bytes value of B bytes. The lazy run goes first, so the peak memory it
adds is its own; the list run then adds the list.
"""

from __future__ import annotations

import argparse
import resource
import time
from collections.abc import Iterator
from typing import Any

import rayorch_cpp as ro


class Noop:
    def run(self, xs: list[Any]) -> list[Any]:
        return [len(x) for x in xs]


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--bytes", type=int, default=1000)
    parser.add_argument("--batch-rows", type=int, default=4096)
    a = parser.parse_args()
    noop = ro.RayModule(Noop).ray_options(batch_size=64, replicas=2)
    state = {"pulled": 0, "delivered": 0, "held": 0}

    def rows() -> Iterator[bytes]:
        for i in range(a.rows):
            state["pulled"] += 1
            yield i.to_bytes(8, "little") * (a.bytes // 8)

    def on_row(index: int, output: Any) -> None:
        state["delivered"] += 1
        state["held"] = max(state["held"], state["pulled"] - state["delivered"] + 1)

    with ro.Executor(lambda x: noop(x)) as ex:
        ex.run(iter([b"warm"]), progress=False)
        for name, source in (("generator", lambda: rows()), ("list", lambda: list(rows()))):
            state.update(pulled=0, delivered=0, held=0)
            before = peak_mib()
            start = time.perf_counter()
            ex.run(
                source(),
                input_batch_size=a.batch_rows,
                max_active_input_batches=2,
                on_row=on_row,
                progress=False,
            )
            seconds = time.perf_counter() - start
            print(
                f"{name:<10} {a.rows} rows  {a.rows / seconds / 1e3:7.1f} k rows/s  "
                f"most rows alive {state['held']:>7}  peak memory +{peak_mib() - before:6.1f} MiB"
            )


if __name__ == "__main__":
    main()
