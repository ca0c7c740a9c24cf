"""The document topology's Pipeline: expand pages, expand tables, parse, gather per page,
gather per document."""

from __future__ import annotations

from ... import F, Pipeline, Port, RayModule
from .udfs import FindTables, MakePages, ParseTable, SummarizeDocument, SummarizePage


class DocumentTopology(Pipeline):
    def __init__(
        self, pages_per_document: int, tables_per_page: int, workers: int, batch_size: int
    ) -> None:
        options = {"replicas": workers, "batch_size": batch_size, "num_cpus": 0.25}
        self.pages = RayModule(MakePages).pre_init(pages_per_document).ray_options(**options)
        self.tables = RayModule(FindTables).pre_init(tables_per_page).ray_options(**options)
        self.parse = RayModule(ParseTable).ray_options(**options)
        self.page = RayModule(SummarizePage).ray_options(**options)
        self.document = RayModule(SummarizeDocument).ray_options(**options)

    def forward(self, document: Port) -> Port:
        page = F.expand(self.pages(document))
        table = F.expand(self.tables(page))
        page_record = self.page(F.reduce(self.parse(table)), page)
        out: Port = self.document(F.reduce(page_record), document)
        return out
