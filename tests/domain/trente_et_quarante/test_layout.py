"""The betting commands: what they move, and the field each refusal names."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from domain.cards import Card
from domain.errors import FailedPrecondition, InvalidArgument, NotFound, RuleViolation
from domain.shuffle import Sabot
from domain.trente_et_quarante.chances import Chance
from domain.trente_et_quarante.deal import deal_coup
from domain.trente_et_quarante.layout import (
    Fate,
    Layout,
    Refait31Choice,
    Role,
    StakeStatus,
    Step,
    choose_refait31,
    close_betting,
    end_of_shoe,
    half_withdraw,
    insure,
    move_imprisoned,
    place_stake,
    raise_stake,
    withdraw_stake,
)
from domain.trente_et_quarante.outcome import Outcome, Result, judge
from domain.trente_et_quarante.rules import CutCardRule, HouseRules, house_rules
from domain.trente_et_quarante.settlement import settle

Build = Callable[[str], tuple[Card, ...]]
FRANCAISE = house_rules("francaise")
ITALIANA = house_rules("italiana")
REFAIT31 = Outcome(Result.REFAIT, 31, 31, 31, None, frozenset(), "un après")


def moves(step: Step) -> list[tuple[str, str, int]]:
    return [(m.kind.value, m.stake_id, m.amount) for m in step.movements]


def two_players(rules: HouseRules = FRANCAISE) -> Layout:
    layout = place_stake(rules, Layout(), "n", "p1", Chance.NOIR, 1000).layout
    layout = place_stake(rules, layout, "c", "p1", Chance.COULEUR, 400).layout
    layout = place_stake(rules, layout, "r", "p2", Chance.ROUGE, 300).layout
    return place_stake(rules, layout, "i", "p2", Chance.INVERSE, 200).layout


def test_placing_moves_the_stake_from_player_to_layout() -> None:
    step = place_stake(FRANCAISE, Layout(), "s1", "p1", Chance.NOIR, 500)
    (m,) = step.movements
    assert (m.kind.value, m.amount, m.source, m.destination) == (
        "stake",
        500,
        Role.PLAYER,
        Role.LAYOUT,
    )
    assert step.fates[0].fate is Fate.PLACED and step.fates[0].amount_after == 500
    assert step.layout.get("s1").status is StakeStatus.FREE
    assert step.layout.of_player("p1") == step.layout.stakes


@pytest.mark.parametrize("amount", [99, 1_000_001, 0, -5])
def test_amount_outside_the_table_limits(amount: int) -> None:
    with pytest.raises(InvalidArgument) as err:
        place_stake(FRANCAISE, Layout(), "s1", "p1", Chance.NOIR, amount)
    assert err.value.field == "amount"


def test_limits_are_inclusive() -> None:
    layout = place_stake(FRANCAISE, Layout(), "lo", "p1", Chance.NOIR, 100).layout
    layout = place_stake(FRANCAISE, layout, "hi", "p2", Chance.NOIR, 1_000_000).layout
    assert [s.amount for s in layout.stakes] == [100, 1_000_000]
    # the maximum is per player and chance: p1's two stakes may reach it together, exactly
    layout = place_stake(FRANCAISE, layout, "lo2", "p1", Chance.NOIR, 999_900).layout
    assert layout.total_on("p1", Chance.NOIR) == 1_000_000


def test_colour_chances_not_offered_under_noir_rouge() -> None:
    rules = house_rules("francaise", {"chances": "noir_rouge"})
    with pytest.raises(InvalidArgument) as err:
        place_stake(rules, Layout(), "s1", "p1", Chance.INVERSE, 500)
    assert err.value.field == "chance"
    assert place_stake(rules, Layout(), "s1", "p1", Chance.ROUGE, 500).layout.stakes


def test_unknown_chance() -> None:
    with pytest.raises(InvalidArgument) as err:
        place_stake(FRANCAISE, Layout(), "s1", "p1", "vert", 500)  # type: ignore[arg-type]
    assert err.value.field == "chance"


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (Chance.NOIR, Chance.ROUGE),
        (Chance.ROUGE, Chance.NOIR),
        (Chance.COULEUR, Chance.INVERSE),
        (Chance.INVERSE, Chance.COULEUR),
    ],
)
def test_opposed_stakes_are_refused_unless_allowed(first: Chance, second: Chance) -> None:
    layout = place_stake(FRANCAISE, Layout(), "a", "p1", first, 500).layout
    with pytest.raises(FailedPrecondition) as err:
        place_stake(FRANCAISE, layout, "b", "p1", second, 500)
    assert err.value.field == "chance"
    assert place_stake(FRANCAISE, layout, "b", "p2", second, 500).layout.has("b")
    allowed = house_rules("francaise", {"allow_opposed_stakes": "true"})
    assert place_stake(allowed, layout, "b", "p1", second, 500).layout.has("b")


def test_opposed_to_a_stake_in_prison_is_refused() -> None:
    layout = place_stake(ITALIANA, Layout(), "a", "p1", Chance.NOIR, 500).layout
    jailed = settle(ITALIANA, layout, REFAIT31).layout
    with pytest.raises(FailedPrecondition):
        place_stake(ITALIANA, jailed, "b", "p1", Chance.ROUGE, 500)


def test_duplicate_stake_id() -> None:
    layout = place_stake(FRANCAISE, Layout(), "a", "p1", Chance.NOIR, 500).layout
    with pytest.raises(FailedPrecondition) as err:
        place_stake(FRANCAISE, layout, "a", "p2", Chance.ROUGE, 500)
    assert err.value.field == "stake_id"


@pytest.mark.parametrize(("field", "args"), [("stake_id", ("", "p1")), ("player", ("a", ""))])
def test_empty_names(field: str, args: tuple[str, str]) -> None:
    with pytest.raises(InvalidArgument) as err:
        place_stake(FRANCAISE, Layout(), *args, Chance.NOIR, 500)
    assert err.value.field == field


def test_a_choice_only_under_player_choice() -> None:
    step = place_stake(FRANCAISE, Layout(), "a", "p1", Chance.NOIR, 500, Refait31Choice.PRISON)
    assert step.layout.get("a").choice is Refait31Choice.PRISON
    with pytest.raises(InvalidArgument) as err:
        place_stake(ITALIANA, Layout(), "a", "p1", Chance.NOIR, 500, Refait31Choice.PRISON)
    assert err.value.field == "choice"
    with pytest.raises(InvalidArgument) as err:
        choose_refait31(ITALIANA, step.layout, "a", Refait31Choice.PARTAGE)
    assert err.value.field == "choice"


def test_choice_in_advance_on_a_free_stake() -> None:
    layout = two_players()
    step = choose_refait31(FRANCAISE, layout, "n", Refait31Choice.PARTAGE)
    assert step.movements == () and step.fates[0].fate is Fate.CHOSEN
    assert step.layout.get("n").choice is Refait31Choice.PARTAGE


def test_unknown_stake_is_not_found() -> None:
    commands: tuple[Callable[[], Step], ...] = (
        lambda: raise_stake(FRANCAISE, Layout(), "x", 100),
        lambda: withdraw_stake(FRANCAISE, Layout(), "x"),
        lambda: insure(FRANCAISE, Layout(), "x"),
        lambda: choose_refait31(FRANCAISE, Layout(), "x", Refait31Choice.PRISON),
        lambda: half_withdraw(ITALIANA, Layout(), "x"),
        lambda: move_imprisoned(ITALIANA, Layout(), "x", Chance.NOIR),
    )
    for command in commands:
        with pytest.raises(NotFound) as err:
            command()
        assert err.value.field == "stake_id"


def test_refait_above_31_then_raise_and_withdraw(cards: Build) -> None:
    layout = two_players()
    sabot = cards("TS TS TS 7C TH TH TH 7H 2C 3C 4C 5C 6C")
    outcome = judge(deal_coup(sabot, 0, CutCardRule.VOID_COUP))
    assert outcome.result is Result.REFAIT and outcome.refait_total == 37
    settled = settle(FRANCAISE, layout, outcome)
    assert settled.movements == ()
    assert {f.fate for f in settled.fates} == {Fate.VOID} and len(settled.fates) == 4
    assert settled.layout == layout

    raised = raise_stake(FRANCAISE, settled.layout, "n", 500)
    assert moves(raised) == [("stake", "n", 500)]
    assert raised.fates[0].fate is Fate.RAISED
    assert (raised.fates[0].amount_before, raised.fates[0].amount_after) == (1000, 1500)
    withdrawn = withdraw_stake(FRANCAISE, raised.layout, "r")
    assert moves(withdrawn) == [("withdrawal", "r", 300)]
    assert withdrawn.movements[0].destination is Role.PLAYER
    assert [s.stake_id for s in withdrawn.layout.stakes] == ["n", "c", "i"]
    assert withdrawn.layout.get("n").amount == 1500


def test_raise_limits() -> None:
    layout = two_players()
    with pytest.raises(FailedPrecondition) as err:
        raise_stake(FRANCAISE, layout, "n", 999_001)
    assert err.value.field == "amount"
    assert raise_stake(FRANCAISE, layout, "n", 999_000).layout.get("n").amount == 1_000_000
    for bad in (0, -1):
        with pytest.raises(InvalidArgument) as bad_err:
            raise_stake(FRANCAISE, layout, "n", bad)
        assert bad_err.value.field == "amount"


def test_only_free_stakes_are_raised_or_withdrawn() -> None:
    jailed = settle(ITALIANA, two_players(ITALIANA), REFAIT31).layout
    commands: tuple[Callable[[], Step], ...] = (
        lambda: raise_stake(ITALIANA, jailed, "n", 100),
        lambda: withdraw_stake(ITALIANA, jailed, "n"),
    )
    for command in commands:
        with pytest.raises(FailedPrecondition) as err:
            command()
        assert err.value.field == "stake_id"


def test_insurance_premium_rounds_up_with_a_minimum_of_one() -> None:
    layout = place_stake(FRANCAISE, Layout(), "a", "p1", Chance.NOIR, 100).layout
    layout = place_stake(FRANCAISE, layout, "b", "p1", Chance.NOIR, 150).layout
    assert moves(insure(FRANCAISE, layout, "a")) == [("premium", "a", 1)]
    assert moves(insure(FRANCAISE, layout, "b")) == [("premium", "b", 2)]
    cheap = house_rules("francaise", {"insurance_rate": "0.1%", "min_stake": "1"})
    tiny = place_stake(cheap, Layout(), "t", "p1", Chance.NOIR, 1).layout
    assert moves(insure(cheap, tiny, "t")) == [("premium", "t", 1)]


def test_insuring_twice_or_without_insurance_is_refused() -> None:
    once = insure(FRANCAISE, two_players(), "n")
    assert once.fates[0].fate is Fate.INSURED and once.layout.get("n").insured
    with pytest.raises(FailedPrecondition) as err:
        insure(FRANCAISE, once.layout, "n")
    assert err.value.field == "stake_id"
    with pytest.raises(FailedPrecondition) as err:
        raise_stake(FRANCAISE, once.layout, "n", 100)
    assert err.value.reason == "STAKE_INSURED"
    free = house_rules("francaise", {"insurance_rate": "0"})
    with pytest.raises(FailedPrecondition):
        insure(free, two_players(free), "n")


def test_insurance_ends_with_any_coup(vector2: Sabot) -> None:
    outcome = judge(deal_coup(vector2.cards, 0, CutCardRule.VOID_COUP))
    jailed = settle(ITALIANA, two_players(ITALIANA), REFAIT31)
    insured = insure(ITALIANA, jailed.layout, "c").layout
    step = settle(ITALIANA, insured, outcome)
    assert all(not s.insured for s in step.layout.stakes)


def test_vector2_coup1_settlement(vector2: Sabot) -> None:
    outcome = judge(deal_coup(vector2.cards, 0, CutCardRule.VOID_COUP))
    step = settle(FRANCAISE, two_players(), outcome)  # Noir wins with Inverse
    assert moves(step) == [
        ("collection", "c", 400),
        ("collection", "r", 300),
        ("return", "i", 200),
        ("payment", "i", 200),
        ("return", "n", 1000),
        ("payment", "n", 1000),
    ]
    payment = step.movements[-1]
    assert (payment.source, payment.destination) == (Role.BANK, Role.PLAYER)
    assert step.movements[0].destination is Role.BANK
    assert step.layout.stakes == ()


def test_void_coup_leaves_everything(cards: Build) -> None:
    outcome = judge(deal_coup(cards("TS TS TS AS TH TH TD 5C 2C 3C 4C"), 0, CutCardRule.VOID_COUP))
    layout = insure(FRANCAISE, two_players(), "n").layout
    step = settle(FRANCAISE, layout, outcome)
    assert step.movements == () and {f.fate for f in step.fates} == {Fate.VOID}
    assert [(s.stake_id, s.amount) for s in step.layout.stakes] == [
        ("n", 1000),
        ("c", 400),
        ("r", 300),
        ("i", 200),
    ]
    assert not step.layout.get("n").insured


def test_half_withdrawal_and_moving_need_their_option_and_a_prisoner() -> None:
    layout = two_players(ITALIANA)
    commands: tuple[Callable[[], Step], ...] = (
        lambda: half_withdraw(FRANCAISE, two_players(), "n"),
        lambda: move_imprisoned(FRANCAISE, two_players(), "n", Chance.ROUGE),
        lambda: half_withdraw(ITALIANA, layout, "n"),
        lambda: move_imprisoned(ITALIANA, layout, "n", Chance.ROUGE),
    )
    for command in commands:
        with pytest.raises(FailedPrecondition) as err:
            command()
        assert err.value.field == "stake_id"


def test_moving_a_prisoner_must_not_oppose_another_stake() -> None:
    jailed = settle(ITALIANA, two_players(ITALIANA), REFAIT31).layout
    with pytest.raises(FailedPrecondition) as err:
        move_imprisoned(ITALIANA, jailed, "c", Chance.ROUGE)  # p1 holds Noir
    assert err.value.field == "chance"
    with pytest.raises(InvalidArgument) as bad:
        move_imprisoned(ITALIANA, jailed, "c", Chance.COULEUR)
    assert bad.value.field == "chance"
    moved = move_imprisoned(ITALIANA, jailed, "c", Chance.INVERSE)  # its own opposite: fine
    assert moved.layout.get("c").chance is Chance.INVERSE


def test_a_stake_of_one_unit_gives_the_house_nothing() -> None:
    rules = house_rules("italiana", {"min_stake": "1"})
    layout = place_stake(rules, Layout(), "a", "p1", Chance.NOIR, 1).layout
    layout = place_stake(rules, layout, "b", "p1", Chance.NOIR, 1).layout
    jailed = settle(rules, layout, REFAIT31).layout
    assert moves(half_withdraw(rules, jailed, "a")) == [("withdrawal", "a", 1)]
    moved = move_imprisoned(rules, jailed, "b", Chance.COULEUR)
    assert moved.movements == () and moved.layout.get("b").amount == 1
    partage = house_rules("espanola", {"min_stake": "1"})
    one = place_stake(partage, Layout(), "a", "p1", Chance.NOIR, 1).layout
    step = settle(partage, one, REFAIT31)
    assert step.movements == () and step.fates[0].fate is Fate.PARTAGE
    assert step.layout.get("a").amount == 1


def test_close_betting_without_awaiting_stakes_changes_nothing() -> None:
    layout = two_players()
    step = close_betting(FRANCAISE, layout)
    assert step.layout == layout and step.movements == () and step.fates == ()


def test_end_of_shoe_returns_free_stakes_and_keeps_prisoners() -> None:
    jailed = settle(ITALIANA, two_players(ITALIANA), REFAIT31).layout
    layout = place_stake(ITALIANA, jailed, "x", "p3", Chance.ROUGE, 700).layout
    step = end_of_shoe(layout)
    assert moves(step) == [("return", "x", 700)]
    assert [f.fate for f in step.fates] == [Fate.RETURNED]
    assert [s.stake_id for s in step.layout.stakes] == ["n", "c", "r", "i"]


def test_every_refusal_is_a_rule_violation_with_a_reason() -> None:
    with pytest.raises(RuleViolation) as err:
        place_stake(FRANCAISE, Layout(), "a", "p1", Chance.NOIR, 1)
    assert err.value.reason == "OUT_OF_RANGE" and "amount" in str(err.value)


def test_chance_may_be_given_as_text() -> None:
    step = place_stake(FRANCAISE, Layout(), "a", "p1", "couleur", 500)  # type: ignore[arg-type]
    assert step.layout.get("a").chance is Chance.COULEUR


def test_layout_lookups() -> None:
    layout = two_players()
    assert [s.stake_id for s in layout.of_player("p2")] == ["r", "i"]
    assert layout.total == 1900
    with pytest.raises(NotFound) as err:
        layout.get("zz")
    assert err.value.field == "stake_id"
