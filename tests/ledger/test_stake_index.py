"""The coup's stake index (services/trente_et_quarante/coup.py) gives the layout a scan gives."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from domain.trente_et_quarante.chances import Chance
from domain.trente_et_quarante.layout import Stake
from services.trente_et_quarante.coup import Coup, _put, _restate


def _put_by_scan(layout: tuple[Any, ...], stake_id: str, stake: Any) -> tuple[Any, ...]:
    """The layout update as it was before the index: a scan of the whole layout."""
    for i, s in enumerate(layout):
        if s.stake_id == stake_id:
            return layout[:i] + layout[i + 1:] if stake is None else (
                *layout[:i], stake, *layout[i + 1:])
    return layout if stake is None else (*layout, stake)


@given(st.lists(st.tuples(st.sampled_from("abcdefgh"), st.integers(0, 3)), max_size=60))
@settings(max_examples=200, deadline=None)
def test_the_stake_index_gives_the_layout_a_scan_gives(ops: list[tuple[str, int]]) -> None:
    """Any sequence of stake events (placed, changed, gone, layout restated): the same layout
    as the scan, the index equal to the layout's ids, and ``stake`` finds what is there."""
    agg: Any = SimpleNamespace(layout=(), stake_ids={})
    expected: tuple[Stake, ...] = ()
    for n, (sid, op) in enumerate(ops):
        stake = None if op == 0 else Stake(sid, "anne", Chance.NOIR, 100 + n)
        if op == 3:  # a restatement: the layout reversed
            expected = tuple(reversed(expected))
            _restate(agg, expected)
            continue
        expected = _put_by_scan(expected, sid, stake)
        _put(agg, sid, stake)
        assert agg.layout == expected
        assert sorted(agg.stake_ids) == sorted(s.stake_id for s in expected)
        assert Coup.stake(agg, sid) == stake
