"""The deal of a coup from the sabot: the Noir row, then the Rouge row; the cut card; the end.

API CONTRACT (implementation owned by the domain helper; keep these names and signatures).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from domain.cards import Card
from domain.errors import InvalidArgument
from domain.trente_et_quarante.chances import Row
from domain.trente_et_quarante.rules import CutCardRule

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


# The hot path builds its frozen values inline: an empty instance of a plain class (no
# ``__init__``) with exactly the frozen class's slots, every field set by ordinary assignment,
# then its class switched to the frozen class (CPython refuses the switch unless the slot layouts
# are identical; see ``layout._MovementFiller``). The result is an ordinary ``DealtCard`` /
# ``CoupDeal``, equal to and hashing like the one its own constructor makes, without the cost of
# the frozen ``__init__`` (tests/domain/test_deal_fast.py checks against the constructors).


class _BlankDealtCard:
    __slots__ = DealtCard.__slots__
    row: Row
    card: Card
    position: int
    running_total: int


class _BlankCoupDeal:
    __slots__ = CoupDeal.__slots__
    start: int
    cards: tuple[DealtCard, ...]
    noir_total: int | None
    rouge_total: int | None
    cut_card_reached: bool
    complete: bool
    next_position: int


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
            # DealtCard(row, card, pos, total), inline
            dealt = _BlankDealtCard()
            dealt.row = row
            dealt.card = card
            dealt.position = pos
            dealt.running_total = total
            dealt.__class__ = DealtCard  # type: ignore[assignment]
            cards.append(dealt)  # type: ignore[arg-type]
            pos += 1
        totals.append(total)
    # CoupDeal(position, tuple(cards), totals[0], totals[1], reached, True, pos), inline
    coup = _BlankCoupDeal()
    coup.start = position
    coup.cards = tuple(cards)
    coup.noir_total = totals[0]
    coup.rouge_total = totals[1]
    coup.cut_card_reached = reached
    coup.complete = True
    coup.next_position = pos
    coup.__class__ = CoupDeal  # type: ignore[assignment]
    return coup  # type: ignore[return-value]


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
