"""The simulated document workload on the reference implementation (`rayorch` 0.1.1 on Ray).

The same pipeline as this project's (render -> expand -> OCR -> reduce -> assemble, the same
actor counts, batch sizes and sleep costs), written with the reference's API: RayModule
pools of persistent Ray actors. The reference returns every output when run() returns, so
each document's completion time is the end of the run.
"""

import common

args = common.parse_args(__doc__)
clock = common.Clock()
docs, costs, topo = common.load_corpus(args.corpus)

import importlib.metadata  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

import ray  # noqa: E402
import rayorch as ro  # noqa: E402

common.start_local_ray(ray, topo)

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
        self.render = ro.RayModule(Render).ray_options(
            replicas=topo["render_replicas"], batch_size=1
        )
        self.ocr = (
            ro.RayModule(Ocr)
            .pre_init(args.events_dir, POISONED)
            .ray_options(replicas=topo["ocr_replicas"], batch_size=topo["ocr_batch"])
        )
        self.assemble = ro.RayModule(Assemble).ray_options(
            replicas=topo["assemble_replicas"], batch_size=1
        )

    def forward(self, doc):
        return self.assemble(ro.F.reduce(self.ocr(ro.F.expand(self.render(doc)))), doc)


rows = [(d["id"], d["pages"]) for d in docs]
clock.begin()
executor = ro.Executor(Documents())  # builds every actor pool: inside the clock
result = executor.run(rows)
documents = {}
for out in result.outputs:
    clock.document_done()
    # A suppressed document (its page 0 failed) is an outcome object, not a (doc, values) pair.
    if isinstance(out, tuple) and len(out) in (2, 3):
        documents[int(out[0])] = out[1]
        if PAYLOAD:
            want = sum(payload_size(out[0], p) for p in range(len(out[1])))
            if out[2] != want:
                raise SystemExit(f"document {out[0]}: {out[2]} payload bytes, expected {want}")
end = clock.elapsed(time.perf_counter())
executor.close()
common.write_result(
    args.out,
    "reference",
    importlib.metadata.version("rayorch"),
    clock,
    documents,
    args.events_dir,
    completions=[end] * len(documents),
)
ray.shutdown()
