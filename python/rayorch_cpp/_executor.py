"""Running compiled programs: the Executor (local threads or Ray actor pools), the
deterministic SyncExecutor, and run() for one run on a temporary Executor."""

from __future__ import annotations

import atexit
import os
import weakref
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, Self

from ._backends import core_on, local_core, ray_core, ray_source, sync_core
from ._compile import CompiledProgram, compile
from ._crash_record import keep_python_stacks_for_crashes
from ._delivery import (
    RowStream,
    flatten_below_root,
    progress_callback,
    row_callbacks,
    row_sink,
    shape,
)
from ._ray_contract import RayBackendProtocol
from ._run_options import Journal, LiveAddress, run_options, set_dead_letter_fields
from ._run_result import RunResult, partial_result, run_result
from ._values import ExecutionError
from .io._readers import Reader
from .io._sinks import EngineFormat, Sink

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

    _live: LiveAddress = None

    def __init__(self, pipeline: Any, isolation: str | None = None) -> None:
        self._program = compile(pipeline, isolation=isolation)

    @property
    def program(self) -> CompiledProgram:
        """The compiled program this executor runs."""
        return self._program

    def run(
        self,
        *source_columns: Iterable[Any] | Reader,
        input_batch_size: int | None = None,
        max_active_input_batches: int = 1,
        on_row: Callable[[int, Any], None] | None = None,
        on_restored_row: Callable[[int, Any], None] | None = None,
        ordered: bool = False,
        progress: bool | Callable[[int, int | None], None] = True,
        progress_log_interval_s: float = 30.0,
        trace: str | None = None,
        report: str | None = None,
        live: LiveAddress = None,
        backpressure: int = 4,
        reservation: str | None = None,
        queue_order: str = "fifo",
        journal: str | os.PathLike[str] | Journal | None = None,
        dead_letters: str | os.PathLike[str] | None = None,
        dead_letter_fields: Callable[[int], Mapping[str, str]] | None = None,
        max_failed_roots: int | None = None,
        max_failed_fraction: float = 1.0,
        min_roots_for_failed_fraction: int = 20,
        sink: Sink | None = None,
    ) -> RunResult:
        """Runs the program on finite, row-aligned source columns, or on a Reader
        (rayorch_cpp.io: ``run(read_jsonl("docs.jsonl"))``), whose columns go to forward()'s
        parameters by name and whose rows are pulled as lazy columns are.

        ``input_batch_size`` counts source rows per input batch (None: one batch, or 1024
        rows for lazy columns); ``max_active_input_batches`` bounds how many are admitted at
        once. Returns the outputs in source order.

        A column is a sequence (a list, a tuple, a numpy array, anything with a length: read
        whole before the run starts) or any other iterable (a generator, an iterator, a
        file, ``map``): a lazy column. When one column is lazy, every column is pulled row by
        row as input batches are admitted: the run takes the next batch's rows from its
        columns only when it admits that batch, so the rows held are those of the active
        batches (``input_batch_size * max_active_input_batches``, plus the batch being
        pulled). With lazy columns ``input_batch_size=None`` means batches of 1024 rows, not
        one batch of every row. Lazy columns are zipped row by row and must end together: one
        that ends early or goes on is a ValueError naming the column and the row where they
        diverge, raised as soon as it is pulled. The columns are pulled on the thread that
        runs the run (for ``stream()`` its background thread), with the GIL, between driver
        steps, never concurrently with each other. An exception raised by a column's
        iterator stops the run once the work in flight finished and propagates with its
        traceback; the executor stays usable. The row count is known once the columns ended:
        a ``progress`` callable gets ``total=None`` until then.

        With ``on_row``, each root row is delivered as ``on_row(index, output)`` as soon as
        it is terminal (completion order; source order with ``ordered=True``) on the calling
        thread, and ``outputs`` is None; an exception raised by ``on_row`` aborts the run
        and propagates (the executor stays usable).

        ``progress=True`` shows the engine's progress on stderr: on a terminal, one line
        redrawn in place (roots done, rate, time left, each Call's Grains done, queued and in
        flight, the bottleneck Call marked ``*``, abbreviated to the terminal's width);
        otherwise a plain line every ``progress_log_interval_s`` seconds of the run (0:
        none), and a last one when it logged one, so that a job's log shows where it stands;
        in a Jupyter notebook a rows-done line; a callable gets ``(done, total)`` root rows at
        most every 200 ms and at the end (``total`` is None while lazy columns have not
        ended). ``trace`` and ``report`` write a Chrome-trace
        timeline and a JSON metrics report there; ``RunResult.report_page(path)`` draws the
        report as a page. ``live`` serves the page live while the run lasts (docs/REPORT.md):
        True (a free port of 127.0.0.1), a port, or ``"HOST:PORT"`` (a HOST beyond loopback
        needs the token printed with the URL); the URL is printed on stderr when the run
        starts, and nothing listens once it ended. None: the executor's ``live``. Raises
        ExecutionError on an unrecoverable failure once the RPCs in flight finished (the
        executor keeps its actors for the next run unless one could not be rebuilt); without
        ``on_row`` the error's ``partial`` is a RunResult of the rows delivered before it
        (None for the others, no metrics). ValueError on mismatched column lengths or bad
        options.

        Long runs (docs/JOURNAL.md), with the C++ semantics: ``journal`` (a path or a
        Journal) records every terminal root and resumes an interrupted run without redoing
        finished roots; restored roots come first, count in ``roots_restored`` and reach
        ``on_row`` like computed ones, or ``on_restored_row(index, output)`` instead when it
        is given (so that a caller can tell them apart; stream(): ``restored_rows``). The
        error budget (``max_failed_roots``, or ``max_failed_fraction`` of the delivered roots
        once ``min_roots_for_failed_fraction`` are delivered) stops admitting and dispatching
        work at the first check past it, whatever ``input_batch_size``, and raises
        ExecutionError naming the count and the first causes. ``dead_letters`` writes every
        root that is not present as one JSON line (docs/CONVERSION.md: key, row, outcome,
        failed, output, cause, call, entity, attempts, restored); ``dead_letter_fields(row)``
        adds a row's own str fields to its line (a standard field's name wins). Unusable
        paths or a foreign journal raise ValueError before anything runs. With lazy columns,
        each row is keyed as it is pulled (with the same key it has in a list) and a row
        recorded finished is restored when it is pulled, before the rows of the batch it was
        pulled for run; the journal cannot digest inputs it has not seen, so it is used
        whatever inputs it was written for (as ``Journal(allow_other_inputs=True)``).

        ``sink`` (rayorch_cpp.io: JsonlSink, ParquetSink, FileSink) writes every present root
        into parts committed with the journal, so that after a crash and a resume each is in
        exactly one committed part (docs/IO.md); the outputs are then not kept in memory:
        ``outputs`` is None (``on_row`` still gets every row).
        """
        tree = self._program.output_tree
        below_root = self._program.outputs_below_root
        if below_root and (journal is not None or dead_letters is not None or sink is not None):
            raise ValueError(
                "journal, dead_letters and sink take one value per output and root, but an "
                "output of this pipeline is a Port below the root; gather it with F.reduce to "
                "use them"
            )
        if sink is not None and not isinstance(sink, Sink):
            raise TypeError(
                f"sink must be a rayorch_cpp.io Sink (JsonlSink, ParquetSink, FileSink), not "
                f"{type(sink).__name__}"
            )
        readers = [c for c in source_columns if isinstance(c, Reader)]
        columns: list[Iterable[Any]]
        if readers:
            if len(source_columns) != 1:
                raise ValueError(
                    "a Reader is the whole source of a run: pass it alone, run(reader), and "
                    "map its columns to forward()'s parameters with columns={...}"
                )
            columns = list(readers[0].source_columns(self._program.source_names))
        else:
            columns = [c for c in source_columns if not isinstance(c, Reader)]
        if on_restored_row is not None and on_row is None:
            raise ValueError(
                "on_restored_row receives the rows restored from the run journal in place of "
                "on_row; pass on_row too (the computed rows go there)"
            )
        deliver = (
            row_sink(tree, row_callbacks(on_row, on_restored_row), ordered)
            if on_row is not None
            else None
        )
        options, journal_keys, lazy = run_options(
            columns,
            input_batch_size=input_batch_size,
            max_active_input_batches=max_active_input_batches,
            progress_line=progress is True,
            progress_log_interval_s=progress_log_interval_s,
            trace=trace,
            report=report,
            live=self._live if live is None else live,
            backpressure=backpressure,
            reservation=reservation,
            queue_order=queue_order,
            journal=journal,
            dead_letters=dead_letters,
            max_failed_roots=max_failed_roots,
            max_failed_fraction=max_failed_fraction,
            min_roots_for_failed_fraction=min_roots_for_failed_fraction,
            modules=self._program.module_snapshots,
            sink=sink,
        )
        set_dead_letter_fields(options, dead_letter_fields, dead_letters)
        if options.crash_record:
            keep_python_stacks_for_crashes()
        try:
            outputs, metrics = self._core.run(
                columns,
                options,
                journal_keys,
                deliver,
                progress_callback(progress),
                lazy,
                EngineFormat(sink, tree) if sink is not None else None,
            )
        except ExecutionError as error:
            if on_row is None and sink is None and error.partial_outputs is not None:
                partial = flatten_below_root(error.partial_outputs, below_root)
                error.partial = partial_result(shape(tree, partial))
                del error.partial_outputs
            raise
        shaped = (
            None
            if on_row is not None or sink is not None
            else shape(tree, flatten_below_root(outputs, below_root))
        )
        return run_result(metrics, shaped, self._program.call_pools, report or "")

    def stream(
        self,
        *source_columns: Iterable[Any] | Reader,
        input_batch_size: int | None = None,
        max_active_input_batches: int = 1,
        ordered: bool = False,
        **options: Any,
    ) -> RowStream:
        """Yields ``(index, output)`` for each root row as soon as it is terminal, with
        run()'s options (``on_row`` excepted).

        The run starts with the first row asked for and proceeds on a background thread
        while the caller consumes rows. Leaving the loop early stops the run at the next
        finished row; the executor keeps its actors. Lazy columns (see run()) are pulled on
        that background thread as batches are admitted. The returned RowStream tells the rows
        restored from a run journal (``restored_rows``) and holds the run's RunResult
        (``result``: metrics, ``roots_restored``) once the last row was yielded.
        """
        for name in ("on_row", "on_restored_row"):
            if name in options:
                raise TypeError(f"stream() yields the rows itself; {name} is run()'s")
        return RowStream(
            lambda deliver: self.run(
                *source_columns,
                input_batch_size=input_batch_size,
                max_active_input_batches=max_active_input_batches,
                on_row=lambda index, output: deliver(index, output, False),
                on_restored_row=lambda index, output: deliver(index, output, True),
                ordered=ordered,
                **options,
            )
        )

    def await_actors(self) -> None:
        """Blocks until every Module has a ready actor: the executor returns before (eager
        start), and runs do not need this. Raises ExecutionError naming the Module, and
        closes the executor, when one has no actor that could start."""
        self._core.await_actors()

    def close(self) -> None:
        """Stops every actor; idempotent. Later runs raise ExecutionError."""
        self._core.close()

    @property
    def closed(self) -> bool:
        """True once closed (explicitly, or by a run whose actors could not be rebuilt)."""
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


class Executor(_Base):
    """Runs a compiled program (or a Pipeline, compiled first).

    ``backend="local"`` (default) is the embedded local backend: one thread per actor, each
    owning one UDF instance built on its own thread. The GIL is held only inside UDF calls,
    so UDFs that release it run in parallel across replicas. A Module with
    ``isolation="process"`` (or every Module, with ``Executor(..., isolation="process")``)
    runs each actor in a worker process of its own instead: Python code then runs on as many
    cores as there are replicas, and a UDF that crashes its process costs that worker only
    (docs/ISOLATION.md). The pipeline must then be picklable (cloudpickle, as for Ray).

    ``backend="ray"`` runs every Module as a pool of persistent Ray actors (with its
    ``num_cpus``, ``num_gpus``, ``resources``, ``runtime_env`` and other Ray actor options)
    on the cluster at ``address`` (``ray.init(address=..., **ray_init_kwargs)``; an already
    initialised Ray is used as it is). Values stay in Ray's object store; the driver fetches
    only the run's outputs. UDF classes must be importable on the workers (or shipped with
    ``runtime_env``).

    Every pool is started up front and reused across runs. Eager start: the constructor
    returns while the actors' constructors run; a run sends calls to each actor as soon as it
    is ready and admits input once a Module that reads the sources has a ready actor. An
    actor whose constructor raises stays out of its pool (``RunResult.pools`` says which and
    why) and the pool goes on with the others; a pool whose every constructor raised makes
    the run raise ExecutionError naming the Module and the error, and closes the executor. On
    Ray, ``actor_startup_timeout_s`` (default: the environment variable
    RAYORCH_RAY_STARTUP_TIMEOUT_S, else 120 s) bounds the first actor of each pool: a pool
    with none ready by then fails with an ExecutionError naming the Module, the resources its
    actors ask for and what the cluster has; its other actors may stay pending (an
    autoscaling cluster) and join whenever Ray places them. Use as a context manager or
    close().

    Self-sizing pools: a Module with ``replicas="auto"`` (and optionally ``min_replicas``,
    ``max_replicas``) starts and retires its actors as the backlog its Calls have and will
    have (from the lineage) asks, within ``budget``: a dict of ``"CPU"``, ``"GPU"`` and
    named resources, counted in the Modules' ``num_cpus``, ``num_gpus`` and ``resources``
    per actor (default: this machine's CPUs and no GPUs on the local backend, the cluster's
    resources on Ray). Every decision is in ``RunResult.pools`` (``resizes``,
    ``actors_over_time``), the trace and the report. A Module whose ``min_replicas`` cannot
    fit is an ExecutionError naming it. On Ray, a self-sizing pool's actors take one call
    at a time, and without ``max_replicas`` it may start as many as the budget holds.

    ``live`` serves every run's live page (see ``run()``'s ``live``, which overrides it).
    """

    def __init__(
        self,
        pipeline: Any,
        *,
        backend: str = "local",
        address: str | None = None,
        ray_init_kwargs: dict[str, Any] | None = None,
        actor_startup_timeout_s: float | None = None,
        isolation: str | None = None,
        budget: Mapping[str, float] | None = None,
        live: LiveAddress = None,
        _random_resize_seed: int = 0,
    ) -> None:
        if backend not in ("local", "ray"):
            raise ValueError(f"backend must be 'local' or 'ray', got {backend!r}")
        source = ray_source(pipeline) if backend == "ray" else b""
        # Every Ray actor is a process of its own already.
        super().__init__(pipeline, isolation if backend == "local" else None)
        self.backend = backend
        self._live = live
        self.address = address
        self.ray_init_kwargs = dict(ray_init_kwargs or {})
        self._ray: Any = None
        if backend == "ray":
            self._ray, self._core = ray_core(
                self._program,
                source,
                address,
                self.ray_init_kwargs,
                actor_startup_timeout_s,
                budget,
                _random_resize_seed,
            )
        else:
            self._core = local_core(self._program, budget, _random_resize_seed)
        _LIVE.add(self)

    @classmethod
    def _on_backend(
        cls,
        pipeline: Any,
        backend: RayBackendProtocol,
        budget: Mapping[str, float] | None = None,
        random_resize_seed: int = 0,
    ) -> Executor:
        """An executor whose pools are driven through `backend` (tests drive the Ray pools
        without Ray)."""
        self = cls.__new__(cls)
        _Base.__init__(self, pipeline)
        self.backend, self.address, self.ray_init_kwargs = "ray", None, {}
        self._ray = backend
        self._core = core_on(self._program, backend, budget, random_resize_seed)
        _LIVE.add(self)
        return self

    def actor_nodes(self) -> list[list[str]]:
        """Ray backend: the node id of every actor, per pool (plan order). Waits until every
        actor has started (eager start lets the executor return before), for at most the
        startup timeout since the executor was made; an actor still pending then, or one
        that could not start, shows ``""``."""
        if self._ray is None:
            raise ValueError("actor_nodes() is for the Ray backend")
        self._ray.await_started()
        return [list(p) for p in self._ray.nodes]


class SyncExecutor(_Base):
    """Runs a program deterministically on the calling thread: one UDF instance per pool,
    FIFO queues, pools served in a fixed round-robin. Records every RPC, so tests can
    assert exact dispatch sequences. ``wire=True`` round-trips every protocol message
    through bytes."""

    def __init__(self, pipeline: Any, *, wire: bool = False, isolation: str | None = None) -> None:
        # Runs every UDF in this process; an isolated pool's loss rule still applies.
        super().__init__(pipeline, isolation)
        self._core = sync_core(self._program, wire)
        _LIVE.add(self)

    def rpcs(self) -> list[str]:
        """Every RPC so far, in dispatch order, e.g. ``"Ocr#1 [0/0 0/1] g0"``."""
        return [r["text"] for r in self._core.rpc_log()]

    def rpc_records(self) -> list[dict[str, Any]]:
        """Every RPC so far as dicts: call, input_batch, grains, generations, failed."""
        return list(self._core.rpc_log())


def run(
    pipeline: Any,
    *source_columns: Iterable[Any] | Reader,
    input_batch_size: int | None = None,
    max_active_input_batches: int = 1,
    address: str | None = None,
    ray_init_kwargs: dict[str, Any] | None = None,
    isolation: str | None = None,
    **options: Any,
) -> RunResult:
    """Runs once on a temporary local Executor, closed afterwards (``address`` and
    ``ray_init_kwargs`` are accepted for the reference's scripts and unused; ``isolation``
    as for Executor)."""
    with Executor(
        pipeline, address=address, ray_init_kwargs=ray_init_kwargs, isolation=isolation
    ) as executor:
        return executor.run(
            *source_columns,
            input_batch_size=input_batch_size,
            max_active_input_batches=max_active_input_batches,
            **options,
        )


__all__ = ["Executor", "SyncExecutor", "run"]
