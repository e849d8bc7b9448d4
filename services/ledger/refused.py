"""A command refused with a consequence recorded: the answer is a refusal, yet events are stored.

A command normally either succeeds (its events and its ``Request`` stored in one transaction)
or is refused (a ``RuleViolation``, raised before anything is triggered: nothing is stored).
A few refusals carry a consequence the rules give whatever the caller wanted: a player's play
arriving after its turn time, by the ledger's clock, is refused (``TURN_TIME_OVER``) and the
forfeit or the "me planto" the rules give for the lapsed turn is recorded. The command's
``decide`` triggers the consequence's events, then raises ``Refused(error)``; the writer saves
those events with the command's ``Request`` in the command's transaction, the request's stored
answer being the refusal (:func:`answer_of`), and answers the caller with ``error``. A retry of
the same request id gets the same refusal again (``Writer._answer``), never a second
consequence; the request's ``effects`` name the consequence's events.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from domain.errors import FailedPrecondition, InvalidArgument, NotFound, RuleViolation
from services.ledger.errors import PermissionDenied

KEY = "refused"  # the stored answer of a refused request: {"refused": {...}}; no view has it
_KINDS: dict[str, type[RuleViolation]] = {
    cls.__name__: cls for cls in (FailedPrecondition, InvalidArgument, NotFound, PermissionDenied)
}


class Refused(Exception):
    """Raised by a command's ``decide`` after it triggered the consequence of its refusal:
    ``error`` is the answer (stored with the request), the triggered events are stored."""

    def __init__(self, error: RuleViolation) -> None:
        if type(error).__name__ not in _KINDS:
            raise TypeError(f"a recorded refusal is one of {sorted(_KINDS)}")
        super().__init__(str(error))
        self.error = error

    def stored(self) -> dict[str, Any]:
        """The request's stored answer."""
        e = self.error
        return {KEY: {"kind": type(e).__name__, "field": e.field, "reason": e.reason,
                      "message": e.message}}


def answer_of(result: dict[str, Any]) -> RuleViolation | None:
    """The refusal a stored answer records (None: an answer, not a refusal)."""
    found = result.get(KEY) if len(result) == 1 else None
    if not isinstance(found, dict) or found.get("kind") not in _KINDS:
        return None
    cls = _KINDS[found["kind"]]
    error = cls.__new__(cls)
    RuleViolation.__init__(error, str(found["field"]), str(found["reason"]),
                           str(found["message"]))
    return error


ANOTHER = "another player"  # what a player reads for a name hidden from it


def unnamed(error: RuleViolation, names: Iterable[str], own: str | None) -> RuleViolation:
    """``error`` as a player (``own``: its account) may read it where a game's views hide the
    other players' names: each of ``names`` but ``own`` written "another player" in its
    message (a copy of the same class, field and reason; ``error`` itself when it names none
    of them)."""
    hidden = sorted({n for n in names if n and n != own}, key=len, reverse=True)
    if not hidden or type(error).__name__ not in _KINDS:
        return error
    pattern = re.compile(  # an account id is [a-z0-9-] (``ids.check_name``): whole ids only
        r"(?<![\w-])(?:" + "|".join(map(re.escape, hidden)) + r")(?![\w-])")
    message = pattern.sub(ANOTHER, error.message)
    if message == error.message:
        return error
    copy = type(error).__new__(type(error))
    RuleViolation.__init__(copy, error.field, error.reason, message)
    return copy
