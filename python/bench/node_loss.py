"""The cost of losing one of three Ray nodes at mid-run in the simulated document workload
(python/bench/documents.py), run from ray_backend.py --node-loss.

The pages carry a payload (256 KiB by default), so they live in the object store of the
node whose render actor made them, as real page images do. Each repetition runs the
documents twice on a fresh executor (actors started before the clock): once with every node
up, once with the node that holds the most render actors removed without grace when half
the documents are done; then a fresh node takes the lost one's place. Prints both
end-to-end times and the work re-done (values rebuilt, Grains re-executed, the seconds the
re-executions ran, actors replaced, nodes the run reported lost).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import documents as d
from loopback_ray import check_on_loopback


class RenderLarge:
    """documents.Render with a payload of `page_bytes` per page."""

    def __init__(self, page_bytes: int) -> None:
        self.payload = b"p" * page_bytes

    def run(self, docs: list[tuple[int, int]]) -> list[list[tuple[int, int, bytes]]]:
        out = []
        for doc, n in docs:
            d.sleep_ms(0.5 * n)
            out.append([(doc, i, self.payload) for i in range(n)])
        return out


class OcrLarge:
    """documents.Ocr over pages with a payload."""

    def run(self, pages: list[tuple[int, int, bytes]]) -> list[int]:
        d.sleep_ms(30.0 + 0.5 * len(pages))
        return [doc * 1_000_000 + i for doc, i, _ in pages]


def pipeline(ro: Any, page_bytes: int) -> Any:
    F = ro.F

    class LargeDocuments(ro.Pipeline):  # type: ignore[misc]
        def __init__(self) -> None:
            self.render = ro.Module(RenderLarge, replicas=4, batch_size=1).pre_init(page_bytes)
            self.ocr = ro.Module(OcrLarge, replicas=8, batch_size=32)
            self.assemble = ro.Module(d.Assemble, replicas=2, batch_size=1)

        def forward(self, doc: Any) -> Any:
            return self.assemble(F.reduce(self.ocr(F.expand(self.render(doc)))), doc)

    return LargeDocuments()


def run_once(
    ro: Any, cluster: Any, docs: list[tuple[int, int]], page_bytes: int, lose: bool
) -> tuple[float, Any, list[float]]:
    """One run on a fresh executor; with `lose`, the node holding the most render actors is
    removed without grace once half the documents are done. Returns (E2E seconds, result,
    the seconds after the loss at which actors that started after it were ready)."""
    with ro.Executor(pipeline(ro, page_bytes), backend="ray") as ex:
        made = time.perf_counter()
        ex.run(docs[:4], progress=False)  # every actor started, warm
        render_nodes = ex.actor_nodes()[0]
        victim_id = max(set(render_nodes), key=render_nodes.count)
        victim = next(n for n in cluster.worker_nodes if n.node_id == victim_id)
        fired = threading.Event()

        fired_at = [0.0]

        def progress(done: int, total: int | None) -> None:
            if lose and not fired.is_set() and total and done >= total // 2:
                fired_at[0] = time.perf_counter() - made
                fired.set()
                threading.Thread(
                    target=cluster.remove_node, args=(victim,), kwargs={"allow_graceful": False}
                ).start()

        start = time.perf_counter()
        result = ex.run(docs, progress=progress)
        e2e = time.perf_counter() - start
        # When the replacements of the lost actors were ready, after the node went.
        ready_after = sorted(
            s.started_s - fired_at[0]
            for p in result.pools
            for s in p.started
            if lose and s.ready and s.started_s > fired_at[0]
        )
    differing = [
        (doc, out)
        for out, (doc, n) in zip(result.outputs, docs, strict=True)
        if out != (doc, [doc * 1_000_000 + i for i in range(n)])
    ]
    if differing:
        doc, out = differing[0]
        raise AssertionError(
            f"{len(differing)} of {len(docs)} documents differ from the run without a loss; "
            f"document {doc}: {str(out)[:300]}"
        )
    if lose:
        assert fired.is_set(), "the run ended before half its documents were done"
    return e2e, result, ready_after


def measure(
    ro: Any, cluster: Any, documents: int, page_kib: int, repeat: int, cpus_per_node: int
) -> None:
    docs = list(enumerate(d.corpus(documents)))
    pages = sum(n for _, n in docs)
    page_bytes = page_kib * 1024
    print(
        f"node loss: {documents} docs / {pages} pages of {page_kib} KiB on 3 nodes; "
        "one node removed without grace at half the documents"
    )
    for k in range(repeat):
        base, _, _ = run_once(ro, cluster, docs, page_bytes, lose=False)
        lossy, r, ready_after = run_once(ro, cluster, docs, page_bytes, lose=True)
        lost = ", ".join(
            f"{n.node[:8]} at {n.address} ({n.detected_s:.2f} s)" for n in r.node_losses
        )
        print(
            f"  [{k + 1}] no loss {base:.2f} s; one node lost {lossy:.2f} s "
            f"(+{lossy - base:.2f} s, {lossy / base - 1:+.0%}); re-done: "
            f"{r.values_rebuilt} values rebuilt, {r.grains_reexecuted} Grains re-executed "
            f"over {r.rebuild_s:.2f} s, {r.actors_replaced} actors replaced (ready "
            f"{', '.join(f'{t:.1f}' for t in ready_after) or '-'} s after the "
            "loss); "
            f"nodes reported lost: {lost or 'none'}"
        )
        # A fresh node takes the lost one's place for the next repetition.
        cluster.add_node(node_ip_address="127.0.0.1", num_cpus=cpus_per_node)
        cluster.wait_for_nodes()
        import ray

        check_on_loopback(ray)  # every node, the removed ones and the new one, on 127.0.0.1
