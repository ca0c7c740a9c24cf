"""The stages of the OCR pipeline and the pipeline itself (``OcrPdf``): a document expands
into its pages, each page into its text lines, the lines of many pages of many documents are
recognised together in batched model calls (grouped by width class), and reductions bring the
lines back to their page in reading order and the pages back to their document.

    path -> OpenPdf -> expand pages -> RenderPage -> DetectLines -> expand lines
         -> RecognizeLines (batched) -> reduce per page -> JoinLines -> reduce per document
         -> AssembleMarkdown

pdfium (pypdfium2) is not thread-safe, even across documents: every call into it holds
PDFIUM_LOCK, so the local backend's actor threads take turns (Ray actors are processes of
their own and never wait on each other)."""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ... import F, Module, Pipeline, Port, RecordFailure, RecoveryPolicy
from ...io import FileSink
from . import recall
from .detect import DETECT_SIDE, Image, TextLine, TextLineDetector
from .recognize import TextLineRecognizer

# The one lock of the process's pdfium state (see the module docstring).
PDFIUM_LOCK = threading.Lock()
COMPLETE_MARKER = "<!-- ocr_pdf: complete"
# Pages are rendered at 200 dpi: a line of 10-point text is then about 30 pixels tall, and the
# recogniser, which scales every line to 48 pixels, reads it as well as at 300 dpi (word
# recall 0.973 and 0.971 on 16 real pages of 9 Debian manuals); at 150 dpi it reads 0.972
# only with boxes grown further than rapidocr grows them (0.899 with rapidocr's).
RENDER_DPI = 200.0
# A text layer of fewer words (a page number, a stamp) says too little to compare against.
TEXT_LAYER_MIN_WORDS = 20


@dataclass(frozen=True, slots=True)
class DocumentInfo:
    """What opening a PDF tells: its name (file stem), page count, and the text of its text
    layer ("" when it has none, as a scan has none)."""

    stem: str
    pages: int
    text_layer: str = ""


@dataclass(frozen=True, slots=True)
class Markdown:
    """A converted document: its Markdown, page count, the pages on which no text was found
    (1-based; a page without text, such as a blank or an image-less one, is converted with
    an empty section, not failed), and, when the PDF has a text layer of at least
    TEXT_LAYER_MIN_WORDS words, the share of that layer's words the Markdown holds
    (recall.word_recall; None without one)."""

    stem: str
    pages: int
    text: str
    pages_without_text: tuple[int, ...] = ()
    text_layer_recall: float | None = None


class OpenPdf:
    """path -> (its page numbers, DocumentInfo with its text layer); a PDF that cannot be
    opened is a RecordFailure naming the file and pdfium's error."""

    def run(self, paths: list[str]) -> tuple[list[Any], list[Any]]:
        import pypdfium2 as pdfium

        pages: list[Any] = []
        infos: list[Any] = []
        for path in paths:
            try:
                with PDFIUM_LOCK:
                    document = pdfium.PdfDocument(path)
                    try:
                        count = len(document)
                        layer = "\n".join(text_layer_of(document[i]) for i in range(count))
                    finally:
                        document.close()
            except (pdfium.PdfiumError, OSError) as error:
                failure = RecordFailure(f"cannot open {path}: {error}")
                pages.append(failure)
                infos.append(failure)
                continue
            pages.append(list(range(count)))
            infos.append(DocumentInfo(Path(path).stem, count, layer))
        return pages, infos


def text_layer_of(page: Any) -> str:
    """The text of a pdfium page's text layer ("" without one)."""
    textpage = page.get_textpage()
    try:
        return str(textpage.get_text_range())
    finally:
        textpage.close()


class RenderPage:
    """(path, page number) -> the page as an image (height x width x 3, BGR) at ``dpi``."""

    def __init__(self, dpi: float) -> None:
        self.scale = dpi / 72.0

    def run(self, paths: list[str], pages: list[int]) -> list[Image]:
        import pypdfium2 as pdfium

        out: list[Image] = []
        with PDFIUM_LOCK:
            documents: dict[str, Any] = {}
            try:
                for path, number in zip(paths, pages):
                    if path not in documents:
                        documents[path] = pdfium.PdfDocument(path)
                    bitmap = documents[path][number].render(scale=self.scale, grayscale=False)
                    image = bitmap.to_numpy()
                    out.append(image[:, :, :3].copy() if image.shape[2] == 4 else image.copy())
            finally:
                for document in documents.values():
                    document.close()
        return out


class DetectLines:
    """page image -> (its text lines in reading order, each line's row): one detection
    inference per page, at ``side`` pixels at most (detect.DETECT_SIDE)."""

    def __init__(self, side: int = DETECT_SIDE) -> None:
        self.detector = TextLineDetector(side)

    def run(self, images: list[Image]) -> tuple[list[Any], list[Any]]:
        crops: list[Any] = []
        rows: list[Any] = []
        for image in images:
            lines: list[TextLine] = self.detector.lines(image)
            crops.append([line.image for line in lines])
            rows.append([line.row for line in lines])
        return crops, rows


class RecognizeLines:
    """text-line crop -> its text: the lines of a call (of any pages of any documents) read
    grouped by width class (recognize.py)."""

    def __init__(self) -> None:
        self.recognizer = TextLineRecognizer()

    def run(self, lines: list[Image]) -> list[str]:
        return self.recognizer.read(lines)


class JoinLines:
    """(a page's line texts in reading order, their rows) -> the page's text: lines of one
    row joined by a space, rows by a newline, and a word hyphenated across a row break joined
    (join_hyphenated)."""

    def run(self, texts: list[list[str]], rows: list[list[int]]) -> list[str]:
        out = []
        for line_texts, line_rows in zip(texts, rows):
            joined: list[list[str]] = []
            for i, (text, row) in enumerate(zip(line_texts, line_rows)):
                if i == 0 or row != line_rows[i - 1]:
                    joined.append([])
                joined[-1].append(text)
            page = [" ".join(t for t in row_texts if t) for row_texts in joined]
            out.append("\n".join(join_hyphenated(page)))
        return out


def join_hyphenated(rows: list[str]) -> list[str]:
    """``rows`` with each word that typesetting broke across two rows ("non-" at the end of
    one, "developers" at the start of the next) whole again at the end of the first row,
    without its hyphen, as text extraction (pdftotext) gives it: a row that ends in a letter
    and a hyphen, followed by a row that starts with a lower-case letter. A row left empty
    by the move is dropped."""
    out = list(rows)
    for i in range(len(out) - 1):
        head, tail = out[i], out[i + 1]
        if len(head) >= 2 and head[-1] == "-" and head[-2].isalpha() and tail[:1].islower():
            rest, _, remainder = tail.partition(" ")
            out[i] = head[:-1] + rest
            out[i + 1] = remainder
    return [row for row, was in zip(out, rows) if row or not was]


class AssembleMarkdown:
    """(a document's page texts in page order, DocumentInfo) -> Markdown: a title, one
    section per page, and a closing marker that says the document is complete."""

    def run(self, pages: list[list[str]], infos: list[DocumentInfo]) -> list[Any]:
        out: list[Any] = []
        for texts, info in zip(pages, infos):
            if len(texts) != info.pages:
                out.append(
                    RecordFailure(
                        f"document {info.stem} has {info.pages} pages but {len(texts)} page "
                        "texts were gathered"
                    )
                )
                continue
            text = f"# {info.stem}\n"
            empty = []
            for number, body in enumerate(texts, start=1):
                text += f"\n## Page {number}\n\n"
                if body.strip():
                    text += body.strip() + "\n"
                else:
                    empty.append(number)
            text += f"\n{COMPLETE_MARKER}, {info.pages} pages -->\n"
            found, words = recall.word_recall(info.text_layer, text)
            layer_recall = found / words if words >= TEXT_LAYER_MIN_WORDS else None
            out.append(Markdown(info.stem, info.pages, text, tuple(empty), layer_recall))
        return out


@dataclass(frozen=True, slots=True)
class StageOptions:
    """One stage's Module options: actors, Grains per call, CPUs and GPUs per actor, how
    long an idle actor may wait for a fuller batch while more of its work can still arrive
    (``batch_wait``, seconds; 0: it takes what is ready), where its actors run
    (``isolation``: None for the run's default, threads; "process": a worker process per
    actor, so that a crash in native code costs the documents of the call, not the run), and
    the co-location group it shares a pool with (``colocate``, DESIGN 5.12: render and detect
    co-located keep each page image in the actor that rendered it; the members must agree on
    replicas, CPUs, GPUs, batch_wait and isolation)."""

    replicas: int = 1
    batch_size: int = 1
    num_cpus: float = 1.0
    num_gpus: float = 0.0
    batch_wait: float = 0.0
    isolation: str | None = None
    colocate: str | None = None

    def module(self, udf: Any, name: str) -> Module:
        waits: dict[str, Any] = {"batch_wait": self.batch_wait} if self.batch_wait > 0 else {}
        if self.isolation is not None:
            waits["isolation"] = self.isolation
        if self.colocate is not None:
            waits["colocate"] = self.colocate
        return Module(
            udf,
            name=name,
            replicas=self.replicas,
            batch_size=self.batch_size,
            num_cpus=self.num_cpus,
            num_gpus=self.num_gpus,
            recovery=RecoveryPolicy.isolate_tail(),
            **waits,
        )


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    """What shapes the pipeline: the render resolution and each stage's options. The
    defaults suit one machine: the model stages get the cores, recognition batches 32
    lines (of any pages of any documents), and an idle recognition actor waits up to 2 s for
    a full batch while detection can still add lines. Without the wait it would take the
    few lines that are ready: detection adds a page's 4 to 7 lines at a time, and the stages
    share the cores, so no backlog builds (recognition calls were about 60 % full, 85 % with
    the wait; BENCHMARKS.md, ocr_pdf). An idle actor's core is meanwhile the other stages'."""

    dpi: float = RENDER_DPI
    detect_side: int = DETECT_SIDE
    open: StageOptions = field(default_factory=lambda: StageOptions(batch_size=8, num_cpus=0.25))
    render: StageOptions = field(default_factory=lambda: StageOptions(batch_size=2, num_cpus=0.5))
    detect: StageOptions = field(default_factory=StageOptions)
    recognize: StageOptions = field(
        default_factory=lambda: StageOptions(batch_size=32, batch_wait=2.0)
    )
    join: StageOptions = field(default_factory=lambda: StageOptions(batch_size=16, num_cpus=0.25))
    assemble: StageOptions = field(
        default_factory=lambda: StageOptions(batch_size=4, num_cpus=0.25)
    )

    STAGES = ("open", "render", "detect", "recognize", "join", "assemble")

    def cpus_asked(self) -> float:
        """The CPUs every stage's actors ask for together."""
        stages: list[StageOptions] = [getattr(self, s) for s in self.STAGES]
        return sum(s.replicas * s.num_cpus for s in stages)

    def fitted_to(self, cpus: float) -> PipelineConfig:
        """This configuration with every stage's ``num_cpus`` scaled down by one factor
        (rounded down to a thousandth) so that all the actors fit ``cpus`` (a Ray cluster's),
        keeping the stages' shares; itself when they fit already."""
        asked = self.cpus_asked()
        if asked <= cpus + 1e-9 or cpus <= 0:
            return self
        factor = cpus / asked
        scaled = {
            s: replace(
                getattr(self, s),
                num_cpus=math.floor(getattr(self, s).num_cpus * factor * 1000) / 1000,
            )
            for s in self.STAGES
        }
        return replace(self, **scaled)


class OcrPdf(Pipeline):
    """PDF path -> Markdown (see the module docstring for the stages)."""

    def __init__(self, config: PipelineConfig | None = None) -> None:
        c = config if config is not None else PipelineConfig()
        self.open = c.open.module(OpenPdf, "open").returns(2)
        self.render = c.render.module(RenderPage, "render").pre_init(c.dpi)
        self.detect = c.detect.module(DetectLines, "detect").pre_init(c.detect_side).returns(2)
        self.recognize = c.recognize.module(RecognizeLines, "recognize")
        self.join = c.join.module(JoinLines, "join")
        self.assemble = c.assemble.module(AssembleMarkdown, "assemble")

    def forward(self, path: Port) -> Port:
        page_numbers, info = self.open(path)
        page = F.expand(page_numbers)
        image = self.render(F.broadcast(path, like=page), page)
        crops, rows = self.detect(image)
        line = F.expand(crops)
        text = self.recognize(line)
        page_text = self.join(F.reduce(text), rows)
        markdown: Port = self.assemble(F.reduce(page_text), info)
        return markdown

    def job_sink(self, directory: str) -> FileSink:
        """As a job (docs/JOBS.md: ``python -m rayorch_cpp run
        rayorch_cpp.workloads.ocr_pdf.stages:OcrPdf -i PDFS -o OUT``), each document as
        ``OUT/<stem>.md``, as the workload's own command writes it."""
        return FileSink(
            directory=directory,
            name=lambda key, row, doc: f"{doc.stem}.md",
            contents=lambda doc: doc.text,
        )
