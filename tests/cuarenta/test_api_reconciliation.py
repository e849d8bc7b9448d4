"""CuarentaService.GetReconciliation against a real server (both stores and the ledger
process): served from the read models, it answers what the ledger's query answers, with the
commission and the stakes held for a match in play; the back office and the regulator only;
bad input INVALID_ARGUMENT naming the field, an unknown table NOT_FOUND."""

from __future__ import annotations

import grpc
from api.support import Api, failure, open_table

from services.api.gen.sabot.cuarenta.v1 import cuarenta_pb2 as pb

from .test_api import cuarenta_table, game, one_step, open_match, play_out


def test_the_reconciliation_over_grpc_is_the_ledgers(api: Api) -> None:
    table_id = cuarenta_table(api, {"commission_rate": "5%"})
    for _ in range(2):
        play_out(api, open_match(api, table_id, ("anne", "bruno"), 2_000).match)
    open_match(api, table_id, ("chiara", "dora"), 500)  # in play
    request = pb.GetReconciliationRequest(table=f"tables/{table_id}")
    got = game(api, "back_office").GetReconciliation(request)
    assert game(api, "regulator").GetReconciliation(request) == got
    r = api.running.ledger.cuarenta_reconcile(table_id)
    assert [(d.gaming_day, d.matches, d.stakes.amount_minor, d.payouts.amount_minor,
             d.commission.amount_minor, d.players_net.amount_minor, d.balanced)
            for d in got.days] == [
        (d.gaming_day, d.matches, d.stakes, d.payouts, d.commission, d.players_net, d.balanced)
        for d in r.days]
    assert (got.in_play, got.held.amount_minor, got.stakes_account.amount_minor,
            got.commission_account.amount_minor, got.balanced) == (
        r.in_play, r.held, r.stakes_account, r.commission_account, r.balanced)
    assert got.balanced and (got.in_play, got.held.amount_minor) == (1, 1_000)
    assert got.commission_account.amount_minor == 400 == sum(
        d.commission.amount_minor for d in got.days)
    assert sum(d.matches for d in got.days) == 2 and got.position > 0
    day = got.days[0].gaming_day
    one = game(api, "back_office").GetReconciliation(
        pb.GetReconciliationRequest(table=f"tables/{table_id}", gaming_day=day))
    assert list(one.days) == list(got.days[:1]) and one.held == got.held


def test_who_may_ask_and_bad_input(api: Api) -> None:
    table = f"tables/{cuarenta_table(api)}"
    call = game(api, "back_office").GetReconciliation
    for who in ("croupier", "cashier", "anne"):
        code, _, _ = failure(game(api, who).GetReconciliation,
                             pb.GetReconciliationRequest(table=table))
        assert code == grpc.StatusCode.PERMISSION_DENIED
    for bad, field in ((pb.GetReconciliationRequest(), "table"),
                       (pb.GetReconciliationRequest(table="mesa"), "table"),
                       (pb.GetReconciliationRequest(table=table, gaming_day="2026-1-1"),
                        "gaming_day")):
        code, named, _ = failure(call, bad)
        assert (code, named) == (grpc.StatusCode.INVALID_ARGUMENT, field)
    code, named, _ = failure(call, pb.GetReconciliationRequest(table="tables/no-such"))
    assert (code, named) == (grpc.StatusCode.NOT_FOUND, "table")
    other = open_table(api)  # Trente et Quarante's
    code, named, reason = failure(call, pb.GetReconciliationRequest(table=other.name))
    assert (code, named, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "table", "WRONG_GAME")


def test_list_moves_from_the_read_model_is_up_to_the_last_play(api: Api) -> None:
    """ListMoves reads the read model: caught up first, so the play just made is there, and
    the moves are the ledger's history, number for number."""
    table_id = cuarenta_table(api)
    opened = open_match(api, table_id, ("anne", "bruno"), 100)
    said = list(opened.moves)
    m = opened.match
    for _ in range(3):
        step = one_step(api, m)
        said += list(step.moves)
        m = step.match
        listed = game(api, "bruno").ListMoves(pb.ListMovesRequest(match=m.name)).moves
        assert [(mv.kind, mv.card, mv.seat) for mv in listed] == [
            (mv.kind, mv.card, mv.seat) for mv in said]
        assert [mv.number for mv in listed] == list(range(1, len(said) + 1))
    history = api.running.ledger.cuarenta_moves(m.name.rsplit("/", 1)[-1])
    assert [(mv.kind, mv.card or "", mv.time) for mv in history] == [
        (mv.kind, mv.card, mv.time) for mv in listed]
    later = game(api, "bruno").ListMoves(pb.ListMovesRequest(match=m.name, after=2)).moves
    assert list(later) == list(listed[2:])
