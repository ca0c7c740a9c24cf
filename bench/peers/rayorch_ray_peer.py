"""The simulated document workload on this project's Ray backend (`rayorch_cpp` on Ray).

The reference's pipeline (bench/peers/reference_peer.py: render -> expand -> OCR -> reduce
-> assemble, the same actor counts, batch sizes and sleep costs, the same UDF classes) with
only the import changed, run by `rayorch_cpp.Executor(..., backend="ray")` on a new local
Ray with the same logical CPUs as the other peers: scheduler against scheduler on the same
deployment. Documents are streamed (`Executor.stream`), so each document's completion time
is when it reached the driver. It needs the project's Python (.venv, which has rayorch_cpp
and Ray 2.60), not the peers' one; `rayorch bench compare` picks it (--project-python).
"""

import common

args = common.parse_args(__doc__)
clock = common.Clock()
docs, costs, topo = common.load_corpus(args.corpus)

import json  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

try:
    import ray  # noqa: E402

    import rayorch_cpp as ro  # noqa: E402
except ImportError as error:
    raise SystemExit(
        f"rayorch_ray_peer needs the project's Python with rayorch_cpp and ray ({error}); "
        "run scripts/python-env.sh and pass its .venv/bin/python (--project-python)"
    ) from None

common.start_local_ray(ray, topo)

with open(args.corpus) as f:
    _corpus = json.load(f)
# This project's own batching of the source rows and OCR batch wait, as `bench
# compare-system` (the local executor) uses them.
INPUT_BATCH = int(_corpus.get("input_batch_size", 0)) or None
MAX_ACTIVE = int(_corpus.get("max_active_input_batches", 1))
OCR_BATCH_WAIT_S = float(topo.get("ocr_batch_wait_ms", 0)) / 1000.0
# Calls kept at each Ray actor (max_tasks_in_flight_per_actor) for every Module; 0: default.
IN_FLIGHT = int(topo.get("ray_tasks_in_flight", 0))
QUEUE = {"max_tasks_in_flight_per_actor": IN_FLIGHT} if IN_FLIGHT > 0 else {}

# Actors run in worker processes that cannot import `common`: the UDFs use only these.
RENDER_PER_PAGE = costs["render_per_page"] / 1000.0
OCR_PER_BATCH = costs["ocr_per_batch"] / 1000.0
OCR_PER_PAGE = costs["ocr_per_page"] / 1000.0
ASSEMBLE_PER_DOC = costs["assemble_per_doc"] / 1000.0
ASSEMBLE_PER_PAGE = costs["assemble_per_page"] / 1000.0
PAYLOAD = common.payload_bytes(args.corpus)
PAYLOAD_MIN = PAYLOAD // 16


def payload_size(doc, page):
    # common.payload_size, inlined.
    return PAYLOAD_MIN + (int(doc) * 7919 + int(page) * 104729) % (PAYLOAD - PAYLOAD_MIN + 1)


POISONED = frozenset(int(d["id"]) for d in docs if d.get("poison"))


class Render:
    def run(self, docs):
        out = []
        for doc, n in docs:
            time.sleep(n * RENDER_PER_PAGE)
            out.append([(doc, i) for i in range(n)])
        return out


class Ocr:
    def __init__(self, events_dir, poisoned):
        self.poisoned = poisoned
        self.log = None
        if events_dir:
            self.log = open(os.path.join(events_dir, f"ocr-{os.getpid()}-{id(self)}.log"), "a")
            self.log.write(f"ready {time.time()}\n")
            self.log.flush()

    def run(self, pages):
        t0 = time.time()
        time.sleep(OCR_PER_BATCH + len(pages) * OCR_PER_PAGE)
        out = [
            ro.GroupFailure(f"page 0 of document {doc} is unreadable")
            if i == 0 and doc in self.poisoned
            else (
                (doc * 1000000 + i, bytes(payload_size(doc, i))) if PAYLOAD else doc * 1000000 + i
            )
            for doc, i in pages
        ]
        if self.log:
            self.log.write(f"batch {len(pages)} {t0} {time.time()}\n")
            self.log.flush()
        return out


class Assemble:
    def run(self, values, docs):
        out = []
        for v, (doc, _) in zip(values, docs):
            time.sleep(ASSEMBLE_PER_DOC + len(v) * ASSEMBLE_PER_PAGE)
            if PAYLOAD:  # (value, payload) pairs: keep the values, count the payload bytes
                out.append((doc, [x for x, _ in v], sum(len(b) for _, b in v)))
            else:
                out.append((doc, list(v)))
        return out


class Documents(ro.Pipeline):
    def __init__(self):
        ocr_options = {"replicas": topo["ocr_replicas"], "batch_size": topo["ocr_batch"], **QUEUE}
        if OCR_BATCH_WAIT_S > 0:
            ocr_options["batch_wait"] = OCR_BATCH_WAIT_S
        self.render = ro.RayModule(Render).ray_options(
            replicas=topo["render_replicas"], batch_size=1, **QUEUE
        )
        self.ocr = ro.RayModule(Ocr).pre_init(args.events_dir, POISONED).ray_options(**ocr_options)
        self.assemble = ro.RayModule(Assemble).ray_options(
            replicas=topo["assemble_replicas"], batch_size=1, **QUEUE
        )

    def forward(self, doc):
        return self.assemble(ro.F.reduce(self.ocr(ro.F.expand(self.render(doc)))), doc)


rows = [(d["id"], d["pages"]) for d in docs]
clock.begin()
# Builds every actor pool on the Ray initialised above: inside the clock.
executor = ro.Executor(Documents(), backend="ray")
documents = {}
for _, out in executor.stream(
    rows, input_batch_size=INPUT_BATCH, max_active_input_batches=MAX_ACTIVE, progress=False
):
    # A suppressed document (its page 0 failed) is an OutputIssue, not a (doc, values) pair.
    if isinstance(out, ro.OutputIssue):
        continue
    clock.document_done()
    documents[int(out[0])] = out[1]
    if PAYLOAD:
        want = sum(payload_size(out[0], p) for p in range(len(out[1])))
        if out[2] != want:
            raise SystemExit(f"document {out[0]}: {out[2]} payload bytes, expected {want}")
executor.close()
common.write_result(
    args.out,
    "rayorch (on Ray)",
    f"this build, Ray {ray.__version__}",
    clock,
    documents,
    args.events_dir,
)
ray.shutdown()
