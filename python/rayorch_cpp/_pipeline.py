"""The Pipeline base class: authoring (``forward``) plus the shortcuts that compile and run it.

It sits above both compilation (_compile) and the executors (_executor), so neither of
those imports the other back.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ._compile import CompiledProgram, compile
from ._executor import run
from ._run_result import RunResult


class Pipeline:
    """Base of a pipeline class: Modules as attributes, ``forward(self, *sources)`` taking
    and returning Ports. ``forward`` runs once, on symbolic Ports, when compiled."""

    def forward(self, *args: Any) -> Any:
        """Declares the graph by calling Modules and ``F`` operators on Ports."""
        raise NotImplementedError

    def compile(self, *, optimize: bool = True, auto_colocate: bool = False) -> CompiledProgram:
        """Traces ``forward`` and compiles it (see :func:`compile`)."""
        return compile(self, optimize=optimize, auto_colocate=auto_colocate)

    def run(
        self,
        *source_columns: Iterable[Any],
        input_batch_size: int | None = None,
        max_active_input_batches: int = 1,
        **options: Any,
    ) -> RunResult:
        """Runs once on a temporary local Executor, closed afterwards (columns as in
        Executor.run: sequences, or iterables pulled lazily)."""
        return run(
            self,
            *source_columns,
            input_batch_size=input_batch_size,
            max_active_input_batches=max_active_input_batches,
            **options,
        )


__all__ = ["Pipeline"]
