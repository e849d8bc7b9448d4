"""domain/french_odds.py is what ``coup_odds`` computes: exactly, for the deck counts checked
here (the others cost seconds each; each law sums to one and the table is the generator's)."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from domain.trente_et_quarante import french_odds
from domain.trente_et_quarante.french_odds import FRENCH_SHOES
from domain.trente_et_quarante.odds import (
    TOTALS,
    Composition,
    coup_odds,
    french_coup_odds,
    french_table_source,
)


@pytest.mark.parametrize("decks", [1, 2, 6])
def test_the_table_is_the_computation(decks: int) -> None:
    computed = coup_odds(Composition.french(decks))
    read = french_coup_odds(decks)
    assert read == computed  # every fraction, and the label
    entry = french_table_source([decks]).split("{\n", 1)[1].removesuffix("}\n")
    assert entry in Path(french_odds.__file__).read_text(encoding="utf-8")


def test_every_deck_count_has_laws_that_add_up() -> None:
    assert set(FRENCH_SHOES) == set(range(1, 9))
    for decks in FRENCH_SHOES:
        odds = french_coup_odds(decks)
        assert sum(odds.row_total.values(), Fraction(0)) == 1
        assert set(odds.row_total) == set(odds.refait) == set(TOTALS)
        assert all(0 < odds.refait[t] < odds.row_total[t] for t in TOTALS)
