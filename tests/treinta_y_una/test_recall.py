"""RecallRound over gRPC against a real server (both stores and the ledger process):

- a player's recall shows the other players' names as WatchRound shows them (the same
  function: "" for each, its own and the house's accounts kept), in the round and in every
  step; the croupier, the back office and the regulator see every name; on the bytes;
- the steps come from the read model, caught up first: at every point of a whole round the
  answer is the one the ledger's aggregate gives (``tyu_recall``), face-down cards by
  position and commitment only until their hand is shown."""

from __future__ import annotations

import json

from services.api.client import new_request_id
from services.api.gen.sabot.treinta_y_una.v1 import treinta_y_una_pb2 as pb
from services.treinta_y_una.servicer import _step, round_message, seen_by
from services.treinta_y_una.views import RoundRecall
from tests.api.support import PLAYERS, Api
from tests.treinta_y_una.test_grpc import CODE, open_round, open_tyu_table, stakes, stub
from tests.treinta_y_una.test_watch_names import HOUSE, _watch


def _recall(api: Api, who: str, r: pb.Round) -> pb.RoundRecall:
    recall: pb.RoundRecall = stub(api, who).RecallRound(pb.RecallRoundRequest(name=r.name))
    return recall


def _aggregates(api: Api, r: pb.Round, viewer: str | None = None) -> pb.RoundRecall:
    """RecallRound's answer as it was built from the aggregate (the ledger's ``tyu_recall``)."""
    found: RoundRecall = api.running.ledger.tyu_recall(r.name.rsplit("/", 1)[-1])
    return pb.RoundRecall(round=round_message(seen_by(found.round, viewer)),
                          steps=[_step(s, viewer) for s in found.steps])


def _settle(api: Api, r: pb.Round) -> pb.Round:
    settled: pb.Round = stub(api, "croupier").SettleRound(pb.SettleRoundRequest(
        request_id=new_request_id(), round=r.name))
    return settled


def _play_turn(api: Api, r: pb.Round) -> pb.Round:
    who = r.whose_turn
    hand = stub(api, who).GetMyHand(pb.GetMyHandRequest(round=r.name, player=f"accounts/{who}"))
    rid, player = new_request_id(), f"accounts/{who}"
    played: pb.Round
    if hand.total < (25 if who == r.banker else 21):
        played = stub(api, who).Carta(pb.CartaRequest(request_id=rid, round=r.name,
                                                      player=player))
    else:
        played = stub(api, who).MePlanto(pb.MePlantoRequest(request_id=rid, round=r.name,
                                                            player=player))
    return played


def test_a_player_recalling_sees_no_other_players_name(api: Api) -> None:
    table = open_tyu_table(api)
    r = stakes(api, open_round(api, table))
    punter = next(p for p in r.seats if p != r.banker)
    watch = _watch(api, punter, r)
    r = stub(api, "croupier").Deal(pb.DealRequest(request_id=new_request_id(), round=r.name))
    while r.phase == "playing":
        r = _play_turn(api, r)
    r = _settle(api, r)
    watch.thread.join(timeout=15)  # the watch ends with the round
    assert not watch.thread.is_alive()
    others = [p for p in PLAYERS if p != punter]
    mine = _recall(api, punter, r)
    seen = mine.SerializeToString()
    assert punter.encode() in seen  # its own name
    assert not [p for p in others if p.encode() in seen], others
    for who in HOUSE:  # the house sees every name
        everyone = _recall(api, who, r).SerializeToString()
        assert all(p.encode() in everyone for p in PLAYERS), who
    # the round: the others' names "" wherever they are
    rnd = mine.round
    assert list(rnd.seats) == [p if p == punter else "" for p in r.seats]
    assert rnd.banker == "" and rnd.mano in ("", punter) and rnd.next_banker in ("", punter)
    assert [h.player for h in rnd.hands] == [
        h.player if h.player == f"accounts/{punter}" else "" for h in r.hands]
    assert [s.player for s in rnd.stakes] == [
        s.player if s.player == f"accounts/{punter}" else "" for s in r.stakes]
    assert [x.player for x in rnd.results] == [
        x.player if x.player == punter else "" for x in r.results]
    assert [(h.cards, h.total) for h in rnd.hands] == [(h.cards, h.total) for h in r.hands]
    # the steps: exactly what its WatchRound showed it (the same function), the position
    # aside (0 in a recall)
    watched = [s for m in watch.received for s in pb.WatchRoundResponse.FromString(m).steps]
    assert [(s.version, s.event, s.time, s.data_json) for s in mine.steps] == [
        (s.version, s.event, s.time, s.data_json) for s in watched]
    opened = json.loads(mine.steps[0].data_json)
    assert opened["seats"] == list(rnd.seats) and opened["banker"] == ""
    moved = [json.loads(s.data_json) for s in mine.steps if s.event.endswith("MoneyMoved")]
    assert any(m["credit_account"].startswith("table:") for m in moved)  # the house's kept


def test_recall_from_the_read_model_is_the_aggregates_answer(api: Api) -> None:
    """At every step of a whole round (opened, staked, dealt, each turn, settled), the answer
    from the read model equals the one built from the aggregate, for the house and for a
    player; before the showdown no face-down card is in it, each by its position."""
    table = open_tyu_table(api)
    r = open_round(api, table)
    punter = next(p for p in r.seats if p != r.banker)

    def check(r: pb.Round) -> pb.RoundRecall:
        answer = _recall(api, "back_office", r)
        assert answer == _aggregates(api, r)  # the read model's steps, the last one included
        assert [s.version for s in answer.steps] == list(range(1, len(answer.steps) + 1))
        assert answer.steps[0].event == "TreintaYUnaRound.Opened"
        assert _recall(api, punter, r) == _aggregates(api, r, punter)
        return answer

    check(r)
    r = stakes(api, r)
    check(r)
    r = stub(api, "croupier").Deal(pb.DealRequest(request_id=new_request_id(), round=r.name))
    hidden: set[bytes] = set()
    for h in r.hands:
        own = stub(api, h.player.removeprefix("accounts/")).GetMyHand(
            pb.GetMyHandRequest(round=r.name, player=h.player))
        hidden |= {c.code.encode() for c in own.cards if c.face_down}
    dealt = check(r)
    cards = [json.loads(s.data_json) for s in dealt.steps if s.event.endswith(".CardDealt")]
    assert len(cards) == 3 * len(r.hands)
    assert all(set(c) == {"player", "position", "commitment"} for c in cards)  # no face
    while r.phase == "playing":
        r = _play_turn(api, r)
        answer = check(r)
        still = set()  # the face-down cards of the hands not shown yet (a bust one is)
        for h in r.hands:
            if not h.out:
                own = stub(api, h.player.removeprefix("accounts/")).GetMyHand(
                    pb.GetMyHandRequest(round=r.name, player=h.player))
                still |= {c.code.encode() for c in own.cards if c.face_down}
        assert still and not still & set(CODE.findall(answer.SerializeToString()))
    r = _settle(api, r)
    settled = check(r)
    assert settled.steps[-1].event == "TreintaYUnaRound.Settled"
    assert hidden <= set(CODE.findall(settled.SerializeToString()))  # shown at the showdown
