"""The OCR workload's generated corpus beyond simple pages: each page layout (serif body type,
justified lines, ligatures, code, two columns, ruled tables) drawn as specified and recorded
in the manifest, and the workload's word recall on each layout, scored per layout.

Runs when the ``ocr`` extra is installed (scripts/python-env.sh installs it)."""

from __future__ import annotations

import json
import random
import unicodedata
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("pypdfium2")
pytest.importorskip("rapidocr_onnxruntime")

import pypdfium2 as pdfium  # noqa: E402

import rayorch_cpp as ro  # noqa: E402
from rayorch_cpp.workloads.ocr_pdf import Markdown, OcrPdf, layouts, samples  # noqa: E402

# A seed whose 3 documents of up to 3 pages hold every layout once or twice and a blank page:
# 8 pages to read, which keeps the pipeline's run short.
SEED = 84
# The least word recall of each layout on this corpus. The workload reads it all but one word
# of the table (0.991); each layout has 20 to 134 words here, so 0.95 leaves a word or two of
# slack and no more. On 125 generated pages (3 corpora of 3 documents per layout) it reads
# simple 1.000, serif 0.992, justified 0.999, ligature 0.996, mono 0.938, columns 0.979 and
# table 0.999: in code the recogniser drops the spaces around punctuation ("for(int",
# "0;i") and reads a zero as "O" or "θ", and a small-type line whose crop cuts its descenders
# off is read with its words run together, which two columns' short lines show most.
MIN_RECALL = dict.fromkeys(samples.LAYOUTS, 0.95)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[samples.SampleDocument]:
    directory = tmp_path_factory.mktemp("layouts")
    return samples.make_corpus(
        directory, 3, seed=SEED, max_pages=3, blank_pages=1, layouts=samples.LAYOUTS
    )


@pytest.fixture(scope="module")
def outputs(corpus: list[samples.SampleDocument]) -> list[Any]:
    paths = [d.path for d in corpus]
    return list(ro.SyncExecutor(OcrPdf()).run(paths, progress=False).outputs)


def image_sizes(path: str) -> list[tuple[float, float, tuple[int, int] | None]]:
    """Each page's size in points and the pixel size of its image (None: no image)."""
    document = pdfium.PdfDocument(path)
    try:
        out = []
        for page in document:
            images = [o for o in page.get_objects() if isinstance(o, pdfium.PdfImage)]
            pixels = tuple(images[0].get_px_size()) if images else None
            out.append((*page.get_size(), pixels))
        return out
    finally:
        document.close()


def test_a_seeded_corpus_draws_every_layout_at_its_resolution_on_letter_pages(
    corpus: list[samples.SampleDocument],
) -> None:
    kinds = [kind for document in corpus for kind in document.layouts]
    assert set(kinds) == {*samples.LAYOUTS, samples.BLANK}
    for document in corpus:
        assert len(document.layouts) == len(document.pages)
        for (width, height, pixels), lines, kind in zip(
            image_sizes(document.path), document.pages, document.layouts
        ):
            assert (width, height) == (612.0, 792.0)  # 8.5 x 11 inches whatever the resolution
            if kind == samples.BLANK:
                assert pixels is None and lines == []
                continue
            dpi = samples.DRAW_DPI if kind == "simple" else layouts.FINE_DPI
            assert pixels == (round(8.5 * dpi), 11 * dpi)
            assert lines


def test_the_manifest_restores_each_pages_lines_and_layout(
    corpus: list[samples.SampleDocument],
) -> None:
    directory = Path(corpus[0].path).parent
    assert samples.load_corpus(directory) == corpus
    # A manifest written before pages had layouts reads as simple pages and blank ones.
    manifest = json.loads((directory / samples.MANIFEST).read_text())
    del manifest["layouts"]
    (directory / "old").mkdir()
    (directory / "old" / samples.MANIFEST).write_text(json.dumps(manifest))
    for old, new in zip(samples.load_corpus(directory / "old"), corpus):
        assert old.pages == new.pages
        assert old.layouts == ["simple" if lines else samples.BLANK for lines in new.pages]


def test_layouts_default_to_simple_and_unknown_ones_are_refused(tmp_path: Path) -> None:
    [document] = samples.make_corpus(tmp_path, 1, seed=3, max_pages=2)
    assert document.layouts == ["simple"] * len(document.pages)
    with pytest.raises(ValueError, match="layouts must be some of"):
        samples.make_corpus(tmp_path, 1, layouts=("simple", "poster"))
    with pytest.raises(ValueError, match="layouts must be some of"):
        samples.make_corpus(tmp_path, 1, layouts=())


def test_ligature_pages_draw_ligatures_and_expect_plain_letters(
    corpus: list[samples.SampleDocument],
) -> None:
    ligatures = set(layouts.LIGATURES.values())
    pages = [
        lines
        for document in corpus
        for lines, kind in zip(document.pages, document.layouts)
        if kind == "ligature"
    ]
    assert pages
    for lines in pages:
        assert not ligatures & set("".join(lines))
        assert any(pair in line for line in lines for pair in layouts.LIGATURES)
    lines, sheet = layouts.ligature(random.Random(1))
    drawn = [run.text for run in sheet.runs]
    assert len(drawn) == len(lines) and ligatures <= set("".join(drawn))
    for want, run in zip(lines, drawn):
        assert unicodedata.normalize("NFKC", run) == want
    assert layouts.ligate("file flow offer") == "\ufb01le \ufb02ow o\ufb00er"


def test_columns_are_read_left_column_first_and_tables_row_by_row() -> None:
    lines, sheet = layouts.columns(random.Random(2))
    lefts = sorted({run.x for run in sheet.runs})
    assert len(lefts) == 2 and lefts[1] - lefts[0] > layouts.TEXT_WIDTH // 2
    drawn = sorted(sheet.runs, key=lambda run: (run.x, run.y))
    assert [run.text for run in drawn] == lines
    lines, sheet = layouts.table(random.Random(2))
    assert sheet.rules  # ruled
    tops = sorted({run.y for run in sheet.runs if run.face == "sans"})
    rows = [
        " ".join(run.text for run in sorted(sheet.runs, key=lambda r: r.x) if run.y == top)
        for top in tops
    ]
    assert lines[-len(rows) :] == rows and len(rows) >= 4


def test_justified_lines_span_the_text_width_and_code_is_monospace() -> None:
    lines, sheet = layouts.justified(random.Random(3))
    assert len(lines) >= 4
    for y in {run.y for run in sheet.runs}:
        row = sorted((run for run in sheet.runs if run.y == y), key=lambda run: run.x)
        last = row[-1]
        right = last.x + layouts.font(last.face, last.size).getlength(last.text)
        assert row[0].x == layouts.MARGIN
        assert abs(right - (layouts.MARGIN + layouts.TEXT_WIDTH)) <= 2
    lines, sheet = layouts.mono(random.Random(3))
    code = [run.text for run in sheet.runs if run.face == "mono"]
    assert len(code) >= 4 and all(text in lines for text in code)
    assert all(text.endswith((";", "{", "}")) for text in code)


def test_recall_by_layout_scores_each_page_against_its_own_section() -> None:
    document = samples.SampleDocument(
        "doc.pdf", [["river bridge"], [], ["value = compute(x, 42);"]], ["serif", "blank", "mono"]
    )
    markdown = (
        "# doc\n\n## Page 1\n\nriver\n\n## Page 2\n\n\n## Page 3\n\n"
        "value = compute(x, 42); bridge\n\n<!-- ocr_pdf: complete, 3 pages -->\n"
    )
    assert samples.recall_by_layout([document], [markdown]) == {"serif": (1, 2), "mono": (3, 3)}
    assert samples.recall_by_layout([document], [""]) == {"serif": (0, 2), "mono": (0, 3)}


def test_the_workload_reads_every_layout(
    corpus: list[samples.SampleDocument], outputs: list[Any]
) -> None:
    assert all(isinstance(markdown, Markdown) for markdown in outputs), outputs
    scores = samples.recall_by_layout(corpus, [markdown.text for markdown in outputs])
    assert list(scores) == list(samples.LAYOUTS)  # every kind, blank pages not scored
    recalls = {kind: found / expected for kind, (found, expected) in scores.items()}
    low = {kind: r for kind, r in recalls.items() if r < MIN_RECALL[kind]}
    assert not low, recalls
    assert all(expected >= 20 for _, expected in scores.values())
