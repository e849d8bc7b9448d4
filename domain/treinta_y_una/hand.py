"""What a hand is worth (seed 003, "Valor de las cartas").

Every card counts its index, except the figures (sota 10, caballo 11, rey 12), which count 10,
and the aces, which count 1 or 11 "según la conveniencia del jugador": each ace counts 11 while
the total stays at or below 31, so the hand's total is the best one not above 31, or, when even
with every ace at 1 the cards pass 31, that lowest total (the hand is over 31: bust).

A treinta y una real is "dos figuras y un as": exactly three cards, two figures and an ace (the
three cards dealt; a hand that asked for a card has more). Three cards make 31 only so.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache

from domain.cards import Card, DeckKind, canonical_deck, card_from_code
from domain.errors import InvalidArgument
from domain.treinta_y_una.rules import TARGET

ACE = "1"
FIGURES = frozenset({"10", "11", "12"})  # sota, caballo, rey
ACE_HIGH_EXTRA = 10  # an ace counted 11 instead of 1
REAL_CARDS = 3
DECK = DeckKind.SPANISH_40


@dataclass(frozen=True, slots=True)
class HandValue:
    """A hand's best total, whether it is a treinta y una real, and whether it is over 31."""

    total: int
    real: bool
    bust: bool
    aces_high: int  # how many of its aces count 11

    @property
    def thirty_one(self) -> bool:
        """The hand made 31 (plain or real)."""
        return self.total == TARGET


def evaluate(cards: Sequence[Card]) -> HandValue:
    """The value of ``cards`` (Spanish cards; their pip values from ``domain.cards``)."""
    low = sum(c.value for c in cards)  # every ace at 1
    aces = sum(1 for c in cards if c.rank == ACE)
    high = min(aces, max(TARGET - low, 0) // ACE_HIGH_EXTRA)
    total = low + high * ACE_HIGH_EXTRA
    real = (
        len(cards) == REAL_CARDS and aces == 1 and sum(1 for c in cards if c.rank in FIGURES) == 2
    )
    return HandValue(total, real, total > TARGET, high)


@cache
def _spanish() -> frozenset[Card]:
    return frozenset(canonical_deck(DECK))


def check_spanish(cards: Iterable[Card], field: str = "cards") -> None:
    """Every card is of the 40-card Spanish deck."""
    deck = _spanish()
    for card in cards:
        if card not in deck:
            raise InvalidArgument(field, "NOT_SPANISH", f"{card.code} is not a SPANISH-40 card")


def parse_hand(codes: Sequence[str], field: str = "cards") -> tuple[Card, ...]:
    """Cards from SHUFFLE.md's SPANISH-40 codes (``1O``, ``12B``); one deck: no card twice."""
    if not codes:
        raise InvalidArgument(field, "EMPTY_HAND", "give at least one card")
    cards: list[Card] = []
    for i, code in enumerate(codes):
        try:
            card = card_from_code(code.strip().upper(), DECK)
        except InvalidArgument as exc:
            raise InvalidArgument(f"{field}[{i}]", exc.reason, exc.message) from None
        if card in cards:
            raise InvalidArgument(
                f"{field}[{i}]", "DUPLICATE_CARD", f"{card.code} twice: the deck has one of each"
            )
        cards.append(card)
    return tuple(cards)
