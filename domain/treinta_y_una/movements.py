"""Money movements of a game: every payment from one account to another, in minor units.

The bank is a player (RULES.md §2): what a punter loses goes to the banker's bank, what he wins
comes from it; the house only takes its optional commission. While a game is on, the table
holds the money at stake in two accounts of its own, so that no settlement can fail for want
of money: ``STAKES`` (each punter's stake and the cover of a banker's real, a second unit) and
``BANK`` (what the banker put up). Each game empties both (a void stake stays in ``STAKES`` for
the next game). The ledger maps the roles to its concrete accounts: ``PLAYER`` is the account of
the movement's ``player``, punter or banker.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Role(StrEnum):
    PLAYER = "player"  # the movement's player's own account (the banker's too)
    STAKES = "stakes"  # the stakes and covers the table holds
    BANK = "bank"  # the bank the banker put up for the game
    HOUSE = "house"  # the house's commission


class MovementKind(StrEnum):
    BANK_PUT_UP = "bank_put_up"  # banker -> bank, when the game opens
    STAKE = "stake"  # punter -> stakes
    COVER = "cover"  # punter -> stakes: the second unit a banker's real collects
    COLLECTION = "collection"  # stakes -> bank: a lost stake (and its cover, to a banker's real)
    RETURN = "return"  # stakes -> punter: a stake or a cover given back
    PAYMENT = "payment"  # bank -> punter: a winner's payout (twice the stake, for a real)
    COMMISSION = "commission"  # punter -> house: the house's share of a punter's payout
    BANK_COMMISSION = "bank_commission"  # bank -> house: its share of a collection
    BANK_RETURNED = "bank_returned"  # bank -> banker: what the bank holds when the game ends


MOVEMENT_ROLES: dict[MovementKind, tuple[Role, Role]] = {
    MovementKind.BANK_PUT_UP: (Role.PLAYER, Role.BANK),
    MovementKind.STAKE: (Role.PLAYER, Role.STAKES),
    MovementKind.COVER: (Role.PLAYER, Role.STAKES),
    MovementKind.COLLECTION: (Role.STAKES, Role.BANK),
    MovementKind.RETURN: (Role.STAKES, Role.PLAYER),
    MovementKind.PAYMENT: (Role.BANK, Role.PLAYER),
    MovementKind.COMMISSION: (Role.PLAYER, Role.HOUSE),
    MovementKind.BANK_COMMISSION: (Role.BANK, Role.HOUSE),
    MovementKind.BANK_RETURNED: (Role.BANK, Role.PLAYER),
}


@dataclass(frozen=True, slots=True)
class Movement:
    """``amount`` (> 0) from ``source`` to ``destination``; ``player`` is whose it is."""

    kind: MovementKind
    player: str
    amount: int
    source: Role
    destination: Role


def movement(kind: MovementKind, player: str, amount: int) -> tuple[Movement, ...]:
    """The movement as a 0- or 1-tuple: a movement of nothing is not recorded."""
    if amount <= 0:
        return ()
    source, destination = MOVEMENT_ROLES[kind]
    return (Movement(kind, player, amount, source, destination),)
