"""How long Ray takes to start actors on this machine: 1, 3 and 14 actors asked for at once,
with an empty constructor and with one that imports rayorch_cpp and numpy (what an actor of
the Ray backend imports); the time to the first and to the last one ready.

Run it inside a private loopback-only network namespace, as every Ray cluster here:

    unshare --net --pid --fork --mount-proc sh -c \\
        'ip link set lo up && .venv/bin/python python/bench/ray_actor_start.py'
"""

from __future__ import annotations

import os
import time
from typing import Any

import ray


@ray.remote(num_cpus=1)
class Probe:
    def __init__(self, heavy: bool) -> None:
        if heavy:
            import numpy  # noqa: F401

            import rayorch_cpp  # noqa: F401

    def ready(self) -> int:
        return os.getpid()


def main() -> None:
    ray.init(num_cpus=16, include_dashboard=False)
    addresses = {n["NodeManagerAddress"] for n in ray.nodes()}
    assert addresses == {"127.0.0.1"}, addresses
    print(f"Ray nodes: {len(ray.nodes())}, addresses: {', '.join(sorted(addresses))}")
    for heavy in (False, True):
        for n in (1, 3, 14):
            start = time.perf_counter()
            actors: list[Any] = [Probe.remote(heavy) for _ in range(n)]
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
