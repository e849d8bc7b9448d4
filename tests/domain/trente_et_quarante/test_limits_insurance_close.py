"""RULES.md §1 as it reads since issue 12: the table maximum per player and chance, insurance only
where it insures, a prisoner's rule on any chance, and the stakes left when a table closes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.errors import FailedPrecondition, InvalidArgument, RuleViolation
from domain.trente_et_quarante.chances import COLOUR_CHANCES, Chance
from domain.trente_et_quarante.layout import (
    HOUSE_GIVES,
    HOUSE_TAKES,
    Fate,
    Layout,
    MovementKind,
    Refait31Choice,
    Role,
    StakeStatus,
    Step,
    choose_refait31,
    close_betting,
    close_table,
    end_of_shoe,
    half_withdraw,
    insure,
    move_imprisoned,
    new_stake,
    place_stake,
    raise_stake,
    withdraw_stake,
)
from domain.trente_et_quarante.outcome import Outcome, Result
from domain.trente_et_quarante.rules import PRESET_NAMES, HouseRules, PrisonersAtClose, house_rules
from domain.trente_et_quarante.settlement import settle

FRANCAISE = house_rules("francaise")
ITALIANA = house_rules("italiana")
MAX = FRANCAISE.max_stake
REFAIT31 = Outcome(Result.REFAIT, 31, 31, 31, None, frozenset(), "un après")
REFAIT35 = Outcome(Result.REFAIT, 35, 35, 35, None, frozenset(), "cinq après")
NOIR_COULEUR = Outcome(Result.NOIR, 31, 35, None, True, frozenset({Chance.NOIR, Chance.COULEUR}),
                       "")


def refused(command: Callable[[], Step], field: str, reason: str) -> FailedPrecondition:
    with pytest.raises(FailedPrecondition) as err:
        command()
    assert (err.value.field, err.value.reason) == (field, reason), err.value
    return err.value


# --- the table maximum, per player and chance --------------------------------------------------


def test_stacked_stakes_cannot_beat_the_maximum() -> None:
    """The issue's case: three stakes of the maximum by one player on noir in one coup."""
    layout = place_stake(FRANCAISE, Layout(), "a", "p1", Chance.NOIR, MAX).layout
    err = refused(lambda: place_stake(FRANCAISE, layout, "b", "p1", Chance.NOIR, MAX),
                  "amount", "ABOVE_MAXIMUM")
    assert "max_stake" in err.message and str(MAX) in err.message
    refused(lambda: place_stake(FRANCAISE, layout, "b", "p1", Chance.NOIR, 100),
            "amount", "ABOVE_MAXIMUM")  # the table minimum, even
    # another player, or another chance of the same player, has a maximum of its own
    other = place_stake(FRANCAISE, layout, "c", "p2", Chance.NOIR, MAX).layout
    other = place_stake(FRANCAISE, other, "d", "p1", Chance.COULEUR, MAX).layout
    assert other.total_on("p1", Chance.NOIR) == MAX == other.total_on("p2", Chance.NOIR)
    assert other.total_on("p1", Chance.COULEUR) == MAX


def test_several_stakes_reach_the_maximum_exactly_and_the_minimum_is_per_stake() -> None:
    layout = Layout()
    for i, amount in enumerate((400_000, 350_000, 250_000)):
        layout = place_stake(FRANCAISE, layout, f"s{i}", "p1", Chance.ROUGE, amount).layout
    assert layout.total_on("p1", Chance.ROUGE) == MAX
    with pytest.raises(InvalidArgument) as err:  # below the minimum, whatever the total
        place_stake(FRANCAISE, Layout(), "x", "p1", Chance.ROUGE, FRANCAISE.min_stake - 1)
    assert err.value.field == "amount"
    with pytest.raises(InvalidArgument) as err:  # one stake above the maximum: bad input
        place_stake(FRANCAISE, Layout(), "x", "p1", Chance.ROUGE, MAX + 1)
    assert err.value.field == "amount"


def test_raises_count_every_stake_of_the_player_on_the_chance() -> None:
    layout = place_stake(FRANCAISE, Layout(), "a", "p1", Chance.NOIR, 600_000).layout
    layout = place_stake(FRANCAISE, layout, "b", "p1", Chance.NOIR, 300_000).layout
    refused(lambda: raise_stake(FRANCAISE, layout, "a", 100_001), "amount", "ABOVE_MAXIMUM")
    refused(lambda: raise_stake(FRANCAISE, layout, "b", 100_001), "amount", "ABOVE_MAXIMUM")
    raised = raise_stake(FRANCAISE, layout, "b", 100_000).layout
    assert raised.total_on("p1", Chance.NOIR) == MAX
    assert raised.get("b").amount == 400_000
    # withdrawing makes room again
    lighter = withdraw_stake(FRANCAISE, raised, "a").layout
    assert lighter.total_on("p1", Chance.NOIR) == 400_000
    assert raise_stake(FRANCAISE, lighter, "b", 600_000).layout.total_on("p1", Chance.NOIR) == MAX


def test_stakes_carried_over_count_free_or_in_prison() -> None:
    # a prisoner of 800,000 on noir (italiana: prison on a 31), then the next coup's betting
    jailed = place_stake(ITALIANA, Layout(), "j", "p1", Chance.NOIR, 800_000).layout
    jailed = settle(ITALIANA, jailed, REFAIT31).layout
    assert jailed.get("j").status is StakeStatus.PRISON
    refused(lambda: place_stake(ITALIANA, jailed, "n", "p1", Chance.NOIR, 200_001),
            "amount", "ABOVE_MAXIMUM")
    assert place_stake(ITALIANA, jailed, "n", "p1", Chance.NOIR, 200_000).layout.total_on(
        "p1", Chance.NOIR) == MAX
    # a void coup carries free stakes over as they were: they count too
    kept = place_stake(FRANCAISE, Layout(), "v", "p2", Chance.ROUGE, 700_000).layout
    kept = settle(FRANCAISE, kept, REFAIT35).layout
    refused(lambda: place_stake(FRANCAISE, kept, "w", "p2", Chance.ROUGE, 300_001),
            "amount", "ABOVE_MAXIMUM")
    refused(lambda: raise_stake(FRANCAISE, kept, "v", 300_001), "amount", "ABOVE_MAXIMUM")


def test_stakes_already_above_the_maximum_stay_but_nothing_is_added() -> None:
    """A layout carried over from before the rule (the old ledger accepted stacked stakes):
    the stakes stay as they were placed, legally then; nothing may be added to that chance."""
    old = Layout(tuple(
        new_stake(f"o{i}", "p1", Chance.NOIR, MAX, StakeStatus.FREE, False, None, False)
        for i in range(3)
    ))
    assert old.total_on("p1", Chance.NOIR) == 3 * MAX
    kept = settle(FRANCAISE, old, REFAIT35).layout  # a void coup: they stay
    assert [s.amount for s in kept.stakes] == [MAX] * 3
    refused(lambda: place_stake(FRANCAISE, kept, "n", "p1", Chance.NOIR, 100),
            "amount", "ABOVE_MAXIMUM")
    refused(lambda: raise_stake(FRANCAISE, kept, "o0", 1), "amount", "ABOVE_MAXIMUM")
    fewer = withdraw_stake(FRANCAISE, withdraw_stake(FRANCAISE, kept, "o0").layout, "o1").layout
    refused(lambda: place_stake(FRANCAISE, fewer, "n", "p1", Chance.NOIR, 100),
            "amount", "ABOVE_MAXIMUM")  # at the maximum: still nothing more
    assert withdraw_stake(FRANCAISE, fewer, "o2").layout.total_on("p1", Chance.NOIR) == 0


def test_a_moved_prisoner_counts_on_its_new_chance() -> None:
    jailed = place_stake(ITALIANA, Layout(), "j", "p1", Chance.NOIR, 400_000).layout
    jailed = settle(ITALIANA, jailed, REFAIT31).layout
    jailed = place_stake(ITALIANA, jailed, "c", "p1", Chance.COULEUR, 900_000).layout
    refused(lambda: move_imprisoned(ITALIANA, jailed, "j", Chance.COULEUR),
            "chance", "ABOVE_MAXIMUM")  # 900,000 + 200,000
    room = withdraw_stake(ITALIANA, jailed, "c").layout
    room = place_stake(ITALIANA, room, "c", "p1", Chance.COULEUR, 800_000).layout
    moved = move_imprisoned(ITALIANA, room, "j", Chance.COULEUR).layout
    assert moved.total_on("p1", Chance.COULEUR) == MAX and moved.total_on("p1", Chance.NOIR) == 0


# --- insurance only where it insures -----------------------------------------------------------


@pytest.mark.parametrize("chance", sorted(COLOUR_CHANCES))
def test_insurance_is_refused_where_a_31_returns_the_stake(chance: Chance) -> None:
    layout = place_stake(FRANCAISE, Layout(), "s", "p1", chance, 1000).layout
    err = refused(lambda: insure(FRANCAISE, layout, "s"), "stake_id", "NOTHING_TO_INSURE")
    assert "couleur_inverse_on_refait31" in err.message and "returned" in err.message
    # where the colours are treated like the rows, or on a row chance, it is sold
    like = house_rules("francaise", {"couleur_inverse_on_refait31": "like_colours"})
    sold = insure(like, place_stake(like, Layout(), "s", "p1", chance, 1000).layout, "s")
    assert [m.kind for m in sold.movements] == [MovementKind.PREMIUM]
    row = place_stake(FRANCAISE, Layout(), "r", "p1", Chance.NOIR, 1000).layout
    assert insure(FRANCAISE, row, "r").layout.get("r").insured


def test_a_prisoner_on_couleur_can_be_insured_at_a_returned_table() -> None:
    """A prisoner follows prison_refait31 on any chance: a 31 touches it, insurance insures."""
    rules = house_rules("italiana", {"couleur_inverse_on_refait31": "returned"})
    jailed = settle(rules, place_stake(rules, Layout(), "j", "p1", Chance.NOIR, 1000).layout,
                    REFAIT31).layout
    moved = move_imprisoned(rules, jailed, "j", Chance.COULEUR).layout
    insured = insure(rules, moved, "j")
    assert insured.layout.get("j").insured
    assert settle(rules, insured.layout, REFAIT31).fates[0].fate is Fate.VOID


# --- a prisoner follows prison_refait31 whatever chance it lies on -----------------------------


@pytest.mark.parametrize(
    ("prison_rule", "fate", "status"),
    [("second_prison", Fate.SECOND_PRISON, StakeStatus.SECOND_PRISON),
     ("lost", Fate.PRISON_LOST, None)],
)
@pytest.mark.parametrize("target", sorted(COLOUR_CHANCES))
def test_a_moved_prisoner_on_a_second_31(
    prison_rule: str, fate: Fate, status: StakeStatus | None, target: Chance
) -> None:
    rules = house_rules("italiana", {"couleur_inverse_on_refait31": "returned",
                                     "prison_refait31": prison_rule})
    layout = place_stake(rules, Layout(), "j", "p1", Chance.NOIR, 1000).layout
    layout = settle(rules, layout, REFAIT31).layout  # first 31: prison
    layout = move_imprisoned(rules, layout, "j", target).layout  # half to the house, onto C/I
    assert (layout.get("j").chance, layout.get("j").amount) == (target, 500)
    second = settle(rules, layout, REFAIT31)  # a second 31: the prison rule, not "returned"
    (f,) = second.fates
    assert (f.fate, f.status_after) == (fate, status)
    if status is None:
        assert [(m.kind, m.amount, m.destination) for m in second.movements] == [
            (MovementKind.PRISON_LOSS, 500, Role.HOUSE_PRISON)]
    else:  # and a third 31 loses it
        third = settle(rules, second.layout, REFAIT31)
        assert third.fates[0].fate is Fate.PRISON_LOST
    # a free stake on the same chance at the same table is simply returned
    free = place_stake(rules, Layout(), "f", "p2", target, 1000).layout
    assert settle(rules, free, REFAIT31).fates[0].fate is Fate.RETURNED


# --- the stakes left when a table closes --------------------------------------------------------


def _closing_layout(rules: HouseRules) -> Layout:
    layout = place_stake(rules, Layout(), "n", "p1", Chance.NOIR, 1001).layout
    layout = place_stake(rules, layout, "c", "p2", Chance.COULEUR, 400).layout
    layout = settle(rules, layout, REFAIT31).layout  # both in prison (italiana)
    layout = place_stake(rules, layout, "r", "p3", Chance.ROUGE, 300).layout
    return place_stake(rules, layout, "one", "p4", Chance.INVERSE, 1).layout


def test_closing_a_table_settles_prisoners_as_a_partage_by_default() -> None:
    rules = house_rules("italiana", {"min_stake": "1"})
    assert rules.prisoners_at_close is PrisonersAtClose.HALF_RETURNED
    layout = settle(rules, _closing_layout(rules), REFAIT35).layout  # "one" and "r" stay free
    layout = Layout((*layout.stakes, new_stake("tiny", "p5", Chance.ROUGE, 1,
                                               StakeStatus.SECOND_PRISON, False, None, False)))
    step = close_table(rules, layout)
    assert step.layout.stakes == ()
    assert [(m.kind.value, m.stake_id, m.amount) for m in step.movements] == [
        ("partage", "c", 200),  # what the house takes first, Couleur/Inverse before Rouge/Noir
        ("partage", "n", 500),  # a stake of 1 gives the house nothing: no movement of 0
        ("return", "c", 200),
        ("return", "one", 1),
        ("return", "n", 501),  # the odd unit stays with the player
        ("return", "r", 300),
        ("return", "tiny", 1),
    ]
    assert {f.stake_id: f.fate for f in step.fates} == {
        "n": Fate.HALF_RETURNED, "c": Fate.HALF_RETURNED, "tiny": Fate.HALF_RETURNED,
        "r": Fate.RETURNED, "one": Fate.RETURNED,
    }
    assert all(f.amount_after == 0 and f.status_after is None for f in step.fates)


def test_closing_a_table_can_return_prisoners_whole() -> None:
    rules = house_rules("italiana", {"min_stake": "1", "prisoners_at_close": "returned"})
    step = close_table(rules, _closing_layout(rules))
    assert {m.kind for m in step.movements} == {MovementKind.RETURN}
    assert sum(m.amount for m in step.movements) == 1001 + 400 + 300 + 1
    assert {f.fate for f in step.fates} == {Fate.RETURNED}
    assert close_table(rules, Layout()) == Step(Layout())


# --- invariants over any sequence of betting steps ---------------------------------------------

SMALL_MAX = 2500


def limited_rules() -> st.SearchStrategy[HouseRules]:
    return st.builds(
        lambda preset, opposed, ci, prison, close: house_rules(preset, {
            "allow_opposed_stakes": opposed, "couleur_inverse_on_refait31": ci,
            "prison_refait31": prison, "prisoners_at_close": close, "min_stake": "1",
            "max_stake": str(SMALL_MAX), "half_withdrawal": "true", "move_imprisoned": "true",
        }),
        st.sampled_from(PRESET_NAMES), st.sampled_from(["true", "false"]),
        st.sampled_from(["returned", "like_colours"]), st.sampled_from(["lost", "second_prison"]),
        st.sampled_from(["half_returned", "returned"]),
    )


def outcomes() -> st.SearchStrategy[Outcome]:
    decided = [
        Outcome(row, 31, 32, None, couleur,
                frozenset({Chance.NOIR if row is Result.NOIR else Chance.ROUGE,
                           Chance.COULEUR if couleur else Chance.INVERSE}), "")
        for row in (Result.NOIR, Result.ROUGE) for couleur in (True, False)
    ]
    void = Outcome(Result.VOID, None, None, None, None, frozenset(), "")
    return st.sampled_from([*decided, REFAIT31, REFAIT31, REFAIT35, void])


Command = Callable[[HouseRules, Layout], Step]


def commands() -> st.SearchStrategy[Command]:
    sid = st.sampled_from([f"s{i}" for i in range(5)])
    player = st.sampled_from(["p1", "p2"])
    chance = st.sampled_from(list(Chance))
    amount = st.one_of(  # large amounts too: hypothesis favours small integers
        st.integers(1, SMALL_MAX), st.sampled_from([SMALL_MAX // 3, SMALL_MAX // 2, SMALL_MAX]))
    place = st.builds(lambda i, p, c, a: lambda r, lay: place_stake(r, lay, i, p, c, a),
                      sid, player, chance, amount)
    bump = st.builds(lambda i, a: lambda r, lay: raise_stake(r, lay, i, a), sid, amount)
    return st.one_of(  # placing and raising weigh most: they are what the maximum bounds
        place, place, place, bump, bump,
        st.builds(lambda i: lambda r, lay: withdraw_stake(r, lay, i), sid),
        st.builds(lambda i: lambda r, lay: insure(r, lay, i), sid),
        st.builds(lambda i, c: lambda r, lay: choose_refait31(r, lay, i, c), sid,
                  st.sampled_from(list(Refait31Choice))),
        st.builds(lambda i: lambda r, lay: half_withdraw(r, lay, i), sid),
        st.builds(lambda i, c: lambda r, lay: move_imprisoned(r, lay, i, c), sid, chance),
        st.just(lambda r, lay: close_betting(r, lay)),
        st.just(lambda r, lay: end_of_shoe(lay)),
        st.builds(lambda o: lambda r, lay: settle(r, lay, o), outcomes()),
        st.builds(lambda o: lambda r, lay: settle(r, lay, o), outcomes()),
        st.just(lambda r, lay: close_table(r, lay)),
    )


def totals(layout: Layout) -> Counter[tuple[str, Chance]]:
    out: Counter[tuple[str, Chance]] = Counter()
    for s in layout.stakes:
        out[s.player, s.chance] += s.amount
    return out


@settings(max_examples=300, deadline=None)
@given(limited_rules(), st.lists(commands(), min_size=15, max_size=60))
def test_the_maximum_holds_and_money_is_conserved_after_any_sequence(
    rules: HouseRules, sequence: list[Command]
) -> None:
    layout = Layout()
    money: Counter[Role] = Counter()  # every role's net since the empty layout
    for command in sequence:
        try:
            step = command(rules, layout)
        except RuleViolation:
            continue
        for m in step.movements:
            assert m.amount > 0
            money[m.source] -= m.amount
            money[m.destination] += m.amount
        layout = step.layout
        assert sum(money.values()) == 0  # every movement from one role to another
        assert money[Role.LAYOUT] == layout.total  # the layout account holds the stakes
        held = totals(layout)
        assert all(v <= rules.max_stake for v in held.values()), held
        assert {k: layout.total_on(*k) for k in held} == dict(held)  # the index agrees
    final = close_table(rules, layout)
    assert final.layout.stakes == ()
    assert money[Role.LAYOUT] - sum(
        m.amount for m in final.movements if m.source is Role.LAYOUT) == 0
    kinds = [m.kind for m in final.movements]
    first_give = next((i for i, k in enumerate(kinds) if k in HOUSE_GIVES), len(kinds))
    assert all(k in HOUSE_TAKES for k in kinds[:first_give])
    assert all(k in HOUSE_GIVES for k in kinds[first_give:])
