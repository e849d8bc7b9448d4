"""Issue 20 over gRPC, on the bytes a player receives (both stores and the ledger process):

- Treinta y Una: no refusal a player meets names another player (GetRound hides them from it):
  the status details and the ``grpc-status-details-bin`` trailer of each, read as bytes;
- Treinta y Una: an OpenRound whose banker cannot put up the bank is FAILED_PRECONDITION
  naming ``bank.amount_minor``, nothing stored, no traceback in the server's log, no retries;
- Cuarenta: a player seated in no side of a match cannot forfeit a seat of it for its turn time
  (PERMISSION_DENIED naming ``seat``), nothing stored."""

from __future__ import annotations

from typing import Any

import grpc

from services.api.client import new_request_id
from services.api.gen.sabot.cuarenta.v1 import cuarenta_pb2 as cpb
from services.api.gen.sabot.treinta_y_una.v1 import treinta_y_una_pb2 as pb
from tests.api.support import PLAYERS, Api, failure, money, new_account
from tests.cuarenta.test_api import cuarenta_table, game, open_match
from tests.treinta_y_una.test_grpc import open_round, open_tyu_table, stub


def _stored(api: Api) -> int:
    return int(api.running.hub.catch_up())


def _refusal_bytes(call: Any, request: Any) -> tuple[grpc.StatusCode, bytes]:
    """The code of a refused call and every byte of it the caller reads: the details and the
    trailing metadata (the ``google.rpc.Status`` in ``grpc-status-details-bin``)."""
    try:
        call(request)
    except grpc.RpcError as exc:
        trailers = b"".join(
            (k.encode() + (v if isinstance(v, bytes) else str(v).encode()))
            for k, v in (exc.trailing_metadata() or ()))
        code = exc.code()
        assert isinstance(code, grpc.StatusCode)
        return code, str(exc.details()).encode() + trailers
    raise AssertionError("the call succeeded")


def test_no_refusal_to_a_player_names_another_player(api: Api) -> None:
    table = open_tyu_table(api, max_stake="5000")
    r = open_round(api, table, bank=6_000)
    punters = [p for p in r.seats if p != r.banker]
    first, second, third = punters
    seen: list[tuple[str, grpc.StatusCode, bytes]] = []

    def refused(who: str, method: str, **fields: Any) -> None:
        request = getattr(pb, f"{method}Request")(request_id=new_request_id(), round=r.name,
                                                  **fields)
        before = _stored(api)
        code, raw = _refusal_bytes(getattr(stub(api, who), method), request)
        seen.append((who, code, raw))
        assert _stored(api) == before  # a refusal stores nothing

    refused(r.banker, "PlaceStake", player=f"accounts/{r.banker}", amount=money(1_000))
    refused(first, "PlaceStake", player=f"accounts/{second}", amount=money(1_000))
    refused(first, "PlaceStake", player=f"accounts/{first}", amount=money(4_000))  # cover
    r1 = stub(api, first).PlaceStake(pb.PlaceStakeRequest(
        request_id=new_request_id(), round=r.name, player=f"accounts/{first}",
        amount=money(1_000)))
    refused(first, "PlaceStake", player=f"accounts/{first}", amount=money(1_000))  # twice
    refused(first, "Carta", player=f"accounts/{first}")  # betting: wrong phase
    stub(api, second).PlaceStake(pb.PlaceStakeRequest(
        request_id=new_request_id(), round=r1.name, player=f"accounts/{second}",
        amount=money(1_000)))
    dealt = stub(api, "croupier").Deal(pb.DealRequest(request_id=new_request_id(),
                                                      round=r.name))
    on_turn = dealt.whose_turn
    waiting = next(p for p in (first, second) if p != on_turn)
    refused(waiting, "Carta", player=f"accounts/{waiting}")  # NOT_YOUR_TURN
    refused(waiting, "MePlanto", player=f"accounts/{waiting}")  # NOT_YOUR_TURN
    refused(third, "MePlanto", player=f"accounts/{third}")  # NOT_IN_GAME
    refused(r.banker, "Carta", player=f"accounts/{r.banker}")  # the banker's turn is last
    refused(waiting, "Carta", player=f"accounts/{on_turn}")  # NOT_YOUR_SEAT
    refused(waiting, "PlaceStake", player=f"accounts/{waiting}", amount=money(1_000))
    code, raw = _refusal_bytes(stub(api, waiting).GetMyHand,
                               pb.GetMyHandRequest(round=r.name, player=f"accounts/{on_turn}"))
    seen.append((waiting, code, raw))
    assert {c for _, c, _ in seen} == {grpc.StatusCode.FAILED_PRECONDITION,
                                       grpc.StatusCode.PERMISSION_DENIED}
    assert b"another player" in b"".join(raw for _, _, raw in seen)
    for who, code, raw in seen:
        for other in r.seats:
            if other != who:
                assert other.encode() not in raw, (who, code, other, raw)


def test_a_banker_who_cannot_put_up_the_bank(api: Api) -> None:
    table = open_tyu_table(api)
    seats = [new_account(api, deposit=1_000) for _ in range(3)]
    before = _stored(api)
    start = len(api.log.getvalue())
    rid = new_request_id()
    request = pb.OpenRoundRequest(request_id=rid, parent=table,
                                  seats=[f"accounts/{s}" for s in seats], bank=money(5_000))
    code, field, reason = failure(stub(api, "croupier").OpenRound, request)
    assert (code, field, reason) == (grpc.StatusCode.FAILED_PRECONDITION, "bank.amount_minor",
                                     "INSUFFICIENT_FUNDS")
    assert _stored(api) == before
    logged = api.log.getvalue()[start:]
    assert "Traceback" not in logged and "not decided" not in logged
    assert logged.count(rid) <= 1  # answered once: no retries
    # the same request again: the same refusal, and a bank they have opens the round
    assert failure(stub(api, "croupier").OpenRound, request)[:2] == (
        grpc.StatusCode.FAILED_PRECONDITION, "bank.amount_minor")
    r = stub(api, "croupier").OpenRound(pb.OpenRoundRequest(
        request_id=new_request_id(), parent=table, seats=[f"accounts/{s}" for s in seats],
        bank=money(1_000)))
    assert r.phase == "betting"


def test_a_stranger_cannot_forfeit_a_seat_of_a_match(api: Api) -> None:
    table_id = cuarenta_table(api)
    seated, stranger = PLAYERS[:2], PLAYERS[2]
    m = open_match(api, table_id, seated, 100).match
    m = game(api, "croupier").Deal(cpb.DealRequest(request_id=new_request_id(),
                                                   match=m.name)).match
    before = _stored(api)
    them = game(api, stranger)
    for seat in (0, 1):
        code, field, reason = failure(them.Forfeit, cpb.ForfeitRequest(
            request_id=new_request_id(), match=m.name, seat=seat, reason="turn_time"))
        assert (code, field, reason) == (grpc.StatusCode.PERMISSION_DENIED, "seat",
                                         "NOT_AN_OPPONENT")
        code, field, _ = failure(them.Forfeit, cpb.ForfeitRequest(
            request_id=new_request_id(), match=m.name, seat=seat, reason="abandoned"))
        assert (code, field) == (grpc.StatusCode.PERMISSION_DENIED, "seat")
    # every refusal the stranger meets, on its bytes: no seated player's name (GetMatch shows
    # it the seats as "")
    calls = [(them.Forfeit, cpb.ForfeitRequest(request_id=new_request_id(), match=m.name,
                                               seat=m.to_act, reason="turn_time")),
             (them.PlayCard, cpb.PlayCardRequest(request_id=new_request_id(), match=m.name,
                                                 seat=m.to_act, card="AS")),
             (them.GetHand, cpb.GetHandRequest(match=m.name, seat=m.to_act))]
    for call, request in calls:
        code, raw = _refusal_bytes(call, request)
        assert code == grpc.StatusCode.PERMISSION_DENIED
        assert all(s.encode() not in raw for s in seated), raw
    assert _stored(api) == before
    after = game(api, "croupier").GetMatch(cpb.GetMatchRequest(name=m.name))
    assert after.phase == "playing"


def test_no_trente_et_quarante_refusal_to_a_player_names_another(api: Api) -> None:
    """The third game: the refusals bruno meets at a coup where anne stakes too (another's
    account, another's stake for each stake command, over the maximum, opposed chances,
    insurance refused, betting closed), on their bytes: never anne's name (WatchTable hides it
    from him). Ownership is checked first (docs/architecture.md), the rule book's messages name
    only the caller's own account."""
    from services.api.gen.sabot.v1 import betting_pb2, common_pb2
    from tests.api.support import open_coup, open_shoe, open_table
    from tests.api.test_retries_after_state_change import place, step

    coup = open_coup(api, open_shoe(api, open_table(api).name).name)
    annes = place(api, coup.name, amount=1_000).stake.name
    bruno = api.as_("bruno").betting
    mine = bruno.PlaceStake(betting_pb2.PlaceStakeRequest(
        request_id=new_request_id(), coup=coup.name, account="accounts/bruno",
        chance=common_pb2.CHANCE_NOIR, amount=money(1_000))).stake.name
    calls: list[tuple[Any, Any]] = [
        (bruno.PlaceStake, betting_pb2.PlaceStakeRequest(
            request_id=new_request_id(), coup=coup.name, account="accounts/anne",
            chance=common_pb2.CHANCE_NOIR, amount=money(100))),
        (bruno.PlaceStake, betting_pb2.PlaceStakeRequest(
            request_id=new_request_id(), coup=coup.name, account="accounts/bruno",
            chance=common_pb2.CHANCE_ROUGE, amount=money(100))),  # opposed to his noir
        (bruno.PlaceStake, betting_pb2.PlaceStakeRequest(
            request_id=new_request_id(), coup=coup.name, account="accounts/bruno",
            chance=common_pb2.CHANCE_NOIR, amount=money(10**9))),  # over the maximum
        (bruno.RaiseStake, betting_pb2.RaiseStakeRequest(
            request_id=new_request_id(), name=annes, coup=coup.name, amount=money(100))),
        (bruno.WithdrawStake, betting_pb2.WithdrawStakeRequest(
            request_id=new_request_id(), name=annes, coup=coup.name)),
        (bruno.InsureStake, betting_pb2.InsureStakeRequest(
            request_id=new_request_id(), name=annes, coup=coup.name)),
        (bruno.MoveStake, betting_pb2.MoveStakeRequest(
            request_id=new_request_id(), name=annes, coup=coup.name,
            chance=common_pb2.CHANCE_COULEUR)),
        (bruno.HalfWithdrawStake, betting_pb2.HalfWithdrawStakeRequest(
            request_id=new_request_id(), name=annes, coup=coup.name)),
        (bruno.ChooseRefait31, betting_pb2.ChooseRefait31Request(
            request_id=new_request_id(), name=annes, coup=coup.name,
            refait31_choice=common_pb2.REFAIT31_CHOICE_PRISON)),
    ]
    codes = set()
    for call, request in calls:
        before = _stored(api)
        code, raw = _refusal_bytes(call, request)
        codes.add(code)
        assert b"anne" not in raw, (request, raw)
        assert _stored(api) == before  # a refusal stores nothing
    step(api, "DealCoup", coup.name)
    code, raw = _refusal_bytes(bruno.RaiseStake, betting_pb2.RaiseStakeRequest(
        request_id=new_request_id(), name=mine, coup=coup.name, amount=money(100)))
    codes.add(code)
    assert b"anne" not in raw
    assert grpc.StatusCode.PERMISSION_DENIED in codes
    assert codes & {grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.INVALID_ARGUMENT}
