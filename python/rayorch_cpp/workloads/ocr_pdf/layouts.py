"""Page layouts of the generated corpus (samples.py) that its simple pages of large, short lines
lack and real documents have: body type in DejaVu Serif at 9 to 11 points, lines justified to
the full text width, the ligatures "ﬁ", "ﬂ" and "ﬀ" drawn as such, blocks of code in DejaVu
Sans Mono, two columns, and ruled tables.

Small type is drawn at 300 dpi (FINE_DPI), as pages are scanned for OCR: the workload renders
at 200 dpi (stages.RENDER_DPI), which would scale a page drawn at 150 dpi up, blurring 9-point
type's 19-pixel em over 25 pixels with no more detail in it, while a 300-dpi page is scaled
down, as a scan is. Each layout is a function of the corpus's rng that gives the page's
expected lines in reading order and a Sheet, the text and rules to draw where; a Sheet is
drawn only when its PDF is written, so a corpus holds one page image at a time."""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PAGE_INCHES = (8.5, 11.0)
VOCABULARY = (
    "lineage batch page document actor engine grain reduce expand render detect model python "
    "cluster journal resume failure outcome reading order width bucket padding thread memory "
    "river mountain window garden silver yellow orange purple market winter summer autumn "
    "spring harbour station letter number signal pattern object vector matrix circle square "
    "triangle bridge castle forest desert island ocean planet rocket engineer teacher doctor "
    "farmer painter writer singer dancer Paris London Berlin Madrid Tokyo Cairo Lima Oslo "
    "2019 2024 314 42 17.5 0.93 1200"
).split()
FONT_DIRECTORIES = ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/dejavu")
FACES = {"sans": "DejaVuSans.ttf", "serif": "DejaVuSerif.ttf", "mono": "DejaVuSansMono.ttf"}

FINE_DPI = 300
MARGIN = FINE_DPI  # an inch on every side
TEXT_WIDTH = round(PAGE_INCHES[0] * FINE_DPI) - 2 * MARGIN
BODY_POINTS = (9, 11)
LEADING = 1.25  # line pitch in ems: 10-point type on 12.5 points, as books set it
GUTTER = FINE_DPI * 3 // 10  # between two columns: 0.3 inch, as journals have it
RULE = 2  # a table rule's thickness: 0.5 point at FINE_DPI
# Words that hold "ff", "fi" or "fl", which typesetting (TeX, most word processors) draws as
# one ligature glyph; a PDF without a text layer has only that glyph to read.
LIGATURE_WORDS = (
    "file flow offer field final office effect profile floor fluid official different affine "
    "coffee first flat staff buffer define fifty reflect filter"
).split()
LIGATURES = {"ff": "\ufb00", "fi": "\ufb01", "fl": "\ufb02"}
LIGATURE_PAIRS = re.compile("ff|fi|fl")
NAMES = "value total count result offset buffer index width height items row_count".split()
FUNCTIONS = "compute parse render load merge scale read_page detect_lines".split()
ARGUMENTS = "x y data page config lines".split()


@dataclass(frozen=True, slots=True)
class Run:
    """Text drawn with its top-left corner at (x, y) pixels, in a face of FACES at a size in
    pixels."""

    x: int
    y: int
    text: str
    face: str
    size: int


@dataclass(frozen=True, slots=True)
class Sheet:
    """One page to draw at ``dpi``: its text runs and its rules (filled rectangles, as
    (left, top, right, bottom) pixels)."""

    dpi: int
    runs: tuple[Run, ...]
    rules: tuple[tuple[int, int, int, int], ...] = ()


@functools.cache
def font(face: str, size: int) -> Any:
    """A face of FACES at ``size`` pixels (Pillow's own font where the system lacks DejaVu)."""
    from PIL import ImageFont

    for directory in FONT_DIRECTORIES:
        path = Path(directory) / FACES[face]
        if path.is_file():
            return ImageFont.truetype(str(path), size)
    return ImageFont.load_default(size)


def draw(sheet: Sheet) -> Any:
    """The page image of a Sheet (grey scale, PAGE_INCHES at its dpi)."""
    from PIL import Image, ImageDraw

    width, height = (round(inches * sheet.dpi) for inches in PAGE_INCHES)
    page = Image.new("L", (width, height), 255)
    canvas = ImageDraw.Draw(page)
    for run in sheet.runs:
        canvas.text((run.x, run.y), run.text, 0, font(run.face, run.size))
    for rule in sheet.rules:
        canvas.rectangle(rule, 0)
    return page


@dataclass(slots=True)
class Layout:
    """A page being laid out top to bottom at FINE_DPI in type of ``size`` pixels: its runs,
    rules and expected lines so far, and the top of its next line."""

    size: int
    y: int = MARGIN
    runs: list[Run] = field(default_factory=list)
    rules: list[tuple[int, int, int, int]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    @property
    def pitch(self) -> int:
        return round(self.size * LEADING)

    def width(self, text: str, face: str = "serif") -> float:
        return float(font(face, self.size).getlength(text))

    def line(self, text: str, face: str = "serif", x: int = MARGIN, drawn: str = "") -> None:
        """A line whose expected text is ``text``, drawn as ``drawn`` where that differs."""
        self.runs.append(Run(x, self.y, drawn or text, face, self.size))
        self.lines.append(text)
        self.y += self.pitch

    def justified(self, text: str, width: int = TEXT_WIDTH, x: int = MARGIN) -> None:
        """A line whose words are spread so that it spans ``width`` pixels."""
        words = text.split()
        widths = [self.width(word) for word in words]
        space = (width - sum(widths)) / max(1, len(words) - 1)
        left = float(x)
        for word, w in zip(words, widths):
            self.runs.append(Run(round(left), self.y, word, "serif", self.size))
            left += w + space
        self.lines.append(text)
        self.y += self.pitch

    def skip(self, lines: float) -> None:
        self.y += round(self.pitch * lines)

    def sheet(self) -> Sheet:
        return Sheet(FINE_DPI, tuple(self.runs), tuple(self.rules))


def body_size(rng: random.Random) -> int:
    """The pixel size at FINE_DPI of 9- to 11-point body type."""
    return round(rng.randint(*BODY_POINTS) * FINE_DPI / 72)


def sentence(rng: random.Random, extra: Sequence[str] = (), share: float = 0.0) -> list[str]:
    """5 to 14 words, capitalised and ended with a full stop, some with a comma: punctuation
    that the reader must keep off the words. ``share`` of the words come from ``extra``."""
    words = [
        rng.choice(extra) if extra and rng.random() < share else rng.choice(VOCABULARY)
        for _ in range(rng.randint(5, 14))
    ]
    words[0] = words[0][:1].upper() + words[0][1:]
    if len(words) > 7 and rng.random() < 0.5:
        words[rng.randint(2, len(words) - 3)] += ","
    words[-1] += "."
    return words


def wrap(words: Sequence[str], width: Callable[[str], float], limit: float) -> list[str]:
    """``words`` as lines of at most ``limit`` pixels, each filled before the next begins."""
    lines: list[list[str]] = [[]]
    for word in words:
        if lines[-1] and width(" ".join([*lines[-1], word])) > limit:
            lines.append([])
        lines[-1].append(word)
    return [" ".join(line) for line in lines if line]


def paragraph(
    rng: random.Random,
    layout: Layout,
    limit: float = TEXT_WIDTH,
    extra: Sequence[str] = (),
    share: float = 0.0,
) -> list[str]:
    """The lines of a paragraph of 2 to 4 sentences wrapped at ``limit`` pixels."""
    words = [w for _ in range(rng.randint(2, 4)) for w in sentence(rng, extra, share)]
    return wrap(words, layout.width, limit)


def serif(rng: random.Random) -> tuple[list[str], Sheet]:
    """Paragraphs of ragged-right serif body text, 8 lines or more."""
    layout = Layout(body_size(rng))
    while len(layout.lines) < 8:
        if layout.lines:
            layout.skip(0.5)
        for line in paragraph(rng, layout):
            layout.line(line)
    return layout.lines, layout.sheet()


def justified(rng: random.Random) -> tuple[list[str], Sheet]:
    """Two blocks of serif lines justified to the text width. Only full lines are kept (the
    short line that would end a block is left out), so that every line spans the width."""
    layout = Layout(body_size(rng))
    for block in range(2):
        if block:
            layout.skip(0.5)
        words = [w for _ in range(rng.randint(3, 5)) for w in sentence(rng)]
        for line in wrap(words, layout.width, TEXT_WIDTH)[:-1]:
            layout.justified(line)
    return layout.lines, layout.sheet()


def ligate(text: str) -> str:
    """``text`` with "ff", "fi" and "fl" as their ligature characters (U+FB00 to U+FB02)."""
    return LIGATURE_PAIRS.sub(lambda pair: LIGATURES[pair.group()], text)


def ligature(rng: random.Random) -> tuple[list[str], Sheet]:
    """Serif paragraphs in which about a third of the words hold a ligature, drawn as the
    ligature character; the expected lines hold the plain letters."""
    layout = Layout(body_size(rng))
    while len(layout.lines) < 8:
        if layout.lines:
            layout.skip(0.5)
        for line in paragraph(rng, layout, extra=LIGATURE_WORDS, share=0.35):
            layout.line(line, drawn=ligate(line))
    return layout.lines, layout.sheet()


def code_block(rng: random.Random) -> list[str]:
    """4 to 9 lines of C-like code: assignments, and if and for blocks with their bodies
    indented."""
    lines: list[str] = []
    while len(lines) < 4:
        name, call, argument = rng.choice(NAMES), rng.choice(FUNCTIONS), rng.choice(ARGUMENTS)
        number = rng.randint(0, 999)
        statement = f"{name} = {call}({argument}, {number});"
        kind = rng.randrange(3)
        if kind == 0:
            lines.append(statement)
        elif kind == 1:
            lines += [f"if ({name} > {number}) {{", f"    {name} = {call}({name});", "}"]
        else:
            body = f"    total += {name}[i] * {number};"
            lines += [f"for (int i = 0; i < {argument}.size(); ++i) {{", body, "}"]
    return [*lines, f"return {rng.choice(NAMES)};"]


def mono(rng: random.Random) -> tuple[list[str], Sheet]:
    """A block of monospace code between two serif paragraphs, indented as a listing."""
    layout = Layout(body_size(rng))
    for line in paragraph(rng, layout):
        layout.line(line)
    layout.skip(0.5)
    for line in code_block(rng):
        layout.line(line, face="mono", x=MARGIN + 2 * layout.size)
    layout.skip(0.5)
    for line in paragraph(rng, layout):
        layout.line(line)
    return layout.lines, layout.sheet()


def columns(rng: random.Random) -> tuple[list[str], Sheet]:
    """Two columns of serif text, the right one as long as the left or shorter (where the
    text ends); read left column, then right."""
    layout = Layout(body_size(rng))
    column = (TEXT_WIDTH - GUTTER) // 2
    left = rng.randint(10, 16)
    right = rng.randint(left // 2, left)
    lines: list[str] = []
    while len(lines) < left + right:
        lines += paragraph(rng, layout, column)
    for x, part in ((MARGIN, lines[:left]), (MARGIN + column + GUTTER, lines[left:][:right])):
        layout.y = MARGIN
        for line in part:
            layout.line(line, x=x)
    return layout.lines, layout.sheet()


def cell(rng: random.Random) -> str:
    """A table cell: a number (whole or with a decimal) or a word."""
    kind = rng.randrange(3)
    if kind == 0:
        return str(rng.randint(0, 9999))
    if kind == 1:
        return f"{rng.uniform(0, 100):.1f}"
    return rng.choice(VOCABULARY)


def table(rng: random.Random) -> tuple[list[str], Sheet]:
    """A serif paragraph, a caption and a ruled table (3 to 5 columns; a header row and 3 to 6
    rows, each row's first cell a word) in sans type, every cell boxed by rules. Read row by
    row, a row's cells joined by spaces."""
    layout = Layout(body_size(rng))
    for line in paragraph(rng, layout):
        layout.line(line)
    layout.skip(0.5)
    caption = [w.strip(",.") for w in sentence(rng)[: rng.randint(3, 6)]]
    layout.line(f"Table {rng.randint(1, 9)}: " + " ".join(caption))
    layout.skip(0.3)
    count = rng.randint(3, 5)
    rows = [[rng.choice(VOCABULARY).capitalize() for _ in range(count)]]
    for _ in range(rng.randint(3, 6)):
        rows.append([rng.choice(VOCABULARY)] + [cell(rng) for _ in range(count - 1)])
    pad_x, pad_y = layout.size // 2, layout.size // 3
    widths = [
        round(max(layout.width(row[c], "sans") for row in rows)) + 2 * pad_x for c in range(count)
    ]
    height = round(layout.size * 1.17) + 2 * pad_y  # DejaVu's ascender to descender: 1.17 em
    lefts = [MARGIN + sum(widths[:c]) for c in range(count + 1)]
    top = layout.y
    for r, row in enumerate(rows):
        y = top + r * height
        for c, text in enumerate(row):
            layout.runs.append(Run(lefts[c] + pad_x, y + pad_y, text, "sans", layout.size))
        layout.lines.append(" ".join(row))
    bottom = top + len(rows) * height
    layout.rules += [
        (MARGIN, top + r * height, lefts[-1] + RULE - 1, top + r * height + RULE - 1)
        for r in range(len(rows) + 1)
    ]
    layout.rules += [(x, top, x + RULE - 1, bottom + RULE - 1) for x in lefts]
    layout.y = bottom + layout.pitch
    return layout.lines, layout.sheet()


# Each drawn layout and its page; "simple" (samples.py) is drawn at the corpus's own 150 dpi.
PAGES: dict[str, Callable[[random.Random], tuple[list[str], Sheet]]] = {
    "serif": serif,
    "justified": justified,
    "ligature": ligature,
    "mono": mono,
    "columns": columns,
    "table": table,
}
