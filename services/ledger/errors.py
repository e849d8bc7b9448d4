"""Errors of the ledger beyond the rule book's: each carries ``field``, ``reason``, ``message``.

The gRPC layer maps ``InvalidArgument`` to INVALID_ARGUMENT, ``FailedPrecondition`` to
FAILED_PRECONDITION, ``NotFound`` to NOT_FOUND (all from ``domain.errors``), ``AlreadyExists``
(and ``RequestIdReused``) to ALREADY_EXISTS, ``PermissionDenied`` to PERMISSION_DENIED,
``Conflict`` to ABORTED (retry the command) and ``NotTheWriter`` to UNAVAILABLE (this ledger is a
standby: send the command to the active writer).
"""

from __future__ import annotations

from domain.errors import FailedPrecondition, InvalidArgument, NotFound, RuleViolation

__all__ = [
    "AlreadyExists",
    "Conflict",
    "FailedPrecondition",
    "InvalidArgument",
    "NotFound",
    "NotTheWriter",
    "PermissionDenied",
    "RequestIdReused",
    "RuleViolation",
    "StoreFull",
    "StoreUnavailable",
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


class NotTheWriter(RuleViolation):
    """This ledger is not the store's active writer (another one holds the writer lease,
    ``services/ledger/lease.py``): the command was neither decided nor stored. Send it, with the
    same request id, to the active writer (``holder``), or here again after ``retry_after``
    seconds (this one takes over when the active writer stops or dies)."""

    def __init__(self, holder: str, retry_after: float = 0.25) -> None:
        who = holder or "another server"
        super().__init__("", "NOT_THE_WRITER",
                         f"this server is a standby: {who} writes the store now; send the "
                         "command there, or retry here with the same request id")
        self.holder = holder
        self.retry_after = retry_after

    def __reduce__(self) -> tuple[object, tuple[str, float]]:  # type: ignore[override]
        return (NotTheWriter, (self.holder, self.retry_after))


class StoreUnavailable(RuleViolation):
    """The store could not be reached, or did not answer within the call's deadline (or the
    writer's bound, ``STORE_TIMEOUT``): the command may or may not have been stored. UNAVAILABLE
    with a ``RetryInfo``: retry it with the same request id (a retry gives its first answer if
    it was stored, else runs it once)."""

    retry_after = 0.5  # seconds (kept by a copy made without __init__: the socket's)

    def __init__(self, message: str = "", retry_after: float = 0.5) -> None:
        super().__init__("", "STORE_UNAVAILABLE",
                         message or "the store is unavailable; retry with the same request id")
        self.retry_after = retry_after

    def __reduce__(self) -> tuple[object, tuple[str, float]]:  # type: ignore[override]
        return (StoreUnavailable, (self.message, self.retry_after))


class StoreFull(StoreUnavailable):
    """The store's disk is full (SQLite ``SQLITE_FULL``, PostgreSQL SQLSTATE 53100 disk_full):
    the save failed, so the command may not have been stored. UNAVAILABLE, reason
    ``STORE_FULL``, with a ``RetryInfo``: retry with the same request id once space is freed (a
    retry gives its first answer if it was stored, else runs it once). The writer's health
    (``sabot.writer``) is NOT_SERVING until a save succeeds again."""

    retry_after = 5.0  # seconds: space is not freed in an instant

    def __init__(self, message: str = "", retry_after: float = 5.0) -> None:
        RuleViolation.__init__(self, "", "STORE_FULL", message or "the store is full; free "
                               "space, then retry with the same request id")
        self.retry_after = retry_after

    def __reduce__(self) -> tuple[object, tuple[str, float]]:  # type: ignore[override]
        return (StoreFull, (self.message, self.retry_after))
