"""What Ray's errors mean to the Ray backend (rayorch_cpp._ray_errors): the report of a call
Ray failed, and whose loss it was, the call's own actor's or an input's."""

from __future__ import annotations

import pytest

from rayorch_cpp._ray_contract import CallStatus
from rayorch_cpp._ray_errors import call_error_report

ray = pytest.importorskip("ray")

READER = "a" * 32
HOLDER = "b" * 32


def test_the_calls_own_actor_dying_is_its_actor_lost() -> None:
    report = call_error_report(ray.exceptions.ActorDiedError(), READER)
    assert report.status == CallStatus.actor_lost
    died = ray.exceptions.RayActorError(actor_id=READER, error_msg="the actor died")
    assert call_error_report(died, READER).status == CallStatus.actor_lost
    # Whose actor it was unknown: the call's own.
    assert call_error_report(died).status == CallStatus.actor_lost


def test_the_actor_an_input_was_exported_from_dying_loses_the_input_not_the_actor() -> None:
    # A co-located pool's reader was sent a block its holder was to export; the holder died
    # first: Ray fails the reader's call with the holder's death (DESIGN 5.12).
    died = ray.exceptions.RayActorError(actor_id=HOLDER, error_msg="the actor died")
    report = call_error_report(died, READER)
    assert report.status == CallStatus.block_lost
    assert report.lost_object == ""  # every input it carried is rebuilt
    assert "the actor an input was on" in report.error


def test_a_lost_object_names_itself() -> None:
    lost = ray.exceptions.ObjectLostError("c" * 56, None, "a call site")
    report = call_error_report(lost, READER)
    assert report.status == CallStatus.block_lost
    assert report.lost_object == "c" * 56
