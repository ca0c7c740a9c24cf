"""The simulated document workload written the way an expert Daft user writes it.

explode (render one document into its page list, one row per page) -> into_batches(OCR
batch size) -> a class UDF with that batch size and a concurrency (OCR) -> back to
documents, one of two ways (--arm):
  groupby  groupby(doc) + list_agg, sorted by page, then a per-document assemble UDF;
  driver   no shuffle: the driver streams OCR results, regroups pages by document from the
           known page counts and assembles each document as soon as its last page is in
           (on assemble-replicas threads).
On the native runner, as many UDF calls run at once as the machine has cores, whatever a
class's max_concurrency (measured: 2 OCR calls at a time on a 2-core machine, also with a
fractional `cpus` per instance); the Ray runner schedules instances on Ray's logical CPUs
like the other systems. The runner is set explicitly: the native runner, or with an arm
ending in "-ray" Daft's Ray runner on the same local Ray deployment as the other systems
(started in this process's private network namespace).
"""

import common

args = common.parse_args(__doc__, arms=("groupby", "driver", "groupby-ray", "driver-ray"))
RUNNER = "ray" if args.arm.endswith("-ray") else "native"
args.arm = args.arm.removesuffix("-ray")
clock = common.Clock()
docs, costs, topo = common.load_corpus(args.corpus)
PAYLOAD = common.payload_bytes(args.corpus)

import os  # noqa: E402
import time  # noqa: E402

import daft  # noqa: E402
from daft import DataType, col  # noqa: E402

if RUNNER == "ray":
    import ray

    common.start_local_ray(topo)
    daft.set_runner_ray(address=ray.get_runtime_context().gcs_address)
else:
    daft.set_runner_native()

# UDFs run in worker processes that cannot import `common`: they use only these numbers.
RENDER_PER_PAGE, OCR_PER_BATCH, OCR_PER_PAGE, ASSEMBLE_PER_DOC, ASSEMBLE_PER_PAGE = (
    common.stage_seconds(costs)
)
PAYLOAD_MIN = PAYLOAD // 16
# Page 0 of these documents fails OCR; their documents are dropped after the regroup.
POISONED = common.poisoned_documents(docs)
EVENTS_DIR = args.events_dir
# The startup regime's model loads (a closure: pickled by value into the UDF workers).
LOAD = common.model_loader(args.corpus, args.events_dir)


def concurrency(replicas):
    # At its own defaults a Daft class UDF gets no max_concurrency (Daft picks it).
    return {} if common.peer_defaults(topo) else {"max_concurrency": topo[replicas]}


def payload_size(doc, page):
    # common.payload_size, inlined.
    return PAYLOAD_MIN + (int(doc) * 7919 + int(page) * 104729) % (PAYLOAD - PAYLOAD_MIN + 1)


@daft.cls(**concurrency("render_replicas"))
class Render:
    def __init__(self):
        LOAD("render")

    @daft.method(return_dtype=DataType.list(DataType.int64()))
    def __call__(self, pages: int):
        time.sleep(pages * RENDER_PER_PAGE)
        return list(range(pages))


OCR_TYPE = DataType.struct({"value": DataType.int64(), "payload": DataType.binary()})


@daft.cls(**concurrency("ocr_replicas"))
class Ocr:
    def __init__(self):
        LOAD("ocr")
        self.log = None
        if EVENTS_DIR:
            self.log = open(os.path.join(EVENTS_DIR, f"ocr-{os.getpid()}-{id(self)}.log"), "a")
            self.log.write(f"ready {time.time()}\n")
            self.log.flush()

    @daft.method.batch(return_dtype=OCR_TYPE, batch_size=topo["ocr_batch"])
    def __call__(self, doc: daft.Series, page: daft.Series):
        t0 = time.time()
        d = doc.to_pylist()
        p = page.to_pylist()
        time.sleep(OCR_PER_BATCH + len(p) * OCR_PER_PAGE)
        out = [
            {
                "value": -1 if (b == 0 and a in POISONED) else a * 1000000 + b,
                "payload": bytes(payload_size(a, b)) if PAYLOAD else b"",
            }
            for a, b in zip(d, p)
        ]
        if self.log:
            self.log.write(f"batch {len(p)} {t0} {time.time()}\n")
            self.log.flush()
        return daft.Series.from_pylist(out, dtype=OCR_TYPE)


def assemble_values(pages, values, lengths):
    ordered = [v for _, v in sorted(zip(pages, values))]
    time.sleep(ASSEMBLE_PER_DOC + len(ordered) * ASSEMBLE_PER_PAGE)
    return ordered, int(sum(lengths))


@daft.cls(**concurrency("assemble_replicas"))
class Assemble:
    @daft.method(return_dtype=DataType.list(DataType.int64()))
    def __call__(self, pages: list, values: list, lengths: list):
        return assemble_values(pages, values, lengths)[0]


clock.begin()
df = daft.from_pydict({"doc": [d["id"] for d in docs], "pages": [d["pages"] for d in docs]})
df = df.with_column("page", Render()(col("pages"))).explode("page")
df = df.into_batches(topo["ocr_batch"])
df = df.with_column("ocr", Ocr()(col("doc"), col("page")))
df = df.with_column("value", col("ocr")["value"]).with_column(
    "length", col("ocr")["payload"].length()
)
documents = {}
payload_totals = {}
if args.arm == "groupby":
    df = df.groupby("doc").agg(
        col("page").list_agg().alias("pages"),
        col("value").list_agg().alias("values"),
        col("length").list_agg().alias("lengths"),
        col("length").sum().alias("payload_bytes"),
        col("value").min().alias("lowest"),
    )
    # Filter after the regroup: a document with a failed page (value -1) is dropped.
    df = df.where(col("lowest") >= 0)
    df = df.with_column("ordered", Assemble()(col("pages"), col("values"), col("lengths"))).select(
        "doc", "ordered", "payload_bytes"
    )
    for row in df.iter_rows():
        clock.document_done()
        documents[int(row["doc"])] = row["ordered"]
        payload_totals[int(row["doc"])] = int(row["payload_bytes"] or 0)
else:
    regroup = common.DriverRegroup(
        docs, topo["assemble_replicas"], assemble_values, clock, documents, payload_totals
    )
    for row in df.select("doc", "page", "value", "length").iter_rows():
        if regroup.add(int(row["doc"]), int(row["page"]), int(row["value"]), int(row["length"])):
            regroup.collect()
    regroup.close()
if PAYLOAD:
    common.check_payload_totals(docs, payload_totals, PAYLOAD)
common.write_result(
    args.out,
    common.peer_label(f"daft ({args.arm}, {RUNNER} runner)", topo),
    daft.__version__,
    clock,
    documents,
    args.events_dir,
)
