"""The simulated document workload written the way Daft users write it.

explode (render one document into its page list, one row per page) -> a class UDF with a
batch size and a concurrency (OCR) -> groupby(doc) + list_agg, sorted by page -> per-document
assemble. The application carries the document id and page index as data and regroups.
"""

import common

args = common.parse_args(__doc__)
clock = common.Clock()
docs, costs, topo = common.load_corpus(args.corpus)

import time  # noqa: E402

import daft  # noqa: E402
from daft import DataType, col  # noqa: E402

# UDFs run in worker processes that cannot import `common`: they use only these numbers.
RENDER_PER_PAGE = costs["render_per_page"] / 1000.0
OCR_PER_BATCH = costs["ocr_per_batch"] / 1000.0
OCR_PER_PAGE = costs["ocr_per_page"] / 1000.0
ASSEMBLE_PER_DOC = costs["assemble_per_doc"] / 1000.0
ASSEMBLE_PER_PAGE = costs["assemble_per_page"] / 1000.0


@daft.cls(max_concurrency=topo["render_replicas"])
class Render:
    @daft.method(return_dtype=DataType.list(DataType.int64()))
    def __call__(self, pages: int):
        time.sleep(pages * RENDER_PER_PAGE)
        return list(range(pages))


@daft.cls(max_concurrency=topo["ocr_replicas"])
class Ocr:
    @daft.method.batch(return_dtype=DataType.int64(), batch_size=topo["ocr_batch"])
    def __call__(self, doc: daft.Series, page: daft.Series):
        d = doc.to_pylist()
        p = page.to_pylist()
        time.sleep(OCR_PER_BATCH + len(p) * OCR_PER_PAGE)
        return daft.Series.from_pylist([a * 1000000 + b for a, b in zip(d, p)])


@daft.cls(max_concurrency=topo["assemble_replicas"])
class Assemble:
    @daft.method(return_dtype=DataType.list(DataType.int64()))
    def __call__(self, pages: list, values: list):
        ordered = [v for _, v in sorted(zip(pages, values))]
        time.sleep(ASSEMBLE_PER_DOC + len(ordered) * ASSEMBLE_PER_PAGE)
        return ordered


clock.begin()
df = daft.from_pydict({"doc": [d["id"] for d in docs], "pages": [d["pages"] for d in docs]})
df = df.with_column("page", Render()(col("pages"))).explode("page")
df = df.with_column("value", Ocr()(col("doc"), col("page")))
df = df.groupby("doc").agg(
    col("page").list_agg().alias("pages"), col("value").list_agg().alias("values")
)
df = df.with_column("ordered", Assemble()(col("pages"), col("values"))).select("doc", "ordered")
documents = {}
for row in df.iter_rows():
    clock.document_done()
    documents[int(row["doc"])] = row["ordered"]
common.write_result(args.out, "daft", daft.__version__, clock, documents)
