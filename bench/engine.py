"""Engine benchmarks (one core, pure Python): coups dealt and settled per second with 8 players
holding stakes on all four chances (shuffles excluded), shoes shuffled per second with
SABOT-SHUFFLE-1, the exact odds of a 6-deck shoe, and the Monte-Carlo's coups per second.

``run()`` returns rows of (name, value, unit); ``python -m bench engine`` prints them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from uuid import UUID

from domain.cards import Card, DeckKind
from domain.shuffle import load_sabot
from domain.trente_et_quarante import montecarlo
from domain.trente_et_quarante.chances import Chance
from domain.trente_et_quarante.deal import deal_coup, deal_shoe
from domain.trente_et_quarante.layout import Layout, Step, place_stake
from domain.trente_et_quarante.odds import Composition, coup_odds, french_coup_odds, house_edges
from domain.trente_et_quarante.outcome import judge
from domain.trente_et_quarante.rules import CutCardRule, HouseRules, house_rules
from domain.trente_et_quarante.settlement import settle

Row = tuple[str, float, str]
PLAYERS = [f"p{i}" for i in range(8)]
SEED = bytes(range(32))
TARGET_COUPS_PER_S = 20_000
TARGET_SHOES_PER_S = 500
TARGET_EXACT_S = 5.0


def _shoes(count: int, decks: int = 6) -> list[tuple[Card, ...]]:
    return [
        load_sabot(SEED, UUID(int=i + 1), DeckKind.FRENCH_52, decks, 150).cards
        for i in range(count)
    ]


def _full_layout(rules: HouseRules, chances_per_player: tuple[Chance, ...] | None) -> Layout:
    """8 players; each stakes every chance (opposed stakes allowed), or the given ones in turn."""
    layout = Layout()
    n = 0
    for i, player in enumerate(PLAYERS):
        mine = chances_per_player or (
            (Chance.NOIR, Chance.COULEUR) if i % 2 == 0 else (Chance.ROUGE, Chance.INVERSE)
        )
        for chance in mine:
            n += 1
            layout = place_stake(rules, layout, f"s{n}", player, chance, 1000).layout
    return layout


def _timed(body: Callable[[], int], min_seconds: float = 1.5) -> float:
    """Units per second: repeat ``body`` (which returns the units it did) for min_seconds."""
    done = 0
    start = time.perf_counter()
    while True:
        done += body()
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return done / elapsed


def coups_per_second(all_chances: bool) -> float:
    """Deal, judge and settle every coup of pre-shuffled shoes against a full layout."""
    rules = house_rules("francaise", {"allow_opposed_stakes": "true"} if all_chances else None)
    layout = _full_layout(
        rules,
        (Chance.NOIR, Chance.ROUGE, Chance.COULEUR, Chance.INVERSE) if all_chances else None,
    )
    shoes = _shoes(4)

    def one_shoe_each() -> int:
        coups = 0
        for cards in shoes:
            position = 0
            while True:
                coup = deal_coup(cards, position, CutCardRule.VOID_COUP)
                step: Step = settle(rules, layout, judge(coup))
                coups += 1 if step.layout is not None else 0  # keep the result alive
                if coup.cut_card_reached:
                    break
                position = coup.next_position
        return coups

    return _timed(one_shoe_each)


def phase_microseconds() -> tuple[float, float]:
    """Microseconds per coup of each phase (8 players x 4 chances): deal+judge, then settle alone
    on the same pre-judged coups. Where the time of ``coups_per_second`` goes."""
    rules = house_rules("francaise", {"allow_opposed_stakes": "true"})
    layout = _full_layout(rules, (Chance.NOIR, Chance.ROUGE, Chance.COULEUR, Chance.INVERSE))
    shoes = _shoes(4)

    def deal_and_judge() -> int:
        coups = 0
        for cards in shoes:
            position = 0
            while True:
                coup = deal_coup(cards, position, CutCardRule.VOID_COUP)
                judge(coup)
                coups += 1
                if coup.cut_card_reached:
                    break
                position = coup.next_position
        return coups

    outcomes = [judge(coup) for cards in shoes for coup in deal_shoe(cards, CutCardRule.VOID_COUP)]

    def settle_only() -> int:
        for outcome in outcomes:
            settle(rules, layout, outcome)
        return len(outcomes)

    return 1e6 / _timed(deal_and_judge, 0.5), 1e6 / _timed(settle_only, 0.5)


def shoes_per_second() -> float:
    """SABOT-SHUFFLE-1 (HMAC_DRBG + Fisher–Yates) of 6-deck shoes, with the cut."""
    counter = [0]

    def one() -> int:
        counter[0] += 1
        load_sabot(SEED, UUID(int=counter[0]), DeckKind.FRENCH_52, 6, 150)
        return 1

    return _timed(one, 1.0)


def exact_odds_seconds(decks: int) -> float:
    """The exact computation (``french_coup_odds`` reads its result from a table)."""
    start = time.perf_counter()
    coup_odds(Composition.french(decks))
    return time.perf_counter() - start


def monte_carlo_coups_per_second() -> float:
    rules = house_rules("francaise")
    edges = house_edges(french_coup_odds(1), rules)
    coups = 5000
    start = time.perf_counter()
    montecarlo.run(rules, edges, coups, 1)
    return coups / (time.perf_counter() - start)


def run() -> list[Row]:
    rows: list[Row] = []
    c16 = coups_per_second(False)
    rows.append(("coups/s dealt+judged+settled, 8 players x 2 stakes", c16, "coups/s"))
    c32 = coups_per_second(True)
    rows.append(("coups/s dealt+judged+settled, 8 players x 4 chances", c32, "coups/s"))
    rows.append(("  target", float(TARGET_COUPS_PER_S), "coups/s"))
    deal_us, settle_us = phase_microseconds()
    rows.append(("  of which deal+judge (8 x 4 chances)", deal_us, "us/coup"))
    rows.append(("  of which settle (8 x 4 chances)", settle_us, "us/coup"))
    rows.append(("shoes/s SABOT-SHUFFLE-1, 6 decks", shoes_per_second(), "shoes/s"))
    rows.append(("  target", float(TARGET_SHOES_PER_S), "shoes/s"))
    rows.append(("exact odds, 6 decks", exact_odds_seconds(6), "s"))
    rows.append(("exact odds, 8 decks", exact_odds_seconds(8), "s"))
    rows.append(("  target (6 decks)", TARGET_EXACT_S, "s"))
    rows.append(
        (
            "monte-carlo coups/s (francaise: 10 stakes kept on the layout)",
            monte_carlo_coups_per_second(),
            "coups/s",
        )
    )
    return rows


if __name__ == "__main__":
    for name, value, unit in run():
        print(f"{name:<55} {value:12,.2f} {unit}")
