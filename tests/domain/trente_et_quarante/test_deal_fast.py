"""``deal_coup``'s inline construction against a plain reference built with ``DealtCard`` and
``CoupDeal``'s own constructors: equal values, of the same classes, hashing alike."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from domain.cards import Card, DeckKind, canonical_deck
from domain.trente_et_quarante.chances import Row
from domain.trente_et_quarante.deal import CoupDeal, DealtCard, deal_coup
from domain.trente_et_quarante.rules import CutCardRule


def reference_deal(sabot: Sequence[Card], position: int, rule: CutCardRule) -> CoupDeal:
    size = len(sabot)
    cut_at = max(size - 5, 0)
    cards: list[DealtCard] = []
    totals: list[int] = []
    reached = False
    pos = position
    for row in (Row.NOIR, Row.ROUGE):
        total = 0
        while total <= 30:
            if pos >= cut_at:
                reached = True
                if rule is CutCardRule.VOID_COUP or pos >= size:
                    noir = totals[0] if totals else None
                    return CoupDeal(position, tuple(cards), noir, None, True, False, pos)
            card = sabot[pos]
            total += card.value
            cards.append(DealtCard(row, card, pos, total))
            pos += 1
        totals.append(total)
    return CoupDeal(position, tuple(cards), totals[0], totals[1], reached, True, pos)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(canonical_deck(DeckKind.FRENCH_52)), max_size=60),
    st.integers(0, 60),
    st.sampled_from(list(CutCardRule)),
)
def test_deal_coup_is_the_reference(sabot: list[Card], start: int, rule: CutCardRule) -> None:
    position = min(start, len(sabot))
    fast, slow = deal_coup(sabot, position, rule), reference_deal(sabot, position, rule)
    assert fast == slow
    assert type(fast) is CoupDeal
    assert hash(fast) == hash(slow)
    assert repr(fast) == repr(slow)
    for a, b in zip(fast.cards, slow.cards, strict=True):
        assert type(a) is DealtCard
        assert hash(a) == hash(b)
