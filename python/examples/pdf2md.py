"""PDFs to Markdown with the C++ pdf2md stages (poppler render, Tesseract OCR) in a Python
pipeline, next to a Python UDF; on the local backend or on a Ray cluster.

    .venv/bin/python python/examples/pdf2md.py IN_DIR OUT_DIR [--samples N]
    .venv/bin/python python/examples/pdf2md.py IN_DIR OUT_DIR --backend ray --address HOST:PORT

Converts every IN_DIR/*.pdf into OUT_DIR/<stem>.md through a sink (rayorch_cpp.io: each file
committed with the run journal OUT_DIR.journal, so a rerun after a crash keeps the finished
documents and writes each once); a PDF that cannot be read is reported with its cause and
gets no output. ``--samples N`` first writes N sample
PDFs with known text into IN_DIR. With ``--backend ray`` every Module is a pool of Ray actors
on the cluster at ``--address`` (default: start a local Ray instance).

The same pipeline runs as a job (docs/JOBS.md), its configuration from --set:

    python -m rayorch_cpp run python/examples/pdf2md.py:PdfToMarkdown -i IN_DIR -o OUT_DIR \
        --set ocr_replicas=4
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import rayorch_cpp as ro
from rayorch_cpp import F, _core
from rayorch_cpp.io import FileSink, read_files


class Squeeze:
    """Python: collapses the whitespace of each page's text."""

    def run(self, texts: list[str]) -> list[str]:
        return [" ".join(t.split()) for t in texts]


class PdfToMarkdown(ro.Pipeline):
    def __init__(self, ocr_replicas: int = 2) -> None:
        self.open = ro.CppModule("Pdf2mdOpen", batch_size=4, num_cpus=0.5)
        self.render = ro.CppModule("Pdf2mdRender", batch_size=2, num_cpus=0.5).pre_init(150)
        self.ocr = ro.CppModule("Pdf2mdOcr", replicas=ocr_replicas, num_cpus=1).pre_init("eng", "")
        self.squeeze = ro.Module(Squeeze, batch_size=8, num_cpus=0.5)
        self.assemble = ro.CppModule("Pdf2mdAssemble", num_cpus=0.5)

    def forward(self, path: ro.Port) -> ro.Port:
        refs, info = self.open(path)
        page = F.expand(refs)
        image = self.render(F.broadcast(path, like=page), page)
        text = self.squeeze(self.ocr(image))
        return self.assemble(F.reduce(text), info)

    def job_sink(self, directory: str) -> FileSink:
        """As a job (docs/JOBS.md), each document as ``<stem>.md`` in the output folder:
        ``python -m rayorch_cpp run python/examples/pdf2md.py:PdfToMarkdown -i IN_DIR -o OUT``."""
        return markdown_files(directory)


def markdown_files(directory: str | Path) -> FileSink:
    """One ``<stem>.md`` per document, holding its Markdown."""
    return FileSink(
        directory=directory,
        name=lambda key, row, doc: f"{doc.stem}.md",
        contents=lambda doc: doc.text,
    )


def convert(paths: list[str], backend: str = "local", address: str | None = None) -> list[Any]:
    """One Markdown (or OutputIssue) per PDF, in order."""
    with ro.Executor(PdfToMarkdown(), backend=backend, address=address) as ex:
        return list(ex.run(paths, progress=False).outputs)


def convert_into(
    input_dir: Path, output_dir: Path, backend: str = "local", address: str | None = None
) -> int:
    """Every IN_DIR/*.pdf into OUT_DIR/<stem>.md through a sink, each file committed with
    its record in the journal OUT_DIR.journal: rerun the same command after a crash and the
    finished documents are kept, the others converted, each file written once. Returns how
    many PDFs failed."""
    pdfs = read_files(str(input_dir / "*.pdf"))
    failed = 0

    def report(row: int, doc: Any) -> None:
        nonlocal failed
        if isinstance(doc, ro.OutputIssue):
            failed += 1
            print(f"{pdfs.paths[row]}: {doc.outcome.value}: {doc.cause}", file=sys.stderr)
        else:
            print(f"{pdfs.paths[row]} -> {output_dir / (doc.stem + '.md')} ({doc.pages} pages)")

    with ro.Executor(PdfToMarkdown(), backend=backend, address=address) as ex:
        ex.run(
            pdfs,
            sink=markdown_files(output_dir),
            journal=f"{output_dir}.journal",
            on_row=report,
            progress=False,
        )
    return failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("input_dir", type=Path)
    parser.add_argument("output_dir", type=Path)
    parser.add_argument("--backend", choices=("local", "ray"), default="local")
    parser.add_argument("--address", default=None, help="Ray cluster address (host:port)")
    parser.add_argument("--samples", type=int, default=0, help="first write N sample PDFs")
    a = parser.parse_args()
    if "Pdf2mdOcr" not in ro.cpp_udfs():
        print("this build of rayorch_cpp has no pdf2md stages", file=sys.stderr)
        return 2
    if a.samples:
        a.input_dir.mkdir(parents=True, exist_ok=True)
        _core.pdf2md_make_samples(str(a.input_dir), docs=a.samples, seed=1, max_pages=4)
    return 1 if convert_into(a.input_dir, a.output_dir, a.backend, a.address) else 0


if __name__ == "__main__":
    sys.exit(main())
