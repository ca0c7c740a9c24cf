"""What a run is asked to do: run()'s options checked and written into the engine's
RunOptions, including the long-run ones (the Journal, dead letters, the error budget), the
journal key of every source row, and whether the source columns are pulled lazily."""

from __future__ import annotations

import hashlib
import os
import pickle
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from . import _core
from ._journal_modules import ModuleSnapshot, check_journal_modules, module_digests
from .io._sinks import Sink

SourceColumns = Sequence[Iterable[Any]]
# The journal key of a lazily pulled row, from its index and its source values.
LazyRowKey = Callable[[int, tuple[Any, ...]], str]
# One journal key per source row, a LazyRowKey for lazy sources, or None (no long-run option).
JournalKeys = list[str] | LazyRowKey | None


def is_lazy(column: object) -> bool:
    """Whether a source column is pulled as the run goes rather than read whole first: an
    iterable without a length (a generator, an iterator, a file, ``map``). Lists, tuples,
    numpy arrays, ranges and anything else with ``__len__`` are read whole, as before."""
    return hasattr(column, "__iter__") and not hasattr(column, "__len__")


@dataclass(frozen=True, slots=True)
class Journal:
    """A run journal for resuming an interrupted run (docs/JOURNAL.md), as in C++
    ``RunOptions::journal``: ``run(..., journal=Journal("out/run.journal"))`` or just the path.

    Every terminal root is recorded with its key, outcome, cause and output (pickled, so
    outputs must be picklable). A rerun with the same journal admits only the rows not
    recorded finished (present or dropped; failed and suppressed ones run again unless
    ``retry_failed=False``) and returns the recorded ones as if computed, counted in
    ``RunResult.roots_restored``. ``key(row)`` names a source row by its index, or
    ``value_key(values)`` by its source values (a tuple, one per source column: a document
    id, ``value_key=lambda values: values[0]["id"]``, which also keys the rows of a
    generator as they are pulled); default: a 64-bit digest of its pickled source values,
    16 hex digits. A journal of another pipeline or other
    inputs raises ValueError unless ``force`` (``allow_other_inputs`` accepts other inputs of
    the same pipeline); so does one whose outputs were computed by a Module whose code (or
    ``version`` option), constructor arguments or other non-tuning options have changed
    since, naming the Modules (their digests are kept in ``<path>.modules.json``). Records
    are written by a writer thread at most ``write_interval_s`` after their root was
    delivered and flushed to disk every ``sync_every_records`` records, ``sync_interval_s``
    after the last flush, and when the run ends.
    """

    path: str
    key: Callable[[int], str] | None = None
    value_key: Callable[[tuple[Any, ...]], str] | None = None
    retry_failed: bool = True
    force: bool = False
    allow_other_inputs: bool = False
    sync_every_records: int = 4096
    sync_interval_s: float = 0.2
    write_interval_s: float = 0.005


def _values_digest(row: int, values: tuple[Any, ...]) -> str:
    """The default journal key of a row: a digest of its pickled source values."""
    try:
        data = pickle.dumps(values, protocol=4)
    except Exception as error:
        raise TypeError(
            f"the run journal keys rows by a digest of their pickled source values, but "
            f"row {row} cannot be pickled ({error}); pass Journal(path, key=...)"
        ) from error
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def _checked_value_key(value_key: Callable[[tuple[Any, ...]], str]) -> LazyRowKey:
    def keyed(row: int, values: tuple[Any, ...]) -> str:
        k = value_key(values)
        if not isinstance(k, str):
            raise TypeError(
                f"journal value_key(values) must return a str; row {row} gave {type(k).__name__}"
            )
        return k

    return keyed


def _lazy_row_key(
    key: Callable[[int], str] | None,
    fallback: bool,
    value_key: Callable[[tuple[Any, ...]], str] | None = None,
) -> LazyRowKey:
    """The journal key of each row of a lazy source, computed as the row is pulled: as
    _row_keys gives for the same rows in a list (the engine checks that it is a str). With
    ``fallback``, a row that cannot be pickled is keyed by its index."""
    if value_key is not None:
        return _checked_value_key(value_key)
    if key is not None:
        given = key
        return lambda row, values: given(row)
    if not fallback:
        return _values_digest

    def digest_or_index(row: int, values: tuple[Any, ...]) -> str:
        try:
            return _values_digest(row, values)
        except TypeError:
            return str(row)

    return digest_or_index


def _row_index(row: int, values: tuple[Any, ...]) -> str:
    """The key of a row when only the error budget is used: its index."""
    return str(row)


def _row_keys(
    columns: Sequence[Sequence[Any]],
    key: Callable[[int], str] | None,
    value_key: Callable[[tuple[Any, ...]], str] | None = None,
) -> list[str]:
    """One journal key per source row: key(row) or value_key(values), else a digest of the
    pickled row values."""
    rows = len(columns[0]) if columns else 0
    if value_key is not None:
        keyed = _checked_value_key(value_key)
        return [keyed(row, tuple(c[row] for c in columns)) for row in range(rows)]
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
    return [_values_digest(row, tuple(c[row] for c in columns)) for row in range(rows)]


def _long_run(
    options: _core.RunOptions,
    columns: SourceColumns,
    lazy: bool,
    journal: str | os.PathLike[str] | Journal | None,
    dead_letters: str | os.PathLike[str] | None,
    max_failed_roots: int | None,
    max_failed_fraction: float,
    min_roots_for_failed_fraction: int,
    modules: Sequence[ModuleSnapshot],
    sink: Sink | None = None,
) -> JournalKeys:
    """Sets the journal, dead-letter and error-budget options of a run; returns one journal
    key per source row (for lazy sources the function that keys each row as it is pulled),
    or None when none of them is used."""
    if journal is not None and not isinstance(journal, Journal):
        journal = Journal(os.fspath(journal))
    if max_failed_roots is not None and (type(max_failed_roots) is not int or max_failed_roots < 0):
        raise ValueError("max_failed_roots must be a non-negative integer or None")
    if not 0.0 <= max_failed_fraction:
        raise ValueError("max_failed_fraction must be >= 0 (1 or more: no limit)")
    if type(min_roots_for_failed_fraction) is not int or min_roots_for_failed_fraction < 0:
        raise ValueError("min_roots_for_failed_fraction must be a non-negative integer")
    if sink is not None:
        directory = os.fspath(sink.directory)
        options.sink.directory = directory
        options.sink.rows_per_part = sink.rows_per_part
        options.sink.bytes_per_part = sink.bytes_per_part
        options.sink.max_part_age_s = sink.max_part_age_s
    if journal is None and dead_letters is None and max_failed_roots is None and sink is None:
        if max_failed_fraction >= 1.0:
            return None
    if journal is not None and journal.sync_every_records < 1:
        raise ValueError("Journal.sync_every_records must be >= 1")
    if journal is not None and journal.key is not None and journal.value_key is not None:
        raise ValueError(
            "Journal takes key (a row's index -> its key) or value_key (a row's source values "
            "-> its key), not both"
        )
    keys: JournalKeys
    sized = cast(Sequence[Sequence[Any]], columns)  # unless lazy
    rows = 0 if lazy or not columns else len(sized[0])
    if lazy:
        # Each row is keyed as it is pulled, as it would be in a list.
        if journal is not None:
            keys = _lazy_row_key(journal.key, fallback=False, value_key=journal.value_key)
        elif dead_letters is not None:
            keys = _lazy_row_key(None, fallback=True)
        else:
            keys = _row_index
    elif journal is not None:
        keys = _row_keys(sized, journal.key, journal.value_key)
    elif dead_letters is not None:
        try:
            keys = _row_keys(sized, None)
        except TypeError:
            keys = [str(row) for row in range(rows)]
    else:
        keys = [str(row) for row in range(rows)]
    if journal is not None and journal.path:
        check_journal_modules(journal.path, module_digests(modules), journal.force)
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


def set_dead_letter_fields(
    options: _core.RunOptions,
    fields: Callable[[int], Mapping[str, str]] | None,
    dead_letters: str | os.PathLike[str] | None,
) -> None:
    """Adds ``fields(row)`` (a mapping of str to str) to each row's dead letter. Raises
    ValueError without a dead-letter file; a mapping that is not of strings stops the run
    with a TypeError naming the row."""
    if fields is None:
        return
    if dead_letters is None:
        raise ValueError("dead_letter_fields adds fields to dead letters: pass dead_letters too")
    if not callable(fields):
        raise TypeError(
            f"dead_letter_fields takes a function of a row's index, not {type(fields).__name__}"
        )

    def checked(row: int) -> list[tuple[str, str]]:
        given = fields(row)
        if not isinstance(given, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in given.items()
        ):
            raise TypeError(
                f"dead_letter_fields({row}) must return a mapping of str to str, not {given!r}"
            )
        return list(given.items())

    options.dead_letter_fields = checked


# What run(live=...) takes: off (None, False), on at any free port of 127.0.0.1 (True), a
# port, or "HOST:PORT" / "HOST".
LiveAddress = bool | int | str | None


def set_live(options: _core.RunOptions, live: LiveAddress) -> None:
    """Turns on the live page (docs/REPORT.md) at the address ``live`` names: True (a free
    port of 127.0.0.1), a port, or ``"HOST:PORT"``; a HOST other than a loopback address
    needs the token printed with the URL. Raises ValueError/TypeError on anything else."""
    if live is None or live is False:
        return
    host, port = "127.0.0.1", 0
    if live is True:
        pass
    elif isinstance(live, int):
        port = live
    elif isinstance(live, str):
        text = live.strip()
        head, sep, tail = text.rpartition(":")
        if text.isdigit():
            port = int(text)
        elif sep and tail.isdigit() and head:
            host, port = head, int(tail)
        elif text and ":" not in text:
            host = text
        else:
            raise ValueError(
                "live takes True, a port, 'HOST:PORT' or 'HOST' (e.g. '0.0.0.0:8765'), "
                f"not {live!r}"
            )
    else:
        raise TypeError(f"live takes True, a port (int) or 'HOST:PORT', not {type(live).__name__}")
    if not 0 <= port <= 65535:
        raise ValueError(f"live: the port must be 0 (any free one) to 65535, not {port}")
    options.live.enabled = True
    options.live.host = host
    options.live.port = port


def run_options(
    source_columns: SourceColumns,
    *,
    input_batch_size: int | None,
    max_active_input_batches: int,
    progress_line: bool,
    progress_log_interval_s: float = 30.0,
    trace: str | None,
    report: str | None,
    backpressure: int,
    reservation: str | None,
    queue_order: str,
    journal: str | os.PathLike[str] | Journal | None,
    dead_letters: str | os.PathLike[str] | None,
    max_failed_roots: int | None,
    max_failed_fraction: float,
    min_roots_for_failed_fraction: int,
    modules: Sequence[ModuleSnapshot] = (),
    sink: Sink | None = None,
    live: LiveAddress = None,
) -> tuple[_core.RunOptions, JournalKeys, bool]:
    """The engine's options for one run of ``source_columns`` (see Executor.run), one
    journal key per source row (None when no long-run option is used; a function of the row
    and its values when the columns are lazy), and whether they are: when any column is
    (is_lazy), every column is pulled row by row as input batches are admitted, and
    ``input_batch_size=None`` means batches of 1024 rows (the engine's default for lazy
    sources) instead of one batch. ``modules`` are the program's, which a journal's records
    must have been computed by. ``progress_line`` turns on the engine's own progress: a line
    on a terminal, else a plain line every ``progress_log_interval_s`` (0: none).
    Raises ValueError on a bad option before anything runs."""
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
    options = _core.RunOptions()
    options.input_batch_size = input_batch_size or 0
    options.max_active_input_batches = max_active_input_batches
    options.backpressure = backpressure
    if not (isinstance(progress_log_interval_s, (int, float)) and progress_log_interval_s >= 0):
        raise ValueError(
            "progress_log_interval_s must be a number of seconds >= 0 (0: no progress lines in "
            f"a log), not {progress_log_interval_s!r}"
        )
    options.progress = progress_line
    options.progress_log_interval_s = float(progress_log_interval_s)
    options.trace_path = trace or ""
    options.report_path = report or ""
    set_live(options, live)
    options.reservation = reservation
    options.queue_order = queue_order
    lazy = any(is_lazy(c) for c in source_columns)
    journal_keys = _long_run(
        options,
        source_columns,
        lazy,
        journal,
        dead_letters,
        max_failed_roots,
        max_failed_fraction,
        min_roots_for_failed_fraction,
        modules,
        sink,
    )
    return options, journal_keys, lazy


__all__ = ["Journal"]
