"""What a run returns: its outputs in source order and its metrics (RunResult, CallMetrics,
InputBatchMetrics, PoolMetrics, NodeLoss), built from the engine's RunMetrics."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from . import _core


@dataclass(frozen=True, slots=True)
class CallMetrics:
    """One Call's counters for one run.

    ``grain_dispatches`` counts replays too; ``grain_requeues`` Grains put back for a retry.
    ``actor_instances`` counts the actors of the Call's pool, and those that replaced a lost
    one during the run; ``batch_sizes`` the Grains of each RPC in the order they ended (as
    the reference's), ``batch_size_histogram`` the same as RPC size -> count.
    """

    call_index: int
    call: str
    udf_name: str
    actor_instances: int
    batch_size: int
    rpcs: int
    grain_dispatches: int
    grain_requeues: int
    failed_rpcs: int
    suppressed_by_barrier: int
    batch_sizes: tuple[int, ...]
    mean_batch_fill: float
    busy_s: float
    batch_size_histogram: dict[int, int] = field(default_factory=dict)
    actors_replaced: int = 0  #: actors of the pool replaced during the run

    @property
    def average_batch(self) -> float:
        """Mean Grains per RPC."""
        return self.grain_dispatches / self.rpcs if self.rpcs else 0.0


@dataclass(frozen=True, slots=True)
class InputBatchMetrics:
    """Counters of one input batch (a slice of source rows). An empty run reports one input
    batch with no rows, as the reference does."""

    index: int
    first_row: int
    rows: int
    grain_count: int
    rpcs: int
    admitted_s: float
    completed_s: float
    entity_count: int = 0  #: Entities of every Domain: the rows and their children
    item_count: int = 0  #: Items: an Entity's value at one Port
    expansion_count: int = 0  #: one per expand and parent Entity
    released_values: int = 0  #: values freed once nothing needed them


@dataclass(frozen=True, slots=True)
class ActorStartMetrics:
    """When one actor's constructor finished (eager start: actors join their pool as their
    constructors finish, the first run does not wait for them all)."""

    actor: int  #: its index within its pool
    started_s: float  #: seconds since the executor was made
    #: empty when the actor became ready; else the constructor's error, and the actor stays
    #: out of its pool for the executor's life
    error: str = ""

    @property
    def ready(self) -> bool:
        """The actor joined its pool."""
        return not self.error


@dataclass(frozen=True, slots=True)
class PoolResize:
    """A self-sizing pool's decision (``replicas="auto"``): its target went from
    ``from_actors`` to ``to_actors`` (equal: the budget refused a grow) ``seconds`` after
    the run started, for ``reason``."""

    seconds: float
    from_actors: int
    to_actors: int
    reason: str


@dataclass(frozen=True, slots=True)
class PoolMetrics:
    """The actors of one pool (Module) as far as their starts are known at the end of a
    run: ``started`` in the order the constructors finished; an actor still starting is
    missing."""

    pool: str  #: the Module's name, as in explain()
    actors: int  #: actors the pool was made with (its replicas)
    started: tuple[ActorStartMetrics, ...] = ()
    #: self-sizing pools: this run's decisions, in order
    resizes: tuple[PoolResize, ...] = ()
    #: self-sizing pools: (seconds since the run started, target actors), from the start
    actors_over_time: tuple[tuple[float, int], ...] = ()

    @property
    def ready_actors(self) -> int:
        """Actors that joined the pool."""
        return sum(1 for s in self.started if s.ready)


@dataclass(frozen=True, slots=True)
class NodeLoss:
    """A cluster node the run lost (the Ray backend: a node that went away with actors or
    values of the run), when the backend detected it."""

    node: str  #: the node's id
    address: str  #: its node manager's address, "ip:port"
    detected_s: float  #: seconds since the run started (0: detected before it, between runs)
    cause: str  #: the error that revealed it (the lost actor's or value's), "Type: message"


@dataclass(frozen=True, slots=True)
class ExpandMetrics:
    """How many children one expansion (an ``F.expand`` of a Call's list output) made per
    parent, over the input batches that completed: the input-dependent shape of the work
    (pages per document)."""

    call: str  #: the Call whose list is expanded, e.g. "Split#0"
    port: int  #: the expanded list's Port
    parents: int  #: parents whose list was expanded (not dropped or failed)
    children: int  #: the children they made
    fan_out_histogram: dict[int, int] = field(default_factory=dict)  #: children -> parents


def report_page_beside(report_path: str | os.PathLike[str]) -> str:
    """Where the report page of the JSON report at ``report_path`` goes by default: beside
    it, its extension replaced by ``.html`` (``run.json`` -> ``run.html``; ``run.html`` ->
    ``run.html.html``), as the C++ commands do."""
    path = os.fspath(report_path)
    root, ext = os.path.splitext(path)
    return path + ".html" if ext == ".html" else root + ".html"


def write_report_page(
    report_path: str | os.PathLike[str], page_path: str | os.PathLike[str] | None = None
) -> str:
    """Draws the JSON report a run wrote (``run(..., report=...)``) as its report page
    (docs/REPORT.md), one self-contained HTML file written atomically to ``page_path``
    (default: beside the report, report_page_beside); returns the page's path. ValueError
    naming what is wrong when the report cannot be read or is not a report."""
    page = report_page_beside(report_path) if page_path is None else os.fspath(page_path)
    _core.write_report_page(os.fspath(report_path), page)
    return page


@dataclass(frozen=True, slots=True)
class RunResult:
    """The outputs of a run in source order (a list for one output Port, a tuple of lists
    for several), plus its metrics. A row that is not present is an OutputIssue.
    Streaming runs return ``outputs=None``."""

    outputs: Any
    elapsed_s: float
    calls: tuple[CallMetrics, ...]
    input_batches: tuple[InputBatchMetrics, ...]
    peak_active_input_batches: int
    actor_count: int  #: actors of every pool (Calls of one Module share theirs)
    root_completed_s: tuple[float, ...] = ()
    roots_by_outcome: dict[str, int] = field(default_factory=dict)
    actors_replaced: int = 0
    values_rebuilt: int = 0  #: values lost with a node and re-materialised from lineage
    grains_reexecuted: int = 0  #: Grains run again to re-materialise them
    rebuild_s: float = 0.0  #: seconds those re-executions ran
    node_losses: tuple[NodeLoss, ...] = ()  #: the nodes lost during the run, as detected
    file_errors: tuple[str, ...] = ()
    roots_restored: int = 0  #: roots delivered from the run journal, not computed
    journal_discarded_bytes: int = 0  #: torn or corrupt journal tail cut off when opened
    #: per pool (plan order): when each actor became ready, or why it could not start
    pools: tuple[PoolMetrics, ...] = ()
    #: the JSON report the run wrote (``run(..., report=...)``), or ""
    report_path: str = ""
    #: per expansion (plan order): children per parent
    expands: tuple[ExpandMetrics, ...] = ()

    def report_page(self, path: str | os.PathLike[str]) -> str:
        """Writes the report page of this run (docs/REPORT.md: which stage bounded the run,
        batch fill, pools and parents over time, failures) to ``path`` as one
        self-contained HTML file, atomically, and returns its path. It is drawn from the
        run's JSON report, so the run must have written one: ``run(..., report="run.json")``;
        ValueError otherwise, or when that report cannot be read or is not a report."""
        if not self.report_path:
            raise ValueError(
                "report_page() draws the run's JSON report, and this run wrote none: run with "
                "report='run.json' (or draw a report later: python -m rayorch_cpp report "
                "RUN.json -o run.html)"
            )
        return write_report_page(self.report_path, path)

    @property
    def rpc_count(self) -> int:
        """RPCs of every Call."""
        return sum(c.rpcs for c in self.calls)

    @property
    def released_values(self) -> int:
        """Values freed during the run once nothing needed them (every input batch)."""
        return sum(b.released_values for b in self.input_batches)


def run_result(
    raw: _core.RunMetrics, outputs: Any, call_pools: tuple[int, ...], report_path: str = ""
) -> RunResult:
    """The RunResult of a run: its shaped ``outputs`` and the engine's metrics ``raw``;
    ``call_pools`` maps each Call to its actor pool (CompiledProgram.call_pools);
    ``report_path`` the JSON report it wrote, if any."""
    calls = tuple(
        CallMetrics(
            call_index=i,
            call=c.call,
            udf_name=c.udf,
            actor_instances=c.actors + c.actors_replaced,
            batch_size=c.batch_size,
            rpcs=c.rpcs,
            grain_dispatches=c.grain_dispatches,
            grain_requeues=c.requeues,
            failed_rpcs=c.failed_rpcs,
            suppressed_by_barrier=c.suppressed_by_barrier,
            batch_sizes=tuple(c.rpc_sizes),
            mean_batch_fill=c.mean_batch_fill,
            busy_s=c.busy_seconds,
            batch_size_histogram=c.batch_size_histogram,
            actors_replaced=c.actors_replaced,
        )
        for i, c in enumerate(raw.calls)
    )
    batches = tuple(
        InputBatchMetrics(
            index=b.index,
            first_row=b.first_row,
            rows=b.rows,
            grain_count=b.grains,
            rpcs=b.rpcs,
            admitted_s=b.admitted_seconds,
            completed_s=b.completed_seconds,
            entity_count=b.entities,
            item_count=b.items,
            expansion_count=b.expansions,
            released_values=b.released_values,
        )
        for b in raw.input_batches
    ) or (
        (InputBatchMetrics(0, 0, 0, 0, 0, 0.0, raw.elapsed_seconds),)
        if not raw.root_completed_seconds
        else ()
    )
    return RunResult(
        outputs=outputs,
        elapsed_s=raw.elapsed_seconds,
        calls=calls,
        input_batches=batches,
        peak_active_input_batches=raw.peak_active_input_batches,
        # Calls of one Module share its actors: count each pool once.
        actor_count=sum(
            {
                (call_pools[i] if i < len(call_pools) else -1 - i): c.actors + c.actors_replaced
                for i, c in enumerate(raw.calls)
            }.values()
        ),
        root_completed_s=tuple(raw.root_completed_seconds),
        roots_by_outcome=raw.roots_by_outcome,
        actors_replaced=raw.actors_replaced,
        values_rebuilt=raw.values_rebuilt,
        grains_reexecuted=raw.grains_reexecuted,
        rebuild_s=raw.rebuild_seconds,
        node_losses=tuple(
            NodeLoss(node=n.node, address=n.address, detected_s=n.detected_seconds, cause=n.cause)
            for n in raw.node_losses
        ),
        file_errors=tuple(raw.file_errors),
        roots_restored=raw.roots_restored,
        journal_discarded_bytes=raw.journal_discarded_bytes,
        pools=tuple(
            PoolMetrics(
                pool=p.pool,
                actors=p.actors,
                started=tuple(
                    ActorStartMetrics(actor=s.actor, started_s=s.started_seconds, error=s.error)
                    for s in p.started
                ),
                resizes=tuple(
                    PoolResize(
                        seconds=r.seconds,
                        from_actors=r.from_actors,
                        to_actors=r.to_actors,
                        reason=r.reason,
                    )
                    for r in p.resizes
                ),
                actors_over_time=tuple((t, n) for t, n in p.actors_over_time),
            )
            for p in raw.pools
        ),
        report_path=report_path,
        expands=tuple(
            ExpandMetrics(
                call=x.call,
                port=x.port,
                parents=x.parents,
                children=x.children,
                fan_out_histogram=dict(x.fan_out_histogram),
            )
            for x in raw.expands
        ),
    )


def partial_result(outputs: Any) -> RunResult:
    """The RunResult an aborted run's ExecutionError carries as ``partial``: the rows
    delivered before the abort in source order (None for the others), without metrics."""
    return RunResult(
        outputs=outputs,
        elapsed_s=0.0,
        calls=(),
        input_batches=(),
        peak_active_input_batches=0,
        actor_count=0,
    )


__all__ = [
    "ActorStartMetrics",
    "CallMetrics",
    "InputBatchMetrics",
    "NodeLoss",
    "PoolMetrics",
    "PoolResize",
    "RunResult",
    "report_page_beside",
    "write_report_page",
]
