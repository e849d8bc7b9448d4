"""The turn clock on Treinta y Una (issue 13: "the turn time, with the croupier standing for an
absent player"): a player who lets the table's turn time pass is stood for ("me planto",
``for_absent``) by the clock (``services/turn_clock.py``), once; a "carta" starts his time
again; a player acting at the moment the clock acts is never stood for twice. On SQLite and
PostgreSQL, with the ledger's clock injected."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from domain.errors import RuleViolation
from services.bootstrap import TURN_GAMES
from services.ledger.api import Ledger
from services.turn_clock import PRINCIPAL, TurnClock
from tests.ledger.play import FixedInputs, together
from tests.treinta_y_una.support import CROUPIER, PLAYERS, Croupier, player, table_ledger

PLANTED = "sabot.ledger:TreintaYUnaRound.Planted"


@dataclass
class Clocked(FixedInputs):
    skip: float = 0.0  # seconds the test moves the ledger's clock on

    def clock(self) -> datetime:
        return super().clock() + timedelta(seconds=self.skip)


def table(url: str, inputs: Clocked, turn_seconds: str = "10"
          ) -> AbstractContextManager[tuple[Ledger, Any]]:
    return table_ledger(url, "tyu-1", inputs=inputs, turn_seconds=turn_seconds)


def _planted(ledger: Ledger, round_id: str) -> list[Any]:
    return [e for e in ledger.read_events(0, 10_000)
            if e.topic == PLANTED and e.originator_id == round_id]


def test_the_clock_stands_for_the_absent_player(store_url: str) -> None:
    inputs = Clocked()
    with table(store_url, inputs) as (ledger, tyu):
        croupier = Croupier(ledger, tyu)
        view = tyu.deal("d", croupier.stakes(croupier.open()).round_id, actor=CROUPIER)
        clock = TurnClock(ledger, clock=inputs.clock, games=TURN_GAMES)
        assert clock.tick() == []
        assert clock.turns[view.round_id].player == view.mano
        inputs.skip = 9
        assert clock.tick() == []
        inputs.skip = 11
        (acted,) = clock.tick()
        assert acted.player == view.mano
        (stood,) = _planted(ledger, view.round_id)
        assert stood.state["player"] == view.mano and stood.state["for_absent"] is True
        assert stood.state["waited_seconds"] >= 10
        recorded = [e for e in ledger.read_events(0, 10_000)
                    if e.topic == "sabot.ledger:Request.Recorded"
                    and e.state["command"] == "tyu_stand_for_absent"]
        assert [r.state["actor"]["principal"] for r in recorded] == [PRINCIPAL]
        view = tyu.get_round(view.round_id)
        after = view.whose_turn
        assert after is not None and after != view.mano
        # a "carta" is acting: the next player's time starts again from it
        inputs.skip = 15
        drawn = tyu.carta("c1", view.round_id, after, actor=player(after))
        if drawn.whose_turn == after:  # (not over 31)
            inputs.skip = 24  # 13 s since his turn began, 9 since his carta
            assert clock.tick() == []
            inputs.skip = 26
            (again,) = clock.tick()
            assert again.player == after
        # the clock stands for every player left, the banker last: the showdown
        for _ in range(len(PLAYERS)):
            inputs.skip += 11
            clock.tick()
        view = tyu.get_round(view.round_id)
        assert view.phase == "showdown"
        stood_for = [e.state["player"] for e in _planted(ledger, view.round_id)
                     if e.state["for_absent"]]
        assert len(stood_for) == len(set(stood_for))  # nobody twice
        settled = tyu.settle("s", view.round_id, actor=CROUPIER)
        assert settled.phase == "settled"
        assert sum(ledger.balances().values()) == 0
        n = ledger.saved_position()
        inputs.skip += 100
        assert clock.tick() == [] and ledger.saved_position() == n


def test_a_player_acting_at_the_same_moment_is_stood_for_at_most_once(store_url: str) -> None:
    inputs = Clocked()
    with table(store_url, inputs) as (ledger, tyu):
        croupier = Croupier(ledger, tyu)
        view = tyu.deal("d", croupier.stakes(croupier.open()).round_id, actor=CROUPIER)
        clocks = [TurnClock(ledger, clock=inputs.clock, games=TURN_GAMES) for _ in range(2)]
        for c in clocks:
            c.tick()
        inputs.skip = 11
        mano = view.mano
        answer, _, _ = together(
            lambda: tyu.me_planto("own", view.round_id, mano, actor=player(mano)),
            clocks[0].tick, clocks[1].tick)
        mine = [e for e in _planted(ledger, view.round_id) if e.state["player"] == mano]
        # 11 s into a 10 s turn by the ledger's clock: whoever reaches the writer first, he is
        # stood for as absent, once, and his own "me planto" is refused (issue 20)
        assert len(mine) == 1 and mine[0].state["for_absent"] is True
        assert isinstance(answer, RuleViolation)
        assert answer.reason in ("TURN_TIME_OVER", "NOT_YOUR_TURN")  # he first, or the clock
        assert sum(ledger.balances().values()) == 0


def test_no_turn_time_no_clock(store_url: str) -> None:
    inputs = Clocked()
    with table(store_url, inputs, turn_seconds="0") as (ledger, tyu):
        croupier = Croupier(ledger, tyu)
        view = tyu.deal("d", croupier.stakes(croupier.open()).round_id, actor=CROUPIER)
        clock = TurnClock(ledger, clock=inputs.clock, games=TURN_GAMES)
        inputs.skip = 3600
        assert clock.tick() == [] and view.round_id not in clock.turns
