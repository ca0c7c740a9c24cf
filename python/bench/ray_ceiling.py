"""What Ray itself allows on this machine: no-op actor calls per second from one Python
driver loop, with no engine, shaped like the Ray backend's RPCs (a small bytes argument, two
return objects, batched ray.wait/ray.get). It is the ceiling python/bench/ray_backend.py's
RPC figure is measured against.

    .venv/bin/python python/bench/ray_ceiling.py [--calls 4000] [--actors 8] [--repeats 3]

Arms: one call in flight per actor (what the engine's worker contract allows: a task goes
to an idle worker only), with and without a block put in the object store passed as an
argument with every call (what the backend did before actors kept their blocks), and two
and four calls queued per actor. Ray runs in a private loopback-only namespace (the script
re-executes itself under `unshare` as root) and every node address is checked.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

from loopback_ray import ensure_private_network, start_local_ray


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=4000)
    parser.add_argument("--actors", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    a = parser.parse_args()
    ensure_private_network(__file__)
    ray = start_local_ray(64)

    @ray.remote(max_restarts=0, max_task_retries=0)
    class Actor:
        def run(self, task: bytes, *blocks: Any) -> tuple[bytes, bytes]:
            return task, task

    actors = [Actor.remote() for _ in range(a.actors)]
    ray.get([x.run.remote(b"") for x in actors])
    block = ray.put(list(range(a.calls)))
    print(f"machine: {os.cpu_count()} cores; Ray {ray.__version__}, one node on 127.0.0.1")
    arms = [
        (1, (), "1 in flight per actor"),
        (1, (block,), "1 in flight per actor, a put block with every call"),
        (2, (), "2 queued per actor"),
        (4, (), "4 queued per actor"),
    ]

    def measure(depth: int, args: tuple[Any, ...]) -> tuple[float, float]:
        methods = [x.run.options(num_returns=2) for x in actors]
        pending: dict[Any, int] = {}
        sent = done = 0
        wall, cpu = time.perf_counter(), time.process_time()
        for i, m in enumerate(methods):
            for _ in range(depth):
                pending[m.remote(b"x" * 64, *args)[0]] = i
                sent += 1
        while done < a.calls:
            refs = list(pending)
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
            if not ready:
                ready, _ = ray.wait(refs, num_returns=1, timeout=10)
            ray.get(ready)
            for r in ready:
                i = pending.pop(r)
                done += 1
                if sent < a.calls:
                    pending[methods[i].remote(b"x" * 64, *args)[0]] = i
                    sent += 1
        elapsed = time.perf_counter() - wall
        return a.calls / elapsed, (time.process_time() - cpu) / elapsed

    measure(1, ())  # warm-up
    results: list[list[tuple[float, float]]] = [[] for _ in arms]
    for _ in range(a.repeats):  # interleaved, so load changes hit every arm alike
        for k, (depth, args, _) in enumerate(arms):
            results[k].append(measure(depth, args))
    for (_, _, label), runs in zip(arms, results, strict=True):
        rates = sorted(r for r, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(
            f"{label}: median {statistics.median(rates):,.0f} calls/s "
            f"(runs {', '.join(f'{r:,.0f}' for r in rates)}), driver CPU {cpu:.0%} of wall",
            flush=True,
        )
    ray.shutdown()


if __name__ == "__main__":
    main()
