"""A claim about one turn (the turn clock's, ``services/turn_clock.py``): it names the turn by
its number (``TurnView.turn``: the version of the event that began it), and the ledger's
command refuses it, storing nothing, once that turn is over (the player acted meanwhile)."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from eventsourcing.domain import Aggregate

from domain.errors import FailedPrecondition, InvalidArgument


def check_turn(turn: object, current: int | None, on_turn: bool, what: str) -> None:
    """INVALID_ARGUMENT ``turn`` ``BAD_TURN`` for what is not a turn's number;
    FAILED_PRECONDITION ``turn`` ``TURN_MOVED`` unless turn ``turn`` still runs, for the seat
    or player claimed (``on_turn``); ``what``: the match, the round."""
    if isinstance(turn, bool) or not isinstance(turn, int) or turn < 0:
        raise InvalidArgument("turn", "BAD_TURN", "must be a turn's number (0 or more)")
    if current != turn or not on_turn:
        raise FailedPrecondition("turn", "TURN_MOVED", f"turn {turn} is over: {what} moved on")


class Turn(Protocol):
    """What a game's aggregate keeps of its running turn (a Cuarenta match, a Treinta y Una
    round): since when, and its number."""

    turn_since: datetime | None
    turn_version: int | None


def turn_began(agg: Turn, event: Aggregate.Event) -> None:
    """The turn (re)starts with ``event`` (a deal, a turn begun, a card played or drawn): its
    time by the event's, its number the event's version (what ``check_turn`` compares)."""
    agg.turn_since = event.timestamp
    agg.turn_version = event.originator_version


def no_turn(agg: Turn) -> None:
    """No turn runs (before a deal, at a showdown)."""
    agg.turn_since = None
    agg.turn_version = None
