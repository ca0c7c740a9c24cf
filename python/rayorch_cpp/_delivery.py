"""Delivering a run's rows to the caller: outputs rebuilt in forward()'s structure, rows
handed to ``on_row`` (in completion or source order) or yielded by a stream, and the
progress shown while a run goes."""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any

RowCallback = Callable[[int, Any], None]
# What the engine calls with each terminal root: its row, its flat output values, and whether
# it was restored from the run journal rather than computed.
RowSink = Callable[[int, tuple[Any, ...], bool], None]
# A row as delivered: its row, its output, whether it was restored from the run journal.
RowDelivery = Callable[[int, Any, bool], None]


def shape(tree: Any, flat: Sequence[Any]) -> Any:
    """Rebuilds forward()'s output structure from the flat output values (``tree`` is
    CompiledProgram.output_tree: a leaf index or a tuple of trees)."""
    if isinstance(tree, int):
        return flat[tree]
    return tuple(shape(t, flat) for t in tree)


def flatten_below_root(columns: list[Any], below_root: Sequence[int]) -> list[Any]:
    """The run's output columns with each output below the root (its rows: the list of each
    root's values below it, None for a root not delivered) as one list of those values in
    source and ordinal order, as the reference returns it."""
    if not below_root:
        return columns
    out = list(columns)
    for k in below_root:
        out[k] = [value for values in columns[k] if values is not None for value in values]
    return out


def row_callbacks(on_row: RowCallback, on_restored_row: RowCallback | None) -> RowDelivery:
    """Each row to ``on_row``, or to ``on_restored_row`` (when given) if it was restored
    from the run journal."""
    if on_restored_row is None:
        return lambda index, output, restored: on_row(index, output)
    restored_to = on_restored_row

    def deliver(index: int, output: Any, restored: bool) -> None:
        (restored_to if restored else on_row)(index, output)

    return deliver


def row_sink(tree: Any, deliver: RowDelivery, ordered: bool) -> RowSink:
    """What the engine calls with each terminal root's flat output values: ``deliver`` with
    the shaped output, in source order when ``ordered``."""
    to = _in_order(deliver) if ordered else deliver

    def sink(index: int, values: tuple[Any, ...], restored: bool) -> None:
        to(index, shape(tree, values), restored)

    return sink


def _in_order(deliver: RowDelivery) -> RowDelivery:
    """Holds rows that finished early until every row before them was delivered. Called on
    the run's calling thread only, so the held rows need no lock."""
    waiting: dict[int, tuple[Any, bool]] = {}
    state = {"next": 0}

    def held(index: int, output: Any, restored: bool) -> None:
        waiting[index] = (output, restored)
        while state["next"] in waiting:
            i = state["next"]
            deliver(i, *waiting.pop(i))
            state["next"] = i + 1

    return held


ProgressCallback = Callable[[int, int | None], None]


def progress_callback(progress: bool | ProgressCallback) -> ProgressCallback | None:
    """The ``(done, total)`` callback of run()'s ``progress`` (``total`` None while lazy
    source columns have not ended): the caller's own, a rows-done line in a Jupyter notebook
    for ``True`` (where the engine's terminal line would not show), else None."""
    if callable(progress):
        return progress
    if progress is True and _in_notebook():
        return _notebook_progress()
    return None


def _in_notebook() -> bool:
    """True inside a Jupyter kernel (where stderr is not a terminal)."""
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    ipython = getattr(shell, "get_ipython", lambda: None)()
    return ipython is not None and "IPKernelApp" in getattr(ipython, "config", {})


def _notebook_progress() -> ProgressCallback:
    """Rewrites one line of the cell's output: ``rows 120/368`` (``rows 120/?`` while lazy
    source columns have not ended)."""

    def show(done: int, total: int | None) -> None:
        end = "\n" if done == total else ""
        shown = "?" if total is None else total
        sys.stdout.write(f"\rrayorch: rows {done}/{shown}{end}")
        sys.stdout.flush()

    return show


class _StreamClosed(Exception):
    """Raised inside the run when a stream's consumer stopped early."""


class RowStream(Iterator[tuple[int, Any]]):
    """The rows of a streamed run, as ``(index, output)`` in the order they are delivered
    (Executor.stream()). The run starts with the first row asked for and proceeds on a
    background thread while the caller consumes rows; leaving the loop early (dropping the
    stream, or ``close()``) stops the run at its next finished row and waits for it, and an
    error of the run is raised to the consumer.

    ``restored_rows`` holds the indices of the rows yielded so far that were restored from
    the run journal rather than computed (a row is in it when it is yielded); ``result`` is
    the run's RunResult (its metrics and ``roots_restored``; no outputs) once the last row was
    yielded, and None before that and after an error."""

    def __init__(self, run: Callable[[RowDelivery], Any]) -> None:
        self._state = _StreamState()
        self._rows = _streamed_rows(run, self._state)

    @property
    def restored_rows(self) -> set[int]:
        """The indices of the rows yielded so far that were restored from the run journal."""
        return self._state.restored_rows

    @property
    def result(self) -> Any:
        """The run's RunResult once the last row was yielded; None before, and after an
        error."""
        return self._state.result

    def __iter__(self) -> RowStream:
        return self

    def __next__(self) -> tuple[int, Any]:
        return next(self._rows)

    def close(self) -> None:
        """Stops the run at its next finished row and waits for it to end; idempotent."""
        self._rows.close()

    def __del__(self) -> None:
        self._rows.close()


class _StreamState:
    """What a stream learns as it goes; written by the consuming thread only."""

    def __init__(self) -> None:
        self.restored_rows: set[int] = set()
        self.result: Any = None


def _streamed_rows(
    run: Callable[[RowDelivery], Any], state: _StreamState
) -> Generator[tuple[int, Any], None, None]:
    """Yields ``(index, output)`` for each row that ``run(on_row)`` delivers (see RowStream).
    The run's thread holds no reference to the RowStream, so dropping it closes this
    generator, which stops the run."""
    rows: queue.Queue[Any] = queue.Queue()
    stop = threading.Event()
    done = object()

    def on_row(index: int, output: Any, restored: bool) -> None:
        if stop.is_set():
            raise _StreamClosed("the stream's consumer stopped reading")
        rows.put((index, output, restored))

    def work() -> None:
        try:
            result = run(on_row)
        except BaseException as error:  # delivered to the consumer
            rows.put((done, error, False))
        else:
            rows.put((done, result, False))

    worker = threading.Thread(target=work, name="rayorch-stream", daemon=True)
    worker.start()
    try:
        while True:
            index, value, restored = rows.get()
            if index is done:
                if isinstance(value, BaseException):
                    if not isinstance(value, _StreamClosed):
                        raise value
                else:
                    state.result = value
                return
            if restored:
                state.restored_rows.add(index)
            yield index, value
    finally:
        stop.set()
        worker.join()
