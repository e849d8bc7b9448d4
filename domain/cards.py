"""Cards, deck kinds and canonical shoes, exactly as SHUFFLE.md lists them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from functools import cache

from domain.errors import InvalidArgument


class Colour(StrEnum):
    BLACK = "black"
    RED = "red"
    NONE = "none"  # Spanish suits carry no colour


class DeckKind(StrEnum):
    FRENCH_52 = "FRENCH-52"
    FRENCH_40 = "FRENCH-40"
    SPANISH_40 = "SPANISH-40"


@dataclass(frozen=True, slots=True)
class Card:
    """One card: its code (``AS``, ``TD``, ``12B``), its pip value and its colour."""

    code: str
    rank: str
    suit: str
    value: int
    colour: Colour

    def __str__(self) -> str:
        return self.code


_FRENCH_SUITS = ("S", "H", "D", "C")
_FRENCH_COLOURS = {"S": Colour.BLACK, "C": Colour.BLACK, "H": Colour.RED, "D": Colour.RED}
_FRENCH_VALUES = {
    "A": 1, "2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "7": 7, "8": 8, "9": 9,
    "T": 10, "J": 10, "Q": 10, "K": 10,
}
_FRENCH_52_RANKS = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "T", "J", "Q", "K")
_FRENCH_40_RANKS = ("A", "2", "3", "4", "5", "6", "7", "J", "Q", "K")
_SPANISH_SUITS = ("O", "C", "E", "B")
_SPANISH_RANKS = ("1", "2", "3", "4", "5", "6", "7", "10", "11", "12")
_SPANISH_VALUES = {r: (int(r) if int(r) <= 7 else 10) for r in _SPANISH_RANKS}

MAX_DECKS = 8


@cache
def canonical_deck(kind: DeckKind) -> tuple[Card, ...]:
    """One deck in canonical order: suits in the listed order, ranks ascending within a suit."""
    if kind is DeckKind.SPANISH_40:
        return tuple(
            Card(r + s, r, s, _SPANISH_VALUES[r], Colour.NONE)
            for s in _SPANISH_SUITS
            for r in _SPANISH_RANKS
        )
    ranks = _FRENCH_52_RANKS if kind is DeckKind.FRENCH_52 else _FRENCH_40_RANKS
    return tuple(
        Card(r + s, r, s, _FRENCH_VALUES[r], _FRENCH_COLOURS[s])
        for s in _FRENCH_SUITS
        for r in ranks
    )


def parse_deck_kind(text: str, field: str = "deck") -> DeckKind:
    try:
        return DeckKind(text.upper())
    except ValueError:
        names = ", ".join(k.value for k in DeckKind)
        raise InvalidArgument(
            field, "UNKNOWN_DECK", f"unknown deck kind {text!r} (one of {names})"
        ) from None


def canonical_shoe(kind: DeckKind, decks: int) -> tuple[Card, ...]:
    """``decks`` canonical decks one after the other."""
    check_deck_count(decks)
    return canonical_deck(kind) * decks


def check_deck_count(decks: int, field: str = "decks") -> None:
    if not 1 <= decks <= MAX_DECKS:
        raise InvalidArgument(field, "OUT_OF_RANGE", f"must be 1 to {MAX_DECKS}, got {decks}")


@cache
def _by_code(kind: DeckKind) -> dict[str, Card]:
    return {c.code: c for c in canonical_deck(kind)}


def card_from_code(code: str, kind: DeckKind = DeckKind.FRENCH_52) -> Card:
    try:
        return _by_code(kind)[code]
    except KeyError:
        raise InvalidArgument(
            "card", "UNKNOWN_CARD", f"no card {code!r} in {kind.value}"
        ) from None
