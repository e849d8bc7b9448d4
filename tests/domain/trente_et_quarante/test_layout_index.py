"""The layout's index (domain/layout.py) answers what a scan of the stakes answers."""

from __future__ import annotations

import pickle

from hypothesis import given, settings
from hypothesis import strategies as st

from domain.errors import RuleViolation
from domain.trente_et_quarante.chances import Chance
from domain.trente_et_quarante.layout import Layout, place_stake, raise_stake, withdraw_stake
from domain.trente_et_quarante.rules import house_rules

RULES = house_rules("francaise", {})


def _scan_agrees(layout: Layout) -> None:
    fresh = pickle.loads(pickle.dumps(layout))  # no index: built from the stakes
    assert fresh == layout
    assert layout._index() == fresh._index()
    for s in layout.stakes:
        assert layout.get(s.stake_id) is s and layout.has(s.stake_id)


@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from("abcdef"),
                          st.sampled_from(["p", "q"]), st.sampled_from(list(Chance))),
                max_size=40))
@settings(max_examples=200, deadline=None)
def test_the_index_carried_over_is_the_index_of_the_stakes(
    ops: list[tuple[int, str, str, Chance]],
) -> None:
    layout = Layout()
    for op, sid, player, chance in ops:
        try:
            if op == 0:
                step = place_stake(RULES, layout, sid, player, chance, 100)
            elif op == 1:
                step = raise_stake(RULES, layout, sid, 100)
            else:
                step = withdraw_stake(RULES, layout, sid)
        except RuleViolation:
            continue
        layout = step.layout
        _scan_agrees(layout)
