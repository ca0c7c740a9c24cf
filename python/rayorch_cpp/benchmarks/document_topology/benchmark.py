"""DocumentTopologyBench: ``document_count`` documents of ``pages_per_document`` pages of
``tables_per_page`` tables each, with no model, on the local backend or Ray."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..._run_result import RunResult
from .._common import BenchmarkBase, check_fields
from .pipeline import DocumentTopology


@dataclass(frozen=True, slots=True)
class DocumentTopologyBench(BenchmarkBase):
    NAME: ClassVar[str] = "document_topology"

    output_dir: str | Path = "."
    document_count: int = 2
    pages_per_document: int = 3
    tables_per_page: int = 2
    workers: int = 2
    batch_size: int = 4
    input_batch_size: int = 1
    max_active_input_batches: int = 2

    def __post_init__(self) -> None:
        check_fields(
            self,
            paths=("output_dir",),
            positive=("document_count", "pages_per_document", "workers", "batch_size"),
        )
        if type(self.tables_per_page) is not int or self.tables_per_page < 0:
            raise ValueError("tables_per_page must be a non-negative integer")

    def source_columns(self) -> tuple[Sequence[Any], ...]:
        return (list(range(self.document_count)),)

    def pipeline(self) -> DocumentTopology:
        return DocumentTopology(
            self.pages_per_document, self.tables_per_page, self.workers, self.batch_size
        )

    def extra_metrics(self, result: RunResult) -> dict[str, Any]:
        outputs = result.outputs
        return {
            "pages": sum(o["pages"] for o in outputs),
            "tables": sum(o["tables"] for o in outputs),
        }
