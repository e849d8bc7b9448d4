"""The exact odds of Trente et Quarante's first coup: ``domain``'s computation beside an
independent oracle (issue 25 item 5: "the odds computation at least as fast as the independent
oracle").

The oracle is written here from the rules (/work/shared/RULES.md, "The deal"), sharing no code
with ``domain/``: the shoe is ``decks`` French decks, four cards of each value 1..9 and sixteen
tens per deck (J, Q, K count 10). The cards are distinct; the coup's first ``k`` cards are an
ordered ``k``-tuple of distinct cards, every one equally likely (``N (N - 1) ... (N - k + 1)`` of
them). The Noir row is the first ``kA`` of them: the total passes 30 at its last card and not
before, so its last card's value is at least ``total - 30``; the Rouge row is the next ``kB``,
the same way; the lower total wins. The number of tuples whose Noir row is a given SET of
cards (value counts ``a``, total ``x``) and whose Rouge row a given set (``b``, total ``y``) is
``sA (kA - 1)! * sB (kB - 1)!``, ``sA`` the cards of the Noir set worth at least ``x - 30``
(one of them last, the others in any order), likewise ``sB``; the sets themselves are chosen in
``prod_v C(n_v, a_v) C(n_v - a_v, b_v)`` ways. So a law is a sum over the value classes of
products, which a dynamic programme adds up class by class, keeping for each
state (totals and card counts so far) the sums of the weights times 1, ``sA``, ``sB`` and
``sA sB`` (the count of eligible cards enters linearly): the eligible cards are counted as they
are chosen, not applied as a factor afterwards (``domain``'s way: it
multiplies by the cards counted once the eligible classes are done, and halves its states by
the rows' symmetry, which the oracle does not use).

Rows: for 1, 2 and 6 decks (``SABOT_BENCH_ODDS_DECKS``), processor seconds of
``domain.trente_et_quarante.odds.coup_odds`` (what ``french_table_source`` writes into the table
``sabot odds`` reads) and of the oracle, each best of ``SABOT_BENCH_ODDS_ROUNDS`` (default 1 at
6 decks, 3 below), their ratio (``x_oracle``: domain's time over the oracle's; <= 1: at least as
fast), and ``agrees``: 1 when the oracle's laws (P(Noir row = t), P(both rows = t), t =
31..40) are exactly those of ``coup_odds`` and of the table ``sabot odds`` prints
(``french_coup_odds``), and at 1 deck P(Noir wins), summed by the oracle over the whole joint
law of the two totals, is ``coup_odds``'s. ``python -m bench.odds`` prints them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from fractions import Fraction
from functools import partial
from math import comb, factorial
from typing import Any

Row = tuple[str, float]
TOTALS = range(31, 41)


def french_counts(decks: int) -> list[int]:
    """Cards of each value 1..10 in ``decks`` French decks."""
    return [4 * decks] * 9 + [16 * decks]


def _ordered(n: int, k: int) -> int:
    """Ordered choices of ``k`` distinct cards out of ``n``."""
    out = 1
    for i in range(k):
        out *= n - i
    return out


def row_law(counts: list[int], x: int) -> Fraction:
    """P(the Noir row totals ``x``): the sets of cards of total ``x``, each with its eligible
    last cards, class by class; state (total, cards) -> [sum of weights, of weights * s]."""
    states: dict[tuple[int, int], list[int]] = {(0, 0): [1, 0]}
    for value in range(1, 11):
        n = counts[value - 1]
        eligible = value >= x - 30
        new: dict[tuple[int, int], list[int]] = {}
        for (total, k), (w, ws) in states.items():
            for a in range(0, min(n, (x - total) // value) + 1):
                c = comb(n, a)
                key = (total + a * value, k + a)
                got = new.setdefault(key, [0, 0])
                got[0] += w * c
                got[1] += (ws + (w * a if eligible else 0)) * c
        states = new
    size = sum(counts)
    out = Fraction(0)
    for (total, k), (_w, ws) in states.items():
        if total == x and k:
            out += Fraction(ws * factorial(k - 1), _ordered(size, k))
    return out


def pair_law(counts: list[int], x: int, y: int) -> Fraction:
    """P(the Noir row totals ``x`` and the Rouge row ``y``): both rows' sets class by class
    (the Rouge row's cards chosen among those the Noir row left), values 10 down to 1, a state
    dropped once the values left cannot bring its row to its total; state (total A, cards A,
    total B, cards B) -> [sum of weights, of weights * sA, * sB, * sA sB]."""
    states: dict[tuple[int, int, int, int], list[int]] = {(0, 0, 0, 0): [1, 0, 0, 0]}
    left = sum(v * counts[v - 1] for v in range(1, 11))  # the value the classes to come hold
    for value in range(10, 0, -1):
        n = counts[value - 1]
        left -= value * n  # what the classes after this one hold
        ea = value >= x - 30
        eb = value >= y - 30
        new: dict[tuple[int, int, int, int], list[int]] = {}
        for (ta, ka, tb, kb), (w, wa, wb, wab) in states.items():
            for a in range(0, min(n, (x - ta) // value) + 1):
                ta2 = ta + a * value
                if x - ta2 > left:
                    continue  # the Noir row can no longer reach x
                ca = comb(n, a)
                da = a if ea else 0
                for b in range(0, min(n - a, (y - tb) // value) + 1):
                    tb2 = tb + b * value
                    if y - tb2 > left:
                        continue
                    c = ca * comb(n - a, b)
                    db = b if eb else 0
                    key = (ta2, ka + a, tb2, kb + b)
                    got = new.get(key)
                    if got is None:
                        got = new[key] = [0, 0, 0, 0]
                    got[0] += w * c
                    got[1] += (wa + w * da) * c
                    got[2] += (wb + w * db) * c
                    # (sA + dA)(sB + dB) = sA sB + sA dB + dA sB + dA dB
                    got[3] += (wab + wa * db + wb * da + w * da * db) * c
        states = new
    size = sum(counts)
    out = Fraction(0)
    for (ta, ka, tb, kb), (_w, _wa, _wb, wab) in states.items():
        if ta == x and tb == y and ka and kb:
            out += Fraction(wab * factorial(ka - 1) * factorial(kb - 1),
                            _ordered(size, ka + kb))
    return out


def oracle(decks: int) -> dict[str, dict[int, Fraction]]:
    """The first coup's laws from ``decks`` French decks, by the oracle: P(Noir row = t) and
    P(both rows = t), t = 31..40 (what ``CoupOdds`` holds)."""
    counts = french_counts(decks)
    return {"row_total": {t: row_law(counts, t) for t in TOTALS},
            "refait": {t: pair_law(counts, t, t) for t in TOTALS}}


def noir_wins(decks: int) -> Fraction:
    """P(Noir wins) by the oracle from the whole joint law (100 pairs of totals: the lower
    total wins), with no symmetry assumed; checked against ``domain``'s for small shoes."""
    counts = french_counts(decks)
    return sum((pair_law(counts, x, y) for x in TOTALS for y in TOTALS if x < y), Fraction(0))


def _best(fn: Callable[[], Any], rounds: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(rounds):
        c = time.process_time()
        out = fn()
        best = min(best, time.process_time() - c)
    return best, out


def run() -> list[Row]:
    from domain.trente_et_quarante.odds import Composition, coup_odds, french_coup_odds

    decks_list = [int(d) for d in os.environ.get("SABOT_BENCH_ODDS_DECKS", "1,2,6").split(",")]
    rows: list[Row] = []
    for decks in decks_list:
        rounds = int(os.environ.get("SABOT_BENCH_ODDS_ROUNDS", "1" if decks >= 6 else "3"))
        comp = Composition.french(decks)
        t_domain, mine = _best(partial(coup_odds, comp), rounds)
        t_oracle, theirs = _best(partial(oracle, decks), rounds)
        table = french_coup_odds(decks)
        agrees = all(
            dict(law) == theirs[name]
            for source in (mine, table)
            for name, law in (("row_total", source.row_total), ("refait", source.refait))
        )
        if decks == 1:  # the chances too, from the whole joint law (seconds at 1 deck)
            agrees = agrees and noir_wins(decks) == mine.noir
        rows += [
            (f"odds.{decks}_decks.domain_cpu_s", t_domain),
            (f"odds.{decks}_decks.oracle_cpu_s", t_oracle),
            (f"odds.{decks}_decks.x_oracle", t_domain / t_oracle),
            (f"odds.{decks}_decks.agrees", float(agrees)),
        ]
    return rows


if __name__ == "__main__":
    for name, value in run():
        print(f"{name:40s} {value:12.4f}")
