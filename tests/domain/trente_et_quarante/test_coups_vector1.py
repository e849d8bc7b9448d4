"""Vector 1's three coups (31 refait, 31 refait again, Noir wins with Couleur) under each preset,
with stakes on all four chances, played through the betting commands and ``settle``."""

from __future__ import annotations

import pytest

from domain.errors import FailedPrecondition
from domain.shuffle import Sabot
from domain.trente_et_quarante.chances import Chance
from domain.trente_et_quarante.deal import deal_shoe
from domain.trente_et_quarante.layout import (
    Fate,
    Layout,
    Refait31Choice,
    Role,
    StakeStatus,
    Step,
    choose_refait31,
    close_betting,
    half_withdraw,
    insure,
    move_imprisoned,
    place_stake,
    withdraw_stake,
)
from domain.trente_et_quarante.outcome import Outcome, judge
from domain.trente_et_quarante.rules import HouseRules, house_rules
from domain.trente_et_quarante.settlement import settle

FREE, PRISON, SECOND = StakeStatus.FREE, StakeStatus.PRISON, StakeStatus.SECOND_PRISON


@pytest.fixture(scope="module")
def outcomes(vector1: Sabot) -> tuple[Outcome, ...]:
    """Refait 31, refait 31, Noir wins with Couleur."""
    return tuple(judge(c) for c in deal_shoe(vector1.cards, house_rules().cut_card)[:3])


def table(rules: HouseRules, r_choice: Refait31Choice | None = None) -> Layout:
    """Player 1 on Noir (1001, odd) and Couleur; player 2 on Rouge and Inverse."""
    layout = Layout()
    for stake_id, player, chance, amount, choice in (
        ("n", "p1", Chance.NOIR, 1001, None),
        ("c", "p1", Chance.COULEUR, 1000, None),
        ("r", "p2", Chance.ROUGE, 1000, r_choice),
        ("i", "p2", Chance.INVERSE, 1000, None),
    ):
        layout = place_stake(rules, layout, stake_id, player, chance, amount, choice).layout
    return layout


def moves(step: Step) -> list[tuple[str, str, int]]:
    return [(m.kind.value, m.stake_id, m.amount) for m in step.movements]


def fates(step: Step) -> dict[str, Fate]:
    return {f.stake_id: f.fate for f in step.fates}


def held(step: Step) -> dict[str, tuple[int, StakeStatus]]:
    return {s.stake_id: (s.amount, s.status) for s in step.layout.stakes}


def test_francaise_choice_returned_and_second_prison(outcomes: tuple[Outcome, ...]) -> None:
    rules = house_rules("francaise")
    layout = table(rules, r_choice=Refait31Choice.PARTAGE)  # p2 chose partage when placing
    one = settle(rules, layout, outcomes[0])
    # Couleur/Inverse returned; Rouge halved by its choice; Noir, with no choice, awaits it.
    assert moves(one) == [("partage", "r", 500), ("return", "c", 1000), ("return", "i", 1000)]
    assert fates(one) == {
        "n": Fate.IMPRISONED,
        "c": Fate.RETURNED,
        "r": Fate.PARTAGE,
        "i": Fate.RETURNED,
    }
    assert held(one) == {"n": (1001, PRISON), "r": (500, FREE)}
    assert one.layout.get("n").awaiting_choice
    closed = close_betting(rules, one.layout)
    assert fates(closed) == {"n": Fate.IMPRISONED} and moves(closed) == []
    assert not closed.layout.get("n").awaiting_choice

    two = settle(rules, closed.layout, outcomes[1])
    assert moves(two) == [("partage", "r", 250)]
    assert fates(two) == {"n": Fate.SECOND_PRISON, "r": Fate.PARTAGE}
    assert held(two) == {"n": (1001, SECOND), "r": (250, FREE)}

    three = settle(rules, close_betting(rules, two.layout).layout, outcomes[2])
    assert moves(three) == [("collection", "r", 250)]
    assert fates(three) == {"n": Fate.BACK_TO_PRISON, "r": Fate.LOST}
    assert held(three) == {"n": (1001, PRISON)}


def test_francaise_partage_chosen_after_the_refait(outcomes: tuple[Outcome, ...]) -> None:
    rules = house_rules("francaise")
    one = settle(rules, table(rules), outcomes[0])
    assert held(one) == {"n": (1001, PRISON), "r": (1000, PRISON)}
    chosen = choose_refait31(rules, one.layout, "n", Refait31Choice.PARTAGE)
    assert moves(chosen) == [("partage", "n", 500)]
    assert fates(chosen) == {"n": Fate.PARTAGE}
    kept = choose_refait31(rules, chosen.layout, "r", Refait31Choice.PRISON)
    assert moves(kept) == [] and fates(kept) == {"r": Fate.IMPRISONED}
    assert held(kept) == {"n": (501, FREE), "r": (1000, PRISON)}
    with pytest.raises(FailedPrecondition) as err:  # the choice is made once
        choose_refait31(rules, kept.layout, "r", Refait31Choice.PARTAGE)
    assert err.value.field == "stake_id"

    two = settle(rules, close_betting(rules, kept.layout).layout, outcomes[1])
    assert moves(two) == [("partage", "n", 250)]  # the recorded choice applies again
    assert held(two) == {"n": (251, FREE), "r": (1000, SECOND)}

    three = settle(rules, two.layout, outcomes[2])
    assert moves(three) == [("prison_loss", "r", 1000), ("return", "n", 251), ("payment", "n", 251)]
    assert fates(three) == {"n": Fate.WON, "r": Fate.PRISON_LOST}
    assert three.layout.stakes == ()


def test_espanola_partage_like_colours(outcomes: tuple[Outcome, ...]) -> None:
    rules = house_rules("espanola")
    one = settle(rules, table(rules), outcomes[0])
    # Couleur/Inverse before Noir/Rouge, then layout order; the odd unit stays with the player.
    assert moves(one) == [
        ("partage", "c", 500),
        ("partage", "i", 500),
        ("partage", "n", 500),
        ("partage", "r", 500),
    ]
    assert set(fates(one).values()) == {Fate.PARTAGE}
    assert held(one) == {"n": (501, FREE), "c": (500, FREE), "r": (500, FREE), "i": (500, FREE)}

    two = settle(rules, one.layout, outcomes[1])
    assert held(two) == {"n": (251, FREE), "c": (250, FREE), "r": (250, FREE), "i": (250, FREE)}

    three = settle(rules, two.layout, outcomes[2])
    assert moves(three) == [
        ("collection", "i", 250),
        ("collection", "r", 250),
        ("return", "c", 250),
        ("payment", "c", 250),
        ("return", "n", 251),
        ("payment", "n", 251),
    ]
    assert fates(three) == {"n": Fate.WON, "c": Fate.WON, "r": Fate.LOST, "i": Fate.LOST}
    assert three.layout.stakes == ()


def test_espanola_withdrawing_the_kept_half(outcomes: tuple[Outcome, ...]) -> None:
    rules = house_rules("espanola")
    one = settle(rules, table(rules), outcomes[0])
    out = withdraw_stake(rules, one.layout, "n")
    assert moves(out) == [("withdrawal", "n", 501)]
    assert fates(out) == {"n": Fate.WITHDRAWN}


def test_italiana_prison_second_prison_release(outcomes: tuple[Outcome, ...]) -> None:
    rules = house_rules("italiana")
    one = settle(rules, table(rules), outcomes[0])
    assert moves(one) == []
    assert set(fates(one).values()) == {Fate.IMPRISONED}
    assert {s.status for s in one.layout.stakes} == {PRISON}
    assert not any(s.awaiting_choice for s in one.layout.stakes)  # no choice under `prison`

    two = settle(rules, one.layout, outcomes[1])
    assert moves(two) == [] and set(fates(two).values()) == {Fate.SECOND_PRISON}

    three = settle(rules, two.layout, outcomes[2])
    assert moves(three) == [("prison_loss", "i", 1000), ("prison_loss", "r", 1000)]
    assert fates(three) == {
        "n": Fate.BACK_TO_PRISON,
        "c": Fate.BACK_TO_PRISON,
        "r": Fate.PRISON_LOST,
        "i": Fate.PRISON_LOST,
    }
    assert held(three) == {"n": (1001, PRISON), "c": (1000, PRISON)}


def test_italiana_with_prison_lost_on_a_second_31(outcomes: tuple[Outcome, ...]) -> None:
    rules = house_rules("italiana", {"prison_refait31": "lost"})
    one = settle(rules, table(rules), outcomes[0])
    two = settle(rules, one.layout, outcomes[1])
    assert moves(two) == [
        ("prison_loss", "c", 1000),
        ("prison_loss", "i", 1000),
        ("prison_loss", "n", 1001),
        ("prison_loss", "r", 1000),
    ]
    assert two.layout.stakes == ()


def test_italiana_release_from_first_prison(outcomes: tuple[Outcome, ...]) -> None:
    rules = house_rules("italiana")
    one = settle(rules, table(rules), outcomes[0])
    three = settle(rules, one.layout, outcomes[2])  # a decided coup straight after the prison
    assert moves(three) == [
        ("prison_loss", "i", 1000),
        ("prison_loss", "r", 1000),
        ("return", "c", 1000),
        ("return", "n", 1001),
    ]
    assert fates(three) == {
        "n": Fate.RELEASED,
        "c": Fate.RELEASED,
        "r": Fate.PRISON_LOST,
        "i": Fate.PRISON_LOST,
    }
    assert three.layout.stakes == ()


def test_insured_stakes_are_untouched_by_a_31(outcomes: tuple[Outcome, ...]) -> None:
    rules = house_rules("espanola")
    insured = insure(rules, table(rules), "n")
    assert moves(insured) == [("premium", "n", 11)]  # ceil(1001 / 100)
    assert insured.movements[0].destination.value == "house_insurance"
    one = settle(rules, insured.layout, outcomes[0])
    assert fates(one)["n"] is Fate.VOID
    assert ("partage", "n", 500) not in moves(one)
    assert one.layout.get("n").amount == 1001 and not one.layout.get("n").insured
    two = settle(rules, one.layout, outcomes[1])  # insurance covered one coup only
    assert fates(two)["n"] is Fate.PARTAGE and two.layout.get("n").amount == 501


def test_an_insured_prisoner_stays_in_first_prison(outcomes: tuple[Outcome, ...]) -> None:
    rules = house_rules("italiana")
    one = settle(rules, table(rules), outcomes[0])
    insured = insure(rules, one.layout, "c")
    assert moves(insured) == [("premium", "c", 10)]
    two = settle(rules, insured.layout, outcomes[1])
    assert fates(two)["c"] is Fate.VOID
    assert two.layout.get("c").status is PRISON and not two.layout.get("c").insured
    assert two.layout.get("n").status is SECOND


def test_italiana_moved_and_half_withdrawn_prisoners(outcomes: tuple[Outcome, ...]) -> None:
    rules = house_rules("italiana")
    one = settle(rules, table(rules), outcomes[0])
    moved = move_imprisoned(rules, one.layout, "n", Chance.ROUGE)
    assert moves(moved) == [("partage", "n", 500)]
    assert fates(moved) == {"n": Fate.MOVED}
    stake = moved.layout.get("n")
    assert (stake.chance, stake.amount, stake.status) == (Chance.ROUGE, 501, PRISON)
    assert moved.fates[0].chance is Chance.ROUGE

    halved = half_withdraw(rules, moved.layout, "i")
    assert moves(halved) == [("partage", "i", 500), ("withdrawal", "i", 500)]
    assert fates(halved) == {"i": Fate.HALF_WITHDRAWN}
    assert not halved.layout.has("i")

    three = settle(rules, halved.layout, outcomes[2])  # Noir and Couleur win
    assert fates(three) == {"n": Fate.PRISON_LOST, "c": Fate.RELEASED, "r": Fate.PRISON_LOST}
    assert moves(three) == [
        ("prison_loss", "n", 501),
        ("prison_loss", "r", 1000),
        ("return", "c", 1000),
    ]


def test_espanola_money_per_player_over_the_three_coups(outcomes: tuple[Outcome, ...]) -> None:
    """Placements and settlements, accounted like a ledger: what each player and the house hold."""
    rules = house_rules("espanola")
    steps: list[Step] = []
    layout = Layout()
    for stake_id, player, chance, amount in (
        ("n", "p1", Chance.NOIR, 1001),
        ("c", "p1", Chance.COULEUR, 1000),
        ("r", "p2", Chance.ROUGE, 1000),
        ("i", "p2", Chance.INVERSE, 1000),
    ):
        steps.append(place_stake(rules, layout, stake_id, player, chance, amount))
        layout = steps[-1].layout
    for outcome in outcomes:
        steps.append(settle(rules, layout, outcome))
        layout = steps[-1].layout
    players: dict[str, int] = {"p1": 0, "p2": 0}
    roles: dict[str, int] = {}
    for step in steps:
        for m in step.movements:
            sign = {m.source: -1, m.destination: +1}
            if m.source.value == "player" or m.destination.value == "player":
                players[m.player] += sign.get(Role.PLAYER, 0) * m.amount
            roles[m.source.value] = roles.get(m.source.value, 0) - m.amount
            roles[m.destination.value] = roles.get(m.destination.value, 0) + m.amount
    # p1: staked 2001; the house halved both stakes twice (1500); Noir and Couleur then won 251
    # and 250 at even money: back 1002. p2: staked 2000, halved twice (1500), lost the rest.
    assert players == {"p1": -999, "p2": -2000}
    assert roles == {
        "player": -2999,
        "layout": 0,
        "house_partage": 3000,
        "bank": 500 - 501,
    }
    assert layout.stakes == ()
