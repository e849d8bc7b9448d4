"""Treinta y Una end to end over gRPC against a real server (both stores and the ledger process):
four players, whole rounds, the turn order, refusals with nothing stored, request ids replayed,
and the secrecy of the face-down cards on the bytes a watcher, another player and the back
office's feed receive."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import Any

import grpc

from services.api.client import new_request_id
from services.api.gen.sabot.treinta_y_una.v1 import treinta_y_una_pb2 as pb
from services.api.gen.sabot.treinta_y_una.v1 import treinta_y_una_pb2_grpc as pb_grpc
from services.api.gen.sabot.v1 import events_pb2, events_pb2_grpc, table_pb2
from tests.api.support import PLAYERS, Api, failure, fresh, money

Stub = Any


def stub(api: Api, who: str) -> Stub:
    token = api.tokens.get(who) or api.player_tokens[who]
    channel = api.as_(who).channel
    raw = pb_grpc.TreintaYUnaServiceStub(channel)
    metadata = (("authorization", f"Bearer {token}"),)

    class Authed:
        def __getattr__(self, name: str) -> Any:
            method = getattr(raw, name)
            return lambda request, **kw: method(request, metadata=metadata,
                                                timeout=kw.pop("timeout", 30), **kw)

    return Authed()


def open_tyu_table(api: Api, **overrides: str) -> str:
    table = stub(api, "croupier").OpenTable(pb.OpenTableRequest(
        request_id=new_request_id(), table_id=fresh("tyu"), overrides=overrides))
    assert table.options["tie"] == "banker_wins" and table.preset == "clasica"
    assert table.game == "treinta-y-una"
    return str(table.name)


def open_round(api: Api, table: str, bank: int = 100_000) -> pb.Round:
    r: pb.Round = stub(api, "croupier").OpenRound(pb.OpenRoundRequest(
        request_id=new_request_id(), parent=table, seats=[f"accounts/{p}" for p in PLAYERS],
        bank=money(bank)))
    return r


def stakes(api: Api, r: pb.Round, amount: int = 1_000) -> pb.Round:
    for p in r.seats:
        if p != r.banker:
            r = stub(api, p).PlaceStake(pb.PlaceStakeRequest(
                request_id=new_request_id(), round=r.name, player=f"accounts/{p}",
                amount=money(amount)))
    return r


def turns(api: Api, r: pb.Round, said: list[str]) -> pb.Round:
    while r.phase == "playing":
        who = r.whose_turn
        hand = stub(api, who).GetMyHand(pb.GetMyHandRequest(round=r.name,
                                                            player=f"accounts/{who}"))
        assert hand.shown and all(c.code for c in hand.cards)
        limit = 25 if who == r.banker else 21
        if hand.total < limit:
            said.append(f"{who}: carta")
            r = stub(api, who).Carta(pb.CartaRequest(request_id=new_request_id(),
                                                     round=r.name, player=f"accounts/{who}"))
        else:
            said.append(f"{who}: me planto")
            r = stub(api, who).MePlanto(pb.MePlantoRequest(
                request_id=new_request_id(), round=r.name, player=f"accounts/{who}"))
    return r


def play(api: Api, table: str) -> pb.Round:
    r = stakes(api, open_round(api, table))
    r = stub(api, "croupier").Deal(pb.DealRequest(request_id=new_request_id(), round=r.name))
    r = turns(api, r, [])
    return stub(api, "croupier").SettleRound(pb.SettleRoundRequest(
        request_id=new_request_id(), round=r.name))  # type: ignore[no-any-return]


def test_full_rounds_four_players_the_bank_passing(api: Api) -> None:
    table = open_tyu_table(api)
    last: pb.Round | None = None
    total = _players_money(api)
    for _ in range(4):
        r = play(api, table)
        assert r.phase == "settled" and len(r.hands) == 4
        assert all(c.code for h in r.hands for c in h.cards)
        assert {x.player for x in r.results} == set(r.seats) - {r.banker}
        if last is None:
            assert r.banker_reason == "lot" and r.lot_index == list(r.seats).index(r.banker)
        else:
            assert (r.banker, r.banker_reason) == (last.next_banker, last.next_banker_reason)
        after = _players_money(api)
        assert after == total  # no commission: the players' money only moved between them
        last = r
    latest = stub(api, "back_office").GetLatestRound(pb.GetLatestRoundRequest(parent=table))
    assert latest.name == last.name  # type: ignore[union-attr]
    recall = stub(api, "player").RecallRound(pb.RecallRoundRequest(name=latest.name))
    assert recall.steps[0].event == "TreintaYUnaRound.Opened"
    assert recall.steps[-1].event == "TreintaYUnaRound.Settled"


def _players_money(api: Api) -> int:
    from tests.api.support import balance

    return sum(balance(api, p) for p in PLAYERS)


def _stored(api: Api) -> int:
    return int(api.running.hub.catch_up())


def test_turn_order_ownership_cover_and_request_ids(api: Api) -> None:
    table = open_tyu_table(api, max_stake="5000")
    r = open_round(api, table, bank=6_000)
    punters = [p for p in r.seats if p != r.banker]
    first = stub(api, punters[0]).PlaceStake(pb.PlaceStakeRequest(
        request_id="tyu-stake-1", round=r.name, player=f"accounts/{punters[0]}",
        amount=money(2_000)))
    again = stub(api, punters[0]).PlaceStake(pb.PlaceStakeRequest(
        request_id="tyu-stake-1", round=r.name, player=f"accounts/{punters[0]}",
        amount=money(2_000)))
    assert again == first
    before = _stored(api)
    cases = [
        (stub(api, punters[1]).PlaceStake, pb.PlaceStakeRequest(
            request_id=new_request_id(), round=r.name, player=f"accounts/{punters[1]}",
            amount=money(1_500)), grpc.StatusCode.FAILED_PRECONDITION, "amount.amount_minor",
         "BANK_CANNOT_COVER"),
        (stub(api, punters[1]).PlaceStake, pb.PlaceStakeRequest(
            request_id=new_request_id(), round=r.name, player=f"accounts/{punters[2]}",
            amount=money(100)), grpc.StatusCode.PERMISSION_DENIED, "player", "NOT_YOUR_SEAT"),
        (stub(api, "croupier").PlaceStake, pb.PlaceStakeRequest(
            request_id=new_request_id(), round=r.name, player=f"accounts/{punters[1]}",
            amount=money(100)), grpc.StatusCode.PERMISSION_DENIED, "", ""),
        (stub(api, punters[1]).Deal, pb.DealRequest(request_id=new_request_id(), round=r.name),
         grpc.StatusCode.PERMISSION_DENIED, "", ""),
    ]
    for call, request, code, field, reason in cases:
        got = failure(call, request)
        assert got[0] == code, (request, got)
        if field:
            assert got[1:] == (field, reason), got
    assert _stored(api) == before  # nothing stored on refusal
    r = stub(api, punters[1]).PlaceStake(pb.PlaceStakeRequest(
        request_id=new_request_id(), round=r.name, player=f"accounts/{punters[1]}",
        amount=money(1_000)))
    r = stub(api, "croupier").Deal(pb.DealRequest(request_id=new_request_id(), round=r.name))
    mano, second = r.whose_turn, r.hands[1].player.removeprefix("accounts/")
    before = _stored(api)
    code, field, reason = failure(stub(api, second).Carta, pb.CartaRequest(
        request_id=new_request_id(), round=r.name, player=f"accounts/{second}"))
    assert (code, field, reason) == (grpc.StatusCode.FAILED_PRECONDITION, "player",
                                     "NOT_YOUR_TURN")
    code, field, _ = failure(stub(api, second).Carta, pb.CartaRequest(
        request_id=new_request_id(), round=r.name, player=f"accounts/{mano}"))
    assert (code, field) == (grpc.StatusCode.PERMISSION_DENIED, "player")
    code, field, _ = failure(stub(api, second).GetMyHand, pb.GetMyHandRequest(
        round=r.name, player=f"accounts/{mano}"))
    assert (code, field) == (grpc.StatusCode.PERMISSION_DENIED, "player")
    code, _, _ = failure(stub(api, "croupier").GetMyHand, pb.GetMyHandRequest(
        round=r.name, player=f"accounts/{mano}"))
    assert code == grpc.StatusCode.PERMISSION_DENIED
    code, field, _ = failure(stub(api, "croupier").Deal, pb.DealRequest(
        request_id=new_request_id(), round="tables/x/rounds/nope"))
    assert (code, field) == (grpc.StatusCode.INVALID_ARGUMENT, "round")
    assert _stored(api) == before
    try:
        call = stub(api, second).Carta(pb.CartaRequest(
            request_id=new_request_id(), round=r.name, player=f"accounts/{second}"))
    except grpc.RpcError as exc:
        # issue 20: a player reads no other player's name (GetRound hides them from it)
        assert mano not in str(exc.details())
        assert "it is another player's turn" in str(exc.details())
    else:
        raise AssertionError(call)
    planted = stub(api, mano).MePlanto(pb.MePlantoRequest(
        request_id="tyu-planto", round=r.name, player=f"accounts/{mano}"))
    assert planted.whose_turn == second
    replay = stub(api, mano).MePlanto(pb.MePlantoRequest(
        request_id="tyu-planto", round=r.name, player=f"accounts/{mano}"))
    assert replay == planted


CODE = re.compile(rb"(?<![0-9A-Za-z])(?:[1-7]|1[012])[OCEB](?![0-9A-Za-z])")


class Listener:
    """Every message a caller's stream receives, as bytes, until stopped."""

    def __init__(self, calls: Iterator[Any]) -> None:
        self.calls = calls
        self.received: list[bytes] = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            for message in self.calls:
                with self.lock:
                    self.received.append(message.SerializeToString())
        except grpc.RpcError:
            pass

    def bytes(self) -> bytes:
        with self.lock:
            return b"\0".join(self.received)

    def stop(self) -> None:
        self.calls.cancel()  # type: ignore[attr-defined]
        self.thread.join(timeout=5)


def _wait(listener: Listener, needle: bytes, seconds: float = 10) -> None:
    import time

    deadline = time.monotonic() + seconds
    while needle not in listener.bytes():
        assert time.monotonic() < deadline, f"{needle!r} never came"
        time.sleep(0.05)


def test_secrecy_on_the_bytes_a_watcher_another_player_and_the_feed_receive(api: Api) -> None:
    table = open_tyu_table(api)
    r = stakes(api, open_round(api, table))
    start = _stored(api)
    token = api.tokens
    watcher = Listener(pb_grpc.TreintaYUnaServiceStub(api.as_("croupier").channel).WatchRound(
        pb.WatchRoundRequest(round=r.name), metadata=(("authorization",
                                                       f"Bearer {token['croupier']}"),)))
    other = [p for p in r.seats if p != r.banker][-1]
    player_watch = Listener(pb_grpc.TreintaYUnaServiceStub(api.as_(other).channel).WatchRound(
        pb.WatchRoundRequest(round=r.name), metadata=(("authorization",
                                                       f"Bearer {api.player_tokens[other]}"),)))
    feed = Listener(events_pb2_grpc.FeedServiceStub(api.as_("back_office").channel).StreamEvents(
        events_pb2.StreamEventsRequest(after_position=start),
        metadata=(("authorization", f"Bearer {token['back_office']}"),)))
    table_watch = Listener(events_pb2_grpc.WatchServiceStub(api.as_("croupier").channel)
                           .WatchTable(events_pb2.WatchTableRequest(table=table,
                                                                    after_position=start),
                                       metadata=(("authorization",
                                                  f"Bearer {token['croupier']}"),)))
    answers: list[bytes] = []
    r = stub(api, "croupier").Deal(pb.DealRequest(request_id=new_request_id(), round=r.name))
    answers.append(r.SerializeToString())
    faces = {}
    for h in r.hands:
        who = h.player.removeprefix("accounts/")
        mine = stub(api, who).GetMyHand(pb.GetMyHandRequest(round=r.name, player=h.player))
        faces[who] = {c.code for c in mine.cards if c.face_down}
        assert all(c.code == "" for c in h.cards)  # the public answer: positions only
    said: list[str] = []
    r = turns(api, r, said)
    answers.append(r.SerializeToString())
    answers.append(stub(api, other).GetRound(pb.GetRoundRequest(name=r.name))
                   .SerializeToString())
    answers.append(stub(api, other).RecallRound(pb.RecallRoundRequest(name=r.name))
                   .SerializeToString())
    _wait(watcher, b"ShowdownDue")
    _wait(player_watch, b"ShowdownDue")
    _wait(feed, b"ShowdownDue")
    busted = {h.player.removeprefix("accounts/") for h in r.hands if h.out}
    hidden = {code.encode() for who, codes in faces.items() if who not in busted
              for code in codes}
    assert len(hidden) >= 3
    before = {"watcher": watcher.bytes(), "another player": player_watch.bytes(),
              "feed": feed.bytes(), "table watch": table_watch.bytes(),
              "answers": b"\0".join(answers)}
    for who, data in before.items():
        seen = set(CODE.findall(data))
        assert not hidden & seen, (who, hidden & seen)
    # the showdown: now every face-down card reaches all of them
    r = stub(api, "croupier").SettleRound(pb.SettleRoundRequest(request_id=new_request_id(),
                                                                round=r.name))
    everything = {c.encode() for codes in faces.values() for c in codes}
    _wait(feed, b"TreintaYUnaRound.Settled")
    watcher.thread.join(timeout=10)  # the round's watch ends with the round
    player_watch.thread.join(timeout=10)
    assert not watcher.thread.is_alive() and not player_watch.thread.is_alive()
    for who, listener in (("watcher", watcher), ("another player", player_watch),
                          ("feed", feed)):
        seen = set(CODE.findall(listener.bytes()))
        assert everything <= seen, (who, everything - seen)
    assert everything <= set(CODE.findall(r.SerializeToString()))
    feed.stop()
    table_watch.stop()
    watcher.stop()
    player_watch.stop()


def test_a_table_of_another_game_is_refused(api: Api) -> None:
    table = api.as_("croupier").tables.OpenTable(table_pb2.OpenTableRequest(
        request_id=new_request_id(), table_id=fresh("t")))
    code, field, reason = failure(stub(api, "croupier").OpenRound, pb.OpenRoundRequest(
        request_id=new_request_id(), parent=table.name, seats=["anne", "bruno"],
        bank=money(1000)))
    assert (code, field, reason) == (grpc.StatusCode.FAILED_PRECONDITION, "parent",
                                     "WRONG_GAME")
    code, field, _ = failure(stub(api, "croupier").OpenTable, pb.OpenTableRequest(
        request_id=new_request_id(), table_id=fresh("t"), preset="francaise"))
    assert (code, field) == (grpc.StatusCode.INVALID_ARGUMENT, "preset")
