"""A generated corpus of PDFs with known text (scored with recall.word_recall).

Each page is drawn with Pillow (DejaVu Sans when the system has it, else Pillow's own font)
as an image and the pages are written as an image PDF, like a scan: the known text is what
was drawn. Page counts are long-tailed (most documents short, a few long). Nothing is
downloaded."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PAGE_INCHES = (8.5, 11.0)
DRAW_DPI = 150  # the resolution pages are drawn and stored at
FONT_POINTS = 20
FONT_FILES = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
)
VOCABULARY = (
    "lineage batch page document actor engine grain reduce expand render detect model python "
    "cluster journal resume failure outcome reading order width bucket padding thread memory "
    "river mountain window garden silver yellow orange purple market winter summer autumn "
    "spring harbour station letter number signal pattern object vector matrix circle square "
    "triangle bridge castle forest desert island ocean planet rocket engineer teacher doctor "
    "farmer painter writer singer dancer Paris London Berlin Madrid Tokyo Cairo Lima Oslo "
    "2019 2024 314 42 17.5 0.93 1200"
).split()
MANIFEST = "manifest.json"


@dataclass(frozen=True, slots=True)
class SampleDocument:
    """A generated PDF and the lines drawn on each of its pages (an empty list: a blank,
    image-less page)."""

    path: str
    pages: list[list[str]]

    @property
    def stem(self) -> str:
        return Path(self.path).stem

    @property
    def text(self) -> str:
        return "\n".join(line for page in self.pages for line in page)


def _font(points: int) -> Any:
    from PIL import ImageFont

    size = round(points * DRAW_DPI / 72)
    for path in FONT_FILES:
        if Path(path).is_file():
            return ImageFont.truetype(path, size)
    return ImageFont.load_default(size)


def page_lines(rng: random.Random) -> list[str]:
    """The lines of one page: 4 to 7 lines of 2 to 5 words."""
    return [
        " ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(2, 5)))
        for _ in range(rng.randint(4, 7))
    ]


def long_tailed_pages(rng: random.Random, max_pages: int) -> int:
    """A page count from 1 to max_pages: most documents have a few pages, a few have many."""
    return max(1, min(max_pages, int(rng.paretovariate(1.3) * 3) - 2))


def draw_page(lines: list[str], font: Any) -> Any:
    from PIL import Image, ImageDraw

    width, height = (round(inches * DRAW_DPI) for inches in PAGE_INCHES)
    page = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(page)
    for i, line in enumerate(lines):
        draw.text((DRAW_DPI * 3 // 4, DRAW_DPI * 3 // 4 + i * DRAW_DPI * 3 // 5), line, 0, font)
    return page


def write_pdf(path: Path, pages: list[list[str]], font: Any) -> None:
    """An image PDF of ``pages``; an empty page is a blank page with no image at all."""
    import pypdfium2 as pdfium

    drawn = [draw_page(lines, font) for lines in pages if lines]
    images = Path(str(path) + ".images.pdf")
    if drawn:
        drawn[0].save(images, save_all=True, append_images=drawn[1:], resolution=DRAW_DPI)
    source = pdfium.PdfDocument(str(images)) if drawn else None
    out = pdfium.PdfDocument.new()
    width, height = (inches * 72 for inches in PAGE_INCHES)
    taken = 0
    for lines in pages:
        if lines and source is not None:
            out.import_pages(source, [taken])
            taken += 1
        else:
            out.new_page(width, height)
    out.save(str(path))
    out.close()
    if source is not None:
        source.close()
        images.unlink()


def make_corpus(
    directory: str | Path,
    docs: int,
    *,
    seed: int = 1,
    max_pages: int = 40,
    corrupt: int = 0,
    blank_pages: int = 0,
) -> list[SampleDocument]:
    """Writes ``docs`` PDFs (``doc000.pdf`` ...) with long-tailed page counts, ``blank_pages``
    of their pages left blank (no image; spread over the documents of several pages), and
    ``corrupt`` files that are not PDFs (``corrupt0.pdf`` ...) into ``directory``, with their
    known text in ``directory/manifest.json``. Returns the readable documents."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    font = _font(FONT_POINTS)
    documents = []
    for d in range(docs):
        pages = [page_lines(rng) for _ in range(long_tailed_pages(rng, max_pages))]
        documents.append(SampleDocument(str(out / f"doc{d:03d}.pdf"), pages))
    # Blank pages go to the documents of several pages first, so each keeps some text.
    longer = [d for d in documents if len(d.pages) > 1] or documents
    for b in range(blank_pages if documents else 0):
        pages = longer[b % len(longer)].pages
        pages[rng.randrange(len(pages))] = []
    for document in documents:
        write_pdf(Path(document.path), document.pages, font)
    for c in range(corrupt):
        (out / f"corrupt{c}.pdf").write_bytes(b"%PDF-1.7\nthis file is cut short" + bytes(c))
    manifest = {"documents": {d.stem: d.pages for d in documents}}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return documents


def load_corpus(directory: str | Path) -> list[SampleDocument]:
    """The documents make_corpus wrote into ``directory``."""
    manifest = json.loads((Path(directory) / MANIFEST).read_text())
    return [
        SampleDocument(str(Path(directory) / f"{stem}.pdf"), pages)
        for stem, pages in manifest["documents"].items()
    ]
