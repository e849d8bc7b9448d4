"""Cuarenta over gRPC against a real server, on both stores and through the ledger process's
socket: whole matches (two players, two teams of two), refusals that store nothing and name
the rule, request ids replayed, and the secrecy of hands on the bytes an opponent, a watcher
and the back office's feed receive."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import grpc
from api.support import Api, failure, money

from services.api.client import authed, new_request_id
from services.api.gen.sabot.cuarenta.v1 import cuarenta_pb2 as pb
from services.api.gen.sabot.cuarenta.v1 import cuarenta_pb2_grpc
from services.api.gen.sabot.v1 import events_pb2, table_pb2

SERVICE = "/sabot.cuarenta.v1.CuarentaService/"


def game(api: Api, who: str) -> Any:
    """CuarentaService as ``who`` (a role, or a player's account)."""
    client = api.as_(who)
    token = api.tokens.get(who) or api.player_tokens[who]
    return cuarenta_pb2_grpc.CuarentaServiceStub(authed(client.channel, token, 30.0))


def cuarenta_table(api: Api, overrides: dict[str, str] | None = None) -> str:
    """A Cuarenta table, opened by the croupier (OpenTable with its game)."""
    table_id = f"c-{uuid.uuid4().hex[:10]}"
    table = api.as_("croupier").tables.OpenTable(table_pb2.OpenTableRequest(
        request_id=new_request_id(), table_id=table_id, game="cuarenta",
        overrides=overrides or {}))
    assert table.preset == "seed" and table.options["players"] == "2"
    return table_id


def position(api: Api) -> int:
    return int(api.running.hub.catch_up())


def balance(api: Api, account: str) -> int:
    return int(api.running.ledger.get_account(account).balance)


def open_match(api: Api, table_id: str, seats: tuple[str, ...], stake: int,
               **options: str) -> pb.MatchStep:
    step: pb.MatchStep = game(api, "croupier").OpenMatch(pb.OpenMatchRequest(
        request_id=new_request_id(), table=f"tables/{table_id}",
        seats=[f"accounts/{s}" for s in seats], stake=money(stake), options=options))
    return step


def seat_account(m: pb.Match, seat: int) -> str:
    return m.seats[seat].removeprefix("accounts/")


def one_step(api: Api, m: pb.Match) -> pb.MatchStep:
    """The croupier deals, or the seat to act plays (its player: the capture worth most, else
    its lowest card left on the table)."""
    if m.phase == "awaiting_deal":
        dealt: pb.MatchStep = game(api, "croupier").Deal(
            pb.DealRequest(request_id=new_request_id(), match=m.name))
        return dealt
    who = seat_account(m, m.to_act)
    hand = game(api, who).GetHand(pb.GetHandRequest(match=m.name, seat=m.to_act))
    best = max(hand.legal, key=lambda p: (p.points, len(p.capture)))
    if not best.capture:
        best = min(hand.legal, key=lambda p: (len(p.capture) > 0, p.card))
    played: pb.MatchStep = game(api, who).PlayCard(pb.PlayCardRequest(
        request_id=new_request_id(), match=m.name, seat=m.to_act, card=best.card,
        capture=list(best.capture), leave_on_table=not best.capture))
    return played


def play_out(api: Api, m: pb.Match, limit: int = 3000) -> pb.Match:
    for _ in range(limit):
        if m.phase == "over":
            return m
        m = one_step(api, m).match
    raise AssertionError("the match did not end")


def test_a_two_player_match_over_grpc(api: Api) -> None:
    table = cuarenta_table(api, {"commission_rate": "5%"})
    before = {p: balance(api, p) for p in ("anne", "bruno")}
    opened = open_match(api, table, ("anne", "bruno"), 2_000)
    m = opened.match
    assert [mv.kind for mv in opened.moves] == ["opened", "money", "money", "hand_begun"]
    assert (m.phase, m.stake.amount_minor, m.held) == ("awaiting_deal", 2_000, [0, 0])
    assert balance(api, f"table:{table}:stakes") == 4_000
    end = play_out(api, m)
    assert end.phase == "over" and end.winner in (0, 1)
    winner, loser = ("anne", "bruno") if end.winner == 0 else ("bruno", "anne")
    assert balance(api, winner) - before[winner] == 4_000 - 200 - 2_000
    assert balance(api, loser) - before[loser] == -2_000
    assert balance(api, f"table:{table}:stakes") == 0
    assert balance(api, f"table:{table}:house_commission") == 200
    moves = game(api, "back_office").ListMoves(pb.ListMovesRequest(match=end.name)).moves
    assert [mv.number for mv in moves] == list(range(1, len(moves) + 1))
    assert moves[-1].kind == "money" and moves[-1].amount.amount_minor > 0
    assert sum(1 for mv in moves if mv.kind == "hand_begun") == end.hands
    # the watcher's stream of a finished match: every move, then the end
    watched = [mv for r in game(api, "croupier").WatchMatch(
        pb.WatchMatchRequest(match=end.name)) for mv in r.moves]
    assert watched == list(moves)
    got = game(api, "bruno").GetMatch(pb.GetMatchRequest(name=end.name))
    assert got == end


def test_two_teams_over_grpc(api: Api) -> None:
    table = cuarenta_table(api)
    seats = ("anne", "bruno", "chiara", "dora")
    before = {p: balance(api, p) for p in seats}
    m = open_match(api, table, seats, 1_001).match
    assert m.options["players"] == "4" and len(m.held) == 4
    end = play_out(api, m)
    won = [p for i, p in enumerate(seats) if i % 2 == end.winner]
    lost = [p for i, p in enumerate(seats) if i % 2 != end.winner]
    assert sum(balance(api, p) - before[p] for p in won) == 1_001
    assert sum(balance(api, p) - before[p] for p in lost) == -1_001
    assert balance(api, f"table:{table}:stakes") == 0


def test_refusals_name_the_rule_and_store_nothing(api: Api) -> None:
    table = cuarenta_table(api)
    m = open_match(api, table, ("anne", "bruno"), 100).match
    code, _, reason = failure(game(api, "anne").PlayCard, pb.PlayCardRequest(
        request_id=new_request_id(), match=m.name, seat=0, card="AS"))
    assert (code, reason) == (grpc.StatusCode.FAILED_PRECONDITION, "WRONG_PHASE")
    m = game(api, "croupier").Deal(pb.DealRequest(request_id=new_request_id(),
                                                  match=m.name)).match
    anne = game(api, "anne").GetHand(pb.GetHandRequest(match=m.name, seat=0))
    bruno = game(api, "bruno").GetHand(pb.GetHandRequest(match=m.name, seat=1))
    assert len(anne.cards) == 5 and anne.to_act and not bruno.to_act and not bruno.legal
    start = position(api)

    def refused(who: str, call: str, request: Any) -> tuple[grpc.StatusCode, str, str]:
        return failure(getattr(game(api, who), call), request)

    def play(seat: int, card: str, capture: tuple[str, ...] = ()) -> pb.PlayCardRequest:
        return pb.PlayCardRequest(request_id=new_request_id(), match=m.name, seat=seat,
                                  card=card, capture=list(capture))

    assert refused("bruno", "PlayCard", play(1, bruno.cards[0].card)) == (
        grpc.StatusCode.FAILED_PRECONDITION, "seat", "OUT_OF_TURN")
    assert refused("bruno", "PlayCard", play(0, anne.cards[0].card)) == (
        grpc.StatusCode.PERMISSION_DENIED, "seat", "NOT_YOUR_SEAT")
    assert refused("anne", "PlayCard", play(0, bruno.cards[0].card)) == (
        grpc.StatusCode.FAILED_PRECONDITION, "card", "CARD_NOT_HELD")
    assert refused("anne", "PlayCard", play(0, anne.cards[0].card, (bruno.cards[1].card,))) == (
        grpc.StatusCode.FAILED_PRECONDITION, "capture", "NOT_ON_TABLE")
    assert refused("anne", "PlayCard", play(0, "9H"))[0] == grpc.StatusCode.INVALID_ARGUMENT
    assert refused("croupier", "PlayCard", play(0, anne.cards[0].card))[0] == (
        grpc.StatusCode.PERMISSION_DENIED)
    assert refused("bruno", "GetHand", pb.GetHandRequest(match=m.name, seat=0)) == (
        grpc.StatusCode.PERMISSION_DENIED, "seat", "NOT_YOUR_HAND")
    assert refused("croupier", "GetHand", pb.GetHandRequest(match=m.name, seat=0))[0] == (
        grpc.StatusCode.PERMISSION_DENIED)
    assert refused("anne", "Forfeit", pb.ForfeitRequest(
        request_id=new_request_id(), match=m.name, seat=0, reason="turn_time")) == (
        grpc.StatusCode.PERMISSION_DENIED, "seat", "NOT_AN_OPPONENT")
    assert refused("bruno", "Forfeit", pb.ForfeitRequest(
        request_id=new_request_id(), match=m.name, seat=0, reason="turn_time")) == (
        grpc.StatusCode.FAILED_PRECONDITION, "seat", "TURN_NOT_EXPIRED")
    assert refused("anne", "Deal", pb.DealRequest(request_id=new_request_id(),
                                                  match=m.name))[0] == (
        grpc.StatusCode.PERMISSION_DENIED)
    assert failure(api.as_("croupier").tables.OpenTable, table_pb2.OpenTableRequest(
        request_id=new_request_id(), table_id="c-bad", game="cuarenta",
        overrides={"players": "3"}))[:2] == (grpc.StatusCode.INVALID_ARGUMENT,
                                             "overrides.players")
    assert failure(api.as_("croupier").tables.OpenTable, table_pb2.OpenTableRequest(
        request_id=new_request_id(), table_id="c-bad", game="mus"))[:2] == (
        grpc.StatusCode.INVALID_ARGUMENT, "game")
    assert refused("croupier", "Deal", pb.DealRequest(
        request_id=new_request_id(), match=m.name.replace(table, "elsewhere")))[0] == (
        grpc.StatusCode.NOT_FOUND)
    assert position(api) == start  # nothing stored


def test_request_ids_are_replayed(api: Api) -> None:
    table = cuarenta_table(api)
    croupier = game(api, "croupier")
    request = pb.OpenMatchRequest(request_id=new_request_id(), table=f"tables/{table}",
                                  seats=["accounts/anne", "accounts/bruno"], stake=money(10))
    first = croupier.OpenMatch(request)
    assert croupier.OpenMatch(request) == first
    deal = pb.DealRequest(request_id=new_request_id(), match=first.match.name)
    dealt = croupier.Deal(deal)
    assert croupier.Deal(deal) == dealt
    hand = game(api, "anne").GetHand(pb.GetHandRequest(match=first.match.name, seat=0))
    card = hand.legal[0]
    play = pb.PlayCardRequest(request_id=new_request_id(), match=first.match.name, seat=0,
                              card=card.card, capture=list(card.capture),
                              leave_on_table=not card.capture)
    played = game(api, "anne").PlayCard(play)
    at = position(api)
    assert game(api, "anne").PlayCard(play) == played
    assert position(api) == at
    # the same request id from another principal is another request: refused on its own
    code, _, reason = failure(game(api, "bruno").PlayCard, play)
    assert code is grpc.StatusCode.PERMISSION_DENIED and reason == "NOT_YOUR_SEAT"


# --- secrecy on the bytes ----------------------------------------------------------------------


def _raw_unary(api: Api, who: str, method: str, request: Any) -> bytes:
    token = api.tokens.get(who) or api.player_tokens[who]
    call = api.as_(who).channel.unary_unary(SERVICE + method,
                                            request_serializer=type(request).SerializeToString)
    data: bytes = call(request, metadata=(("authorization", f"Bearer {token}"),), timeout=30)
    return data


def _raw_stream(api: Api, who: str, path: str, request: Any, seconds: float) -> bytes:
    token = api.tokens.get(who) or api.player_tokens[who]
    call = api.as_(who).channel.unary_stream(path,
                                             request_serializer=type(request).SerializeToString)
    out = b""
    stream: Iterator[bytes] = call(request, metadata=(("authorization", f"Bearer {token}"),),
                                   timeout=seconds)
    try:
        for chunk in stream:
            out += chunk
    except grpc.RpcError as exc:
        assert exc.code() is grpc.StatusCode.DEADLINE_EXCEEDED
    return out


def test_no_opponent_watcher_or_feed_learns_a_card_in_hand(api: Api) -> None:
    """While cards are in hands (the first hand of a match), what an opponent, a watcher, a
    display and the back office's feed receive names none of them, in any message's bytes
    (a card travels as a length-prefixed text ``\\x02`` + code in a message, as ``"5H"`` in
    the feed's JSON)."""
    start = position(api)
    table = cuarenta_table(api)
    m = open_match(api, table, ("anne", "bruno"), 50).match
    checked = 0
    while m.phase != "over" and m.hand == 1 and checked < 30:
        m = one_step(api, m).match
        if m.phase != "playing":
            continue
        anne = game(api, "anne").GetHand(pb.GetHandRequest(match=m.name, seat=0))
        bruno = game(api, "bruno").GetHand(pb.GetHandRequest(match=m.name, seat=1))
        held = {c.card for c in (*anne.cards, *bruno.cards)}
        seen = {
            "anne's opponent": (_raw_unary(api, "bruno", "GetMatch", pb.GetMatchRequest(
                name=m.name)) + _raw_unary(api, "bruno", "ListMoves",
                                           pb.ListMovesRequest(match=m.name)), bruno),
            "a watcher": (_raw_stream(api, "croupier", SERVICE + "WatchMatch",
                                      pb.WatchMatchRequest(match=m.name), 0.3), None),
            "the feed": (_raw_stream(api, "back_office", "/sabot.v1.FeedService/StreamEvents",
                                     events_pb2.StreamEventsRequest(after_position=start,
                                                                    stop_at_end=True), 5),
                         None),
        }
        for who, (data, own) in seen.items():
            mine = {c.card for c in own.cards} if own is not None else set()
            for code in held - mine:
                assert b"\x02" + code.encode() not in data, (who, code)
                assert f'"{code}"'.encode() not in data, (who, code)
        checked += 1
    assert checked >= 10
    # and the server's log lines name none either
    text = api.log.getvalue()
    for code in held:
        assert f'"{code}"' not in text
