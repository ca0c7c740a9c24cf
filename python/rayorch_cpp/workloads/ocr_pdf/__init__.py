"""A document pipeline with a real OCR model: PDFs to Markdown with PP-OCRv4 (detection and
batched recognition) on onnxruntime, three levels deep (document -> pages -> text lines).

Needs the ``ocr`` extra (``pip install 'rayorch-cpp[ocr]'``: onnxruntime, rapidocr-onnxruntime
for its bundled models, pypdfium2); the models are loaded from the installed wheel, nothing
is downloaded. ``OcrPdf`` is the pipeline (stages.py), ``convert`` the conversion of a
directory (convert.py, also ``python -m rayorch_cpp.workloads.ocr_pdf``), ``samples`` a
generated corpus with known text."""

from __future__ import annotations

from .convert import ConvertOptions, ConvertSummary, InputError, convert, format_summary
from .models import OcrStackMissing, require_ocr_stack
from .stages import DocumentInfo, Markdown, OcrPdf, PipelineConfig, StageOptions

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
