"""A Call's recovery policy, where a reference user imports it (``rayorch.recovery``)."""

from ._values import RecoveryPolicy

__all__ = ["RecoveryPolicy"]
