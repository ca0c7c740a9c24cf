"""Grains per second of the engine's driver with Python no-op UDFs (the bindings' cost).

    .venv/bin/python python/bench/noop_grains.py [--rows N] [--batch B] [--replicas R]

Three shapes: one Call on N rows; a chain of three Calls; an expand/reduce (N/8 roots of 8
children each, one Call on the children). Prints Grains/s over the best of three runs.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import rayorch_cpp as ro
from rayorch_cpp import F


class Noop:
    def run(self, xs: list[Any]) -> list[Any]:
        return xs


class Eight:
    def run(self, xs: list[Any]) -> list[list[int]]:
        return [[0] * 8 for _ in xs]


def measure(name: str, forward: Any, rows: list[Any], grains: int) -> None:
    with ro.Executor(forward) as ex:
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            ex.run(rows, input_batch_size=4096, max_active_input_batches=4, progress=False)
            best = min(best, time.perf_counter() - start)
    print(f"{name:<28} {grains:>9} Grains  {best:7.3f} s  {grains / best / 1e3:8.1f} k Grains/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--replicas", type=int, default=2)
    a = parser.parse_args()

    def module(udf: Any = Noop) -> ro.RayModule:
        return ro.RayModule(udf).ray_options(batch_size=a.batch, replicas=a.replicas)

    noop = module()
    measure("one Call", lambda x: noop(x), list(range(a.rows)), a.rows)
    m1, m2, m3 = module(), module(), module()
    measure("chain of 3 Calls", lambda x: m3(m2(m1(x))), list(range(a.rows)), 3 * a.rows)
    eight, leaf = module(Eight), module()
    roots = a.rows // 8
    measure(
        "expand 8 / Call / reduce",
        lambda x: F.reduce(leaf(F.expand(eight(x)))),
        list(range(roots)),
        roots + roots * 8,
    )


if __name__ == "__main__":
    main()
