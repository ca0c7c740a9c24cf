"""MinerU's UDFs. Each imports its libraries (pypdfium2, Pillow, vLLM, mineru-vl-utils) when
an actor builds it or runs, never when the pipeline is defined: a configuration, the
registry and the driver stay light.

A page travels as a record: ``{"pdf", "page", "png"}`` (the rendered page as PNG bytes, so a
value is plain data on every backend); the model's answer for a page is a list of blocks
``{"type", "bbox", "content"}`` in reading order, as mineru-vl-utils' two-step extraction
returns them."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from ..._atomic_file import write_text_atomically


class RenderPdfPages:
    """A PDF's path -> its pages, rendered at ``dpi``, in order."""

    def __init__(self, dpi: int = 200) -> None:
        self.scale = dpi / 72.0

    def run(self, pdfs: list[str]) -> list[list[dict[str, Any]]]:
        import pypdfium2

        out = []
        for path in pdfs:
            document = pypdfium2.PdfDocument(path)
            try:
                pages = []
                for index in range(len(document)):
                    image = document[index].render(scale=self.scale).to_pil()
                    buffer = io.BytesIO()
                    image.save(buffer, format="PNG")
                    pages.append({"pdf": path, "page": index, "png": buffer.getvalue()})
                out.append(pages)
            finally:
                document.close()
        return out


class ReadPage:
    """A page record -> its content blocks, read by MinerU2.5 on vLLM: one engine per actor,
    every call's pages extracted as one batch."""

    def __init__(self, model: str, gpu_memory_utilization: float = 0.8) -> None:
        from mineru_vl_utils import MinerUClient
        from vllm import LLM

        self.client = MinerUClient(
            backend="vllm-engine",
            vllm_llm=LLM(model=model, gpu_memory_utilization=gpu_memory_utilization),
        )

    def run(self, pages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
        from PIL import Image

        images = [Image.open(io.BytesIO(page["png"])).convert("RGB") for page in pages]
        results = self.client.batch_two_step_extract(images)
        return [[_block(b) for b in blocks] for blocks in results]


def _block(block: Any) -> dict[str, Any]:
    """A content block as plain data (the library's objects or dicts alike)."""
    get = block.get if isinstance(block, dict) else lambda k, d=None: getattr(block, k, d)
    bbox = get("bbox")
    return {
        "type": str(get("type", "text")),
        "bbox": list(bbox) if bbox is not None else None,
        "content": get("content") or "",
    }


class PdfStem:
    """A PDF's path -> the stem its Markdown is named by."""

    def run(self, paths: list[str]) -> list[str]:
        return [Path(p).stem for p in paths]


_PREFIX = {"title": "# ", "list": "- "}


def markdown(pages: list[list[dict[str, Any]]]) -> str:
    """A document's pages of blocks as Markdown: each block's content in reading order, titles
    as headings, a blank line between blocks and a rule between pages."""
    parts = []
    for blocks in pages:
        texts = [
            _PREFIX.get(b["type"], "") + b["content"].strip()
            for b in blocks
            if b["content"].strip() and b["type"] not in ("header", "footer", "page_number")
        ]
        parts.append("\n\n".join(texts))
    return "\n\n---\n\n".join(parts) + "\n"


class AssembleMarkdown:
    """A document's page contents (in page order), its pages and stem -> ``<stem>.md`` in
    ``output_dir`` (written atomically) and the document's record."""

    def __init__(self, output_dir: str) -> None:
        self.output_dir = Path(output_dir)

    def run(
        self,
        contents: list[list[list[dict[str, Any]]]],
        pages: list[list[dict[str, Any]]],
        stems: list[str],
    ) -> list[dict[str, Any]]:
        self.output_dir.mkdir(parents=True, exist_ok=True)
        out = []
        for blocks, page_records, stem in zip(contents, pages, stems, strict=True):
            target = self.output_dir / f"{stem}.md"
            write_text_atomically(target, markdown(blocks))
            out.append(
                {
                    "pdf": stem,
                    "pages": len(page_records),
                    "page_order": [p["page"] for p in page_records],
                    "markdown": str(target),
                }
            )
        return out
