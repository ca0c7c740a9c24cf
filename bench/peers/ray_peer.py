"""The simulated document workload written the way Ray Data users write it.

flat_map (render one document into page rows) -> map_batches on an actor pool (OCR, batch
size and actor count as configured) -> groupby(doc) + sort by page -> per-document assemble.
The application carries the document id and page index as data and regroups after OCR.
"""

import common

args = common.parse_args(__doc__)
clock = common.Clock()
docs, costs, topo = common.load_corpus(args.corpus)

import time  # noqa: E402

import numpy as np  # noqa: E402
import ray  # noqa: E402

common.require_loopback_only()
# Logical CPUs match the actor and task counts of the other systems; the stages only sleep.
ray.init(
    num_cpus=topo["render_replicas"] + topo["ocr_replicas"] + topo["assemble_replicas"],
    include_dashboard=False,
    logging_level="ERROR",
    log_to_driver=False,
)
common.require_ray_on_loopback(ray)
ctx = ray.data.DataContext.get_current()
ctx.enable_progress_bars = False

# Tasks and actors run in worker processes that cannot import `common`: the UDFs use only
# these numbers.
RENDER_PER_PAGE = costs["render_per_page"] / 1000.0
OCR_PER_BATCH = costs["ocr_per_batch"] / 1000.0
OCR_PER_PAGE = costs["ocr_per_page"] / 1000.0
ASSEMBLE_PER_DOC = costs["assemble_per_doc"] / 1000.0
ASSEMBLE_PER_PAGE = costs["assemble_per_page"] / 1000.0


def render(row):
    time.sleep(row["pages"] * RENDER_PER_PAGE)
    return [{"doc": row["doc"], "page": i} for i in range(row["pages"])]


class Ocr:
    def __call__(self, batch):
        n = len(batch["page"])
        time.sleep(OCR_PER_BATCH + n * OCR_PER_PAGE)
        batch["value"] = batch["doc"].astype(np.int64) * 1000000 + batch["page"].astype(np.int64)
        return batch


def assemble(group):
    order = np.argsort(group["page"], kind="stable")
    values = group["value"][order]
    time.sleep(ASSEMBLE_PER_DOC + len(values) * ASSEMBLE_PER_PAGE)
    return {"doc": group["doc"][:1], "values": np.array([values.tolist()], dtype=object)}


clock.begin()
ds = ray.data.from_items(
    [{"doc": d["id"], "pages": d["pages"]} for d in docs], override_num_blocks=len(docs)
)
pages = ds.flat_map(render, compute=ray.data.TaskPoolStrategy(size=topo["render_replicas"]))
ocr = pages.map_batches(
    Ocr,
    batch_size=topo["ocr_batch"],
    compute=ray.data.ActorPoolStrategy(size=topo["ocr_replicas"]),
    batch_format="numpy",
)
# One shuffle partition per assemble task: the default (200) costs tens of seconds here.
assembled = ocr.groupby("doc", num_partitions=topo["assemble_replicas"]).map_groups(
    assemble,
    batch_format="numpy",
    compute=ray.data.TaskPoolStrategy(size=topo["assemble_replicas"]),
)
documents = {}
for row in assembled.iter_rows():
    clock.document_done()
    documents[int(row["doc"])] = list(row["values"])
common.write_result(args.out, "ray-data", ray.__version__, clock, documents)
ray.shutdown()
