"""The Ray backend's driver: RPCs/s with no-op UDFs, actor utilisation with 16 actors whose
UDF sleeps 50 ms per batch, and the 4 -> 8 -> 16 OCR-actor scaling of the simulated document
workload (python/bench/documents.py) on Ray; with --node-loss instead, the cost of losing one
of three nodes at mid-run in that workload (python/bench/node_loss.py).

    .venv/bin/python python/bench/ray_backend.py [--rpcs 4000] [--actors 8] [--docs 368]
        [--in-flight 1 2]
    .venv/bin/python python/bench/ray_backend.py --node-loss [--docs 368] [--page-kib 256]
        [--repeat 3]

Ray runs on this machine only, in a private network namespace with only loopback: the
script re-executes itself under `unshare --net --pid --fork --mount-proc` (as root) unless
it is in one already, and checks that every Ray node is on 127.0.0.1. Figures: the best of
three runs on a warm executor (actors built before the clock starts); the driver's time in
Ray submission and in the batched waits is printed with the RPC figure.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from loopback_ray import ensure_private_network, start_local_cluster, start_local_ray

HERE = Path(__file__).resolve().parent


class Noop:
    def run(self, xs: list[Any]) -> list[Any]:
        return xs


class Sleep50:
    def run(self, xs: list[Any]) -> list[Any]:
        time.sleep(0.05)
        return xs


def one_call(module: Any) -> Any:
    """A one-Call pipeline over `module`."""
    return lambda x: module(x)


def best_of(ex: Any, runs: int, *columns: Any, **options: Any) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(runs):
        start = time.perf_counter()
        r = ex.run(*columns, progress=False, **options)
        elapsed = time.perf_counter() - start
        if elapsed < best:
            best, result = elapsed, r
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rpcs", type=int, default=4000)
    parser.add_argument("--actors", type=int, default=8, help="no-op actors for the RPC figure")
    parser.add_argument("--docs", type=int, default=368)
    parser.add_argument("--only-rpcs", action="store_true", help="the RPC figure only")
    parser.add_argument("--cpus", type=int, default=64, help="logical CPUs of the Ray node")
    parser.add_argument(
        "--in-flight",
        type=int,
        nargs="+",
        default=[1, 2],
        help="max_tasks_in_flight_per_actor values to measure (each figure once per value)",
    )
    parser.add_argument(
        "--node-loss",
        action="store_true",
        help="only the cost of losing one of three nodes at mid-run (documents workload)",
    )
    parser.add_argument("--page-kib", type=int, default=256, help="--node-loss: page payload")
    parser.add_argument("--repeat", type=int, default=3, help="--node-loss: repetitions")
    a = parser.parse_args()
    ensure_private_network(__file__)
    os.environ["PYTHONPATH"] = os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])
    sys.path.insert(0, str(HERE))
    import rayorch_cpp as ro
    from rayorch_cpp import F

    if a.node_loss:
        import node_loss

        cpus_per_node = 8  # the 14 actors fit on two nodes: the workload survives a loss
        cluster, ray = start_local_cluster(3, cpus_per_node)
        print(f"machine: {os.cpu_count()} cores; Ray {ray.__version__}, 3 nodes on 127.0.0.1")
        try:
            node_loss.measure(ro, cluster, a.docs, a.page_kib, a.repeat, cpus_per_node)
        finally:
            ray.shutdown()
            cluster.shutdown()
        return
    ray = start_local_ray(a.cpus)
    print(f"machine: {os.cpu_count()} cores; Ray {ray.__version__}, one node on 127.0.0.1")

    # 1. Driver RPCs/s: one Call, batch_size 1, no-op UDF.
    for depth in a.in_flight:
        noop = ro.Module(Noop, replicas=a.actors, batch_size=1, max_tasks_in_flight_per_actor=depth)
        with ro.Executor(one_call(noop), backend="ray") as ex:
            rows = list(range(a.rpcs))
            ex.run(rows[:200], progress=False)  # warm-up
            stats = ex._ray.stats
            for key in stats:
                stats[key] = 0
            cpu = time.process_time()
            wall = time.perf_counter()
            best, result = best_of(ex, 3, rows)
            total = time.perf_counter() - wall  # the three runs, which the stats cover
            driver_cpu = (time.process_time() - cpu) / total
            assert result.outputs == rows
            per = 3 * a.rpcs
            print(
                f"no-op RPCs, {a.actors} actors x {depth} in flight: {a.rpcs} RPCs in "
                f"{best:.3f} s = {a.rpcs / best:,.0f} RPCs/s; driver per RPC: submit "
                f"{stats['submit_s'] / per * 1e6:.0f} us, wait+report fetch "
                f"{stats['wait_s'] / per * 1e6:.0f} us over {stats['waits'] / per:.2f} "
                f"waits/RPC, engine + rest "
                f"{(total - stats['submit_s'] - stats['wait_s']) / per * 1e6:.0f} us; "
                f"driver process CPU {driver_cpu:.0%} of wall (all its threads)"
            )

    if a.only_rpcs:
        ray.shutdown()
        return
    # 2. Utilisation: 16 actors, 50 ms per batch.
    for depth in a.in_flight:
        sleeper = ro.Module(Sleep50, replicas=16, batch_size=4, max_tasks_in_flight_per_actor=depth)
        with ro.Executor(one_call(sleeper), backend="ray") as ex:
            rows = list(range(16 * 4 * 40))  # 40 batches per actor: 2 s of work each
            ex.run(rows[:64], progress=False)
            best, result = best_of(ex, 3, rows)
            busy = sum(c.busy_s for c in result.calls)
            print(
                f"utilisation, 16 actors x 50 ms/batch, {depth} in flight, "
                f"{result.rpc_count} RPCs: {busy / (16 * best):.1%} busy over {best:.2f} s "
                f"(ideal {result.rpc_count / 16 * 0.05:.2f} s)"
            )

    # 3. The document workload with 4 and 16 OCR actors.
    import documents as d

    docs = [(i, n) for i, n in enumerate(d.corpus(a.docs))]
    for depth in a.in_flight:
        for actors in (4, 8, 16):

            class Docs(ro.Pipeline):
                def __init__(self, ocr_actors: int, in_flight: int) -> None:
                    queue = {"max_tasks_in_flight_per_actor": in_flight}
                    self.render = ro.Module(d.Render, replicas=4, batch_size=1, **queue)
                    self.ocr = ro.Module(d.Ocr, replicas=ocr_actors, batch_size=32, **queue)
                    self.assemble = ro.Module(d.Assemble, replicas=2, batch_size=1, **queue)

                def forward(self, doc: Any) -> Any:
                    return self.assemble(F.reduce(self.ocr(F.expand(self.render(doc)))), doc)

            with ro.Executor(Docs(actors, depth), backend="ray") as ex:
                best, result = best_of(ex, 2, docs)
            pages = sum(n for _, n in docs)
            print(
                f"documents, {actors:>2} OCR actors x {depth} in flight: {a.docs} docs / "
                f"{pages} pages in {best:.2f} s ({pages / best:,.0f} pages/s, "
                f"{result.rpc_count} RPCs)"
            )
    ray.shutdown()


if __name__ == "__main__":
    main()
