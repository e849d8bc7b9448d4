"""The re-run of stored commands (``services.ledger.replay``, ``sabot store rerun``) is
game-neutral: a command gets the ids it drew from its game's ledger port when it declares
them (``LedgerGame.rerun_ids``: Trente et Quarante's), else from the aggregates it created (neither
named nor given: its game's new round or match, then its shoes), and the seeds of the shoes
it shuffled from what its request records it created. Treinta y Una rounds and a Cuarenta
match re-run into identical events; a command that drew an id the replay cannot give stops it
with a ``ReplayError`` naming the command, never a half-explained failure."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from services.ledger.api import Ledger
from services.ledger.replay import ReplayError, event_log, replay, stored_commands
from tests.cuarenta.support import Referee, fund, ledger_on
from tests.treinta_y_una.support import Croupier, table_ledger

TYU = "treinta-y-una"


def _same(source: Ledger, url: str) -> None:
    target = replay(source, url)
    try:
        assert event_log(target) == event_log(source)
        assert target.balances() == source.balances()
    finally:
        target.close()


def _with(monkeypatch: pytest.MonkeyPatch, ledger: Ledger, rerun_ids: Any) -> None:
    game = ledger.games[TYU]
    monkeypatch.setitem(ledger.games, TYU, dataclasses.replace(game, rerun_ids=rerun_ids))


def test_treinta_y_una_rounds_rerun_identical(store_url: str, tmp_path: Path) -> None:
    with table_ledger(f"sqlite:///{tmp_path}/source.db") as (ledger, tyu):
        croupier = Croupier(ledger, tyu)
        croupier.play()
        croupier.play()
        commands = {c.command for c in stored_commands(ledger)}
        assert {"tyu_open_round", "tyu_deal", "tyu_settle"} <= commands
        _same(ledger, store_url)


def test_a_cuarenta_match_reruns_identical(store_url: str, tmp_path: Path) -> None:
    with ledger_on(f"sqlite:///{tmp_path}/source.db") as (ledger, game):
        fund(ledger, ["ana", "beto"])
        opened = game.open_match("open", "mesa-1", ["ana", "beto"], stake=5_000)
        assert Referee(game, opened.match).finish().phase == "over"
        assert {"cuarenta_open_match", "cuarenta_play"} <= {
            c.command for c in stored_commands(ledger)}
        _same(ledger, store_url)


def _round_ids(command: str, args: Mapping[str, Any], result: Mapping[str, Any]) -> list[str]:
    """As Treinta y Una's entry would declare them: a round opened with no id drew its id,
    then its own shoe's."""
    if command != "tyu_open_round":
        return []
    return ([result["round_id"]] if args.get("round_id") is None else []) + [result["shoe_id"]]


def test_the_ids_a_game_declares_are_the_ones_given(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with table_ledger(f"sqlite:///{tmp_path}/source.db") as (ledger, tyu):
        _with(monkeypatch, ledger, _round_ids)
        Croupier(ledger, tyu).play()
        _same(ledger, f"sqlite:///{tmp_path}/declared.db")
    with table_ledger(f"sqlite:///{tmp_path}/again.db") as (ledger, tyu):
        _with(monkeypatch, ledger, lambda *_: [])  # declares that its commands draw none: no
        Croupier(ledger, tyu).play()
        with pytest.raises(ReplayError, match=r"tyu_open_round \(request r1, log position "
                           r"\d+\) drew an id .*treinta-y-una's LedgerGame.rerun_ids"):
            replay(ledger, f"sqlite:///{tmp_path}/target.db")
