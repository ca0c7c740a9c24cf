"""Delivering a run's rows to the caller: outputs rebuilt in forward()'s structure, rows
handed to ``on_row`` (in completion or source order) or yielded by a stream, and the
progress shown while a run goes."""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

RowCallback = Callable[[int, Any], None]
RowSink = Callable[[int, tuple[Any, ...]], None]


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


def row_sink(tree: Any, on_row: RowCallback, ordered: bool) -> RowSink:
    """What the engine calls with each terminal root's flat output values: ``on_row`` with
    the shaped output, in source order when ``ordered``."""
    deliver = _in_order(on_row) if ordered else on_row

    def sink(index: int, values: tuple[Any, ...]) -> None:
        deliver(index, shape(tree, values))

    return sink


def _in_order(on_row: RowCallback) -> RowCallback:
    """Holds rows that finished early until every row before them was delivered. Called on
    the run's calling thread only, so the held rows need no lock."""
    waiting: dict[int, Any] = {}
    state = {"next": 0}

    def deliver(index: int, output: Any) -> None:
        waiting[index] = output
        while state["next"] in waiting:
            i = state["next"]
            on_row(i, waiting.pop(i))
            state["next"] = i + 1

    return deliver


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


def stream(run: Callable[[RowCallback], object]) -> Iterator[tuple[int, Any]]:
    """Yields ``(index, output)`` for each row that ``run(on_row)`` delivers.

    The run proceeds on a background thread while the caller consumes rows. Leaving the loop
    early stops the run at the next finished row (``on_row`` raises inside it); an error of
    the run is raised to the consumer.
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
            run(on_row)
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
