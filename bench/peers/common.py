"""Shared helpers of the peer baselines: the corpus file, the simulated costs, the result file.

The corpus is written by `rayorch bench compare` (so every system sees the same documents);
each peer writes one JSON result with its timings and every document's ordered page values.
"""

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# One definition of how a benchmark starts Ray on loopback, shared with the project's own.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python" / "bench"))
from loopback_ray import start_local_ray as start_loopback_ray  # noqa: E402


def parse_args(description, arms=("groupby",)):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--corpus", required=True, help="corpus JSON written by rayorch bench")
    parser.add_argument("--out", required=True, help="where to write the result JSON")
    parser.add_argument(
        "--arm",
        choices=arms,
        default=arms[0],
        help="how the pages return to their documents: a groupby shuffle, or the driver "
        "regrouping OCR results from the known page counts",
    )
    parser.add_argument(
        "--partitions", type=int, default=0, help="groupby partitions (0: the assemble actors)"
    )
    parser.add_argument(
        "--events-dir", default="", help="where OCR actors log readiness and batches"
    )
    return parser.parse_args()


def load_corpus(path):
    with open(path) as f:
        corpus = json.load(f)
    return corpus["documents"], corpus["costs_ms"], corpus["topology"]


def stage_seconds(costs):
    """The simulated stage costs in seconds: (render per page, OCR per batch, OCR per page,
    assemble per document, assemble per page). Plain numbers, so that UDFs running in worker
    processes, which cannot import this module, can use them."""
    return (
        costs["render_per_page"] / 1000.0,
        costs["ocr_per_batch"] / 1000.0,
        costs["ocr_per_page"] / 1000.0,
        costs["assemble_per_doc"] / 1000.0,
        costs["assemble_per_page"] / 1000.0,
    )


def startup_seconds(path):
    """The startup regime's model loads in seconds: {"render": s, "ocr": s, "ocr_slow": s,
    "ocr_slow_every": n} (all zero outside it)."""
    with open(path) as f:
        spec = json.load(f).get("startup", {})
    return {
        "render": float(spec.get("render_ms", 0)) / 1000.0,
        "ocr": float(spec.get("ocr_ms", 0)) / 1000.0,
        "ocr_slow": float(spec.get("ocr_slow_ms", 0)) / 1000.0,
        "ocr_slow_every": int(spec.get("ocr_slow_every", 0)),
    }


def model_loader(path, events_dir):
    """`load(stage)`, which a constructor of stage "render" or "ocr" calls first: it sleeps for
    that stage's model load (the corpus's startup regime; nothing outside it). One OCR
    constructor in `ocr_slow_every` loads for `ocr_slow` seconds instead: each OCR constructor
    claims the next number by creating a file exclusively in a claims directory, which works
    across the worker processes of every system. `load` is a closure, so Ray and Daft pickle
    it by value into workers that cannot import this module."""
    spec = startup_seconds(path)
    claims = os.path.join(events_dir or tempfile.mkdtemp(prefix="model-loads-"), "claims")
    os.makedirs(claims, exist_ok=True)
    seconds = {"render": spec["render"], "ocr": spec["ocr"]}
    slow, every = spec["ocr_slow"], spec["ocr_slow_every"]

    def load(stage):
        import os
        import time

        wait = seconds.get(stage, 0.0)
        if stage == "ocr" and every > 0:
            claim = 0
            while True:
                try:
                    os.close(os.open(os.path.join(claims, f"ocr-{claim}"), os.O_CREAT | os.O_EXCL))
                    break
                except FileExistsError:
                    claim += 1
            if claim % every == every - 1:
                wait = slow
        if wait > 0:
            time.sleep(wait)

    return load


def poisoned_documents(docs):
    """The documents whose page 0 fails OCR (and which are therefore never assembled)."""
    return frozenset(int(d["id"]) for d in docs if d.get("poison"))


def payload_bytes(path):
    """Bytes of payload each page carries through OCR and the regroup (0: none)."""
    with open(path) as f:
        return int(json.load(f).get("payload", {}).get("max_bytes", 0))


# Mirrored in bench/workload.h (page_payload_size) and inlined in the peers' workers, which
# cannot import this module: the payload of a page is min + (doc * 7919 + page * 104729) mod
# (max - min + 1) bytes.
def payload_size(doc, page, lo, hi):
    return lo + (int(doc) * 7919 + int(page) * 104729) % (hi - lo + 1)


def check_payload_totals(docs, totals, max_bytes):
    """Exits unless every document's payload bytes (`totals`, by document id) are those its
    pages carry."""
    lo = max_bytes // 16
    want = {
        int(d["id"]): sum(payload_size(d["id"], p, lo, max_bytes) for p in range(d["pages"]))
        for d in docs
    }
    bad = [d for d in want if totals.get(d) != want[d]]
    if bad:
        raise SystemExit(f"payload bytes differ for documents {bad[:5]}")


def check_document_payload(doc, values, total, max_bytes):
    """Exits unless document `doc`, assembled as `values`, carried `total` payload bytes."""
    lo = max_bytes // 16
    want = sum(payload_size(doc, p, lo, max_bytes) for p in range(len(values)))
    if total != want:
        raise SystemExit(f"document {doc}: {total} payload bytes, expected {want}")


class DriverRegroup:
    """The driver arm of the Ray Data and Daft peers: no shuffle. The driver returns OCR results
    to their documents from the known page counts, and assembles each document as soon as its
    last page is in, with `assemble_values(pages, values, payload_lengths)` -> (ordered values,
    payload bytes) on `replicas` threads. A document with a failed page (value < 0) is dropped
    after the regroup. Finished documents land in `documents` and `payload_totals`."""

    def __init__(self, docs, replicas, assemble_values, clock, documents, payload_totals):
        self.expected = {int(d["id"]): int(d["pages"]) for d in docs}
        self.partial = {}
        self.pool = ThreadPoolExecutor(max_workers=replicas)
        self.pending = []
        self.assemble_values = assemble_values
        self.clock = clock
        self.documents = documents
        self.payload_totals = payload_totals

    def add(self, doc, page, value, length):
        """One OCR result; returns whether it was its document's last page."""
        got = self.partial.setdefault(doc, [])
        got.append((page, value, length))
        if len(got) < self.expected[doc]:
            return False
        del self.partial[doc]
        if all(v >= 0 for _, v, _ in got):  # filter after the regroup
            self.pending.append(self.pool.submit(self._finish, doc, got))
        return True

    def _finish(self, doc, got):
        pages, values, lengths = zip(*got)
        ordered, total = self.assemble_values(list(pages), list(values), list(lengths))
        return doc, ordered, total

    def collect(self, wait=False):
        """Records the assembled documents (all of them, waiting, with `wait`)."""
        still = []
        for f in self.pending:
            if wait or f.done():
                doc, ordered, total = f.result()
                self.clock.document_done()
                self.documents[doc] = ordered
                self.payload_totals[doc] = total
            else:
                still.append(f)
        self.pending = still

    def close(self):
        """Waits for every document still being assembled."""
        self.collect(wait=True)
        self.pool.shutdown()


def peer_defaults(topo):
    """True when the peers run at their own defaults (the untuned regime's --peer-defaults):
    no actor or task counts of their own, within a cluster of the budget's CPUs."""
    return bool(topo.get("peer_defaults", False))


def peer_label(system, topo):
    """`system` as a result names it: with "own defaults" when the peer runs at them."""
    return f"{system} [own defaults]" if peer_defaults(topo) else system


def start_local_ray(topo=None, num_cpus=None):
    """Starts a new local Ray cluster for a peer: only inside a loopback-only network
    namespace, on 127.0.0.1, never joining a cluster another process left in /tmp/ray, and
    checking that every node is on 127.0.0.1. Its logical CPUs: `num_cpus`, or as many as the
    simulated pipeline `topo` has actors and tasks (its stages only sleep), or the budget's
    when the peers run at their own defaults."""
    if num_cpus is None and peer_defaults(topo) and int(topo.get("budget_cpus", 0)) > 0:
        num_cpus = int(topo["budget_cpus"])
    if num_cpus is None:
        num_cpus = topo["render_replicas"] + topo["ocr_replicas"] + topo["assemble_replicas"]
    start_loopback_ray(num_cpus)


def sleep_ms(ms):
    if ms > 0:
        time.sleep(ms / 1000.0)


def page_value(doc, page):
    # Same value as bench/workload.h page_value().
    return int(doc) * 1000000 + int(page)


class Clock:
    """Wall-clock marks relative to the start of the pipeline (after runtime start-up).

    `wall_start` (time.time()) lets OCR events logged by worker processes be placed on the
    same axis."""

    def __init__(self):
        self.process_start = time.perf_counter()
        self.start = None
        self.wall_start = None
        self.cpu_start = 0.0
        self.first = None
        self.completions = []

    def begin(self):
        self.start = time.perf_counter()
        self.wall_start = time.time()
        self.cpu_start = time.process_time()

    def document_done(self):
        now = time.perf_counter()
        if self.first is None:
            self.first = now
        self.completions.append(now - self.start)

    def elapsed(self, mark):
        return mark - self.start


def read_ocr_events(events_dir, wall_start):
    """The OCR actors' logs, one per actor: [{"ready": s, "batches": [[rows, start, end]]}], in
    seconds since the pipeline started. Each actor appends `ready T` and `batch N T0 T1` lines
    (time.time()) to its own file in `events_dir`."""
    actors = []
    if not events_dir or not os.path.isdir(events_dir):
        return actors
    for name in sorted(os.listdir(events_dir)):
        path = os.path.join(events_dir, name)
        if not os.path.isfile(path):
            continue  # the model loads' claims directory
        actor = {"ready": None, "batches": []}
        with open(path) as f:
            for line in f:
                parts = line.split()
                if parts and parts[0] == "ready":
                    actor["ready"] = float(parts[1]) - wall_start
                elif parts and parts[0] == "batch":
                    actor["batches"].append(
                        [int(parts[1]), float(parts[2]) - wall_start, float(parts[3]) - wall_start]
                    )
        if actor["ready"] is not None:
            actors.append(actor)
    return actors


def write_result(
    path, system, version, clock, documents, events_dir="", completions=None, calls=None
):
    end = time.perf_counter()
    actors = read_ocr_events(events_dir, clock.wall_start)
    result = {
        "system": system,
        "version": version,
        "startup_seconds": clock.start - clock.process_start,
        "end_to_end_seconds": end - clock.start,
        "driver_cpu_seconds": time.process_time(),
        # The same, in the E2E window only: imports and ray.init excluded.
        "run_driver_cpu_seconds": time.process_time() - clock.cpu_start,
        "first_document_seconds": clock.elapsed(clock.first) if clock.first else None,
        "document_completion_seconds": completions
        if completions is not None
        else clock.completions,
        "ocr_ready_seconds": [a["ready"] for a in actors],
        "ocr_batches": [b for a in actors for b in a["batches"]],
        "ocr_actors": actors,
        "documents": {str(int(k)): [int(x) for x in v] for k, v in documents.items()},
    }
    if calls is not None:  # per Call: busy seconds and the pool's actors over the run
        result["calls"] = calls
    with open(path + ".tmp", "w") as f:
        json.dump(result, f)
    os.replace(path + ".tmp", path)
    print(
        f"{system}: {len(documents)} documents in {result['end_to_end_seconds']:.3f} s, "
        f"first after {result['first_document_seconds']:.3f} s"
    )
