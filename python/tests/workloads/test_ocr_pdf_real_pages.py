"""The OCR workload on real documents: pages of two manuals that Debian ships (the
shared-mime-info specification, typeset by LaTeX, and the libtasn1 manual, by Texinfo), cut
into small PDFs at test time. The workload's word recall against ``pdftotext`` is at least
0.95 and not more than 0.01 below that of rapidocr's own pipeline (``RapidOCR()``, the same
PP-OCRv4 models) on the same rendered pages; recognition reads every real line the same
alone and in a batch; a line as long as a page of small type is read without being squeezed.

The manuals come from the packages scripts/install-deps.sh installs (shared-mime-info,
libtasn1-doc); nothing is downloaded."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("pypdfium2")
pytest.importorskip("rapidocr_onnxruntime")

import numpy as np  # noqa: E402

import rayorch_cpp as ro  # noqa: E402
from rayorch_cpp.workloads.ocr_pdf import Markdown, OcrPdf, PipelineConfig, recall  # noqa: E402
from rayorch_cpp.workloads.ocr_pdf.detect import TextLineDetector  # noqa: E402
from rayorch_cpp.workloads.ocr_pdf.recognize import (  # noqa: E402
    MIN_WIDTH,
    WIDTH_STEP,
    TextLineRecognizer,
)

# (Debian package, its PDF, the 0-based pages cut from it)
SOURCES = (
    ("shared-mime-info", "/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf", (2, 3)),
    ("libtasn1-doc", "/usr/share/doc/libtasn1-doc/libtasn1.pdf", (5,)),
)


def cut_pages(source: str, pages: tuple[int, ...], target: Path) -> Path:
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(source)
    cut = pdfium.PdfDocument.new()
    cut.import_pages(document, list(pages))
    cut.save(str(target))
    cut.close()
    document.close()
    return target


@pytest.fixture(scope="module")
def real_pdfs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    directory = tmp_path_factory.mktemp("real")
    out = []
    for package, source, pages in SOURCES:
        if not Path(source).is_file():
            pytest.fail(
                f"{source} is missing: install the {package} package (scripts/install-deps.sh)"
            )
        out.append(cut_pages(source, pages, directory / f"{Path(source).stem}.pdf"))
    return out


def text_layer(path: Path) -> str:
    return subprocess.run(
        ["pdftotext", str(path), "-"], check=True, capture_output=True, text=True
    ).stdout


def rendered_pages(path: Path, dpi: float) -> list[Any]:
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(str(path))
    images = [
        np.ascontiguousarray(page.render(scale=dpi / 72).to_numpy()[:, :, :3]) for page in document
    ]
    document.close()
    return images


def test_recall_on_real_pages_is_at_least_0_95_and_within_0_01_of_rapidocrs(
    real_pdfs: list[Path],
) -> None:
    from rapidocr_onnxruntime import RapidOCR

    config = PipelineConfig()
    with ro.Executor(OcrPdf(config)) as ex:
        outputs = ex.run([str(p) for p in real_pdfs], progress=False).outputs
    oracle = RapidOCR()
    for path, markdown in zip(real_pdfs, outputs):
        assert isinstance(markdown, Markdown), markdown
        truth = text_layer(path)
        found, total = recall.word_recall(truth, markdown.text)
        assert total > 100
        theirs_text = "\n".join(
            line[1]
            for image in rendered_pages(path, config.dpi)
            for line in (oracle(image)[0] or [])
        )
        theirs, _ = recall.word_recall(truth, theirs_text)
        assert found / total >= 0.95, (path.name, found / total)
        assert found / total >= theirs / total - 0.01, (path.name, found / total, theirs / total)


def test_real_lines_read_the_same_alone_and_in_one_inference(real_pdfs: list[Path]) -> None:
    config = PipelineConfig()
    detector = TextLineDetector(config.detect_side)
    lines = [
        line.image
        for path in real_pdfs
        for image in rendered_pages(path, config.dpi)
        for line in detector.lines(image)
    ]
    assert len(lines) > 60
    grouped = TextLineRecognizer(lines_per_inference=32)
    together = grouped.read(lines)
    alone = TextLineRecognizer(lines_per_inference=1).read(lines)
    assert together == alone
    assert sum(s.lines for s in grouped.shapes) == len(lines)
    assert max(s.lines for s in grouped.shapes) > 1
    assert all(s.width >= MIN_WIDTH and s.width % WIDTH_STEP == 0 for s in grouped.shapes)


def test_a_line_as_long_as_a_page_of_small_type_is_read_whole() -> None:
    from PIL import Image, ImageDraw, ImageFont

    words = " ".join(f"word{i} river{i}" for i in range(40))
    font_file = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
    font = (
        ImageFont.truetype(font_file, 28) if Path(font_file).is_file() else ImageFont.load_default()
    )
    width = int(ImageDraw.Draw(Image.new("L", (1, 1))).textlength(words, font=font)) + 40
    image = Image.new("RGB", (width, 44), "white")
    ImageDraw.Draw(image).text((20, 6), words, fill="black", font=font)
    line = np.asarray(image)[:, :, ::-1].copy()
    assert line.shape[1] / line.shape[0] > 100  # far past the old 64:1 squeeze
    recognizer = TextLineRecognizer()
    [text] = recognizer.read([line])
    [shape] = recognizer.shapes
    assert shape.width >= line.shape[1] * 48 / line.shape[0]  # read at its own width
    found, total = recall.word_recall(words, text)
    assert found / total >= 0.95, text


def test_large_type_is_detected_at_the_small_side_and_body_text_or_a_table_is_not(
    real_pdfs: list[Path], tmp_path: Path
) -> None:
    from PIL import Image, ImageDraw, ImageFont

    from rayorch_cpp.workloads.ocr_pdf import samples
    from rayorch_cpp.workloads.ocr_pdf.detect import DETECT_SIDE, PROBE_SIDE

    config = PipelineConfig()
    detector = TextLineDetector(config.detect_side)
    for path in real_pdfs:  # body text of two manuals
        for image in rendered_pages(path, config.dpi):
            detector.boxes(image)
            assert detector.last_side == DETECT_SIDE, path.name
    [large] = samples.make_corpus(tmp_path, 1, seed=2, max_pages=1)  # 20-point type
    detector.boxes(rendered_pages(Path(large.path), config.dpi)[0])
    assert detector.last_side == PROBE_SIDE
    # A caption and a ruled table: the rules make no band of text.
    page = Image.new("RGB", (1700, 2200), "white")
    draw = ImageDraw.Draw(page)
    font_file = "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf"
    font = ImageFont.truetype(font_file, 28) if Path(font_file).is_file() else None
    draw.text((200, 200), "Table 3: results by river and station", fill="black", font=font)
    for row in range(9):
        draw.line((200, 300 + row * 60, 1500, 300 + row * 60), fill="black", width=3)
    for column in range(5):
        draw.line((200 + column * 325, 300, 200 + column * 325, 780), fill="black", width=3)
    for row in range(8):
        for column in range(4):
            at = (215 + column * 325, 312 + row * 60)
            draw.text(at, f"cell {row} {column} 0.93", fill="black", font=font)
    detector.boxes(np.asarray(page)[:, :, ::-1].copy())
    assert detector.last_side == DETECT_SIDE


def test_the_detection_input_is_rapidocrs_on_real_pages(real_pdfs: list[Path]) -> None:
    from rapidocr_onnxruntime.ch_ppocr_det.utils import DetPreProcess

    from rayorch_cpp.workloads.ocr_pdf.detect import DetectionInput

    for image in rendered_pages(real_pdfs[0], PipelineConfig().dpi):
        for side in (640, 1280, 4096):  # scaled down, and a side past the page: not scaled up
            ours = DetectionInput(side)(image)
            theirs = DetPreProcess(side, "max", [0.5] * 3, [0.5] * 3)(image)
            assert ours is not None and ours.shape == theirs.shape
            assert np.array_equal(ours, theirs)
