"""The simulated document workload written the way an expert Ray Data user writes it.

flat_map (render one document into page rows) -> a streaming repartition to the OCR batch
size (otherwise Ray Data's bundles split at block boundaries and leave OCR batches
underfilled) -> map_batches on an ActorPoolStrategy pool (OCR) -> back to documents, one of
two ways (--arm):
  groupby  groupby(doc) with a tuned number of partitions + map_groups (assemble), the
           idiomatic way;
  driver   no shuffle: the driver streams OCR batches, regroups pages by document from the
           known page counts and assembles each document as soon as its last page is in
           (on assemble-replicas threads), what Ray Data #57936 asks for.
The application carries the document id and page index as data.
"""

import common

args = common.parse_args(__doc__, arms=("groupby", "driver"))
clock = common.Clock()
docs, costs, topo = common.load_corpus(args.corpus)
PAYLOAD = common.payload_bytes(args.corpus)

import os  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import ray  # noqa: E402

common.start_local_ray(topo)
ctx = ray.data.DataContext.get_current()
ctx.enable_progress_bars = False

# Tasks and actors run in worker processes that cannot import `common`: the UDFs use only
# these numbers.
RENDER_PER_PAGE, OCR_PER_BATCH, OCR_PER_PAGE, ASSEMBLE_PER_DOC, ASSEMBLE_PER_PAGE = (
    common.stage_seconds(costs)
)
PAYLOAD_MIN = PAYLOAD // 16
# Page 0 of these documents fails OCR; their documents are dropped after the regroup.
POISONED = common.poisoned_documents(docs)
# The startup regime's model loads (a closure: pickled by value into the actors).
LOAD = common.model_loader(args.corpus, args.events_dir)
RENDER_LOADS_A_MODEL = common.startup_seconds(args.corpus)["render"] > 0


def payload_size(doc, page):
    # common.payload_size, inlined.
    return PAYLOAD_MIN + (int(doc) * 7919 + int(page) * 104729) % (PAYLOAD - PAYLOAD_MIN + 1)


def render(row):
    time.sleep(row["pages"] * RENDER_PER_PAGE)
    return [{"doc": row["doc"], "page": i} for i in range(row["pages"])]


class Render:
    """Rendering with a model to load: an actor per render replica loads it once."""

    def __init__(self):
        LOAD("render")

    def __call__(self, row):
        return render(row)


class Ocr:
    def __init__(self, events_dir):
        LOAD("ocr")
        self.log = None
        if events_dir:
            self.log = open(os.path.join(events_dir, f"ocr-{os.getpid()}-{id(self)}.log"), "a")
            self.log.write(f"ready {time.time()}\n")
            self.log.flush()

    def __call__(self, batch):
        t0 = time.time()
        n = len(batch["page"])
        time.sleep(OCR_PER_BATCH + n * OCR_PER_PAGE)
        batch["value"] = batch["doc"].astype(np.int64) * 1000000 + batch["page"].astype(np.int64)
        if POISONED:
            failed = np.array(
                [int(d) in POISONED and int(p) == 0 for d, p in zip(batch["doc"], batch["page"])]
            )
            batch["value"][failed] = -1  # this page failed: its document is dropped later
        if PAYLOAD:
            batch["payload"] = np.array(
                [bytes(payload_size(d, p)) for d, p in zip(batch["doc"], batch["page"])],
                dtype=object,
            )
        if self.log:
            self.log.write(f"batch {n} {t0} {time.time()}\n")
            self.log.flush()
        return batch


def assemble_values(pages, values, payload_lengths):
    order = np.argsort(pages, kind="stable")
    ordered = [int(v) for v in np.asarray(values)[order]]
    time.sleep(ASSEMBLE_PER_DOC + len(ordered) * ASSEMBLE_PER_PAGE)
    return ordered, int(sum(payload_lengths))


def assemble(group):
    if (group["value"] < 0).any():
        # Filter after the regroup: a document with a failed page is dropped, unassembled.
        return {
            "doc": group["doc"][:0],
            "values": np.array([], dtype=object),
            "payload_bytes": np.array([], dtype=np.int64),
        }
    lengths = [len(p) for p in group["payload"]] if PAYLOAD else []
    ordered, total = assemble_values(group["page"], group["value"], lengths)
    return {
        "doc": group["doc"][:1],
        "values": np.array([ordered], dtype=object),
        "payload_bytes": np.array([total], dtype=np.int64),
    }


DEFAULTS = common.peer_defaults(topo)


def compute(strategy, replicas):
    """The pool of a stage: `strategy` of the topology's `replicas`, or Ray Data's default at
    its own defaults (compute=None: an autoscaling actor pool from one actor for a class, an
    unbounded task pool for a function)."""
    return None if DEFAULTS else strategy(size=topo[replicas])


clock.begin()
ds = ray.data.from_items(
    [{"doc": d["id"], "pages": d["pages"]} for d in docs], override_num_blocks=len(docs)
)
if RENDER_LOADS_A_MODEL:
    pages = ds.flat_map(Render, compute=compute(ray.data.ActorPoolStrategy, "render_replicas"))
else:
    pages = ds.flat_map(render, compute=compute(ray.data.TaskPoolStrategy, "render_replicas"))
# Streaming (no shuffle): blocks of exactly one OCR batch.
pages = pages.repartition(target_num_rows_per_block=topo["ocr_batch"], strict=True)
ocr = pages.map_batches(
    Ocr,
    batch_size=topo["ocr_batch"],
    compute=compute(ray.data.ActorPoolStrategy, "ocr_replicas"),
    batch_format="numpy",
    fn_constructor_args=(args.events_dir,),
)
documents = {}
payload_totals = {}
if args.arm == "groupby":
    partitions = args.partitions or (None if DEFAULTS else topo["assemble_replicas"])
    assembled = ocr.groupby("doc", num_partitions=partitions).map_groups(
        assemble,
        batch_format="numpy",
        compute=compute(ray.data.TaskPoolStrategy, "assemble_replicas"),
    )
    for row in assembled.iter_rows():
        clock.document_done()
        documents[int(row["doc"])] = list(row["values"])
        payload_totals[int(row["doc"])] = int(row["payload_bytes"])
else:
    regroup = common.DriverRegroup(
        docs, topo["assemble_replicas"], assemble_values, clock, documents, payload_totals
    )
    for batch in ocr.iter_batches(batch_size=None, batch_format="numpy"):
        payloads = batch["payload"] if PAYLOAD else None
        for i, (doc, page, value) in enumerate(zip(batch["doc"], batch["page"], batch["value"])):
            regroup.add(int(doc), int(page), int(value), len(payloads[i]) if PAYLOAD else 0)
        regroup.collect()
    regroup.close()
if PAYLOAD:
    common.check_payload_totals(docs, payload_totals, PAYLOAD)
common.write_result(
    args.out,
    common.peer_label(f"ray-data ({args.arm})", topo),
    ray.__version__,
    clock,
    documents,
    args.events_dir,
)
ray.shutdown()
