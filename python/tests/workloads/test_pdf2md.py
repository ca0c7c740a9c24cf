"""The C++ renderer and OCR of the pdf2md workload in a Python pipeline, next to a Python UDF.

Runs when the extension was built with the pdf2md stages (poppler-cpp, Tesseract, cairo,
which scripts/install-deps.sh installs)."""

from __future__ import annotations

from pathlib import Path

import pytest

import rayorch_cpp as ro
from rayorch_cpp import F, _core

pytestmark = pytest.mark.skipif(
    "Pdf2mdOcr" not in ro.cpp_udfs(), reason="extension built without the pdf2md stages"
)


class Squeeze:
    """Python: collapses the whitespace of each page's text."""

    calls = 0

    def run(self, texts: list[str]) -> list[str]:
        Squeeze.calls += 1
        return [" ".join(t.split()) for t in texts]


class PdfToMarkdown(ro.Pipeline):
    def __init__(self) -> None:
        self.open = ro.CppModule("Pdf2mdOpen", batch_size=4)
        self.render = ro.CppModule("Pdf2mdRender", batch_size=2).pre_init(150)
        self.ocr = ro.CppModule("Pdf2mdOcr", replicas=2).pre_init("eng", "")
        self.squeeze = ro.RayModule(Squeeze).ray_options(batch_size=8)
        self.assemble = ro.CppModule("Pdf2mdAssemble")

    def forward(self, path: ro.Port) -> ro.Port:
        refs, info = self.open(path)
        page = F.expand(refs)
        image = self.render(F.broadcast(path, like=page), page)
        text = self.squeeze(self.ocr(image))
        return self.assemble(F.reduce(text), info)


def test_python_pipeline_with_the_cpp_renderer_and_ocr(tmp_path: Path) -> None:
    samples = _core.pdf2md_make_samples(str(tmp_path), docs=2, seed=3, max_pages=3, corrupt=1)
    paths = [p for p, _ in samples] + [str(tmp_path / "corrupt.pdf")]
    assert Path(paths[-1]).exists()
    Squeeze.calls = 0
    with ro.Executor(PdfToMarkdown()) as ex:
        out = ex.run(paths, progress=False).outputs
    for (_, pages), doc in zip(samples, out[:-1]):
        assert isinstance(doc, _core.Markdown), doc
        assert doc.pages == len(pages)
        for number in range(1, len(pages) + 1):
            assert f"## Page {number}" in doc.text
        accuracy = _core.pdf2md_word_accuracy("\n".join(pages), doc.text)
        assert accuracy > 0.9
    assert Squeeze.calls >= 1
    # The corrupt file: Pdf2mdOpen's RecordFailure, carried to the document's output.
    assert out[-1].outcome is ro.ItemOutcome.SUPPRESSED
    assert "corrupt.pdf" in out[-1].cause and out[-1].origin.call == "Pdf2mdOpen#0"


class RenderPages(ro.Pipeline):
    def __init__(self) -> None:
        self.open = ro.CppModule("Pdf2mdOpen")
        self.render = ro.CppModule("Pdf2mdRender").pre_init(72)

    def forward(self, path: ro.Port) -> ro.Port:
        refs, _ = self.open(path)
        page = F.expand(refs)
        return F.reduce(self.render(F.broadcast(path, like=page), page))


def test_a_rendered_page_shows_its_gray_pixels(tmp_path: Path) -> None:
    [(path, pages)] = _core.pdf2md_make_samples(
        str(tmp_path), docs=1, seed=3, max_pages=2, corrupt=0
    )
    with ro.Executor(RenderPages()) as ex:
        [images] = ex.run([path], progress=False).outputs
    assert [image.number for image in images] == list(range(1, len(pages) + 1))
    for image in images:
        assert isinstance(image.pixels, bytes)
        assert len(image.pixels) == image.width * image.height > 0
        assert min(image.pixels) < max(image.pixels)  # dark text on a light page
