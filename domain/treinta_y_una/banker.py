"""Who holds the bank: drawn by lot for the first game, then passed to whoever made 31.

Seed 003: "El rol de banquero pasa en cada juego a un jugador diferente, siendo el primero
designado por sorteo" and "pasa a ocupar la banca el jugador que en el anterior juego hizo
treinta y una; cuando es el banquero quien la hace, continúa en su puesto".

The lot is a uniform draw among the seats from NIST SP 800-90A HMAC_DRBG (``domain.drbg``, the
generator of SABOT-SHUFFLE-1) instantiated with ``entropy = seed`` (the 32-byte seed of the
first game's shoe), ``nonce = nonce.bytes`` (that shoe's id) and the personalization string
``b"SABOT-TYU-BANK-LOT-1"``; one ``uniform(len(seats))`` (SHUFFLE.md's rejection sampling) is
the index of the banker in ``seats``. The personalization makes the lot's stream independent of
the shuffle's, so drawing it reveals nothing of the cards; once the seed is revealed anyone can
draw it again (``check_lot``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from uuid import UUID

from domain.drbg import HmacDrbg
from domain.errors import InvalidArgument
from domain.shuffle import check_seed
from domain.treinta_y_una.hand import HandValue
from domain.treinta_y_una.rules import BankWithout31, Several31, TableRules

LOT_PERSONALIZATION = b"SABOT-TYU-BANK-LOT-1"


class BankerReason(StrEnum):
    LOT = "lot"  # the first game: drawn by lot
    KEPT_31 = "kept_31"  # the banker made 31 and keeps the bank
    PASSED_31 = "passed_31"  # the bank passes to the player who made 31
    KEPT = "kept"  # nobody made 31 (bank_without_31 = stays)
    PASSED_TO_MANO = "passed_to_mano"  # nobody made 31 (bank_without_31 = passes_to_mano)


@dataclass(frozen=True, slots=True)
class BankLot:
    """The recorded lot: its inputs but the seed, and the index it drew."""

    nonce: UUID
    seats: tuple[str, ...]
    index: int


@dataclass(frozen=True, slots=True)
class BankerChoice:
    """Who holds the bank for a game, and why."""

    player: str
    reason: BankerReason
    lot: BankLot | None = None


def draw_banker(seed: bytes, nonce: UUID, seats: Sequence[str]) -> BankerChoice:
    """The first game's banker, drawn by lot among ``seats`` (see the module's docstring)."""
    check_seed(seed)
    if not seats:
        raise InvalidArgument("seats", "NO_SEATS", "the lot needs at least one seat")
    drbg = HmacDrbg(seed, nonce.bytes, LOT_PERSONALIZATION)
    index = drbg.uniform(len(seats))
    return BankerChoice(seats[index], BankerReason.LOT, BankLot(nonce, tuple(seats), index))


def check_lot(seed: bytes, choice: BankerChoice) -> bool:
    """Whether the recorded lot is the one ``seed`` draws (for an auditor, after the reveal)."""
    if choice.lot is None:
        return False
    again = draw_banker(seed, choice.lot.nonce, choice.lot.seats)
    return again == choice


def next_banker(
    rules: TableRules,
    seats: Sequence[str],
    banker: str,
    banker_hand: HandValue,
    player_hands: Sequence[tuple[str, HandValue]],
) -> BankerChoice:
    """Who holds the bank next game. ``player_hands``: the punters' hands in turn order (from
    the mano). The banker who made 31 keeps it; else the player who made 31 takes it (several:
    the first in turn order, or under ``several_31 = real_first`` a real before a plain 31);
    nobody: ``bank_without_31``; passing to the mano, under ruling 2 (issue 22 item 9) the bank
    goes to the first player to the banker's right who was dealt in (the first of
    ``player_hands``), never to a seat that staked nothing; under ruling 1 (rounds recorded
    before) to the seat at the banker's right."""
    if banker_hand.thirty_one:
        return BankerChoice(banker, BankerReason.KEPT_31)
    made = [(player, hand) for player, hand in player_hands if hand.thirty_one]
    if made:
        if rules.several_31 is Several31.REAL_FIRST:
            made.sort(key=lambda item: not item[1].real)  # stable: turn order within each kind
        return BankerChoice(made[0][0], BankerReason.PASSED_31)
    if rules.bank_without_31 is BankWithout31.PASSES_TO_MANO:
        if rules.ruling >= 2 and player_hands:
            return BankerChoice(player_hands[0][0], BankerReason.PASSED_TO_MANO)
        return BankerChoice(mano(seats, banker), BankerReason.PASSED_TO_MANO)
    return BankerChoice(banker, BankerReason.KEPT)


def turn_order(seats: Sequence[str], banker: str) -> tuple[str, ...]:
    """Every seat in the order of the deal and of the turns: from the banker's right (the
    mano), right to left, the banker last. ``seats`` lists the table counter-clockwise seen
    from above: ``seats[i + 1]`` sits at the right of ``seats[i]`` (and ``seats[0]`` at the
    right of the last)."""
    b = list(seats).index(banker)
    n = len(seats)
    return tuple(seats[(b + k) % n] for k in range(1, n + 1))


def mano(seats: Sequence[str], banker: str) -> str:
    """The first to the banker's right."""
    return turn_order(seats, banker)[0]
