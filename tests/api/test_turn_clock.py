"""The turn clock end to end (issues 13, 14): a real server (SQLite, PostgreSQL as the server role,
and the ledger behind its process's socket) with the turn clock running as ``sabot serve`` runs
it (``TurnClock(ledger, games=TURN_GAMES, hub=running.hub)``, the wall clock), tables with a
short turn time, and the games played over gRPC: a Cuarenta match whose seat to play does not
play is forfeited for its side, the stakes paid to the other side less the commission; a Treinta
y Una round whose players do not act is stood for, player after player, to the showdown. And
``sabot serve`` itself starts the clock (``--turn-clock``, on by default)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from services.api.client import authed, new_request_id
from services.api.gen.sabot.cuarenta.v1 import cuarenta_pb2 as cpb
from services.api.gen.sabot.cuarenta.v1 import cuarenta_pb2_grpc
from services.api.gen.sabot.treinta_y_una.v1 import treinta_y_una_pb2 as tpb
from services.api.gen.sabot.treinta_y_una.v1 import treinta_y_una_pb2_grpc
from services.api.gen.sabot.v1 import cashier_pb2, cashier_pb2_grpc, table_pb2
from services.bootstrap import TURN_GAMES
from services.turn_clock import PRINCIPAL, TurnClock
from tests.api.support import PLAYERS, Api, fresh, money

T = TypeVar("T")


def _stub(api: Api, who: str, cls: Any) -> Any:
    token = api.tokens.get(who) or api.player_tokens[who]
    return cls(authed(api.as_(who).channel, token, 30.0))


def _until(read: Callable[[], T], done: Callable[[T], bool], seconds: float) -> T:
    deadline = time.monotonic() + seconds
    while True:
        value = read()
        if done(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


@pytest.fixture
def clock(api: Api) -> Iterator[TurnClock]:
    running = api.running
    turn_clock = TurnClock(running.ledger, hub=running.hub, interval=0.2, games=TURN_GAMES).start()
    yield turn_clock
    turn_clock.stop()


def test_a_cuarenta_match_is_forfeited_when_the_turn_time_runs_out(
        api: Api, clock: TurnClock) -> None:
    croupier = _stub(api, "croupier", cuarenta_pb2_grpc.CuarentaServiceStub)
    table_id = fresh("ctc")
    api.as_("croupier").tables.OpenTable(table_pb2.OpenTableRequest(
        request_id=new_request_id(), table_id=table_id, game="cuarenta",
        overrides={"turn_seconds": "5", "commission_rate": "5%"}))
    ana, beto = PLAYERS[0], PLAYERS[1]
    for _ in range(20):  # a deal from a real seed may end the match at once (four of a kind)
        before = {p: int(api.running.ledger.get_account(p).balance) for p in (ana, beto)}
        step = croupier.OpenMatch(cpb.OpenMatchRequest(
            request_id=new_request_id(), table=f"tables/{table_id}",
            seats=[f"accounts/{ana}", f"accounts/{beto}"], stake=money(1_000)))
        m = croupier.Deal(cpb.DealRequest(request_id=new_request_id(),
                                          match=step.match.name)).match
        if m.phase != "over":
            break
    assert m.phase != "over"
    loser = m.to_act
    started = time.monotonic()
    done = _until(lambda: croupier.GetMatch(cpb.GetMatchRequest(name=m.name)),
                  lambda x: x.phase == "over", 20)
    assert (done.phase, done.end_reason, done.winner) == ("over", "forfeit", 1 - loser)
    assert time.monotonic() - started >= 4.5  # not before the time: 5 s by the ledger's clock
    seats = [ana, beto]
    after = {p: int(api.running.ledger.get_account(p).balance) for p in seats}
    assert after[seats[1 - loser]] - before[seats[1 - loser]] == 1_000 - 100
    assert after[seats[loser]] - before[seats[loser]] == -1_000
    assert sum(api.running.ledger.balances().values()) == 0
    moves = croupier.ListMoves(cpb.ListMovesRequest(match=m.name)).moves
    assert [mv.reason for mv in moves if mv.kind == "forfeited"] == ["turn_time"]
    assert [a.id for a in clock.acted if a.id == m.name.rsplit("/", 1)[1]]


def test_a_treinta_y_una_round_is_stood_for_to_the_showdown(api: Api, clock: TurnClock) -> None:
    croupier = _stub(api, "croupier", treinta_y_una_pb2_grpc.TreintaYUnaServiceStub)
    table = croupier.OpenTable(tpb.OpenTableRequest(
        request_id=new_request_id(), table_id=fresh("ttc"), overrides={"turn_seconds": "1"}))
    r = croupier.OpenRound(tpb.OpenRoundRequest(
        request_id=new_request_id(), parent=table.name,
        seats=[f"accounts/{p}" for p in PLAYERS], bank=money(100_000)))
    for p in r.seats:
        if p != r.banker:
            r = _stub(api, p, treinta_y_una_pb2_grpc.TreintaYUnaServiceStub).PlaceStake(
                tpb.PlaceStakeRequest(request_id=new_request_id(), round=r.name,
                                      player=f"accounts/{p}", amount=money(1_000)))
    r = croupier.Deal(tpb.DealRequest(request_id=new_request_id(), round=r.name))
    r = _until(lambda: croupier.GetRound(tpb.GetRoundRequest(name=r.name)),
               lambda x: x.phase == "showdown", 30)
    assert r.phase == "showdown"
    assert all(h.stood or h.out for h in r.hands)
    stood = [a.player for a in clock.acted if a.id == r.name.rsplit("/", 1)[1]]
    assert len(stood) == len(set(stood)) and stood  # each at most once
    settled = croupier.SettleRound(tpb.SettleRoundRequest(request_id=new_request_id(),
                                                          round=r.name))
    assert settled.phase == "settled"
    assert sum(api.running.ledger.balances().values()) == 0


def test_sabot_serve_runs_the_turn_clock(tmp_path: Path) -> None:
    """``sabot serve`` (its own ledger process): a Treinta y Una player who does not act is stood
    for by ``system:turn-clock``."""
    import grpc

    from tests.ops.support import ADMIN_TOKEN, Served

    served = Served.dev(f"sqlite:///{tmp_path}/clock.db", tmp_path)
    try:
        target = served.wait_listening()
        token = _until(served.admin_token, lambda t: t != ADMIN_TOKEN, 10)  # (printed after)
        channel = grpc.insecure_channel(target)
        game = treinta_y_una_pb2_grpc.TreintaYUnaServiceStub(authed(channel, token, 30.0))
        cashier = cashier_pb2_grpc.CashierServiceStub(authed(channel, token, 30.0))
        for p in ("ana", "beto"):
            cashier.OpenAccount(cashier_pb2.OpenAccountRequest(
                request_id=f"open-{p}", account_id=p, currency_code="EUR"))
            cashier.Deposit(cashier_pb2.DepositRequest(
                request_id=f"deposit-{p}", name=f"accounts/{p}", amount=money(100_000)))
        table = game.OpenTable(tpb.OpenTableRequest(
            request_id="t", table_id="tyu-clock", overrides={"turn_seconds": "1"}))
        r = game.OpenRound(tpb.OpenRoundRequest(request_id="r", parent=table.name,
                                                seats=["accounts/ana", "accounts/beto"],
                                                bank=money(10_000)))
        punter = next(p for p in r.seats if p != r.banker)
        r = game.PlaceStake(tpb.PlaceStakeRequest(request_id="s", round=r.name,
                                                  player=f"accounts/{punter}",
                                                  amount=money(100)))
        r = game.Deal(tpb.DealRequest(request_id="d", round=r.name))
        r = _until(lambda: game.GetRound(tpb.GetRoundRequest(name=r.name)),
                   lambda x: x.phase == "showdown", 30)
        assert r.phase == "showdown" and all(h.stood or h.out for h in r.hands)
        channel.close()
    finally:
        assert served.stop() == 0
    import sqlite3

    with sqlite3.connect(tmp_path / "clock.db") as db:  # recorded as the turn clock's
        stored = [bytes(row[0]) for row in db.execute(
            "SELECT state FROM stored_events WHERE topic = 'sabot.ledger:Request.Recorded'")]
    assert sum(PRINCIPAL.encode() in state for state in stored) == 2  # the punter, the banker
