"""Compilation: tracing a pipeline's forward() once, and the immutable program it gives.

``CompiledProgram`` also carries what the executors and backends read of a compiled
program (``native``, ``output_tree``, ``call_pools``, ``source``, ``optimize``,
``auto_colocate``, ``pool_options()``).
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
        call_modules: tuple[int, ...] = (),
        source: Any = None,
        modules: tuple[RecordedModule, ...] = (),
        optimize: bool = True,
        snapshots: tuple[ModuleSnapshot, ...] = (),
        isolation: str | None = None,
        auto_colocate: bool = False,
    ) -> None:
        self._program = program
        self._output_tree = output_tree
        self._call_modules = call_modules
        pools: dict[int, int] = {}
        for index, pool in enumerate(program.pools()):
            for call in pool["calls"]:
                pools[call] = index
        self._call_pools = tuple(pools[call] for call in range(len(pools)))
        self.source_names = source_names
        # What a Ray backend ships to its actors, which compile the same program again.
        self._source = source
        self._modules = modules
        self._optimize = optimize
        self._snapshots = snapshots
        self._isolation = isolation
        self._auto_colocate = auto_colocate

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
    def auto_colocate(self) -> bool:
        """Whether it was compiled with ``auto_colocate=True`` (a Ray actor or worker process
        compiles it again)."""
        return self._auto_colocate

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
        """Per actor pool (plan order): the options of the Module whose actors it has (of
        the first member of a co-located pool: its members agree on them, _check_colocated)."""
        return [
            dict(self._modules[self._call_modules[pool["calls"][0]]].options)
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


# Options each Call of a co-located pool keeps as its own (DESIGN 5.12); its members agree on
# every other (the engine checks those it reads, _check_colocated those it passes to Ray).
_PER_CALL_OPTIONS = frozenset({"name", "version", "batch_size", "recovery", "infra_retries"})


def _check_colocated(program: Any, trace: Trace) -> None:
    """Raises CompileError when the Modules sharing a co-located pool differ in an option
    of the pool that the engine does not read (the Ray backend's actor options). A pool the
    compiler found (auto_colocate) has members that agree on both by construction."""
    for pool in program.pools():
        if pool["found_by_compiler"]:
            continue
        modules: list[RecordedModule] = []
        for call in pool["calls"]:
            module = trace.modules[trace.call_modules[call]]
            if all(m is not module for m in modules):
                modules.append(module)
        lead = modules[0]
        for other in modules[1:]:
            for key in sorted(set(lead.options) | set(other.options)):
                if key in _PER_CALL_OPTIONS:
                    continue
                if lead.options.get(key) != other.options.get(key):
                    raise CompileError(
                        f"Module<{lead.name}> and Module<{other.name}> are co-located "
                        f"(colocate={lead.options.get('colocate')!r}) but differ in {key} "
                        f"({lead.options.get(key)!r} and {other.options.get(key)!r}): "
                        "co-located Modules share one pool, so they must agree on its "
                        f"options; set {key} equal on both, or drop colocate from one of them"
                    )


def compile(
    pipeline: Any,
    *,
    optimize: bool = True,
    isolation: str | None = None,
    auto_colocate: bool | None = None,
) -> CompiledProgram:
    """Traces ``pipeline.forward`` (or a callable taking Ports) once and compiles it.

    Its parameters are the source columns; its result (a Port, or a tuple of Ports) the
    outputs. ``isolation`` (``"threads"`` or ``"process"``) is the isolation of every Module
    that does not set its own (docs/ISOLATION.md). ``auto_colocate=True`` co-locates the
    chains the compiler finds (DESIGN 5.12): a Module whose every output is read only by the
    Calls of one other Module shares that Module's pool when neither declares ``colocate``
    and the two agree on every pool option, Ray's actor options included, so that on Ray its
    values stay in the actor that made them; explain() marks such pools "found by the
    compiler". Off by default (None: False): a shared pool of N actors runs the two Calls one
    at a time on each. Raises CompileError with the engine's message naming the Port, Call or
    Module.
    """
    if isolation not in (None, "threads", "process"):
        raise ValueError(f"isolation must be 'threads' or 'process', got {isolation!r}")
    if auto_colocate not in (None, True, False):
        raise ValueError(f"auto_colocate must be True or False, got {auto_colocate!r}")
    if isinstance(pipeline, CompiledProgram):
        if isolation is not None and isolation != pipeline.isolation:
            raise ValueError(
                f"this program was compiled with isolation={pipeline.isolation!r}; pass "
                f"isolation={isolation!r} to compile() or give the Pipeline itself"
            )
        if auto_colocate is not None and auto_colocate != pipeline.auto_colocate:
            raise ValueError(
                f"this program was compiled with auto_colocate={pipeline.auto_colocate!r}; "
                f"pass auto_colocate={auto_colocate!r} to compile() with the Pipeline itself"
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
    program = trace.core.compile(ids, optimize, bool(auto_colocate))
    _check_colocated(program, trace)
    return CompiledProgram(
        program,
        tree,
        tuple(p.name for p in parameters),
        tuple(trace.call_modules),
        source=pipeline,
        modules=tuple(trace.modules),
        optimize=optimize,
        snapshots=tuple(trace.snapshots),
        isolation=isolation,
        auto_colocate=bool(auto_colocate),
    )


__all__ = ["CompiledProgram", "compile"]
