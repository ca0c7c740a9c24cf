"""The document topology's UDFs: made-up documents, pages and tables, so the benchmark
measures the engine's fan-out and fan-in, not a model."""

from __future__ import annotations

from typing import Any


class MakePages:
    """A document's number -> its page ids, in order."""

    def __init__(self, pages_per_document: int) -> None:
        self.pages = pages_per_document

    def run(self, documents: list[int]) -> list[list[str]]:
        return [[f"doc{d}/page{p}" for p in range(self.pages)] for d in documents]


class FindTables:
    """A page -> its table ids."""

    def __init__(self, tables_per_page: int) -> None:
        self.tables = tables_per_page

    def run(self, pages: list[str]) -> list[list[str]]:
        return [[f"{page}/table{t}" for t in range(self.tables)] for page in pages]


class ParseTable:
    """A table -> its cells (a made-up grid whose size follows from its id)."""

    def run(self, tables: list[str]) -> list[dict[str, Any]]:
        return [{"table": t, "cells": 4 + len(t) % 5} for t in tables]


class SummarizePage:
    """A page's parsed tables -> the page's record."""

    def run(self, tables: list[list[dict[str, Any]]], pages: list[str]) -> list[dict[str, Any]]:
        return [
            {"page": page, "tables": len(ts), "cells": sum(t["cells"] for t in ts)}
            for ts, page in zip(tables, pages, strict=True)
        ]


class SummarizeDocument:
    """A document's page records -> its record."""

    def run(self, pages: list[list[dict[str, Any]]], documents: list[int]) -> list[dict[str, Any]]:
        return [
            {
                "document": d,
                "pages": len(ps),
                "tables": sum(p["tables"] for p in ps),
                "page_order": [p["page"] for p in ps],
            }
            for ps, d in zip(pages, documents, strict=True)
        ]
