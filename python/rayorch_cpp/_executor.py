"""Running compiled programs: the local Executor, the deterministic SyncExecutor."""

from __future__ import annotations

import atexit
import hashlib
import os
import pickle
import queue
import sys
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from . import _core
from ._api import CompiledProgram, compile
from ._ray_backend import RayBackend
from ._ray_contract import RayBackendProtocol
from ._ray_session import snapshot

_SourceColumns = Sequence[Sequence[Any]]


@dataclass(frozen=True, slots=True)
class CallMetrics:
    """One Call's counters for one run.

    ``grain_dispatches`` counts replays too; ``grain_requeues`` Grains put back for a retry.
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
    batch_sizes: dict[int, int]
    mean_batch_fill: float
    busy_s: float

    @property
    def average_batch(self) -> float:
        """Mean Grains per RPC."""
        return self.grain_dispatches / self.rpcs if self.rpcs else 0.0


@dataclass(frozen=True, slots=True)
class InputBatchMetrics:
    """Counters of one input batch (a slice of source rows)."""

    index: int
    first_row: int
    rows: int
    grain_count: int
    rpcs: int
    admitted_s: float
    completed_s: float


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
    file_errors: tuple[str, ...] = ()
    roots_restored: int = 0  #: roots delivered from the run journal, not computed
    journal_discarded_bytes: int = 0  #: torn or corrupt journal tail cut off when opened

    @property
    def rpc_count(self) -> int:
        """RPCs of every Call."""
        return sum(c.rpcs for c in self.calls)


def _metrics(raw: _core.RunMetrics, outputs: Any, call_pools: tuple[int, ...]) -> RunResult:
    calls = tuple(
        CallMetrics(
            call_index=i,
            call=c.call,
            udf_name=c.udf,
            actor_instances=c.actors,
            batch_size=c.batch_size,
            rpcs=c.rpcs,
            grain_dispatches=c.grain_dispatches,
            grain_requeues=c.requeues,
            failed_rpcs=c.failed_rpcs,
            suppressed_by_barrier=c.suppressed_by_barrier,
            batch_sizes=c.batch_size_histogram,
            mean_batch_fill=c.mean_batch_fill,
            busy_s=c.busy_seconds,
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
        )
        for b in raw.input_batches
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
                (call_pools[i] if i < len(call_pools) else -1 - i): c.actors
                for i, c in enumerate(raw.calls)
            }.values()
        ),
        root_completed_s=tuple(raw.root_completed_seconds),
        roots_by_outcome=raw.roots_by_outcome,
        actors_replaced=raw.actors_replaced,
        file_errors=tuple(raw.file_errors),
        roots_restored=raw.roots_restored,
        journal_discarded_bytes=raw.journal_discarded_bytes,
    )


@dataclass(frozen=True, slots=True)
class Journal:
    """A run journal for resuming an interrupted run (docs/JOURNAL.md), as in C++
    ``RunOptions::journal``: ``run(..., journal=Journal("out/run.journal"))`` or just the path.

    Every terminal root is recorded with its key, outcome, cause and output (pickled, so
    outputs must be picklable). A rerun with the same journal admits only the rows not
    recorded finished (present or dropped; failed and suppressed ones run again unless
    ``retry_failed=False``) and returns the recorded ones as if computed, counted in
    ``RunResult.roots_restored``. ``key(row)`` names a source row (default: a 64-bit digest
    of its pickled source values, 16 hex digits). A journal of another pipeline or other
    inputs raises ValueError unless ``force`` (``allow_other_inputs`` accepts other inputs of
    the same pipeline). Records are written by a writer thread at most ``write_interval_s``
    after their root was delivered and flushed to disk every ``sync_every_records`` records,
    ``sync_interval_s`` after the last flush, and when the run ends.
    """

    path: str
    key: Callable[[int], str] | None = None
    retry_failed: bool = True
    force: bool = False
    allow_other_inputs: bool = False
    sync_every_records: int = 4096
    sync_interval_s: float = 0.2
    write_interval_s: float = 0.005


def _row_keys(columns: Sequence[Sequence[Any]], key: Callable[[int], str] | None) -> list[str]:
    """One journal key per source row: key(row), else a digest of the pickled row values."""
    rows = len(columns[0]) if columns else 0
    if key is not None:
        keys = []
        for row in range(rows):
            k = key(row)
            if not isinstance(k, str):
                raise TypeError(
                    f"journal key(row) must return a str; row {row} gave {type(k).__name__}"
                )
            keys.append(k)
        return keys
    out = []
    for row in range(rows):
        try:
            data = pickle.dumps(tuple(c[row] for c in columns), protocol=4)
        except Exception as error:
            raise TypeError(
                f"the run journal keys rows by a digest of their pickled source values, but "
                f"row {row} cannot be pickled ({error}); pass Journal(path, key=...)"
            ) from error
        out.append(hashlib.blake2b(data, digest_size=8).hexdigest())
    return out


def _long_run(
    options: _core.RunOptions,
    columns: Sequence[Sequence[Any]],
    journal: str | os.PathLike[str] | Journal | None,
    dead_letters: str | os.PathLike[str] | None,
    max_failed_roots: int | None,
    max_failed_fraction: float,
    min_roots_for_failed_fraction: int,
) -> list[str] | None:
    """Sets the journal, dead-letter and error-budget options of a run; returns one journal
    key per source row, or None when none of them is used."""
    if journal is not None and not isinstance(journal, Journal):
        journal = Journal(os.fspath(journal))
    if max_failed_roots is not None and (type(max_failed_roots) is not int or max_failed_roots < 0):
        raise ValueError("max_failed_roots must be a non-negative integer or None")
    if not 0.0 <= max_failed_fraction:
        raise ValueError("max_failed_fraction must be >= 0 (1 or more: no limit)")
    if type(min_roots_for_failed_fraction) is not int or min_roots_for_failed_fraction < 0:
        raise ValueError("min_roots_for_failed_fraction must be a non-negative integer")
    if journal is None and dead_letters is None and max_failed_roots is None:
        if max_failed_fraction >= 1.0:
            return None
    if journal is not None and journal.sync_every_records < 1:
        raise ValueError("Journal.sync_every_records must be >= 1")
    if journal is not None:
        keys = _row_keys(columns, journal.key)
    elif dead_letters is not None:
        try:
            keys = _row_keys(columns, None)
        except TypeError:
            keys = [str(row) for row in range(len(columns[0]) if columns else 0)]
    else:
        keys = [str(row) for row in range(len(columns[0]) if columns else 0)]
    j = journal if journal is not None else Journal("")
    options.journal.path = j.path
    options.journal.retry_failed = j.retry_failed
    options.journal.force = j.force
    options.journal.allow_other_inputs = j.allow_other_inputs
    options.journal.sync_every_records = j.sync_every_records
    options.journal.sync_interval_s = j.sync_interval_s
    options.journal.write_interval_s = j.write_interval_s
    options.dead_letters = os.fspath(dead_letters) if dead_letters is not None else ""
    options.max_failed_roots = max_failed_roots
    options.max_failed_fraction = max_failed_fraction
    options.min_roots_for_failed_fraction = min_roots_for_failed_fraction
    return keys


def _shape(tree: Any, flat: Sequence[Any]) -> Any:
    """Rebuilds forward()'s output structure from the flat output values."""
    if isinstance(tree, int):
        return flat[tree]
    return tuple(_shape(t, flat) for t in tree)


_LIVE: weakref.WeakSet[_Base] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    """Stops the actors of executors still open at exit, before the interpreter goes."""
    for executor in list(_LIVE):
        try:
            executor.close()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass


class _Base:
    """The run() surface shared by Executor and SyncExecutor."""

    _core: Any
    _program: CompiledProgram

    def __init__(self, pipeline: Any) -> None:
        self._program = compile(pipeline)

    @property
    def program(self) -> CompiledProgram:
        """The compiled program this executor runs."""
        return self._program

    def run(
        self,
        *source_columns: Sequence[Any],
        input_batch_size: int | None = None,
        max_active_input_batches: int = 1,
        on_row: Callable[[int, Any], None] | None = None,
        ordered: bool = False,
        progress: bool | Callable[[int, int], None] = True,
        trace: str | None = None,
        report: str | None = None,
        backpressure: int = 4,
        reservation: str | None = None,
        queue_order: str = "fifo",
        journal: str | os.PathLike[str] | Journal | None = None,
        dead_letters: str | os.PathLike[str] | None = None,
        max_failed_roots: int | None = None,
        max_failed_fraction: float = 1.0,
        min_roots_for_failed_fraction: int = 20,
    ) -> RunResult:
        """Runs the program on finite, row-aligned source columns.

        ``input_batch_size`` counts source rows per input batch (None: one batch);
        ``max_active_input_batches`` bounds how many are admitted at once. Returns the
        outputs in source order. With ``on_row``, each root row is delivered as
        ``on_row(index, output)`` as soon as it is terminal (completion order; source order
        with ``ordered=True``) on the calling thread, and ``outputs`` is None; an exception
        raised by ``on_row`` aborts the run and propagates (the executor is then closed).

        ``progress=True`` shows the engine's progress line when stderr is a terminal, and a
        rows-done line in a Jupyter notebook; a callable gets ``(done, total)`` root rows at
        most every 200 ms and at the end. ``trace`` and ``report`` write a Chrome-trace
        timeline and a JSON metrics report there. Raises
        ExecutionError on an unrecoverable failure (the executor is then closed) and
        ValueError on mismatched column lengths or bad options.

        Long runs (docs/JOURNAL.md), with the C++ semantics: ``journal`` (a path or a
        Journal) records every terminal root and resumes an interrupted run without redoing
        finished roots; restored roots come first, count in ``roots_restored`` and reach
        ``on_row`` like computed ones. The error budget (``max_failed_roots``, or
        ``max_failed_fraction`` of the delivered roots once ``min_roots_for_failed_fraction``
        are delivered) stops admitting input batches, lets the admitted ones finish and
        raises ExecutionError naming the count and the first causes. ``dead_letters`` writes
        every root that is not present as one JSON line (key, row, outcome, output, cause,
        call, entity, attempts, restored). Unusable paths or a foreign journal raise
        ValueError before anything runs.
        """
        tree = self._program._output_tree
        sink = None
        if on_row is not None:
            deliver = on_row
            if ordered:
                deliver = _in_order(on_row)

            def sink(index: int, values: tuple[Any, ...]) -> None:
                deliver(index, _shape(tree, values))

        if reservation not in (None, "elastic", "parent_bound"):
            raise ValueError("reservation must be None, 'elastic' or 'parent_bound'")
        if queue_order not in ("fifo", "lifo"):
            raise ValueError("queue_order must be 'fifo' or 'lifo'")
        if input_batch_size is not None and (
            type(input_batch_size) is not int or input_batch_size <= 0
        ):
            raise ValueError("input_batch_size must be a positive integer or None")
        if type(max_active_input_batches) is not int or max_active_input_batches <= 0:
            raise ValueError("max_active_input_batches must be a positive integer")
        on_progress = progress if callable(progress) else None
        if progress is True and _in_notebook():
            on_progress = _notebook_progress()
        options = _core.RunOptions()
        options.input_batch_size = input_batch_size or 0
        options.max_active_input_batches = max_active_input_batches
        options.backpressure = backpressure
        options.progress = progress is True
        options.trace_path = trace or ""
        options.report_path = report or ""
        options.reservation = reservation
        options.queue_order = queue_order
        journal_keys = _long_run(
            options,
            source_columns,
            journal,
            dead_letters,
            max_failed_roots,
            max_failed_fraction,
            min_roots_for_failed_fraction,
        )
        outputs, metrics = self._core.run(
            list(source_columns), options, journal_keys, sink, on_progress
        )
        shaped = None if on_row is not None else _shape(tree, outputs)
        return _metrics(metrics, shaped, self._program._call_pools)

    def stream(
        self,
        *source_columns: Sequence[Any],
        input_batch_size: int | None = None,
        max_active_input_batches: int = 1,
        ordered: bool = False,
        **options: Any,
    ) -> Iterator[tuple[int, Any]]:
        """Yields ``(index, output)`` for each root row as soon as it is terminal.

        The run proceeds on a helper thread while the caller consumes rows. Leaving the
        loop early stops the run at the next finished row and closes the executor.
        """
        rows: queue.Queue[Any] = queue.Queue()
        stop = threading.Event()
        done = object()

        def on_row(index: int, output: Any) -> None:
            if stop.is_set():
                raise _StreamClosed("the stream's consumer stopped reading")
            rows.put((index, output))

        def work() -> None:
            try:
                self.run(
                    *source_columns,
                    input_batch_size=input_batch_size,
                    max_active_input_batches=max_active_input_batches,
                    on_row=on_row,
                    ordered=ordered,
                    **options,
                )
            except BaseException as error:  # delivered to the consumer
                rows.put((done, error))
            else:
                rows.put((done, None))

        worker = threading.Thread(target=work, name="rayorch-stream", daemon=True)
        worker.start()
        try:
            while True:
                item = rows.get()
                if item[0] is done:
                    if item[1] is not None and not isinstance(item[1], _StreamClosed):
                        raise item[1]
                    return
                yield item
        finally:
            stop.set()
            worker.join()

    def close(self) -> None:
        """Stops every actor; idempotent. Later runs raise ExecutionError."""
        self._core.close()

    @property
    def closed(self) -> bool:
        """True once closed (explicitly or by an aborted run)."""
        return bool(self._core.closed)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _in_notebook() -> bool:
    """True inside a Jupyter kernel (where stderr is not a terminal)."""
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    ipython = getattr(shell, "get_ipython", lambda: None)()
    return ipython is not None and "IPKernelApp" in getattr(ipython, "config", {})


def _notebook_progress() -> Callable[[int, int], None]:
    """Rewrites one line of the cell's output: ``rows 120/368``."""

    def show(done: int, total: int) -> None:
        end = "\n" if done == total else ""
        sys.stdout.write(f"\rrayorch: rows {done}/{total}{end}")
        sys.stdout.flush()

    return show


class _StreamClosed(Exception):
    """Raised inside the run when a stream's consumer stopped early."""


def _in_order(on_row: Callable[[int, Any], None]) -> Callable[[int, Any], None]:
    waiting: dict[int, Any] = {}
    state = {"next": 0}

    def deliver(index: int, output: Any) -> None:
        waiting[index] = output
        while state["next"] in waiting:
            i = state["next"]
            on_row(i, waiting.pop(i))
            state["next"] = i + 1

    return deliver


class Executor(_Base):
    """Runs a compiled program (or a Pipeline, compiled first).

    ``backend="local"`` (default) is the embedded local backend: one thread per actor, each
    owning one UDF instance built on its own thread. The GIL is held only inside UDF calls,
    so UDFs that release it run in parallel across replicas.

    ``backend="ray"`` runs every Module as a pool of persistent Ray actors (with its
    ``num_cpus``, ``num_gpus``, ``resources``, ``runtime_env`` and other Ray actor options)
    on the cluster at ``address`` (``ray.init(address=..., **ray_init_kwargs)``; an already
    initialised Ray is used as it is). Values stay in Ray's object store; the driver fetches
    only the run's outputs. UDF classes must be importable on the workers (or shipped with
    ``runtime_env``).

    Every pool is created up front and reused across runs; a UDF constructor failure
    raises ExecutionError after cleaning up. Use as a context manager or close().
    """

    def __init__(
        self,
        pipeline: Any,
        *,
        backend: str = "local",
        address: str | None = None,
        ray_init_kwargs: dict[str, Any] | None = None,
    ) -> None:
        if backend not in ("local", "ray"):
            raise ValueError(f"backend must be 'local' or 'ray', got {backend!r}")
        source = b""
        if backend == "ray":
            source = snapshot(pipeline)
        super().__init__(pipeline)
        self.backend = backend
        self.address = address
        self.ray_init_kwargs = dict(ray_init_kwargs or {})
        self._ray: Any = None
        if backend == "ray":
            self._ray = RayBackend(self._program, source, address, self.ray_init_kwargs)
            try:
                self._core = _core.Core.ray(self._program._program, self._ray)
            except BaseException:
                self._ray.stop()
                raise
        else:
            self._core = _core.Core.local(self._program._program)
        _LIVE.add(self)

    @classmethod
    def _on_backend(cls, pipeline: Any, backend: RayBackendProtocol) -> Executor:
        """An executor whose pools are driven through `backend` (tests drive the Ray pools
        without Ray)."""
        self = cls.__new__(cls)
        _Base.__init__(self, pipeline)
        self.backend, self.address, self.ray_init_kwargs = "ray", None, {}
        self._ray = backend
        self._core = _core.Core.ray(self._program._program, backend)
        _LIVE.add(self)
        return self

    def actor_nodes(self) -> list[list[str]]:
        """Ray backend: the node id of every actor, per pool (plan order)."""
        if self._ray is None:
            raise ValueError("actor_nodes() is for the Ray backend")
        return [list(p) for p in self._ray.nodes]


class SyncExecutor(_Base):
    """Runs a program deterministically on the calling thread: one UDF instance per pool,
    FIFO queues, pools served in a fixed round-robin. Records every RPC, so tests can
    assert exact dispatch sequences. ``wire=True`` round-trips every protocol message
    through bytes."""

    def __init__(self, pipeline: Any, *, wire: bool = False) -> None:
        super().__init__(pipeline)
        self._core = _core.Core.sync(self._program._program, wire)
        _LIVE.add(self)

    def rpcs(self) -> list[str]:
        """Every RPC so far, in dispatch order, e.g. ``"Ocr#1 [0/0 0/1] g0"``."""
        return [r["text"] for r in self._core.rpc_log()]

    def rpc_records(self) -> list[dict[str, Any]]:
        """Every RPC so far as dicts: call, input_batch, grains, generations, failed."""
        return list(self._core.rpc_log())


def run(
    pipeline: Any,
    *source_columns: Sequence[Any],
    input_batch_size: int | None = None,
    max_active_input_batches: int = 1,
    address: str | None = None,
    ray_init_kwargs: dict[str, Any] | None = None,
    **options: Any,
) -> RunResult:
    """Runs once on a temporary local Executor, closed afterwards (``address`` and
    ``ray_init_kwargs`` are accepted for the reference's scripts and unused)."""
    with Executor(pipeline, address=address, ray_init_kwargs=ray_init_kwargs) as executor:
        return executor.run(
            *source_columns,
            input_batch_size=input_batch_size,
            max_active_input_batches=max_active_input_batches,
            **options,
        )


__all__ = [
    "CallMetrics",
    "Executor",
    "InputBatchMetrics",
    "Journal",
    "RunResult",
    "SyncExecutor",
    "run",
]
