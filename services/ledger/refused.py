"""A command refused with a consequence recorded: the answer is a refusal, yet events are stored.

A command normally either succeeds (its events and its ``Request`` stored in one transaction)
or is refused (a ``RuleViolation``, raised before anything is triggered: nothing is stored).
A few refusals carry a consequence the rules give whatever the caller wanted: a player's play
arriving after its turn time, by the ledger's clock, is refused (``TURN_TIME_OVER``) and the
forfeit or the "me planto" the rules give for the lapsed turn is recorded. The command's
``decide`` triggers the consequence's events (exactly what the consequence's own command would
trigger), then raises ``Refused(error, consequence)``. The writer saves, in the command's
transaction, the command's ``Request`` with the refusal as its stored answer
(:func:`answer_of`) and no effects, then the consequence's own ``Request``
(:meth:`Consequence.request`): the ledger's command (``cuarenta_forfeit`` reason ``turn_time``,
``tyu_stand_for_absent``) with its arguments and answer, run as the ledger's ``SYSTEM`` actor,
its request id ``consequence:<the refused request's UUID>``, its effects the events. So the log
says who did what: the player sent a late move (refused), the ledger applied the rules. A
retry of the refused request gets the same refusal again (``Writer._answer``), never a second
consequence; the regulator's replay re-runs the refused request (which records the
consequence again, identically) and then finds the consequence's request stored.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from domain.errors import FailedPrecondition, InvalidArgument, NotFound, RuleViolation
from services.ledger.actor import SYSTEM, Actor
from services.ledger.errors import PermissionDenied
from services.ledger.ids import request_uuid
from services.ledger.request import Request

KEY = "refused"  # the stored answer of a refused request: {"refused": {...}}; no view has it
_KINDS: dict[str, type[RuleViolation]] = {
    cls.__name__: cls for cls in (FailedPrecondition, InvalidArgument, NotFound, PermissionDenied)
}


@dataclass(frozen=True)
class Consequence:
    """What the rules did for a refused command, as the ledger's own command: its name and
    arguments (exactly as that command's method stores them, so a replay finds them stored),
    its answer (a view), by ``actor``."""

    command: str
    args: dict[str, Any]
    result: Any
    actor: Actor = SYSTEM

    def request(self, refused: UUID, now: datetime, effects: list[list[Any]],
                result: dict[str, Any]) -> Request:
        """Its ``Request`` (``result``: the answer as stored data), for the refused request
        of id ``refused``."""
        request_id = f"consequence:{refused}"
        # a replay's run of the command finds this request stored, with the same arguments
        return Request._create(
            Request.Recorded, id=request_uuid(request_id, self.actor.scope),
            request_id=request_id, command=self.command, arguments=self.args,
            result=result, actor=self.actor.to_dict(), effects=effects, timestamp=now)


class Refused(Exception):
    """Raised by a command's ``decide`` after it triggered the consequence of its refusal:
    ``error`` is the answer (stored with the request), the triggered events are stored with
    ``consequence``'s request."""

    def __init__(self, error: RuleViolation, consequence: Consequence) -> None:
        if type(error).__name__ not in _KINDS:
            raise TypeError(f"a recorded refusal is one of {sorted(_KINDS)}")
        super().__init__(str(error))
        self.error = error
        self.consequence = consequence

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
