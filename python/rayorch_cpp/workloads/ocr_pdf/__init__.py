"""A document pipeline with a real OCR model: PDFs to Markdown with PP-OCRv4 (detection and
batched recognition) on onnxruntime, three levels deep (document -> pages -> text lines).

Needs the ``ocr`` extra (``pip install 'rayorch-cpp[ocr]'``: onnxruntime, rapidocr-onnxruntime
for its bundled models, pypdfium2); the models are loaded from the installed wheel, nothing
is downloaded. ``OcrPdf`` is the pipeline (stages.py), ``convert`` the conversion of a
directory (convert.py, also ``python -m rayorch_cpp.workloads.ocr_pdf``), ``samples`` a
generated corpus with known text, ``recall`` word recall against a reference text.

Importing this package needs nothing of the extra; its names are loaded on first use, which
raises OcrStackMissing naming what to install when a package of the extra is missing."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .models import OcrStackMissing, require_ocr_stack

if TYPE_CHECKING:
    from .convert import ConvertOptions, ConvertSummary, InputError, convert, format_summary
    from .stages import DocumentInfo, Markdown, OcrPdf, PipelineConfig, StageOptions

# Each lazily loaded name and the submodule that defines it.
_SUBMODULE_OF = {
    "ConvertOptions": "convert",
    "ConvertSummary": "convert",
    "InputError": "convert",
    "convert": "convert",
    "format_summary": "convert",
    "DocumentInfo": "stages",
    "Markdown": "stages",
    "OcrPdf": "stages",
    "PipelineConfig": "stages",
    "StageOptions": "stages",
}


def __getattr__(name: str) -> Any:
    submodule = _SUBMODULE_OF.get(name)
    if submodule is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    require_ocr_stack()
    return getattr(importlib.import_module(f".{submodule}", __name__), name)


__all__ = [
    "ConvertOptions",
    "ConvertSummary",
    "DocumentInfo",
    "InputError",
    "Markdown",
    "OcrPdf",
    "OcrStackMissing",
    "PipelineConfig",
    "StageOptions",
    "convert",
    "format_summary",
    "require_ocr_stack",
]
