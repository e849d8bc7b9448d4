"""Exact odds of the first three cards of Treinta y Una, in rational arithmetic.

The three cards are the three face-down cards of one hand dealt from a full, freshly shuffled
40-card Spanish deck (every order equally likely). Which hand they are does not matter: the
cards at any three fixed positions of a uniformly shuffled deck are a uniform 3-card subset, so
the figures hold for the mano, any other punter and the banker alike.

Method: the deck is ten ranks of four cards (1-7, sota 10, caballo 11, rey 12). A 3-card hand is
a multiset of ranks ``k`` (``k_r`` cards of rank ``r``, summing to 3) with ``prod C(4, k_r)``
subsets among the ``C(40, 3) = 9880``; the 220 multisets are valued by ``hand.evaluate`` on one
representative each. ``tests/domain/treinta_y_una/test_odds.py`` checks it against all 9880
subsets.

Facts that follow (docs/treinta-y-una.md): three cards make 31 only as a treinta y una real
(an ace counted 11 and two figures), so P(31) = P(real) = 4 * C(12, 2) / C(40, 3) = 33/1235;
three cards are never over 31 (the most is 31).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from math import comb, prod

from domain.cards import Card, canonical_deck
from domain.treinta_y_una.hand import DECK, HandValue, evaluate

HAND = 3


@dataclass(frozen=True, slots=True)
class ThreeCardOdds:
    """The laws of a hand's first three cards."""

    subsets: int  # C(40, 3)
    real: Fraction  # P(treinta y una real)
    thirty_one: Fraction  # P(best total = 31)
    bust: Fraction  # P(over 31): 0
    totals: Mapping[int, Fraction]  # P(best total = t), every t that occurs, ascending
    counts: Mapping[int, int]  # how many of the 9880 subsets have best total t
    mean_total: Fraction
    aces_high: Mapping[int, Fraction]  # P(exactly n aces counted 11)

    def figures(self) -> dict[str, Fraction]:
        """Every figure by a stable name (the CLI's rows)."""
        out = {"real": self.real, "thirty_one": self.thirty_one, "bust": self.bust}
        out.update({f"total_{t}": p for t, p in self.totals.items()})
        out["mean_total"] = self.mean_total
        return out


def _by_rank() -> dict[str, tuple[Card, ...]]:
    ranks: dict[str, list[Card]] = {}
    for card in canonical_deck(DECK):
        ranks.setdefault(card.rank, []).append(card)
    return {rank: tuple(cards) for rank, cards in ranks.items()}


def rank_multisets(size: int = HAND) -> Iterator[tuple[int, HandValue]]:
    """Every multiset of ``size`` ranks: how many subsets of the deck it stands for, and its
    value."""
    ranks = _by_rank()
    names = tuple(ranks)

    def grow(start: int, left: int, chosen: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
        if left == 0:
            yield chosen
            return
        for i in range(start, len(names)):
            yield from grow(i, left - 1, (*chosen, names[i]))

    for chosen in grow(0, size, ()):
        counts = Counter(chosen)
        if any(k > len(ranks[r]) for r, k in counts.items()):
            continue
        weight = prod(comb(len(ranks[r]), k) for r, k in counts.items())
        cards = [c for r, k in counts.items() for c in ranks[r][:k]]
        yield weight, evaluate(cards)


@cache
def three_card_odds() -> ThreeCardOdds:
    """The exact figures (cached: they never change)."""
    subsets = comb(len(canonical_deck(DECK)), HAND)
    counts: Counter[int] = Counter()
    real = bust = 0
    high: Counter[int] = Counter()
    for weight, value in rank_multisets():
        counts[value.total] += weight
        real += weight * value.real
        bust += weight * value.bust
        high[value.aces_high] += weight
    assert sum(counts.values()) == subsets
    totals = {t: Fraction(counts[t], subsets) for t in sorted(counts)}
    return ThreeCardOdds(
        subsets=subsets,
        real=Fraction(real, subsets),
        thirty_one=totals.get(31, Fraction(0)),
        bust=Fraction(bust, subsets),
        totals=totals,
        counts={t: counts[t] for t in sorted(counts)},
        mean_total=sum((t * p for t, p in totals.items()), Fraction(0)),
        aces_high={n: Fraction(high[n], subsets) for n in sorted(high)},
    )
