"""The regulator's replay of Cuarenta matches: identical from the revealed seeds (and, for a
match in play, from the escrow with the regulator's key); a changed play, a changed capture or
a changed card dealt is the first difference, at its log position."""

from __future__ import annotations

import dataclasses
import json
from typing import Any
from uuid import UUID

import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from domain.errors import FailedPrecondition
from services import topics as T
from services.cuarenta.replay import replay_match
from services.regulator.replay import verdict
from services.regulator.source import Database, EventTable, RawEvent

from .support import Inputs, Referee, fund, ledger_on

REGULATOR = X25519PrivateKey.from_private_bytes(b"\x42" * 32)


class Edited:
    """The store's events with one event's state changed (what a tamperer would store)."""

    def __init__(self, events: EventTable, position: int, change: Any) -> None:
        self.events, self.position, self.change = events, position, change

    def by_originator(self, originator_id: UUID, limit: int | None = None) -> list[RawEvent]:
        out = []
        for e in self.events.by_originator(originator_id, limit):
            if e.position == self.position:
                data = json.loads(e.state)
                self.change(data)
                e = dataclasses.replace(e, state=json.dumps(data).encode())
            out.append(e)
        return out


def _played(url: str, finish: bool = True) -> tuple[str, str]:
    inputs = Inputs()
    config_of = inputs.config

    def config(u: str) -> Any:
        return dataclasses.replace(config_of(u), regulator_key=REGULATOR.public_key()
                                   .public_bytes_raw())

    inputs.config = config  # type: ignore[method-assign]
    with ledger_on(url, inputs, overrides={"commission_rate": "5%"}) as (ledger, game):
        fund(ledger, ["ana", "beto"])
        m = game.open_match("o", "mesa-1", ["ana", "beto"], stake=700).match
        ref = Referee(game, m)
        if finish:
            ref.finish()
        else:
            for _ in range(12):
                ref.step()
        return m.match_id, ref.match.phase


def test_a_whole_match_replays_identical(sqlite_store_url: str) -> None:
    mid, phase = _played(sqlite_store_url)
    assert phase == "over"
    events = EventTable(Database(sqlite_store_url))
    v = verdict(replay_match(events, mid))
    assert v.identical and v.steps > 100, str(v)


def test_a_match_in_play_needs_the_regulator_key(sqlite_store_url: str) -> None:
    mid, phase = _played(sqlite_store_url, finish=False)
    assert phase == "playing"
    events = EventTable(Database(sqlite_store_url))
    with pytest.raises(FailedPrecondition) as err:
        verdict(replay_match(events, mid))
    assert err.value.reason == "SEED_UNAVAILABLE"
    v = verdict(replay_match(events, mid, regulator_key=REGULATOR))
    assert v.identical, str(v)


def _first(events: EventTable, mid: str, topic: str, n: int = 0) -> RawEvent:
    return [e for e in events.by_originator(UUID(mid)) if e.topic == topic][n]


@pytest.mark.parametrize("what", ["card", "capture", "dealt", "points", "stake"])
def test_a_change_is_found_at_its_position(sqlite_store_url: str, what: str) -> None:
    mid, _ = _played(sqlite_store_url)
    events = EventTable(Database(sqlite_store_url))
    if what == "card":  # the card played: another of the seat's cards, or another at all
        target = _first(events, mid, T.CUARENTA_MATCH_PLAYED, 3)
        original = json.loads(target.state)["card"]

        def change(d: dict[str, Any]) -> None:
            d["card"] = "KS" if original != "KS" else "KH"
    elif what == "capture":
        target = next(e for e in events.by_originator(UUID(mid))
                      if e.topic == T.CUARENTA_MATCH_CAPTURED)

        def change(d: dict[str, Any]) -> None:
            d["points"] = d["points"] + 2
    elif what == "dealt":
        target = _first(events, mid, T.CUARENTA_MATCH_DEALT, 1)

        def change(d: dict[str, Any]) -> None:
            d["cards"][0]["position"] = d["cards"][1]["position"]
    elif what == "points":
        target = _first(events, mid, T.CUARENTA_MATCH_HAND_SCORED)

        def change(d: dict[str, Any]) -> None:
            d["totals"][0] += 1
    else:
        target = _first(events, mid, T.CUARENTA_MATCH_MONEY_MOVED)

        def change(d: dict[str, Any]) -> None:
            d["amount"] -= 1
    v = verdict(replay_match(Edited(events, target.position, change), mid))  # type: ignore[arg-type]
    assert not v.identical and v.first_difference is not None
    assert v.first_difference.position == target.position, str(v)


def test_sabot_store_replay_match(sqlite_store_url: str, capsys: pytest.CaptureFixture[str]
                                  ) -> None:
    from services.cli import main

    mid, _ = _played(sqlite_store_url)
    assert main(["store", "replay", "--match", mid, "--store", sqlite_store_url]) == 0
    assert "verdict: identical" in capsys.readouterr().out
