"""``settle``'s fast path against a plain rule-by-rule reference built with the frozen classes' own
constructors: the same stakes, movements (values and order) and fates, of the same classes."""

from __future__ import annotations

from dataclasses import replace
from uuid import UUID

from hypothesis import given, settings
from hypothesis import strategies as st

from domain.cards import DeckKind
from domain.shuffle import load_sabot
from domain.trente_et_quarante.chances import COLOUR_CHANCES, Chance
from domain.trente_et_quarante.deal import deal_shoe
from domain.trente_et_quarante.layout import (
    HOUSE_GIVES,
    Fate,
    Layout,
    Movement,
    MovementKind,
    Refait31Choice,
    Stake,
    StakeFate,
    StakeStatus,
    Step,
    fate_of,
    movement,
    new_stake,
    place_stake,
)
from domain.trente_et_quarante.money import house_half
from domain.trente_et_quarante.outcome import Outcome, Result, judge
from domain.trente_et_quarante.rules import (
    PRESET_NAMES,
    ColourChancesOnRefait31,
    CutCardRule,
    HouseRules,
    PrisonRefait31Rule,
    Refait31Rule,
    house_rules,
)
from domain.trente_et_quarante.settlement import DECIDED, LEAVES, STAYS_AS, fate_on_refait31, settle

rules_strategy = st.builds(
    lambda preset, refait31, prison, ci: replace(
        house_rules(preset),
        refait31=refait31,
        prison_refait31=prison,
        couleur_inverse_on_refait31=ci,
    ),
    st.sampled_from(PRESET_NAMES),
    st.sampled_from(list(Refait31Rule)),
    st.sampled_from(list(PrisonRefait31Rule)),
    st.sampled_from(list(ColourChancesOnRefait31)),
)


def _outcome(result: Result, total: int, couleur: bool) -> Outcome:
    if result is Result.REFAIT:
        return Outcome(result, total, total, total, None, frozenset(), "")
    if result is Result.VOID:
        return Outcome(result, None, None, None, None, frozenset(), "")
    row = Chance.NOIR if result is Result.NOIR else Chance.ROUGE
    winners = frozenset({row, Chance.COULEUR if couleur else Chance.INVERSE})
    return Outcome(result, 31, 32, None, couleur, winners, "")


outcome_strategy = st.builds(
    _outcome, st.sampled_from(list(Result)), st.sampled_from([31, 31, 32, 40]), st.booleans()
)

layout_strategy = st.lists(
    st.builds(
        new_stake,
        st.integers(0, 60).map(lambda i: f"s{i}"),
        st.integers(0, 3).map(lambda i: f"p{i}"),
        st.sampled_from(list(Chance)),
        st.integers(1, 1_000_000),
        st.sampled_from(list(StakeStatus)),
        st.booleans(),
        st.sampled_from([None, *Refait31Choice]),
        st.booleans(),
    ),
    max_size=40,
).map(lambda s: Layout(tuple(s)))  # ids may repeat: settle does not look them up


def reference_settle(rules: HouseRules, layout: Layout, outcome: Outcome) -> Step:
    """RULES.md read literally: each stake's fate, then its movements sorted into takes/gives x
    Couleur-Inverse/Rouge-Noir, layout order within each."""
    awaiting = rules.refait31 is Refait31Rule.PLAYER_CHOICE
    takes: dict[bool, list[Movement]] = {True: [], False: []}  # by "on Couleur/Inverse"
    gives: dict[bool, list[Movement]] = {True: [], False: []}
    kept: list[Stake] = []
    fates: list[StakeFate] = []
    for stake in layout.stakes:
        if outcome.decided:
            fate = DECIDED[stake.status, stake.chance in outcome.winning_chances]
        elif outcome.is_refait31:
            fate = fate_on_refait31(rules, stake)
        else:
            fate = Fate.VOID
        colour = stake.chance in COLOUR_CHANCES
        if fate in LEAVES:
            for kind in LEAVES[fate]:
                queue = gives if kind in HOUSE_GIVES else takes
                queue[colour].append(movement(kind, stake, stake.amount))
            fates.append(fate_of(stake, fate, None))
            continue
        if fate is Fate.VOID:
            after = replace(stake, insured=False, awaiting_choice=False)
        elif fate is Fate.PARTAGE:
            taken = house_half(stake.amount)
            if taken:
                takes[colour].append(movement(MovementKind.PARTAGE, stake, taken))
            after = replace(
                stake,
                amount=stake.amount - taken,
                status=StakeStatus.FREE,
                insured=False,
                awaiting_choice=False,
            )
        else:
            wait = fate is Fate.IMPRISONED and awaiting and stake.choice is None
            after = replace(stake, status=STAYS_AS[fate], insured=False, awaiting_choice=wait)
        kept.append(after)
        fates.append(fate_of(stake, fate, after))
    movements = (*takes[True], *takes[False], *gives[True], *gives[False])
    return Step(Layout(tuple(kept)), movements, tuple(fates))


def assert_same(fast: Step, slow: Step) -> None:
    assert fast == slow
    for a, b in (
        *zip(fast.movements, slow.movements, strict=True),
        *zip(fast.fates, slow.fates, strict=True),
        *zip(fast.layout.stakes, slow.layout.stakes, strict=True),
    ):
        assert type(a) is type(b)
        assert hash(a) == hash(b)
        assert repr(a) == repr(b)


@settings(max_examples=500, deadline=None)
@given(rules_strategy, layout_strategy, outcome_strategy)
def test_settle_is_the_reference(rules: HouseRules, layout: Layout, outcome: Outcome) -> None:
    assert_same(settle(rules, layout, outcome), reference_settle(rules, layout, outcome))


def test_settle_is_the_reference_on_a_full_table_for_a_whole_shoe() -> None:
    """The engine benchmark's table (8 players x 4 chances), every coup of a 6-deck shoe, the
    layout carried from coup to coup (prisons, partages, second prisons on the way)."""
    for preset in ("francaise", "espanola", "italiana"):
        rules = house_rules(preset, {"allow_opposed_stakes": "true"})
        cards = load_sabot(bytes(range(32)), UUID(int=1), DeckKind.FRENCH_52, 6, 150).cards
        layout = Layout()
        n = 0
        for coup in deal_shoe(cards, CutCardRule.VOID_COUP):
            if len(layout.stakes) < 32:  # top the table up to 32 stakes
                for i in range(8):
                    for chance in Chance:
                        n += 1
                        layout = place_stake(
                            rules, layout, f"s{n}", f"p{i}", chance, 1000 + n
                        ).layout
            outcome = judge(coup)
            fast = settle(rules, layout, outcome)
            assert_same(fast, reference_settle(rules, layout, outcome))
            layout = fast.layout
