"""MinerU at scale runs MinerU's UDFs (rayorch_cpp.benchmarks.mineru.udfs), unchanged."""

from ..mineru.udfs import AssembleMarkdown, PdfStem, ReadPage, RenderPdfPages

__all__ = ["AssembleMarkdown", "PdfStem", "ReadPage", "RenderPdfPages"]
