"""Exact odds of the first three cards, checked by brute force; the Monte-Carlo through the
engine, reproducible from its seed."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from itertools import combinations

import pytest
from tyu_tables import DECK

from domain.errors import InvalidArgument
from domain.treinta_y_una import montecarlo
from domain.treinta_y_una.hand import evaluate
from domain.treinta_y_una.odds import three_card_odds
from domain.treinta_y_una.rules import table_rules


def test_exact_figures_match_every_subset() -> None:
    odds = three_card_odds()
    subsets = list(combinations(DECK, 3))
    assert odds.subsets == len(subsets) == 9880
    counts = Counter(evaluate(h).total for h in subsets)
    assert dict(odds.counts) == dict(sorted(counts.items()))
    assert odds.real == Fraction(sum(evaluate(h).real for h in subsets), 9880)
    assert sum(odds.totals.values()) == 1


def test_published_figures() -> None:
    odds = three_card_odds()
    assert odds.real == Fraction(4 * 66, 9880) == Fraction(33, 1235)
    assert odds.thirty_one == odds.real  # three cards make 31 only as a real
    assert odds.bust == 0
    assert min(odds.totals) == 6 and max(odds.totals) == 31  # 2+2+2 ... a real
    assert odds.counts[30] == 220  # three figures: C(12, 3)
    assert odds.counts[29] == 24  # two aces at 11 and a seven: C(4, 2) * 4
    assert odds.mean_total == Fraction(1321, 65)
    assert odds.aces_high == {0: Fraction(357, 494), 1: Fraction(324, 1235), 2: Fraction(37, 2470)}
    names = odds.figures()
    assert names["real"] == Fraction(33, 1235) and names["total_31"] == names["real"]


def test_monte_carlo_is_reproducible_and_runs_the_engine() -> None:
    rules = table_rules()
    a = montecarlo.run(rules, 60, 0xFF)
    b = montecarlo.run(rules, 60, 0xFF)
    assert a == b
    assert [e.stand_at for e in a.edges] == list(range(15, 31))
    for e in a.edges:
        assert e.edge.n == 60
        assert e.punter_wins + e.punter_loses + e.void == pytest.approx(1)
        assert -2 <= e.edge.value <= 2  # a unit staked loses at most double (a banker's real)
        if e.stand_at <= 22:  # drawing only below 22 can never pass 31
            assert e.punter_bust == 0
    assert montecarlo.run(rules, 60, 0xFE) != a
    void = montecarlo.run(table_rules("empate_nulo"), 60, 0xFF)
    assert any(e.void > 0 for e in void.edges)  # ties are void there, never under clasica
    assert all(e.void == 0 for e in a.edges)


def test_one_game_through_the_engine() -> None:
    rules = table_rules()
    shoe = DECK  # canonical order; the deal alternates punter, banker
    net, outcome, bust = montecarlo.play(rules, shoe, 15, 28, 1000)
    # punter: 1O 3O 5O = 11 + 3 + 5 = 19 >= 15 stands; banker: 2O 4O 6O = 12, draws 7O 10O
    # (29) and stands: the banker wins
    assert (net, outcome.value, bust) == (-1000, "lost", False)


def test_monte_carlo_refuses() -> None:
    with pytest.raises(InvalidArgument):
        montecarlo.run(table_rules(), 0, 0)
    with pytest.raises(InvalidArgument):
        montecarlo.deck_seed(2**256)
