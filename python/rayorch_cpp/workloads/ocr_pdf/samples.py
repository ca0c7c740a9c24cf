"""A generated corpus of PDFs with known text (scored with recall.word_recall).

Each page is drawn with Pillow (DejaVu when the system has it, else Pillow's own font) as an
image and the pages are written as an image PDF, like a scan: the known text is what was
drawn. Page counts are long-tailed (most documents short, a few long). Nothing is downloaded.

A page has a layout. The default, "simple", is 4 to 7 short lines of 20-point sans drawn at
150 dpi; the others (layouts.py) are what real documents have and the simple pages lack:
small serif type, justified lines, ligatures, code, two columns and ruled tables, drawn at
300 dpi. recall_by_layout scores a conversion per layout, so that what a kind of page costs
is not averaged away by the others."""

from __future__ import annotations

import io
import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from . import recall
from .layouts import PAGE_INCHES, PAGES, VOCABULARY, Run, Sheet, draw

DRAW_DPI = 150  # the resolution simple pages are drawn and stored at
FONT_POINTS = 20
MANIFEST = "manifest.json"
LAYOUTS = ("simple", *PAGES)
BLANK = "blank"  # the layout recorded for a blank page (no image, no text)
PAGE_HEADING = re.compile(r"^## Page (\d+)[ \t]*$", flags=re.M)


@dataclass(frozen=True, slots=True)
class SampleDocument:
    """A generated PDF, the lines drawn on each of its pages in reading order (a ligature
    as its letters; an empty list: a blank, image-less page) and each page's layout (of
    LAYOUTS, or BLANK)."""

    path: str
    pages: list[list[str]]
    layouts: list[str]

    @property
    def stem(self) -> str:
        return Path(self.path).stem

    @property
    def text(self) -> str:
        return "\n".join(line for page in self.pages for line in page)


def page_lines(rng: random.Random) -> list[str]:
    """The lines of one page: 4 to 7 lines of 2 to 5 words."""
    return [
        " ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(2, 5)))
        for _ in range(rng.randint(4, 7))
    ]


def long_tailed_pages(rng: random.Random, max_pages: int) -> int:
    """A page count from 1 to max_pages: most documents have a few pages, a few have many."""
    return max(1, min(max_pages, int(rng.paretovariate(1.3) * 3) - 2))


def simple_sheet(lines: list[str]) -> Sheet:
    """A simple page: its lines in 20-point sans at DRAW_DPI, 0.6 inch apart."""
    size = round(FONT_POINTS * DRAW_DPI / 72)
    top = DRAW_DPI * 3 // 4
    runs = [
        Run(top, top + i * DRAW_DPI * 3 // 5, line, "sans", size) for i, line in enumerate(lines)
    ]
    return Sheet(DRAW_DPI, tuple(runs))


def write_pdf(path: Path, sheets: Sequence[Sheet | None]) -> None:
    """An image PDF of ``sheets``, each page image at its own resolution and the page
    PAGE_INCHES in size; None is a blank page with no image at all. Pages are drawn one at a
    time, each into a PDF of its own that the document imports, so that a long document of
    300-dpi pages does not hold all its images at once."""
    import pypdfium2 as pdfium

    out = pdfium.PdfDocument.new()
    width, height = (inches * 72 for inches in PAGE_INCHES)
    sources = []
    for sheet in sheets:
        if sheet is None:
            out.new_page(width, height)
            continue
        buffer = io.BytesIO()
        draw(sheet).save(buffer, "PDF", resolution=sheet.dpi)
        sources.append(pdfium.PdfDocument(buffer.getvalue()))
        out.import_pages(sources[-1], [0])
    out.save(str(path))
    out.close()
    for source in sources:
        source.close()


def make_corpus(
    directory: str | Path,
    docs: int,
    *,
    seed: int = 1,
    max_pages: int = 40,
    corrupt: int = 0,
    blank_pages: int = 0,
    layouts: Sequence[str] = ("simple",),
) -> list[SampleDocument]:
    """Writes ``docs`` PDFs (``doc000.pdf`` ...) with long-tailed page counts, ``blank_pages``
    of their pages left blank (no image; spread over the documents of several pages), and
    ``corrupt`` files that are not PDFs (``corrupt0.pdf`` ...) into ``directory``, with their
    known text and page layouts in ``directory/manifest.json``. Returns the readable documents.

    Each page's layout is drawn from ``layouts`` (of LAYOUTS) with the seeded rng; with one
    layout none is drawn, so that a corpus of simple pages is the one this function wrote
    before it had layouts."""
    unknown = [name for name in layouts if name not in LAYOUTS]
    if unknown or not layouts:
        raise ValueError(f"layouts must be some of {', '.join(LAYOUTS)}, not {list(layouts)}")
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    documents = []
    sheets: list[list[Sheet | None]] = []
    for d in range(docs):
        pages: list[list[str]] = []
        kinds: list[str] = []
        drawn: list[Sheet | None] = []
        for _ in range(long_tailed_pages(rng, max_pages)):
            kind = layouts[0] if len(layouts) == 1 else rng.choice(layouts)
            if kind == "simple":
                lines = page_lines(rng)
                sheet = simple_sheet(lines)
            else:
                lines, sheet = PAGES[kind](rng)
            pages.append(lines)
            kinds.append(kind)
            drawn.append(sheet)
        documents.append(SampleDocument(str(out / f"doc{d:03d}.pdf"), pages, kinds))
        sheets.append(drawn)
    # Blank pages go to the documents of several pages first, so each keeps some text.
    longer = [d for d, document in enumerate(documents) if len(document.pages) > 1]
    longer = longer or list(range(len(documents)))
    for b in range(blank_pages if documents else 0):
        d = longer[b % len(longer)]
        number = rng.randrange(len(documents[d].pages))
        documents[d].pages[number], documents[d].layouts[number] = [], BLANK
        sheets[d][number] = None
    for document, drawn in zip(documents, sheets):
        write_pdf(Path(document.path), drawn)
    for c in range(corrupt):
        (out / f"corrupt{c}.pdf").write_bytes(b"%PDF-1.7\nthis file is cut short" + bytes(c))
    manifest = {
        "documents": {d.stem: d.pages for d in documents},
        "layouts": {d.stem: d.layouts for d in documents},
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return documents


def load_corpus(directory: str | Path) -> list[SampleDocument]:
    """The documents make_corpus wrote into ``directory``. A manifest written before pages had
    layouts has simple pages (and blank ones)."""
    manifest = json.loads((Path(directory) / MANIFEST).read_text())
    kinds = manifest.get("layouts", {})
    return [
        SampleDocument(
            str(Path(directory) / f"{stem}.pdf"),
            pages,
            kinds.get(stem) or ["simple" if lines else BLANK for lines in pages],
        )
        for stem, pages in manifest["documents"].items()
    ]


def page_sections(markdown: str) -> dict[int, str]:
    """The text of each page of a converted document, by page number: the sections under its
    "## Page N" headings (stages.AssembleMarkdown writes one per page)."""
    parts = PAGE_HEADING.split(markdown)
    return {int(number): text for number, text in zip(parts[1::2], parts[2::2])}


def recall_by_layout(
    documents: Sequence[SampleDocument], markdowns: Sequence[str]
) -> dict[str, tuple[int, int]]:
    """(expected words found, expected words) of each layout that has text in ``documents``,
    in LAYOUTS order, given each document's converted Markdown (``markdowns``, in the order of
    ``documents``; "" for a document that was not converted). Each page is scored against its
    own section, so that words one page lost are not made up by another page's."""
    counts: dict[str, tuple[int, int]] = {}
    for document, markdown in zip(documents, markdowns, strict=True):
        sections = page_sections(markdown)
        for number, (lines, kind) in enumerate(zip(document.pages, document.layouts), start=1):
            if lines:
                hit, total = recall.word_recall("\n".join(lines), sections.get(number, ""))
                found, expected = counts.get(kind, (0, 0))
                counts[kind] = (found + hit, expected + total)
    return {kind: counts[kind] for kind in sorted(counts, key=LAYOUTS.index)}
