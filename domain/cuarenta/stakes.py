"""The money of a match: the stakes held on the table, then paid to the winning side.

RULES.md §3 (choice): each side stakes the same amount when the match opens; the stakes are held
on the table until the match ends, then paid to the winning side less an optional house
commission, recorded as a movement of its own. Integer minor units; every movement moves money
from one account to another, so the movements of a match sum to zero.

A side's stake is its players' stake: for a team of two the amount is shared between the
partners (the odd minor unit to the lower seat), and so is what the side is paid.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from domain import money
from domain.cuarenta.rules import CuarentaRules


class Role(StrEnum):
    """The accounts a movement names; the ledger maps them to concrete accounts."""

    PLAYER = "player"  # the seat's player (``Movement.seat``)
    TABLE = "table"  # the stakes held on the match's table
    HOUSE = "house"  # the house's commission


class MovementKind(StrEnum):
    STAKE = "stake"  # player -> table, when the match opens
    PAYOUT = "payout"  # table -> player of the winning side
    COMMISSION = "commission"  # table -> house


MOVEMENT_ROLES: dict[MovementKind, tuple[Role, Role]] = {
    MovementKind.STAKE: (Role.PLAYER, Role.TABLE),
    MovementKind.PAYOUT: (Role.TABLE, Role.PLAYER),
    MovementKind.COMMISSION: (Role.TABLE, Role.HOUSE),
}


@dataclass(frozen=True, slots=True)
class Movement:
    kind: MovementKind
    seat: int | None  # the player's seat (None for the commission)
    amount: int  # > 0, minor units
    source: Role
    destination: Role


def side_seats(players: int, side: int) -> tuple[int, ...]:
    """The seats of a side: seat ``s`` plays for side ``s % 2`` (partners sit opposite)."""
    return tuple(seat for seat in range(players) if seat % 2 == side)


def shares(amount: int, seats: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """``amount`` shared between ``seats`` as (seat, share): equal parts, the remainder's minor
    units to the lowest seats; shares of 0 are left out."""
    part, rest = divmod(amount, len(seats))
    out = ((seat, part + (1 if i < rest else 0)) for i, seat in enumerate(seats))
    return tuple((seat, share) for seat, share in out if share > 0)


def _movement(kind: MovementKind, seat: int | None, amount: int) -> Movement:
    source, destination = MOVEMENT_ROLES[kind]
    return Movement(kind, seat, amount, source, destination)


def pot(rules: CuarentaRules) -> int:
    """What the table holds once both sides have staked."""
    return 2 * rules.stake


def commission(rules: CuarentaRules) -> int:
    """The house's commission on the pot: ``floor(pot × rate)``, the rounding in the players'
    favour (as RULES.md's Money section does for the house's half)."""
    return money.commission(pot(rules), rules.commission_rate)


def hold_stakes(rules: CuarentaRules) -> tuple[Movement, ...]:
    """The stakes of both sides, player -> table, side 0 first (none when the stake is 0)."""
    return tuple(
        _movement(MovementKind.STAKE, seat, share)
        for side in (0, 1)
        for seat, share in shares(rules.stake, side_seats(rules.players, side))
    )


def pay_winner(rules: CuarentaRules, side: int) -> tuple[Movement, ...]:
    """Everything the table holds: the commission to the house, then the rest to the winning
    side's players. The same whether the match was won on points or by a forfeit."""
    house = commission(rules)
    moves = [_movement(MovementKind.COMMISSION, None, house)] if house else []
    moves += [
        _movement(MovementKind.PAYOUT, seat, share)
        for seat, share in shares(pot(rules) - house, side_seats(rules.players, side))
    ]
    return tuple(moves)


Account = tuple[Role, int | None]


def balances(movements: Iterable[Movement]) -> dict[Account, int]:
    """Each account's net change: (Role.PLAYER, seat), (Role.TABLE, None), (Role.HOUSE, None).
    The values always sum to zero."""
    out: dict[Account, int] = defaultdict(int)
    for m in movements:
        src = (m.source, m.seat if m.source is Role.PLAYER else None)
        dst = (m.destination, m.seat if m.destination is Role.PLAYER else None)
        out[src] -= m.amount
        out[dst] += m.amount
    return dict(out)
