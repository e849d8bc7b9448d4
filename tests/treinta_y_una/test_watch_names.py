"""WatchRound shows a player the other players' names as WatchTable does on a Trente et
Quarante table: its own and the house's accounts, the others' as "" (the seats, the banker,
the mano, each stake's and card's holder, the money's accounts, the stakes carried); the house
(croupier, back office) sees every name. Asserted on the bytes each stream receives."""

from __future__ import annotations

import json

from services.api.client import new_request_id
from services.api.gen.sabot.treinta_y_una.v1 import treinta_y_una_pb2 as pb
from services.api.gen.sabot.treinta_y_una.v1 import treinta_y_una_pb2_grpc as pb_grpc
from tests.api.support import PLAYERS, Api, money
from tests.treinta_y_una.test_grpc import (
    Listener,
    open_round,
    open_tyu_table,
    stakes,
    stub,
    turns,
)

HOUSE = ("croupier", "back_office", "regulator")


def _watch(api: Api, who: str, r: pb.Round) -> Listener:
    token = api.tokens.get(who) or api.player_tokens[who]
    return Listener(pb_grpc.TreintaYUnaServiceStub(api.as_(who).channel).WatchRound(
        pb.WatchRoundRequest(round=r.name), metadata=(("authorization", f"Bearer {token}"),)))


def test_a_player_watching_sees_no_other_players_name(api: Api) -> None:
    table = open_tyu_table(api)
    r = stakes(api, open_round(api, table))
    punter = next(p for p in r.seats if p != r.banker)
    house, mine = _watch(api, "croupier", r), _watch(api, punter, r)
    r = stub(api, "croupier").Deal(pb.DealRequest(request_id=new_request_id(), round=r.name))
    r = turns(api, r, [])
    stub(api, "croupier").SettleRound(pb.SettleRoundRequest(request_id=new_request_id(),
                                                            round=r.name))
    for listener in (house, mine):
        listener.thread.join(timeout=15)  # the watch ends with the round
        assert not listener.thread.is_alive()
    seen, everyone = mine.bytes(), house.bytes()
    others = [p for p in PLAYERS if p != punter]
    assert all(p.encode() in everyone for p in PLAYERS)  # the house sees every name
    assert punter.encode() in seen  # the player its own
    assert not [p for p in others if p.encode() in seen], others
    steps = [s for m in mine.received for s in pb.WatchRoundResponse.FromString(m).steps]
    kinds = {s.event for s in steps}
    assert {"TreintaYUnaRound.Opened", "TreintaYUnaRound.CardDealt",
            "TreintaYUnaRound.HandShown", "TreintaYUnaRound.MoneyMoved"} <= kinds
    opened = json.loads(next(s.data_json for s in steps if s.event.endswith(".Opened")))
    assert opened["seats"] == [p if p == punter else "" for p in r.seats]
    assert opened["banker"] == ""  # another player's (the punter is not the banker)
    house_accounts = [json.loads(s.data_json) for s in steps if s.event.endswith("MoneyMoved")]
    assert any(m["credit_account"].startswith("table:") for m in house_accounts)
    # amounts and cards stay: the table is public, only the names are not
    assert len(steps) == len([s for m in house.received
                              for s in pb.WatchRoundResponse.FromString(m).steps])


def test_a_player_reading_a_round_sees_no_other_players_name(api: Api) -> None:
    """GetRound and GetLatestRound as RecallRound (the same function): a seated player its own
    name only, a player not at the round none; the house every name."""
    table = open_tyu_table(api)
    seated, outsider = PLAYERS[:2], PLAYERS[2]
    r = stub(api, "croupier").OpenRound(pb.OpenRoundRequest(
        request_id=new_request_id(), parent=table, seats=[f"accounts/{p}" for p in seated],
        bank=money(100_000)))
    r = stakes(api, r)
    r = stub(api, "croupier").Deal(pb.DealRequest(request_id=new_request_id(), round=r.name))
    punter = next(p for p in r.seats if p != r.banker)
    for who in (punter, outsider, *HOUSE):
        got = stub(api, who).GetRound(pb.GetRoundRequest(name=r.name))
        latest = stub(api, who).GetLatestRound(pb.GetLatestRoundRequest(parent=table))
        recalled = stub(api, who).RecallRound(pb.RecallRoundRequest(name=r.name)).round
        assert got == latest == recalled, who
        seen = got.SerializeToString()
        if who in HOUSE:
            assert got == r and all(p.encode() in seen for p in seated), who
            continue
        assert not [p for p in PLAYERS if p != who and p.encode() in seen], who
        assert list(got.seats) == [p if p == who else "" for p in r.seats]
        assert got.whose_turn in ("", who) and got.banker == ""
        assert [h.player for h in got.hands] == [
            h.player if h.player == f"accounts/{who}" else "" for h in r.hands]
        assert [(h.cards, h.stood) for h in got.hands] == [(h.cards, h.stood) for h in r.hands]
    assert punter.encode() in stub(api, punter).GetRound(
        pb.GetRoundRequest(name=r.name)).SerializeToString()
