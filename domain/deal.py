"""The deal of a coup from the sabot: the Noir row, then the Rouge row; the cut card; the end.

API CONTRACT (implementation owned by the domain helper; keep these names and signatures).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

from domain.cards import Card
from domain.chances import Row
from domain.errors import InvalidArgument
from domain.rules import CutCardRule

ROW_STOPS_ABOVE = 30  # a row is dealt until its total exceeds 30 (final 31..40)
CARDS_BEHIND_CUT_CARD = 5  # the red cut card lies before the last five cards


@dataclass(frozen=True, slots=True)
class DealtCard:
    row: Row
    card: Card
    position: int  # 0-based position in the sabot (after the cut)
    running_total: int  # the row's total with this card


@dataclass(frozen=True, slots=True)
class CoupDeal:
    start: int  # sabot position of the coup's first card
    cards: tuple[DealtCard, ...]  # in dealing order
    noir_total: int | None  # None when the row was not finished
    rouge_total: int | None
    cut_card_reached: bool  # the coup needed a card at position >= size - 5
    complete: bool  # both rows were finished (False: void by the cut card, or shoe exhausted)
    next_position: int  # where the next coup starts

    @property
    def noir(self) -> tuple[Card, ...]:
        """The Noir row's cards, in dealing order."""
        return tuple(d.card for d in self.cards if d.row is Row.NOIR)

    @property
    def rouge(self) -> tuple[Card, ...]:
        """The Rouge row's cards, in dealing order."""
        return tuple(d.card for d in self.cards if d.row is Row.ROUGE)


class _DealtCardFiller:
    """Builds a ``DealtCard`` by plain slot assignment, then becomes one (the hot path; see
    ``layout._MovementFiller`` for why this is safe and faster than the frozen constructor)."""

    __slots__ = ("row", "card", "position", "running_total")  # noqa: RUF023 - field order

    def __init__(self, row: Row, card: Card, position: int, running_total: int) -> None:
        self.row = row
        self.card = card
        self.position = position
        self.running_total = running_total
        self.__class__ = DealtCard  # type: ignore[assignment]


if _DealtCardFiller.__slots__ != DealtCard.__slots__:  # pragma: no cover - a field changed
    raise TypeError("_DealtCardFiller does not match DealtCard's fields")

_new_dealt_card = cast(Callable[[Row, Card, int, int], DealtCard], _DealtCardFiller)
"""``DealtCard(row, card, position, running_total)``, faster."""


def cut_card_position(sabot_size: int) -> int:
    """The first position at or past the red cut card: ``size - 5`` (never below 0)."""
    return max(sabot_size - CARDS_BEHIND_CUT_CARD, 0)


def deal_coup(sabot: Sequence[Card], position: int, cut_card: CutCardRule) -> CoupDeal:
    """Deal one coup from ``position``. Under ``void_coup`` the deal stops before the first card
    at or past the cut card (the coup is void); under ``finish_coup`` it goes on to finish the
    coup (void only if the sabot runs out). Either way ``cut_card_reached`` tells the shoe ends."""
    size = len(sabot)
    if not 0 <= position <= size:
        raise InvalidArgument("position", "OUT_OF_RANGE", f"must be 0 to {size}, got {position}")
    cut_at = cut_card_position(size)
    stop_at_cut = cut_card is CutCardRule.VOID_COUP
    cards: list[DealtCard] = []
    totals: list[int] = []
    reached = False
    pos = position
    for row in (Row.NOIR, Row.ROUGE):
        total = 0
        while total <= ROW_STOPS_ABOVE:
            if pos >= cut_at:
                reached = True
                if stop_at_cut or pos >= size:
                    return _unfinished(position, cards, totals, pos)
            card = sabot[pos]
            total += card.value
            cards.append(_new_dealt_card(row, card, pos, total))
            pos += 1
        totals.append(total)
    return CoupDeal(position, tuple(cards), totals[0], totals[1], reached, True, pos)


def _unfinished(start: int, cards: list[DealtCard], totals: list[int], pos: int) -> CoupDeal:
    noir = totals[0] if totals else None
    return CoupDeal(start, tuple(cards), noir, None, True, False, pos)


def deal_shoe(sabot: Sequence[Card], cut_card: CutCardRule) -> tuple[CoupDeal, ...]:
    """Every coup of a shoe, from the first card up to and including the coup that reaches the
    cut card."""
    coups: list[CoupDeal] = []
    position = 0
    while True:
        coup = deal_coup(sabot, position, cut_card)
        coups.append(coup)
        if coup.cut_card_reached:
            return tuple(coups)
        position = coup.next_position
