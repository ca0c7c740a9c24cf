"""The simulated document workload on the reference implementation (`rayorch` 0.1.1 on Ray).

The same pipeline as this project's (render -> expand -> OCR -> reduce -> assemble, the same
actor counts, batch sizes and sleep costs), written with the reference's API: RayModule
pools of persistent Ray actors. The reference returns every output when run() returns, so
each document's completion time is the end of the run.
"""

import common
import ray_module_stages

args = common.parse_args(__doc__)
clock = common.Clock()
docs, costs, topo = common.load_corpus(args.corpus)

import importlib.metadata  # noqa: E402
import time  # noqa: E402

import ray  # noqa: E402
import rayorch as ro  # noqa: E402

common.start_local_ray(topo)

PAYLOAD = common.payload_bytes(args.corpus)
POISONED = common.poisoned_documents(docs)
Render, Ocr, Assemble = ray_module_stages.make_stages(
    ro, common.stage_seconds(costs), PAYLOAD, common.model_loader(args.corpus, args.events_dir)
)


DEFAULTS = common.peer_defaults(topo)


def replicas(count):
    # At its own defaults the reference gets no replica count (its default: one actor).
    return {} if DEFAULTS else {"replicas": count}


class Documents(ro.Pipeline):
    def __init__(self):
        self.render = ro.RayModule(Render).ray_options(
            **replicas(topo["render_replicas"]), batch_size=1
        )
        self.ocr = (
            ro.RayModule(Ocr)
            .pre_init(args.events_dir, POISONED)
            .ray_options(**replicas(topo["ocr_replicas"]), batch_size=topo["ocr_batch"])
        )
        self.assemble = ro.RayModule(Assemble).ray_options(
            **replicas(topo["assemble_replicas"]), batch_size=1
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
            common.check_document_payload(out[0], out[1], out[2], PAYLOAD)
end = clock.elapsed(time.perf_counter())
executor.close()
common.write_result(
    args.out,
    common.peer_label("reference", topo),
    importlib.metadata.version("rayorch"),
    clock,
    documents,
    args.events_dir,
    completions=[end] * len(documents),
)
ray.shutdown()
