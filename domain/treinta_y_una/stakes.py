"""Stakes: placed before the deal, within the table limits and what the bank can cover.

Seed 003: "Previo a cada juego, cada jugador coloca ante sí los tantos que constituyen su
apuesta, ciñéndose a una cantidad máxima acordada de antemano". RULES.md §2 (choice): "a stake
is accepted only while the banker's balance covers every accepted stake at the worst case
(double, for a real)". A punter holds one stake a game. He puts up the stake and a cover of the
same amount, since a banker's real collects double from everyone; what is not lost comes back.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from domain.errors import FailedPrecondition, InvalidArgument
from domain.treinta_y_una.rules import BankCover, TableRules

REAL_MULTIPLE = 2  # "se lleva el doble de lo que apostó"; "recibe ... el doble"


@dataclass(frozen=True, slots=True)
class Stake:
    player: str
    amount: int  # the stake, minor units
    held: int  # what the table holds of the player's for it (stake + cover, less any loss)
    lost_at_once: bool = False  # over 31 under bust = loses_at_once: the stake collected


def held_for(amount: int) -> int:
    """What a punter puts up for a stake: the stake and its cover."""
    return amount * REAL_MULTIPLE


def cover_needed(rules: TableRules, amount: int) -> int:
    """What the bank must hold for a stake: the worst case (a real, double) or even money."""
    return amount * (REAL_MULTIPLE if rules.bank_cover is BankCover.WORST_CASE else 1)


def bank_room(rules: TableRules, bank: int, stakes: Iterable[Stake]) -> int:
    """What the bank can still cover."""
    return bank - sum(cover_needed(rules, s.amount) for s in stakes)


def check_amount(rules: TableRules, amount: object, field: str = "amount") -> int:
    """A whole amount within the table's minimum and maximum."""
    if not isinstance(amount, int) or isinstance(amount, bool):
        raise InvalidArgument(field, "NOT_A_WHOLE_AMOUNT", "must be whole minor units")
    if amount < rules.min_stake:
        raise InvalidArgument(
            field, "BELOW_MINIMUM", f"{amount} is below the table minimum {rules.min_stake}"
        )
    if amount > rules.max_stake:
        raise InvalidArgument(
            field, "ABOVE_MAXIMUM", f"{amount} is above the table maximum {rules.max_stake}"
        )
    return amount


def check_cover(rules: TableRules, bank: int, stakes: Iterable[Stake], amount: int) -> None:
    """The bank covers ``amount`` beside the stakes it has accepted."""
    room = bank_room(rules, bank, stakes)
    need = cover_needed(rules, amount)
    if need > room:
        raise FailedPrecondition(
            "amount",
            "BANK_CANNOT_COVER",
            f"the bank covers {max(room, 0)} more ({rules.bank_cover.value}); "
            f"a stake of {amount} needs {need}",
        )
