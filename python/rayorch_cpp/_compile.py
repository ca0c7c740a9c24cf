"""Compilation: tracing a pipeline's forward() once, and the immutable program it gives.

``CompiledProgram`` also carries what the executors and backends read of a compiled
program (``native``, ``output_tree``, ``call_pools``, ``source``, ``optimize``,
``pool_options()``).
"""

from __future__ import annotations

import inspect
from typing import Any

from ._journal_modules import ModuleSnapshot
from ._tracing import Port, RecordedModule, Trace, recording
from ._values import CompileError


class CompiledProgram:
    """An immutable compiled program. Later changes to the pipeline's Modules do not affect
    it."""

    def __init__(
        self,
        program: Any,
        output_tree: Any,
        source_names: tuple[str, ...],
        call_pools: tuple[int, ...] = (),
        source: Any = None,
        modules: tuple[RecordedModule, ...] = (),
        optimize: bool = True,
        snapshots: tuple[ModuleSnapshot, ...] = (),
        isolation: str | None = None,
    ) -> None:
        self._program = program
        self._output_tree = output_tree
        self._call_pools = call_pools
        self.source_names = source_names
        # What a Ray backend ships to its actors, which compile the same program again.
        self._source = source
        self._modules = modules
        self._optimize = optimize
        self._snapshots = snapshots
        self._isolation = isolation

    # What the executors and backends read of a compiled program (nothing else).

    @property
    def native(self) -> Any:
        """The engine's compiled program (``_core.Program``) that a backend runs."""
        return self._program

    @property
    def source(self) -> Any:
        """The Pipeline or forward callable this program was compiled from."""
        return self._source

    @property
    def optimize(self) -> bool:
        """Whether it was compiled with ``optimize=True`` (a Ray actor compiles it again)."""
        return self._optimize

    @property
    def isolation(self) -> str | None:
        """The isolation every Module without its own was compiled with (None: threads)."""
        return self._isolation

    def isolated_pools(self) -> list[str]:
        """The names of the actor pools that run in worker processes (isolation="process")."""
        return [p["name"] for p in self._program.pools() if p["isolation"] == "process"]

    @property
    def output_tree(self) -> Any:
        """The structure of forward()'s result over the flat outputs: a leaf is the index of
        an output, a tuple of trees a tuple of results."""
        return self._output_tree

    @property
    def outputs_below_root(self) -> tuple[int, ...]:
        """The outputs (flat indices) that are Ports of a child Domain. A run returns such an
        output as the values below every root, in source and ordinal order (as the reference
        does); ``on_row`` and ``stream`` give each root the list of its own."""
        return tuple(self._program.outputs_below_root())

    @property
    def call_pools(self) -> tuple[int, ...]:
        """Per Call (in Call order): the index of its Module's actor pool."""
        return self._call_pools

    @property
    def module_snapshots(self) -> tuple[ModuleSnapshot, ...]:
        """Per Module: what its Calls were recorded with (the run journal's check)."""
        return self._snapshots

    def pool_options(self) -> list[dict[str, Any]]:
        """Per actor pool (plan order): the options of the Module whose actors it has."""
        return [
            dict(self._modules[self._call_pools[pool["calls"][0]]].options)
            for pool in self._program.pools()
        ]

    def explain_text(self) -> str:
        """One line per Port, ``pN kind dD <- [inputs] => rule``, plus rewrite lines."""
        return str(self._program.explain())

    def explain(self) -> str:
        """Same as explain_text()."""
        return self.explain_text()

    def __repr__(self) -> str:
        return f"CompiledProgram(sources={list(self.source_names)})"


def _flatten(trace: Trace, value: Any, ids: list[int]) -> Any:
    """Output ids in order, and the tree (a leaf index or a tuple of trees)."""
    if isinstance(value, Port):
        ids.append(trace.port(value, "pipeline output"))
        return len(ids) - 1
    if isinstance(value, tuple) and value:
        return tuple(_flatten(trace, v, ids) for v in value)
    raise CompileError(
        "forward() must return a Port or a non-empty (nested) tuple of Ports, got "
        f"{type(value).__name__}"
    )


def compile(
    pipeline: Any, *, optimize: bool = True, isolation: str | None = None
) -> CompiledProgram:
    """Traces ``pipeline.forward`` (or a callable taking Ports) once and compiles it.

    Its parameters are the source columns; its result (a Port, or a tuple of Ports) the
    outputs. ``isolation`` (``"threads"`` or ``"process"``) is the isolation of every Module
    that does not set its own (docs/ISOLATION.md). Raises CompileError with the engine's
    message naming the Port, Call or Module.
    """
    if isolation not in (None, "threads", "process"):
        raise ValueError(f"isolation must be 'threads' or 'process', got {isolation!r}")
    if isinstance(pipeline, CompiledProgram):
        if isolation is not None and isolation != pipeline.isolation:
            raise ValueError(
                f"this program was compiled with isolation={pipeline.isolation!r}; pass "
                f"isolation={isolation!r} to compile() or give the Pipeline itself"
            )
        return pipeline
    target = pipeline.forward if hasattr(pipeline, "forward") else pipeline
    if not callable(target):
        raise CompileError("compile() needs a Pipeline or a callable taking Ports")
    parameters = tuple(inspect.signature(target).parameters.values())
    positional = {inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD}
    if not parameters:
        raise CompileError("forward() needs at least one parameter: each one is a source column")
    if any(p.kind not in positional for p in parameters):
        raise CompileError("forward() supports positional source parameters only")
    trace = Trace({"isolation": isolation} if isolation is not None else None)
    sources = trace.ports([trace.core.add_source() for _ in parameters])
    ids: list[int] = []
    with recording(trace):
        tree = _flatten(trace, target(*sources), ids)
    program = trace.core.compile(ids, optimize)
    return CompiledProgram(
        program,
        tree,
        tuple(p.name for p in parameters),
        tuple(trace.call_pools),
        source=pipeline,
        modules=tuple(trace.modules),
        optimize=optimize,
        snapshots=tuple(trace.snapshots),
        isolation=isolation,
    )


__all__ = ["CompiledProgram", "compile"]
