"""The 40 cards of Cuarenta: the ranks in their order, which ranks sum, the pack.

"Se utiliza las cartas de la baraja, a excepción de las cartas de valor: ocho, nueve y diez"
(seed 001, §2): SHUFFLE.md's ``FRENCH-40``, ranks ``A 2 3 4 5 6 7 J Q K``, suits ``S H D C``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from uuid import UUID

from domain.cards import Card, DeckKind, canonical_deck, card_from_code
from domain.errors import InvalidArgument
from domain.shuffle import load_sabot

DECK = DeckKind.FRENCH_40

# The ranks upward, as the consecutive cards run: "... 6, 7, J, Q, K" (7 is followed by J).
RANKS = ("A", "2", "3", "4", "5", "6", "7", "J", "Q", "K")
RANK_INDEX = {rank: i for i, rank in enumerate(RANKS)}
NEXT_RANK: dict[str, str | None] = {
    rank: (RANKS[i + 1] if i + 1 < len(RANKS) else None) for i, rank in enumerate(RANKS)
}

# The ranks that sum and are summed, with their values: A = 1 … 7 = 7 (seed 001, §3.4: "en el
# rango de las cartas 1 hasta la carta 7, no se aplica para la suma ... J, Q, K").
SUM_VALUES = {"A": 1, "2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "7": 7}

SUIT_INDEX = {"S": 0, "H": 1, "D": 2, "C": 3}


def card_order(card: Card) -> tuple[int, int]:
    """A card's place in the canonical order by rank then suit (for stable listings)."""
    return RANK_INDEX[card.rank], SUIT_INDEX[card.suit]


def parse_card(code: object, field: str = "card") -> Card:
    """A FRENCH-40 card from its code (``5H``, ``JS``); InvalidArgument naming ``field``."""
    if isinstance(code, Card):
        code = code.code
    if not isinstance(code, str):
        raise InvalidArgument(field, "UNKNOWN_CARD", "must be a card code such as 5H or JS")
    text = code.strip().upper()
    try:
        return card_from_code(text, DECK)
    except InvalidArgument:
        raise InvalidArgument(
            field, "UNKNOWN_CARD", f"no card {code!r} in the Cuarenta pack (ranks A-7, J, Q, K; "
            "suits S, H, D, C)"
        ) from None


def parse_cards(codes: Iterable[object], field: str) -> tuple[Card, ...]:
    """Distinct cards from their codes; a card named twice is InvalidArgument."""
    cards: list[Card] = []
    seen: set[str] = set()
    for i, code in enumerate(codes):
        card = parse_card(code, f"{field}[{i}]")
        if card.code in seen:
            raise InvalidArgument(field, "DUPLICATE_CARD", f"{card.code} is named twice")
        seen.add(card.code)
        cards.append(card)
    return tuple(cards)


def check_pack(cards: Sequence[Card], field: str = "pack") -> tuple[Card, ...]:
    """The pack of a hand: the 40 cards of one FRENCH-40 deck, each once, in dealing order."""
    pack = tuple(cards)
    if len(pack) != len(canonical_deck(DECK)) or set(pack) != set(canonical_deck(DECK)):
        raise InvalidArgument(
            field, "NOT_A_PACK", "must be the 40 cards of one FRENCH-40 deck, each once"
        )
    return pack


def shuffled_pack(seed: bytes, shoe_id: UUID, cut: int | None = None) -> tuple[Card, ...]:
    """A hand's pack as SHUFFLE.md makes it: one FRENCH-40 deck shuffled from ``seed`` and
    ``shoe_id`` (the hand's committed shoe), then cut at ``cut`` (None: no cut)."""
    return load_sabot(seed, shoe_id, DECK, 1, cut).cards
