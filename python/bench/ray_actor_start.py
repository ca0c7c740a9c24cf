"""How long Ray takes to start actors on this machine: 1, 3 and 14 actors asked for at once,
with an empty constructor and with one that imports rayorch_cpp and numpy (what an actor of
the Ray backend imports); the time to the first and to the last one ready.

    .venv/bin/python python/bench/ray_actor_start.py

As root it re-executes itself in a private network namespace whose only interface is loopback
(loopback_ray.py), and it exits when a Ray node is not on 127.0.0.1.
"""

from __future__ import annotations

import os
import time
from typing import Any

from loopback_ray import ensure_private_network, start_local_ray


class Probe:
    def __init__(self, heavy: bool) -> None:
        if heavy:
            import numpy  # noqa: F401

            import rayorch_cpp  # noqa: F401

    def ready(self) -> int:
        return os.getpid()


def main() -> None:
    ensure_private_network(__file__)
    ray = start_local_ray(num_cpus=16)
    probe = ray.remote(num_cpus=1)(Probe)
    for heavy in (False, True):
        for n in (1, 3, 14):
            start = time.perf_counter()
            actors: list[Any] = [probe.remote(heavy) for _ in range(n)]
            pending = [a.ready.remote() for a in actors]
            times = []
            while pending:
                _, pending = ray.wait(pending, num_returns=1)
                times.append(time.perf_counter() - start)
            what = "importing rayorch_cpp and numpy" if heavy else "empty constructor"
            print(f"{what}, {n} actor(s): first ready {times[0]:.2f} s, last {times[-1]:.2f} s")
            for actor in actors:
                ray.kill(actor)
            time.sleep(1)


if __name__ == "__main__":
    main()
