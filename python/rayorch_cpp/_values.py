"""Plain values of the public API: outcomes, output issues, typed failures, recovery."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from . import _core

CompileError = _core.CompileError
CompileError.__module__ = "rayorch_cpp"
"""A pipeline could not be traced or compiled; the message names the Port, Call or Module."""

ExecutionError = _core.ExecutionError
ExecutionError.__module__ = "rayorch_cpp"
"""A run stopped on an unrecoverable failure (abort policy, exhausted retries, a UDF
contract error, a deadlock, or use of a closed executor). The executor is closed."""


class ItemOutcome(Enum):
    """The terminal outcome of one Item (a Port's value for one Entity)."""

    PRESENT = "present"
    DROPPED = "dropped"
    FAILED = "failed"
    SUPPRESSED = "suppressed"


@dataclass(frozen=True, slots=True)
class IssueOrigin:
    """Where the cause of an OutputIssue was decided.

    ``call`` is the Call as UDF name and index (``"Ocr#2"``); ``entity`` the deciding
    Grain's Entity key, its ordinals from the source row (``"7/3"``: child 3 of row 7);
    ``attempts`` the physical attempts of that Grain, the deciding one included.
    """

    call: str
    entity: str
    attempts: int


@dataclass(frozen=True, slots=True, eq=False)
class OutputIssue:
    """A root output that is not present: its outcome and the cause that travelled downstream.

    A cause decided by a UDF's exception reads ``"ErrorType: message"`` on its first line,
    then that exception's traceback. Equality (and the hash) compares ``outcome`` and the
    cause's first line only: those are the same for every schedule and machine, while
    ``origin.attempts`` may depend on how retries split batches and a traceback names the
    files where the UDF ran.
    """

    outcome: ItemOutcome
    cause: str | None = None
    origin: IssueOrigin | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.outcome, ItemOutcome) or self.outcome is ItemOutcome.PRESENT:
            raise ValueError("OutputIssue requires a non-PRESENT ItemOutcome")
        if self.cause is not None and not isinstance(self.cause, str):
            raise TypeError("OutputIssue cause must be text or None")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OutputIssue):
            return NotImplemented
        return _issue_key(self) == _issue_key(other)

    def __hash__(self) -> int:
        return hash(_issue_key(self))


def _issue_key(issue: OutputIssue) -> tuple[ItemOutcome, str | None]:
    """What equality compares: the outcome and the cause's first line (a traceback follows it,
    naming paths that differ between machines)."""
    return issue.outcome, None if issue.cause is None else issue.cause.partition("\n")[0]


@dataclass(frozen=True, slots=True)
class RecordFailure:
    """Returned by a UDF in place of one row's value: fails only that Grain's outputs.

    ``cause`` (converted with ``str``) travels downstream as the failure's cause.
    """

    cause: Any


@dataclass(frozen=True, slots=True)
class GroupFailure:
    """Like RecordFailure, and stops this Grain's undispatched siblings (same Call, same
    parent): they are SUPPRESSED and never enter the UDF. Every reduce over that parent
    downstream of the Call is SUPPRESSED with this cause."""

    cause: Any


_RECOVERY_MODES = ("abort", "retry_batch", "retry_tail", "isolate_tail")


@dataclass(frozen=True, slots=True)
class RecoveryPolicy:
    """What a Call does when its UDF raises (a physical attempt failure).

    Data failures (RecordFailure, GroupFailure) are outcomes and never reach the policy.
    ``max_retries`` excludes the first attempt; ``infra_retries`` bounds replays after a
    lost actor or a timeout.
    """

    mode: str = "abort"
    max_retries: int = 0
    infra_retries: int = 1

    def __post_init__(self) -> None:
        if self.mode not in _RECOVERY_MODES:
            raise ValueError(f"unknown recovery mode {self.mode!r}; one of {_RECOVERY_MODES}")
        for name in ("max_retries", "infra_retries"):
            if type(getattr(self, name)) is not int:
                raise TypeError(f"RecoveryPolicy.{name} must be an integer")
        if self.infra_retries < 0:
            raise ValueError("infra_retries must be non-negative")
        if self.mode == "abort" and self.max_retries != 0:
            raise ValueError("abort recovery does not accept UDF retries")
        if self.mode in ("retry_batch", "retry_tail") and self.max_retries <= 0:
            raise ValueError("retry recovery requires positive max_retries")
        if self.mode == "isolate_tail" and self.max_retries != 1:
            raise ValueError("isolate_tail performs exactly one whole-batch tail retry")

    @classmethod
    def abort(cls, *, infra_retries: int = 1) -> RecoveryPolicy:
        """The default: the first UDF exception aborts the run."""
        return cls("abort", 0, infra_retries)

    @classmethod
    def retry_batch(cls, max_retries: int = 1, *, infra_retries: int = 1) -> RecoveryPolicy:
        """Requeue the exact batch ahead of ready work, at most ``max_retries`` times."""
        return cls("retry_batch", max_retries, infra_retries)

    @classmethod
    def retry_tail(cls, max_retries: int = 1, *, infra_retries: int = 1) -> RecoveryPolicy:
        """Requeue the exact batch behind ready work, at most ``max_retries`` times."""
        return cls("retry_tail", max_retries, infra_retries)

    @classmethod
    def isolate_tail(cls, *, infra_retries: int = 1) -> RecoveryPolicy:
        """One tail retry, then binary splitting until the poisoned Grain is isolated and
        FAILED with the cause ``"ErrorType: message"`` (then the UDF's traceback on the next
        lines); the rest of the batch succeeds."""
        return cls("isolate_tail", 1, infra_retries)


def _make_issue(
    outcome: str, cause: str, call: str | None, entity: str | None, attempts: int | None
) -> OutputIssue:
    """Called by the engine for every root output that is not present."""
    origin = None if call is None else IssueOrigin(call, entity or "", int(attempts or 0))
    return OutputIssue(ItemOutcome(outcome), cause if cause else None, origin)


class ActorLost(Exception):
    """Raised by a UDF to model a lost actor (an infrastructure failure, not a data outcome):
    the actor is replaced by a fresh UDF instance and its Grains replay at a higher
    generation, within the Module's ``infra_retries``; beyond them the run aborts."""


class UdfTraceback(Exception):
    """The ``__cause__`` of an ExecutionError that a UDF's exception decided: that
    exception's formatted traceback (the UDF's frames: file, line, function), as
    ``traceback.format_exception`` wrote it where the UDF ran. A text, not the exception
    object, so the cause reads the same on every backend, Ray's worker processes included.
    """

    def __init__(self, traceback: str) -> None:
        super().__init__(traceback)
        self.traceback = traceback

    def __str__(self) -> str:
        return self.traceback


UdfTraceback.__module__ = "rayorch_cpp"

_core.configure(RecordFailure, GroupFailure, _make_issue, ActorLost, UdfTraceback, OutputIssue)

__all__ = [
    "ActorLost",
    "CompileError",
    "ExecutionError",
    "GroupFailure",
    "IssueOrigin",
    "ItemOutcome",
    "OutputIssue",
    "RecordFailure",
    "RecoveryPolicy",
    "UdfTraceback",
]
