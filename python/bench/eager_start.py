"""Eager start: what slow constructors cost the first run (docs/DESIGN.md 6.1.4).

    .venv/bin/python python/bench/eager_start.py [--replicas 4] [--load-s 0.5] [--rows 40]

One Module of `replicas` actors whose constructors take 0, load_s, 2*load_s, ... seconds (by
replica index, as a model that loads would), and `rows` rows of 50 ms calls of one row each.
The clock starts before the Executor is made, so model loading is counted. Prints when the
executor returned, when the first output arrived and when the run ended.

Figures: BENCHMARKS.md, "eager start".
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import rayorch_cpp as ro


class Loads:
    """Replica k loads for k * load_s seconds; each call takes 50 ms."""

    def __init__(self, load_s: float) -> None:
        context = ro.replica_context()
        time.sleep(load_s * (context.index if context is not None else 0))

    def run(self, xs: list[int]) -> list[int]:
        time.sleep(0.05)
        return [x + 1 for x in xs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=4)
    parser.add_argument("--load-s", type=float, default=0.5)
    parser.add_argument("--rows", type=int, default=40)
    args = parser.parse_args()
    loads = ro.Module(Loads, replicas=args.replicas, batch_size=1).pre_init(args.load_s)
    first: list[float] = []
    began = time.monotonic()

    def on_row(_: int, __: Any) -> None:
        if not first:
            first.append(time.monotonic() - began)

    with ro.Executor(lambda x: loads(x)) as ex:
        made = time.monotonic() - began
        result = ex.run(list(range(args.rows)), progress=False, on_row=on_row)
        ended = time.monotonic() - began
    # A build from before eager start reports no actor starts (BENCHMARKS.md runs it too).
    pools = getattr(result, "pools", None)
    ready = (
        "at " + ", ".join(f"{s.started_s:.2f}" for s in pools[0].started) + " s"
        if pools
        else "not reported by this build"
    )
    print(
        f"executor returned {made:.2f} s, first output {first[0]:.2f} s, run ended {ended:.2f} s"
        f" (actors ready {ready} since the executor was made)"
    )


if __name__ == "__main__":
    main()
