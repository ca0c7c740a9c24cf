"""Tracing: the symbolic Ports of a pipeline and the trace that records its Calls.

Tracing records straight into the C++ graph builder (the one the typed C++ front end
uses); the C++ compiler verifies and lowers the program, so every CompileError carries the
engine's own message. The trace under way is a context variable: the operators and Modules
called inside forward() find it there, and only compile() sets it (through recording()).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn, Protocol

from . import _core
from ._journal_modules import ModuleSnapshot
from ._values import CompileError


class RecordedModule(Protocol):
    """What a trace and a compiled program keep of a Module: its execution options and the
    name of its Calls."""

    options: dict[str, Any]

    @property
    def name(self) -> str: ...


class Port:
    """A symbolic logical data edge of the pipeline being traced. It carries no data.

    A Port has no truth value: data-dependent branching is ``F.filter`` or logic inside a
    UDF, so ``if port:`` raises TypeError; unpacking one raises TypeError naming ``num_outputs``.
    """

    __slots__ = ("_trace", "_id")

    def __init__(self, trace: Trace, port_id: int) -> None:
        self._trace = trace
        self._id = port_id

    @property
    def id(self) -> int:
        """The Port's id in its program (the N of ``pN`` in explain_text())."""
        return self._id

    @property
    def trace(self) -> Trace:
        """The trace that recorded this Port (package-internal: tracing checks ownership)."""
        return self._trace

    def __bool__(self) -> bool:
        raise TypeError(
            "a symbolic Port has no truth value: use F.filter for data-dependent "
            "selection, or put per-item conditions inside a UDF"
        )

    def __iter__(self) -> NoReturn:
        raise TypeError(
            f"Port p{self._id} cannot be unpacked: its Module has one output. Declare several "
            "with Module(udf, num_outputs=2) (or .returns(2)) to get a tuple of Ports"
        )

    def __repr__(self) -> str:
        return f"Port(p{self._id})"


_ACTIVE: contextvars.ContextVar[Trace | None] = contextvars.ContextVar(
    "rayorch_cpp_trace", default=None
)


class Trace:
    """One running trace: the C++ recorder plus the Python-side bookkeeping."""

    def __init__(self, default_options: dict[str, Any] | None = None) -> None:
        self.core = _core.Trace()
        self.finished = False
        # Options every Module gets unless it sets them itself (e.g. Executor(isolation=...)).
        self.default_options: dict[str, Any] = dict(default_options or {})
        self.modules: list[RecordedModule] = []  # distinct Modules, in first-use order
        self.snapshots: list[ModuleSnapshot] = []  # per Module: as its first Call recorded it
        self.call_modules: list[int] = []  # per Call (in Call order): its Module's index

    def port(self, value: Any, what: str) -> int:
        """The id of ``value`` after checking it is a Port of this trace."""
        if not isinstance(value, Port):
            raise CompileError(f"{what} must be a Port, got {type(value).__name__}")
        if value.trace is not self:
            owner = value.trace.core if not value.trace.finished else None
            _core.foreign_port(owner, value.id, what)
        return value.id

    def ports(self, ids: Sequence[int]) -> tuple[Port, ...]:
        return tuple(Port(self, i) for i in ids)


@contextmanager
def recording(trace: Trace) -> Iterator[Trace]:
    """Makes ``trace`` the trace under way for the block; afterwards it is finished (its
    Ports then belong to no live recorder)."""
    token = _ACTIVE.set(trace)
    trace.core.enter()
    try:
        yield trace
    finally:
        trace.core.exit()
        _ACTIVE.reset(token)
        trace.finished = True


def active_trace(what: str) -> Trace:
    """The trace under way, for the operator or Module named ``what`` (package-internal)."""
    trace = _ACTIVE.get()
    if trace is None:
        raise CompileError(
            f"{what} was called outside a trace: use it only inside forward() while "
            "compile() traces the pipeline"
        )
    return trace


def contains_port(value: Any) -> bool:
    """Whether ``value`` is a Port or a container holding one at any depth."""
    if isinstance(value, Port):
        return True
    if isinstance(value, dict):
        return any(contains_port(k) or contains_port(v) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(contains_port(v) for v in value)
    return False


__all__ = ["Port", "RecordedModule", "Trace", "active_trace", "contains_port", "recording"]
