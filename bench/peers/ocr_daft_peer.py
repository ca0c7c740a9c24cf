"""The OCR workload written the way an expert Daft user writes it, on the project's own stage
classes (rayorch_cpp.workloads.ocr_pdf.stages), with the project's resources, on Daft's Ray
runner on the same local Ray deployment as the other systems.

    a function (open a PDF: its page numbers) -> explode (one row per page)
    -> a class UDF render (0.5 CPU) -> a class UDF detect (1-CPU instances; a page's text
       lines as a list of structs, a page without text keeps one marker line or it would
       vanish from its document) -> explode (one row per line)
    -> into_batches(recognition batch) -> a batch class UDF recognise (batch_size lines a
       call, 1-CPU instances)
    -> groupby(doc) + list_agg, then a function that joins each page's lines and assembles
       the Markdown.

Images travel as Arrow-native columns (height, width, channels, raw bytes), which Daft moves
without pickling.
"""

import ocr_common

args = ocr_common.parse_args(__doc__)

import daft  # noqa: E402
import numpy as np  # noqa: E402
import ray  # noqa: E402
from daft import DataType, col  # noqa: E402

from rayorch_cpp.workloads.ocr_pdf import stages  # noqa: E402

ocr_common.start_local_ray(args.ray_cpus)
daft.set_runner_ray(address=ray.get_runtime_context().gcs_address)
paths = ocr_common.corpus_paths(args.corpus)
DPI = args.dpi
EVENTS_DIR = args.events_dir

IMAGE = DataType.struct(
    {
        "height": DataType.int64(),
        "width": DataType.int64(),
        "channels": DataType.int64(),
        "data": DataType.binary(),
    }
)
LINE = DataType.struct(
    {
        "line": DataType.int64(),
        "row": DataType.int64(),
        "height": DataType.int64(),
        "width": DataType.int64(),
        "channels": DataType.int64(),
        "data": DataType.binary(),
    }
)


def packed(image):
    h, w, c = image.shape
    return {"height": h, "width": w, "channels": c, "data": np.ascontiguousarray(image).tobytes()}


def unpacked(height, width, channels, data):
    return np.frombuffer(data, dtype=np.uint8).reshape(height, width, channels)


@daft.func(return_dtype=DataType.list(DataType.int64()))
def page_numbers(path: str):
    numbers, _ = stages.OpenPdf().run([path])
    if not isinstance(numbers[0], list):
        raise RuntimeError(str(numbers[0]))
    return numbers[0]


@daft.cls(cpus=0.5, max_concurrency=1)
class Render:
    def __init__(self):
        self.render = stages.RenderPage(DPI)

    @daft.method(return_dtype=IMAGE)
    def __call__(self, path: str, page: int):
        return packed(self.render.run([path], [page])[0])


@daft.cls(cpus=1, max_concurrency=args.detect_replicas)
class Detect:
    def __init__(self):
        self.detect = stages.DetectLines()

    @daft.method(return_dtype=DataType.list(LINE))
    def __call__(self, image: dict):
        page = unpacked(image["height"], image["width"], image["channels"], image["data"])
        crops, rows = self.detect.run([page])
        lines = [
            {"line": i, "row": row, **packed(crop)}
            for i, (crop, row) in enumerate(zip(crops[0], rows[0]))
        ]
        # The marker of a page without text.
        return lines or [{"line": -1, "row": -1, **packed(np.zeros((1, 1, 3), np.uint8))}]


@daft.cls(cpus=args.recognize_cpus, max_concurrency=args.recognize_replicas)
class Recognize:
    def __init__(self):
        self.recognize = stages.RecognizeLines()
        self.log = ocr_common.CallLog(EVENTS_DIR)

    @daft.method.batch(return_dtype=DataType.string(), batch_size=args.recognize_batch)
    def __call__(self, lines: daft.Series):
        rows = lines.to_pylist()
        real = [i for i, r in enumerate(rows) if r["line"] >= 0]
        texts = [""] * len(rows)
        if real:
            crops = [
                unpacked(rows[i]["height"], rows[i]["width"], rows[i]["channels"], rows[i]["data"])
                for i in real
            ]
            for i, text in zip(real, self.recognize.run(crops)):
                texts[i] = text
            self.log.call(len(real))
        return daft.Series.from_pylist(texts, dtype=DataType.string())


@daft.func(return_dtype=DataType.string())
def assemble(path: str, pages: int, page: list, line: list, row: list, text: list):
    page_lines = {}
    for p, n, r, t in zip(page, line, row, text):
        if n >= 0:
            page_lines.setdefault(p, []).append((n, r, t))
    return ocr_common.page_markdown(path, page_lines, pages)


clock = ocr_common.Clock()
df = daft.from_pydict({"doc": list(range(len(paths))), "path": paths})
df = df.with_column("page", page_numbers(col("path")))
df = df.with_column("pages", col("page").length()).explode("page")
df = df.with_column("image", Render()(col("path"), col("page")))
df = df.with_column("lines", Detect()(col("image"))).exclude("image").explode("lines")
df = df.into_batches(args.recognize_batch)
df = df.with_column("text", Recognize()(col("lines")))
df = df.with_columns({"line": col("lines")["line"], "row": col("lines")["row"]}).exclude("lines")
df = df.groupby("doc").agg(
    col("path").any_value().alias("path"),
    col("pages").any_value().alias("pages"),
    col("page").list_agg().alias("page"),
    col("line").list_agg().alias("line"),
    col("row").list_agg().alias("row"),
    col("text").list_agg().alias("text"),
)
df = df.with_column(
    "markdown",
    assemble(col("path"), col("pages"), col("page"), col("line"), col("row"), col("text")),
)
documents = {}
for out in df.select("path", "markdown").iter_rows():
    clock.document_done()
    documents[out["path"]] = out["markdown"]
ocr_common.write_result(args, "daft (groupby, ray runner)", daft.__version__, clock, documents)
ray.shutdown()
