"""The deal of a coup from the sabot: the Noir row, then the Rouge row; the cut card; the end.

API CONTRACT (implementation owned by the domain helper; keep these names and signatures).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from domain.cards import Card
from domain.chances import Row
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
        raise NotImplementedError

    @property
    def rouge(self) -> tuple[Card, ...]:
        raise NotImplementedError


def deal_coup(sabot: Sequence[Card], position: int, cut_card: CutCardRule) -> CoupDeal:
    """Deal one coup from ``position``. Under ``void_coup`` the deal stops before the first card
    at or past the cut card (the coup is void); under ``finish_coup`` it goes on to finish the
    coup (void only if the sabot runs out). Either way ``cut_card_reached`` tells the shoe ends."""
    raise NotImplementedError
