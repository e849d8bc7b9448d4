"""The persistent layout (domain/trente_et_quarante/layout.py): after any sequence of steps its
incremental index is the index recomputed from its stakes, every earlier layout still holds what
it held, and the same step's events land the coup on the step's own layout."""

from __future__ import annotations

import pickle
from types import SimpleNamespace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from domain.errors import RuleViolation
from domain.trente_et_quarante.chances import Chance
from domain.trente_et_quarante.layout import (
    Layout,
    Refait31Choice,
    Stake,
    StakeStatus,
    choose_refait31,
    half_withdraw,
    insure,
    move_imprisoned,
    place_stake,
    raise_stake,
    withdraw_stake,
)
from domain.trente_et_quarante.rules import house_rules
from services.trente_et_quarante.coup import Coup

RULES = house_rules("francaise", {"move_imprisoned": "true", "half_withdrawal": "true"})
OPPOSED = house_rules("francaise", {"allow_opposed_stakes": "true", "max_stake": "10000"})
IDS = "abcdefgh"
PLAYERS = ["p", "q", "r"]


def _scan(stakes: tuple[Stake, ...]) -> tuple[dict[str, int], dict[Any, int], dict[Any, int]]:
    """The index as a scan of the stakes gives it."""
    ids: dict[str, int] = {}
    counts: dict[Any, int] = {}
    totals: dict[Any, int] = {}
    for i, s in enumerate(stakes):
        ids.setdefault(s.stake_id, i)
        key = (s.player, s.chance)
        counts[key] = counts.get(key, 0) + 1
        totals[key] = totals.get(key, 0) + s.amount
    return ids, counts, totals


def _agrees(layout: Layout, stakes: tuple[Stake, ...]) -> None:
    assert layout.stakes == stakes
    assert layout._index() == _scan(stakes)
    assert pickle.loads(pickle.dumps(layout)) == layout
    assert hash(Layout(stakes)) == hash(layout)
    for s in stakes:
        assert layout.find(s.stake_id) == next(x for x in stakes if x.stake_id == s.stake_id)
    for p in PLAYERS:
        for c in Chance:
            held = [s.amount for s in stakes if s.player == p and s.chance is c]
            assert layout.held(p, c) == (len(held), sum(held))
    assert not layout.has("absent")


_STAKES = st.builds(
    Stake, st.sampled_from(IDS), st.sampled_from(PLAYERS), st.sampled_from(list(Chance)),
    st.integers(1, 500), st.sampled_from(list(StakeStatus)), st.booleans(),
)


@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from(IDS), _STAKES), max_size=30),
       st.lists(_STAKES, max_size=6))
@settings(max_examples=100, deadline=None)
def test_put_and_append_keep_the_index_and_every_earlier_layout(
    ops: list[tuple[int, str, Stake]], start: list[Stake],
) -> None:
    """``put`` (replace in place, take off, add at the end) and ``append`` from any layout, a
    tuple's with an id twice too: the same stakes as the tuple's own steps, the index the
    scan's, and every layout made on the way unchanged by what came after."""
    expected = tuple(start)
    layout = Layout(expected)
    history = [(layout, expected)]
    for op, sid, stake in ops:
        if op == 0:  # put a stake of that id (put under another id: the tuple's way too)
            new = stake if stake.stake_id == sid else Stake(sid, *_rest(stake))
            expected = _put_by_scan(expected, sid, new)
            layout = layout.put(sid, new)
        elif op == 1:
            expected = _put_by_scan(expected, sid, None)
            layout = layout.put(sid, None)
        else:
            expected = (*expected, stake)
            layout = layout.append(stake)
        history.append((layout, expected))
    for made, held in history:
        _agrees(made, held)


def _rest(s: Stake) -> tuple[Any, ...]:
    return (s.player, s.chance, s.amount, s.status, s.insured, s.choice, s.awaiting_choice)


def _put_by_scan(stakes: tuple[Stake, ...], sid: str, new: Stake | None) -> tuple[Stake, ...]:
    for i, s in enumerate(stakes):
        if s.stake_id == sid:
            return stakes[:i] + stakes[i + 1:] if new is None else (
                *stakes[:i], new, *stakes[i + 1:])
    return stakes if new is None else (*stakes, new)


_COMMANDS = st.lists(
    st.tuples(st.integers(0, 7), st.sampled_from(IDS), st.sampled_from(PLAYERS),
              st.sampled_from(list(Chance)), st.integers(1, 3)),
    max_size=30,
)


def _step(rules: Any, layout: Layout, op: int, sid: str, player: str, chance: Chance,
          k: int) -> Any:
    if op <= 2:
        return place_stake(rules, layout, sid, player, chance, 100 * k)
    if op == 3:
        return raise_stake(rules, layout, sid, 50 * k)
    if op == 4:
        return withdraw_stake(rules, layout, sid)
    if op == 5:
        return insure(rules, layout, sid)
    if op == 6:
        return move_imprisoned(rules, layout, sid, chance)
    return half_withdraw(rules, layout, sid) if k == 1 else choose_refait31(
        rules, layout, sid, Refait31Choice.PRISON)


_APPLY: Any = Coup.StakeChanged.apply  # the coup's stake events, applied to a stand-in


@given(_COMMANDS, st.booleans(), st.lists(st.sampled_from(IDS), max_size=4))
@settings(max_examples=100, deadline=None)
def test_every_betting_step_keeps_the_index_and_lands_the_coup_on_its_layout(
    commands: list[tuple[int, str, str, Chance, int]], opposed: bool, jailed: list[str],
) -> None:
    """Place, raise, withdraw, insure, move and half withdraw a prisoner, choose: after each
    step (refused ones leave the layout as it was) the index is the scan's, the layout before
    the step still holds what it held, and a coup whose layout is the step's input applies the
    step's events onto the step's own layout object (no restatement, no comparison)."""
    rules = OPPOSED if opposed else RULES
    prisoners = tuple(Stake(f"j{s}", "p", Chance.NOIR, 300, StakeStatus.PRISON)
                      for s in dict.fromkeys(jailed))
    layout = Layout(prisoners)
    coup = SimpleNamespace(board=layout, phase="betting")
    for op, sid, player, chance, k in commands:
        before, held = layout, layout.stakes
        target = f"j{sid}" if op in (6, 7) and prisoners else sid
        try:
            step = _step(rules, layout, op, target, player, chance, k)
        except RuleViolation:
            _agrees(before, held)
            continue
        (fate,) = step.fates
        after = step.layout.find(fate.stake_id) if fate.status_after is not None else None
        coup.board = before
        _APPLY(SimpleNamespace(stake_id=fate.stake_id, stake=after), coup)
        assert coup.board is step.layout
        layout = step.layout
        _agrees(layout, layout.stakes)
        _agrees(before, held)
        assert layout.stakes == _put_by_scan(held, fate.stake_id, after)
