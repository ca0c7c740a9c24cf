"""The OCR workload written the way an expert Ray Data user writes it, on the project's own
stage classes (rayorch_cpp.workloads.ocr_pdf.stages), with the project's resources.

    flat_map (open a PDF: one row per page)
    -> map_batches render (tasks, 0.5 CPU, 2 pages a call, one at a time)
    -> map_batches detect (an ActorPoolStrategy pool of 1-CPU actors), which also explodes
       each page into one row per text line (map_batches may change the row count, so the
       explode needs no operator of its own; a page without text keeps one marker row, or it
       would vanish from its document)
    -> a streaming repartition to the recognition batch (otherwise bundles split at block
       boundaries and leave recognition calls underfilled)
    -> map_batches recognise (an ActorPoolStrategy pool, batch_size lines a call)
    -> back to documents, one of two ways (--arm):
       groupby  groupby(doc) + map_groups (join lines per page, assemble Markdown), the
                idiomatic way;
       driver   no shuffle: the driver streams recognised lines and assembles each document
                as soon as every line of every one of its pages is in (each row carries its
                document's page count and its page's line count), what Ray Data #57936 asks
                for.
"""

import ocr_common

args = ocr_common.parse_args(__doc__, arms=("groupby", "driver"))

import numpy as np  # noqa: E402
import ray  # noqa: E402

from rayorch_cpp.workloads.ocr_pdf import stages  # noqa: E402

ocr_common.start_local_ray(args.ray_cpus)
ray.data.DataContext.get_current().enable_progress_bars = False
paths = ocr_common.corpus_paths(args.corpus)
DPI = args.dpi
EVENTS_DIR = args.events_dir
# A line-less page's marker row carries this crop (never read by the model).
NO_CROP = np.zeros((1, 1, 3), dtype=np.uint8)


def open_pdf(row):
    _, infos = stages.OpenPdf().run([row["path"]])
    info = infos[0]
    if not isinstance(info, stages.DocumentInfo):
        raise RuntimeError(str(info))
    return [
        {"doc": row["doc"], "path": row["path"], "page": i, "pages": info.pages}
        for i in range(info.pages)
    ]


def render(batch):
    images = stages.RenderPage(DPI).run(list(batch["path"]), [int(p) for p in batch["page"]])
    return {**batch, "image": images}


class Detect:
    def __init__(self):
        self.detect = stages.DetectLines()

    def __call__(self, batch):
        crops, rows = self.detect.run(list(batch["image"]))
        out = {k: [] for k in ("doc", "path", "page", "pages", "page_lines", "line", "row")}
        out["crop"] = []
        for i, (page_crops, page_rows) in enumerate(zip(crops, rows)):
            for line, (crop, row) in enumerate(zip(page_crops, page_rows)):
                out["line"].append(line)
                out["row"].append(row)
                out["crop"].append(crop)
            if not page_crops:  # the marker row of a page without text
                out["line"].append(-1)
                out["row"].append(-1)
                out["crop"].append(NO_CROP)
            for key in ("doc", "path", "page", "pages"):
                out[key] += [batch[key][i]] * max(1, len(page_crops))
            out["page_lines"] += [len(page_crops)] * max(1, len(page_crops))
        out["crop"] = np.array(out["crop"] + [None], dtype=object)[:-1]  # ragged: objects
        return out


class Recognize:
    def __init__(self, events_dir):
        self.recognize = stages.RecognizeLines()
        self.log = ocr_common.CallLog(events_dir)

    def __call__(self, batch):
        real = [i for i, line in enumerate(batch["line"]) if line >= 0]
        texts = [""] * len(batch["line"])
        if real:
            for i, text in zip(real, self.recognize.run([batch["crop"][i] for i in real])):
                texts[i] = text
            self.log.call(len(real))
        del batch["crop"]
        return {**batch, "text": np.array(texts, dtype=object)}


def assemble(group):
    page_lines = {}
    for page, line, row, text in zip(group["page"], group["line"], group["row"], group["text"]):
        if line >= 0:
            page_lines.setdefault(int(page), []).append((int(line), int(row), str(text)))
    markdown = ocr_common.page_markdown(group["path"][0], page_lines, int(group["pages"][0]))
    return {"path": group["path"][:1], "markdown": np.array([markdown], dtype=object)}


clock = ocr_common.Clock()
ds = ray.data.from_items(
    [{"doc": i, "path": p} for i, p in enumerate(paths)], override_num_blocks=len(paths)
)
# One task at a time for opening and rendering, as the other systems' one actor each.
pages = ds.flat_map(open_pdf, num_cpus=0.25, compute=ray.data.TaskPoolStrategy(size=1))
images = pages.map_batches(
    render,
    batch_size=2,
    num_cpus=0.5,
    compute=ray.data.TaskPoolStrategy(size=1),
    batch_format="numpy",
)
lines = images.map_batches(
    Detect,
    batch_size=1,
    num_cpus=1,
    compute=ray.data.ActorPoolStrategy(size=args.detect_replicas),
    batch_format="numpy",
)
lines = lines.repartition(target_num_rows_per_block=args.recognize_batch, strict=True)
texts = lines.map_batches(
    Recognize,
    batch_size=args.recognize_batch,
    num_cpus=args.recognize_cpus,
    compute=ray.data.ActorPoolStrategy(size=args.recognize_replicas),
    batch_format="numpy",
    fn_constructor_args=(EVENTS_DIR,),
)
documents = {}
if args.arm == "groupby":
    assembled = texts.groupby("doc", num_partitions=2).map_groups(
        assemble, batch_format="numpy", num_cpus=0.25
    )
    for row in assembled.iter_rows():
        clock.document_done()
        documents[str(row["path"])] = str(row["markdown"])
else:
    expected = {}  # doc -> (path, pages, {page: line count})
    got = {}  # doc -> {page: [(line, row, text)]}
    for batch in texts.iter_batches(batch_size=None, batch_format="numpy"):
        for doc, path, page, pages, count, line, row, text in zip(
            batch["doc"],
            batch["path"],
            batch["page"],
            batch["pages"],
            batch["page_lines"],
            batch["line"],
            batch["row"],
            batch["text"],
        ):
            doc, page = int(doc), int(page)
            want = expected.setdefault(doc, (str(path), int(pages), {}))
            want[2][page] = int(count)
            have = got.setdefault(doc, {}).setdefault(page, [])
            if line >= 0:
                have.append((int(line), int(row), str(text)))
            done = got[doc]
            if len(want[2]) == want[1] and all(len(done[p]) == want[2][p] for p in want[2]):
                clock.document_done()
                documents[want[0]] = ocr_common.page_markdown(want[0], done, want[1])
                del got[doc]
ocr_common.write_result(args, f"ray-data ({args.arm})", ray.__version__, clock, documents)
ray.shutdown()
