"""TreintaYUnaService.GetReconciliation against a real server (both stores and the ledger
process): served from the read models, it answers what the ledger's query answers, commission
included; the back office and the regulator only; bad input INVALID_ARGUMENT naming the field,
an unknown table NOT_FOUND."""

from __future__ import annotations

import grpc

from services.api.client import new_request_id
from services.api.gen.sabot.treinta_y_una.v1 import treinta_y_una_pb2 as pb
from services.api.gen.sabot.v1 import table_pb2
from tests.api.support import Api, failure
from tests.treinta_y_una.test_grpc import open_round, open_tyu_table, play, stakes, stub


def test_the_reconciliation_over_grpc_is_the_ledgers(api: Api) -> None:
    table = open_tyu_table(api, commission="5%")
    table_id = table.removeprefix("tables/")
    rounds = [play(api, table) for _ in range(3)]
    stakes(api, open_round(api, table))  # in play: not counted
    request = pb.GetReconciliationRequest(table=table)
    got = stub(api, "back_office").GetReconciliation(request)
    assert stub(api, "regulator").GetReconciliation(request).days == got.days
    expected = api.running.ledger.tyu_reconcile(table_id)
    assert [(d.gaming_day, d.rounds, d.stakes.amount_minor, d.collected.amount_minor,
             d.paid.amount_minor, d.commission.amount_minor, d.players_net.amount_minor,
             d.carried.amount_minor, d.balanced) for d in got.days] == [
        (d.gaming_day, d.rounds, d.stakes, d.collected, d.paid, d.commission, d.players_net,
         d.carried, d.balanced) for d in expected]
    assert got.balanced and got.table == table and got.position > 0
    moved = [m for r in rounds for m in r.movements]
    commission = sum(m.amount.amount_minor for m in moved if "commission" in m.kind)
    assert sum(d.rounds for d in got.days) == 3
    assert sum(d.commission.amount_minor for d in got.days) == commission > 0
    assert sum(d.stakes.amount_minor for d in got.days) == 3 * 3 * 1_000
    assert sum(d.paid.amount_minor for d in got.days) == sum(
        m.amount.amount_minor for m in moved if m.kind == "payment")
    assert all(d.stakes.currency_code == "EUR" for d in got.days)
    day = got.days[0].gaming_day
    one = stub(api, "back_office").GetReconciliation(
        pb.GetReconciliationRequest(table=table, gaming_day=day))
    assert list(one.days) == [d for d in got.days if d.gaming_day == day]
    none = stub(api, "back_office").GetReconciliation(
        pb.GetReconciliationRequest(table=table, gaming_day="2001-01-01"))
    assert not none.days and none.balanced


def test_who_may_ask_and_bad_input(api: Api) -> None:
    table = open_tyu_table(api)
    call = stub(api, "back_office").GetReconciliation
    for who in ("croupier", "cashier", "anne"):
        code, _, _ = failure(stub(api, who).GetReconciliation,
                             pb.GetReconciliationRequest(table=table))
        assert code == grpc.StatusCode.PERMISSION_DENIED
    for bad, field in ((pb.GetReconciliationRequest(), "table"),
                       (pb.GetReconciliationRequest(table="tables/Not_Valid"), "table"),
                       (pb.GetReconciliationRequest(table="rounds/x"), "table"),
                       (pb.GetReconciliationRequest(table=table, gaming_day="yesterday"),
                        "gaming_day"),
                       (pb.GetReconciliationRequest(table=table, gaming_day="2026-02-30"),
                        "gaming_day")):
        code, named, _ = failure(call, bad)
        assert (code, named) == (grpc.StatusCode.INVALID_ARGUMENT, field)
    code, named, _ = failure(call, pb.GetReconciliationRequest(table="tables/no-such-table"))
    assert (code, named) == (grpc.StatusCode.NOT_FOUND, "table")
    other = api.as_("croupier").tables.OpenTable(table_pb2.OpenTableRequest(
        request_id=new_request_id(), table_id=f"c-{table[-8:]}", game="cuarenta"))
    code, named, reason = failure(call, pb.GetReconciliationRequest(table=other.name))
    assert (code, named, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "table", "WRONG_GAME")
