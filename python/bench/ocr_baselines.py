"""What the OCR workload is measured against on real PDFs (python/bench/ocr_pdf.py --pdfs):

- the documents themselves: a set of real PDFs cut to their first pages, and each one's text
  layer (``pdftotext``), the reference its word recall is scored against;
- the model-inference limit: the time the models themselves take on those pages, detection's
  and recognition's onnxruntime ``run()`` alone (no rendering, pre- or post-processing), one
  thread, one detection per page at the side the page needs, each line read alone at its
  width class, as the workload reads it; that time over
  the cores is the least any schedule of these models can take;
- the baseline a user would write instead: rapidocr's own pipeline (``RapidOCR()``, the same
  PP-OCRv4 models, its default settings but one onnxruntime thread) page by page in a
  ``multiprocessing.Pool`` of one process per core, the pages rendered at the same dpi."""

from __future__ import annotations

import multiprocessing
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class RealDocument:
    """A real PDF cut to its first pages (``path``), where it came from, and its text layer."""

    path: str
    source: str
    producer: str
    pages: int
    text: str


def pdf_producer(path: str) -> str:
    info = subprocess.run(["pdfinfo", path], capture_output=True, text=True).stdout
    fields = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
    return fields.get("Producer", "?").strip()[:32]


def cut_documents(sources: list[str], work: Path, max_pages: int) -> list[RealDocument]:
    """Each PDF of ``sources`` (files, or directories searched for ``*.pdf``) cut to its first
    ``max_pages`` pages into ``work``, with its text layer."""
    import pypdfium2 as pdfium

    files: list[Path] = []
    for source in sources:
        found = Path(source)
        if found.is_dir():  # hidden folders (a download cache) left out
            pdfs = found.rglob("*.pdf")
            files += sorted(f for f in pdfs if not any(p.startswith(".") for p in f.parts))
        else:
            files.append(found)
    work.mkdir(parents=True, exist_ok=True)
    out = []
    for file in files:
        document = pdfium.PdfDocument(str(file))
        count = min(max_pages, len(document))
        cut = pdfium.PdfDocument.new()
        cut.import_pages(document, list(range(count)))
        target = work / file.name
        cut.save(str(target))
        cut.close()
        document.close()
        text = subprocess.run(
            ["pdftotext", str(target), "-"], check=True, capture_output=True, text=True
        ).stdout
        out.append(RealDocument(str(target), str(file), pdf_producer(str(file)), count, text))
    return out


def render(path: str, page: int, dpi: float) -> Any:
    import numpy as np
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(path)
    image = np.ascontiguousarray(document[page].render(scale=dpi / 72).to_numpy()[:, :, :3])
    document.close()
    return image


def inference_seconds(documents: list[RealDocument], dpi: float, detect_side: int) -> float:
    """The models' own time on every page of ``documents``: detection's and recognition's
    ``run()`` alone, one thread (the sessions are opened outside an actor), each line alone
    at its width class."""
    from rayorch_cpp.workloads.ocr_pdf.detect import TextLineDetector, crop
    from rayorch_cpp.workloads.ocr_pdf.recognize import (
        TextLineRecognizer,
        batch_tensor,
        scaled_width,
        width_class,
    )

    detector = TextLineDetector(detect_side)
    recognizer = TextLineRecognizer(lines_per_inference=1)
    seconds = 0.0
    for document in documents:
        for page in range(document.pages):
            image = render(document.path, page, dpi)
            boxes = detector.boxes(image)
            # The detection at the side the detector chose for the page.
            chosen = detector.large if detector.last_side < detector.side else detector.preprocess
            tensor = chosen(image)
            if tensor is None:
                continue
            start = time.perf_counter()
            detector.session.run(None, {detector.input_name: tensor})
            seconds += time.perf_counter() - start
            for box in boxes:
                line = crop(image, box)
                batch, _, _ = batch_tensor([line], width_class(scaled_width(line)))
                start = time.perf_counter()
                recognizer.session.run(None, {recognizer.input_name: batch})
                seconds += time.perf_counter() - start
    return seconds


_engine: Any = None


def _start_rapidocr() -> None:
    global _engine
    from rapidocr_onnxruntime import RapidOCR

    _engine = RapidOCR(intra_op_num_threads=1, inter_op_num_threads=1)


def _read_page(job: tuple[str, int, float]) -> tuple[str, int, str]:
    path, page, dpi = job
    result, _ = _engine(render(path, page, dpi))
    return path, page, "\n".join(line[1] for line in (result or []))


def _ready(_: int) -> bool:
    return _engine is not None


@dataclass(frozen=True, slots=True)
class PoolRun:
    """The baseline's run: seconds from the first page handed out to the last read (the pool
    and its models started before), and each document's text by path."""

    seconds: float
    texts: dict[str, str]


def rapidocr_pool(documents: list[RealDocument], dpi: float, processes: int) -> PoolRun:
    """RapidOCR() page by page in a pool of ``processes`` processes, one thread each."""
    jobs = [(d.path, page, dpi) for d in documents for page in range(d.pages)]
    context = multiprocessing.get_context("spawn")
    with context.Pool(processes, initializer=_start_rapidocr) as pool:
        pool.map(_ready, range(processes), chunksize=1)  # every process has its models
        start = time.monotonic()
        pages = pool.map(_read_page, jobs, chunksize=1)
        seconds = time.monotonic() - start
    by_path: dict[str, list[tuple[int, str]]] = {}
    for path, page, text in pages:
        by_path.setdefault(path, []).append((page, text))
    texts = {p: "\n".join(t for _, t in sorted(found)) for p, found in by_path.items()}
    return PoolRun(seconds, texts)
