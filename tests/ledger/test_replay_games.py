"""The re-run of stored commands (``services.ledger.replay``, ``sabot store rerun``) is
game-neutral: a game's command gets the ids it drew from its registry entry
(``Game.rerun_ids``) and the seeds of the shoes it shuffled from what its request records it
created; a command that drew an id the replay cannot give stops it with a ``ReplayError``
naming the command and its game, never a half-explained failure."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from services import games
from services.games import Game
from services.ledger.replay import ReplayError, event_log, replay, stored_commands
from tests.treinta_y_una.support import Croupier, table_ledger

TYU = "treinta-y-una"


def _round_ids(command: str, args: Mapping[str, Any], result: Mapping[str, Any]) -> list[str]:
    """Treinta y Una's, as its entry would say it: a round opened with no id drew its id, then
    its own shoe's."""
    if command != "tyu_open_round":
        return []
    return ([result["round_id"]] if args.get("round_id") is None else []) + [result["shoe_id"]]


def _with(monkeypatch: pytest.MonkeyPatch, rerun_ids: Any) -> None:
    game: Game = games.get(TYU)
    monkeypatch.setitem(games._games, TYU, dataclasses.replace(game, rerun_ids=rerun_ids))


def test_a_games_commands_rerun_identical_through_its_entry(
        store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _with(monkeypatch, _round_ids)
    with table_ledger(f"sqlite:///{tmp_path}/source.db") as (ledger, tyu):
        croupier = Croupier(ledger, tyu)
        croupier.play()
        croupier.play()
        commands = {c.command for c in stored_commands(ledger)}
        assert {"tyu_open_round", "tyu_deal", "tyu_settle"} <= commands
        target = replay(ledger, store_url)
        try:
            assert event_log(target) == event_log(ledger)
            assert target.balances() == ledger.balances()
        finally:
            target.close()


def test_a_command_that_drew_an_id_its_game_does_not_declare_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _with(monkeypatch, None)
    with table_ledger(f"sqlite:///{tmp_path}/source.db") as (ledger, tyu):
        Croupier(ledger, tyu).play()
        with pytest.raises(ReplayError, match=r"tyu_open_round .*drew an id.*"
                           r"treinta-y-una declares no Game.rerun_ids"):
            replay(ledger, f"sqlite:///{tmp_path}/target.db")
