"""What Ray's errors mean to the Ray backend: the CallReport of a call Ray failed, and the
UDF constructor's error inside a failed actor creation or an actor process it ended."""

from __future__ import annotations

from ._ray_contract import CallReport, CallStatus
from ._ray_session import import_ray


def call_error_report(error: BaseException, actor_id: str = "") -> CallReport:
    """What a Ray error means for a call on the actor whose id is `actor_id` (hex; "" when
    not known): its report, with one of Ray's statuses. An actor that died other than the
    call's own is the actor an input was exported from (DESIGN 5.12): the input is lost, not
    the call's actor (block_lost, naming no object: every input it carried is rebuilt)."""
    ray = import_ray()
    exc = ray.exceptions
    cause: BaseException = error
    if isinstance(error, exc.RayTaskError) and error.cause is not None:
        cause = error.cause
    text = f"{type(cause).__name__}: {str(cause).strip().splitlines()[0] if str(cause) else ''}"
    if isinstance(cause, exc.ObjectLostError):
        # The engine rebuilds the block from its lineage; the id says which input it was.
        lost = str(getattr(cause, "object_ref_hex", "") or "")
        return CallReport(CallStatus.block_lost, error=text, lost_object=lost)
    if isinstance(cause, (exc.RayActorError, exc.TaskCancelledError, exc.WorkerCrashedError)):
        dead = getattr(cause, "actor_id", None)
        if actor_id and isinstance(dead, str) and dead and dead != actor_id:
            return CallReport(CallStatus.block_lost, error=f"{text} (the actor an input was on)")
        return CallReport(CallStatus.actor_lost, error=text)
    return CallReport(CallStatus.ray_error, error=text)


def error_text(error: BaseException) -> str:
    """`error` as "Type: the first line of its message"."""
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"


def constructor_error(module: str, error: BaseException) -> str:
    """What a failed Ray actor creation says of the UDF constructor of Module<`module`>."""
    return f"the constructor of Module<{module}> failed on a Ray actor: {_raised(error)}"


def constructor_exit_error(module: str, error: BaseException) -> str:
    """What an actor of Module<`module`> whose process died while its UDF was being built,
    on a node that is up, says of the UDF constructor."""
    return (
        f"the constructor of Module<{module}> ended its Ray actor's process (the actor's node "
        f"is up, so a fresh actor would end the same way): {error_text(error)}"
    )


def _raised(error: BaseException) -> str:
    """The UDF constructor's exception inside a Ray actor creation error, as "Type: message"."""
    text = str(error)
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("rayorch_cpp.ExecutionError") or line.startswith("ExecutionError"):
            return line.split(":", 1)[1].strip()
    return text.strip().splitlines()[-1] if text.strip() else type(error).__name__
