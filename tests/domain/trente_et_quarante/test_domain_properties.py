"""Hypothesis properties of the rule book: rows, conservation of money, order, determinism."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from uuid import UUID

from hypothesis import given, settings
from hypothesis import strategies as st

from domain.cards import Card, DeckKind, canonical_deck, canonical_shoe
from domain.errors import RuleViolation
from domain.shuffle import shuffle
from domain.trente_et_quarante.chances import COLOUR_CHANCES, Chance, Row
from domain.trente_et_quarante.deal import ROW_STOPS_ABOVE, deal_coup, deal_shoe
from domain.trente_et_quarante.layout import (
    HOUSE_GIVES,
    HOUSE_TAKES,
    Layout,
    Movement,
    Refait31Choice,
    Role,
    Stake,
    StakeStatus,
    Step,
    choose_refait31,
    close_betting,
    end_of_shoe,
    half_withdraw,
    insure,
    move_imprisoned,
    new_movement,
    new_stake,
    new_stake_fate,
    place_stake,
    raise_stake,
    withdraw_stake,
)
from domain.trente_et_quarante.outcome import Outcome, Result, judge
from domain.trente_et_quarante.rules import PRESET_NAMES, CutCardRule, HouseRules, house_rules
from domain.trente_et_quarante.settlement import settle

DECK = canonical_deck(DeckKind.FRENCH_52)
CHANCES = list(Chance)
HOUSE_ROLES = frozenset(Role) - {Role.PLAYER}

sabots = st.lists(st.sampled_from(DECK), min_size=0, max_size=120)


def rules_strategy() -> st.SearchStrategy[HouseRules]:
    return st.builds(
        lambda preset, opposed, ci, prison, rate: house_rules(
            preset,
            {
                "allow_opposed_stakes": opposed,
                "couleur_inverse_on_refait31": ci,
                "prison_refait31": prison,
                "insurance_rate": rate,
                "min_stake": "1",
                "half_withdrawal": "true",
                "move_imprisoned": "true",
            },
        ),
        st.sampled_from(PRESET_NAMES),
        st.sampled_from(["true", "false"]),
        st.sampled_from(["returned", "like_colours"]),
        st.sampled_from(["lost", "second_prison"]),
        st.sampled_from(["1%", "0", "1/3"]),
    )


def outcomes() -> st.SearchStrategy[Outcome]:
    def make(result: Result, total: int, couleur: bool) -> Outcome:
        if result is Result.REFAIT:
            return Outcome(result, total, total, total, None, frozenset(), "")
        if result is Result.VOID:
            return Outcome(result, None, None, None, None, frozenset(), "")
        row = Chance.NOIR if result is Result.NOIR else Chance.ROUGE
        winners = frozenset({row, Chance.COULEUR if couleur else Chance.INVERSE})
        return Outcome(result, 31, 32, None, couleur, winners, "")

    return st.builds(
        make, st.sampled_from(list(Result)), st.sampled_from([31, 31, 35, 40]), st.booleans()
    )


def stakes() -> st.SearchStrategy[tuple[Stake, ...]]:
    stake = st.builds(
        lambda i, player, chance, amount, status, insured, choice, wait: new_stake(
            f"s{i}",
            f"p{player}",
            chance,
            amount,
            status,
            insured,
            choice,
            wait and status is StakeStatus.PRISON,
        ),
        st.integers(0, 10_000),
        st.integers(0, 3),
        st.sampled_from(CHANCES),
        st.integers(1, 1_000_000),
        st.sampled_from(list(StakeStatus)),
        st.booleans(),
        st.sampled_from([None, *Refait31Choice]),
        st.booleans(),
    )
    return st.lists(stake, max_size=12, unique_by=lambda s: s.stake_id).map(tuple)


def role_nets(movements: tuple[Movement, ...]) -> Counter[Role]:
    net: Counter[Role] = Counter()
    for m in movements:
        net[m.source] -= m.amount
        net[m.destination] += m.amount
    return net


def check_step(before: Layout, step: Step) -> None:
    """Amounts positive; the layout account changes by exactly what moved in and out of it;
    players' net plus the house's net is zero."""
    assert all(m.amount > 0 for m in step.movements)
    assert all(s.amount > 0 for s in step.layout.stakes)
    net = role_nets(step.movements)
    assert before.total + net[Role.LAYOUT] == step.layout.total
    assert net[Role.PLAYER] + sum(net[r] for r in HOUSE_ROLES) == 0
    ids = [s.stake_id for s in step.layout.stakes]
    assert len(ids) == len(set(ids))


@settings(max_examples=200, deadline=None)
@given(sabots, st.sampled_from(list(CutCardRule)))
def test_rows_end_between_31_and_40_and_stood_at_30_or_less(
    sabot: list[Card], rule: CutCardRule
) -> None:
    for coup in deal_shoe(sabot, rule):
        for row, total in ((Row.NOIR, coup.noir_total), (Row.ROUGE, coup.rouge_total)):
            dealt = [d for d in coup.cards if d.row is row]
            if total is None:
                assert all(d.running_total <= ROW_STOPS_ABOVE for d in dealt)
                continue
            assert 31 <= total <= 40
            assert dealt[-1].running_total == total
            assert all(d.running_total <= ROW_STOPS_ABOVE for d in dealt[:-1])
            assert sum(d.card.value for d in dealt) == total
        positions = [d.position for d in coup.cards]
        assert positions == list(range(coup.start, coup.start + len(positions)))
        if rule is CutCardRule.VOID_COUP:
            assert all(p < len(sabot) - 5 for p in positions)
        assert coup.complete == (coup.noir_total is not None and coup.rouge_total is not None)


@settings(max_examples=300, deadline=None)
@given(rules_strategy(), stakes(), outcomes())
def test_settlement_conserves_money_and_keeps_the_order(
    rules: HouseRules, staked: tuple[Stake, ...], outcome: Outcome
) -> None:
    layout = Layout(staked)
    step = settle(rules, layout, outcome)
    check_step(layout, step)
    assert {f.stake_id for f in step.fates} == {s.stake_id for s in staked}
    assert not any(s.insured for s in step.layout.stakes)
    kinds = [m.kind for m in step.movements]
    first_give = next((i for i, k in enumerate(kinds) if k in HOUSE_GIVES), len(kinds))
    assert all(k in HOUSE_TAKES for k in kinds[:first_give])
    assert all(k in HOUSE_GIVES for k in kinds[first_give:])
    for group in (step.movements[:first_give], step.movements[first_give:]):
        colour = [m.chance in COLOUR_CHANCES for m in group]
        assert colour == sorted(colour, reverse=True)  # Couleur/Inverse first
    if not outcome.decided and not outcome.is_refait31:
        assert step.movements == ()
        assert [(s.stake_id, s.amount, s.status) for s in step.layout.stakes] == [
            (s.stake_id, s.amount, s.status) for s in staked
        ]
    assert settle(rules, layout, outcome) == step  # equal inputs, equal outputs


@settings(max_examples=100, deadline=None)
@given(sabots.filter(lambda s: len(s) > 0))
def test_deal_and_judge_are_deterministic(sabot: list[Card]) -> None:
    first = deal_coup(sabot, 0, CutCardRule.FINISH_COUP)
    assert deal_coup(list(sabot), 0, CutCardRule.FINISH_COUP) == first
    assert judge(first) == judge(first)


@settings(max_examples=25, deadline=None)
@given(st.binary(min_size=32, max_size=32), st.uuids(), st.integers(1, 3))
def test_a_shuffle_is_a_permutation_of_the_canonical_shoe(
    seed: bytes, shoe_id: UUID, decks: int
) -> None:
    cards = shuffle(seed, shoe_id, DeckKind.FRENCH_52, decks)
    assert Counter(cards) == Counter(canonical_shoe(DeckKind.FRENCH_52, decks))
    assert shuffle(seed, shoe_id, DeckKind.FRENCH_52, decks) == cards


Command = Callable[[HouseRules, Layout], Step]


def commands() -> st.SearchStrategy[Command]:
    sid = st.sampled_from([f"s{i}" for i in range(6)])
    player = st.sampled_from(["p1", "p2", "p3"])
    chance = st.sampled_from(CHANCES)
    amount = st.integers(-5, 3000)
    choice = st.sampled_from(list(Refait31Choice))
    return st.one_of(
        st.builds(
            lambda i, p, c, a: lambda r, lay: place_stake(r, lay, i, p, c, a),
            sid,
            player,
            chance,
            amount,
        ),
        st.builds(lambda i, a: lambda r, lay: raise_stake(r, lay, i, a), sid, amount),
        st.builds(lambda i: lambda r, lay: withdraw_stake(r, lay, i), sid),
        st.builds(lambda i: lambda r, lay: insure(r, lay, i), sid),
        st.builds(lambda i, c: lambda r, lay: choose_refait31(r, lay, i, c), sid, choice),
        st.builds(lambda i: lambda r, lay: half_withdraw(r, lay, i), sid),
        st.builds(lambda i, c: lambda r, lay: move_imprisoned(r, lay, i, c), sid, chance),
        st.just(lambda r, lay: close_betting(r, lay)),
        st.just(lambda r, lay: end_of_shoe(lay)),
        st.builds(lambda o: lambda r, lay: settle(r, lay, o), outcomes()),
        st.builds(lambda o: lambda r, lay: settle(r, lay, o), outcomes()),
    )


@settings(max_examples=200, deadline=None)
@given(rules_strategy(), st.lists(commands(), max_size=40))
def test_random_command_sequences_keep_every_stake_positive(
    rules: HouseRules, sequence: list[Command]
) -> None:
    layout = Layout()
    for command in sequence:
        try:
            step = command(rules, layout)
        except RuleViolation:
            continue
        check_step(layout, step)
        layout = step.layout


def test_fast_constructors_equal_the_classes_own() -> None:
    from domain.trente_et_quarante.layout import Fate, MovementKind, StakeFate

    m = new_movement(MovementKind.RETURN, "a", "p", Chance.NOIR, 5, Role.LAYOUT, Role.PLAYER)
    assert m == Movement(MovementKind.RETURN, "a", "p", Chance.NOIR, 5, Role.LAYOUT, Role.PLAYER)
    f = new_stake_fate("a", "p", Chance.NOIR, Fate.WON, 5, 0, None)
    assert f == StakeFate("a", "p", Chance.NOIR, Fate.WON, 5, 0, None)
    assert type(m) is Movement and type(f) is StakeFate
    s = new_stake("a", "p", Chance.NOIR, 5, StakeStatus.PRISON, True, Refait31Choice.PRISON, True)
    assert type(s) is Stake
    assert s == Stake(
        "a", "p", Chance.NOIR, 5, StakeStatus.PRISON, True, Refait31Choice.PRISON, True
    )
    assert hash(s) == hash(
        Stake("a", "p", Chance.NOIR, 5, StakeStatus.PRISON, True, Refait31Choice.PRISON, True)
    )
