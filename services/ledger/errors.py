"""Errors of the ledger beyond the rule book's: each carries ``field``, ``reason``, ``message``.

The gRPC layer maps ``InvalidArgument`` to INVALID_ARGUMENT, ``FailedPrecondition`` to
FAILED_PRECONDITION, ``NotFound`` to NOT_FOUND (all from ``domain.errors``), ``AlreadyExists``
(and ``RequestIdReused``) to ALREADY_EXISTS, ``PermissionDenied`` to PERMISSION_DENIED and
``Conflict`` to ABORTED (retry the command).
"""

from __future__ import annotations

from domain.errors import FailedPrecondition, InvalidArgument, NotFound, RuleViolation

__all__ = [
    "AlreadyExists",
    "Conflict",
    "FailedPrecondition",
    "InvalidArgument",
    "NotFound",
    "PermissionDenied",
    "RequestIdReused",
    "RuleViolation",
]


class AlreadyExists(RuleViolation):
    """The named thing exists already (ALREADY_EXISTS)."""


class RequestIdReused(AlreadyExists):
    """The request id was used before for a different command or different arguments."""

    def __init__(self, message: str) -> None:
        super().__init__("request_id", "REQUEST_ID_REUSED", message)


class Conflict(RuleViolation):
    """A concurrent writer changed the same state first; nothing was stored (ABORTED: retry)."""


class PermissionDenied(RuleViolation):
    """The caller may not do this: a player acting on another account's stake or account
    (PERMISSION_DENIED). Decided by the ledger from the command's actor."""
