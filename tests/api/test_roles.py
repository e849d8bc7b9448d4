"""Every role against every RPC, as a data-driven table: allowed (any answer but
PERMISSION_DENIED / UNAUTHENTICATED), or PERMISSION_DENIED; UNAUTHENTICATED without a token or
with a bad one; a player token refused on another player's account and stakes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
import pytest

from services.api.client import Client, authed, new_request_id
from services.api.gen.sabot.v1 import (
    betting_pb2,
    cashier_pb2,
    common_pb2,
    events_pb2,
    reports_pb2,
    reports_pb2_grpc,
    table_pb2,
)

from .support import ROLES, Api, fresh, money, open_coup, open_shoe, open_table

WRITE_TABLE = {"croupier", "admin"}
WRITE_BET = {"player", "admin"}
WRITE_CASH = {"cashier", "admin"}
READ_TABLE = {"croupier", "player", "back_office", "regulator", "admin"}
READ_ACCOUNT = {"cashier", "player", "back_office", "regulator", "admin"}
READ_OFFICE = {"back_office", "regulator", "admin"}

# (service attribute, method) -> the roles allowed. Written out here, apart from the server's
# own table, so that a change to either shows up.
EXPECTED: dict[tuple[str, str], set[str]] = {
    ("tables", "OpenTable"): WRITE_TABLE,
    ("tables", "GetTable"): READ_TABLE,
    ("tables", "ListTables"): READ_TABLE,
    ("tables", "OpenShoe"): WRITE_TABLE,
    ("tables", "GetShoe"): READ_TABLE,
    ("tables", "CutShoe"): WRITE_TABLE,
    ("tables", "CloseShoe"): WRITE_TABLE,
    ("tables", "OpenCoup"): WRITE_TABLE,
    ("tables", "GetCoup"): READ_TABLE,
    ("tables", "ListCoups"): READ_TABLE,
    ("tables", "CloseBetting"): WRITE_TABLE,
    ("tables", "DealCoup"): WRITE_TABLE,
    ("tables", "SettleCoup"): WRITE_TABLE,
    ("tables", "CloseTable"): WRITE_TABLE,
    ("betting", "PlaceStake"): WRITE_BET,
    ("betting", "RaiseStake"): WRITE_BET,
    ("betting", "WithdrawStake"): WRITE_BET,
    ("betting", "InsureStake"): WRITE_BET,
    ("betting", "ChooseRefait31"): WRITE_BET,
    ("betting", "MoveStake"): WRITE_BET,
    ("betting", "HalfWithdrawStake"): WRITE_BET,
    ("betting", "BatchStakes"): WRITE_BET,
    ("betting", "GetStake"): READ_TABLE,
    ("betting", "ListStakes"): READ_TABLE,
    ("cashier", "OpenAccount"): WRITE_CASH,
    ("cashier", "GetAccount"): READ_ACCOUNT,
    ("cashier", "Deposit"): WRITE_CASH,
    ("cashier", "Withdraw"): WRITE_CASH,
    ("cashier", "BatchMovements"): WRITE_CASH,
    ("cashier", "ListStatementEntries"): READ_ACCOUNT,
    ("reports", "GetBalanceSheet"): READ_OFFICE,
    ("watch", "WatchTable"): READ_TABLE,
    ("feed", "StreamEvents"): READ_OFFICE,
    ("recall", "ListRecalledCoups"): READ_TABLE,
    ("read_models", "GetGamingDayReport"): READ_OFFICE,
    ("read_models", "GetPlayerStatement"): READ_ACCOUNT,
    ("read_models", "ListShoeHistory"): READ_OFFICE,
    ("read_models", "RecallCoups"): READ_OFFICE,
    ("read_models", "Reconcile"): READ_OFFICE,
    ("read_models", "GetProjectionLag"): READ_OFFICE,
}
SERVICE_OF = {"tables": "TableService", "betting": "BettingService",
              "cashier": "CashierService", "reports": "ReportService",
              "watch": "WatchService", "feed": "FeedService", "recall": "RecallService",
              "read_models": "ReadModelService"}


@pytest.fixture(scope="module")
def scene(api: Api) -> dict[str, str]:
    table = open_table(api)
    shoe = open_shoe(api, table.name)
    coup = open_coup(api, shoe.name)
    stakes = {}
    for player, chance in (("anne", common_pb2.CHANCE_NOIR), ("bruno", common_pb2.CHANCE_ROUGE)):
        result = api.as_(player).betting.PlaceStake(betting_pb2.PlaceStakeRequest(
            request_id=new_request_id(), coup=coup.name, account=f"accounts/{player}",
            chance=chance, amount=money(500)))
        stakes[player] = result.stake.name
    return {"table": table.name, "shoe": shoe.name, "coup": coup.name, **stakes}


def request_for(method: str, s: dict[str, str], account: str = "anne") -> Any:
    """A well-formed request for ``method`` on the scene, acting on ``account``."""
    rid = new_request_id()
    stake = s[account] if account in s else s["anne"]
    on_stake = {"request_id": rid, "name": stake, "coup": s["coup"]}
    build: dict[str, Callable[[], Any]] = {
        "OpenTable": lambda: table_pb2.OpenTableRequest(request_id=rid, table_id=fresh("r")),
        "GetTable": lambda: table_pb2.GetTableRequest(name=s["table"]),
        "ListTables": lambda: table_pb2.ListTablesRequest(page_size=2),
        "OpenShoe": lambda: table_pb2.OpenShoeRequest(request_id=rid, parent=s["table"]),
        "GetShoe": lambda: table_pb2.GetShoeRequest(name=s["shoe"]),
        "CutShoe": lambda: table_pb2.CutShoeRequest(request_id=rid, name=s["shoe"],
                                                    cut_position=10, cut_by="anne"),
        "CloseShoe": lambda: table_pb2.CloseShoeRequest(request_id=rid, name=s["shoe"] + "x"),
        "OpenCoup": lambda: table_pb2.OpenCoupRequest(request_id=rid, parent=s["shoe"]),
        "GetCoup": lambda: table_pb2.GetCoupRequest(name=s["coup"]),
        "ListCoups": lambda: table_pb2.ListCoupsRequest(parent=s["shoe"], page_size=2),
        "CloseBetting": lambda: table_pb2.CloseBettingRequest(request_id=rid, name=s["coup"]
                                                              + "x"),
        "DealCoup": lambda: table_pb2.DealCoupRequest(request_id=rid, name=s["coup"] + "x"),
        "SettleCoup": lambda: table_pb2.SettleCoupRequest(request_id=rid, name=s["coup"]),
        "CloseTable": lambda: table_pb2.CloseTableRequest(request_id=rid, name=s["table"]),
        "PlaceStake": lambda: betting_pb2.PlaceStakeRequest(
            request_id=rid, coup=s["coup"], account=f"accounts/{account}",
            chance=common_pb2.CHANCE_NOIR if account == "anne" else common_pb2.CHANCE_ROUGE,
            amount=money(100)),
        "RaiseStake": lambda: betting_pb2.RaiseStakeRequest(**on_stake, amount=money(100)),
        "WithdrawStake": lambda: betting_pb2.WithdrawStakeRequest(
            request_id=rid, name=stake + "0", coup=s["coup"]),
        "InsureStake": lambda: betting_pb2.InsureStakeRequest(**on_stake),
        "ChooseRefait31": lambda: betting_pb2.ChooseRefait31Request(
            **on_stake, refait31_choice=common_pb2.REFAIT31_CHOICE_PRISON),
        "MoveStake": lambda: betting_pb2.MoveStakeRequest(
            **on_stake, chance=common_pb2.CHANCE_COULEUR),
        "HalfWithdrawStake": lambda: betting_pb2.HalfWithdrawStakeRequest(**on_stake),
        "BatchStakes": lambda: betting_pb2.BatchStakesRequest(
            request_id=rid, coup=s["coup"], stakes=[betting_pb2.StakeItem(
                action=betting_pb2.STAKE_ACTION_PLACE, account=f"accounts/{account}",
                chance=common_pb2.CHANCE_NOIR if account == "anne" else common_pb2.CHANCE_ROUGE,
                amount=money(100))]),
        "GetStake": lambda: betting_pb2.GetStakeRequest(name=stake),
        "ListStakes": lambda: betting_pb2.ListStakesRequest(parent=s["table"]),
        "OpenAccount": lambda: cashier_pb2.OpenAccountRequest(request_id=rid,
                                                              account_id=fresh("r")),
        "GetAccount": lambda: cashier_pb2.GetAccountRequest(name=f"accounts/{account}"),
        "Deposit": lambda: cashier_pb2.DepositRequest(request_id=rid, name=f"accounts/{account}",
                                                      amount=money(1)),
        "Withdraw": lambda: cashier_pb2.WithdrawRequest(request_id=rid,
                                                        name=f"accounts/{account}",
                                                        amount=money(1)),
        "BatchMovements": lambda: cashier_pb2.BatchMovementsRequest(
            request_id=rid, movements=[cashier_pb2.CageMovement(
                kind=cashier_pb2.CAGE_MOVEMENT_KIND_DEPOSIT, name=f"accounts/{account}",
                amount=money(1))]),
        "ListStatementEntries": lambda: cashier_pb2.ListStatementEntriesRequest(
            parent=f"accounts/{account}", page_size=2),
        "GetBalanceSheet": lambda: cashier_pb2.GetBalanceSheetRequest(),
        "WatchTable": lambda: events_pb2.WatchTableRequest(table=s["table"]),
        "StreamEvents": lambda: events_pb2.StreamEventsRequest(stop_at_end=True, batch_size=1),
        "ListRecalledCoups": lambda: events_pb2.ListRecalledCoupsRequest(parent=s["table"]),
        "GetGamingDayReport": lambda: reports_pb2.GetGamingDayReportRequest(
            table=s["table"], gaming_day="2026-03-01"),
        "GetPlayerStatement": lambda: reports_pb2.GetPlayerStatementRequest(
            account=f"accounts/{account}", page_size=2),
        "ListShoeHistory": lambda: reports_pb2.ListShoeHistoryRequest(parent=s["table"]),
        "RecallCoups": lambda: reports_pb2.RecallCoupsRequest(table=s["table"], page_size=1),
        "Reconcile": lambda: reports_pb2.ReconcileRequest(),
        "GetProjectionLag": lambda: reports_pb2.GetProjectionLagRequest(),
    }
    return build[method]()


def stub_of(client: Client, service: str) -> Any:
    """The client's stub of ``service`` (ReadModelService: made here on its channel)."""
    if service == "read_models" and not hasattr(client, service):
        return reports_pb2_grpc.ReadModelServiceStub(authed(client.channel, client.token, 30.0))
    return getattr(client, service)


def outcome(client: Client, service: str, method: str, request: Any) -> grpc.StatusCode:
    """The status code of one call (a stream: of its first message, within a short wait)."""
    call = getattr(stub_of(client, service), method)
    try:
        if service in ("watch", "feed"):
            stream = call(request, timeout=0.5)
            try:
                next(iter(stream))
            except StopIteration:
                pass
            finally:
                stream.cancel()
        else:
            call(request)
    except grpc.RpcError as exc:
        code = exc.code()
        assert isinstance(code, grpc.StatusCode)
        return code
    return grpc.StatusCode.OK


def test_every_rpc_of_the_api_is_in_the_table() -> None:
    from services.api.gen.sabot.v1 import betting_pb2 as b
    from services.api.gen.sabot.v1 import cashier_pb2 as c
    from services.api.gen.sabot.v1 import events_pb2 as e
    from services.api.gen.sabot.v1 import reports_pb2 as r
    from services.api.gen.sabot.v1 import table_pb2 as t

    served = {(service.name, m.name) for module in (t, b, c, e, r)
              for service in module.DESCRIPTOR.services_by_name.values()
              for m in service.methods}
    listed = {(SERVICE_OF[svc], m) for svc, m in EXPECTED}
    assert served == listed


CASES = [(svc, m, role) for (svc, m) in EXPECTED for role in ROLES]


@pytest.mark.parametrize(("service", "method", "role"), CASES,
                         ids=[f"{m}-{r}" for _, m, r in CASES])
def test_role_against_rpc(api: Api, scene: dict[str, str], service: str, method: str,
                          role: str) -> None:
    code = outcome(api.as_(role), service, method, request_for(method, scene))
    if role in EXPECTED[(service, method)]:
        assert code not in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED,
                            grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN), code
    else:
        assert code == grpc.StatusCode.PERMISSION_DENIED


@pytest.mark.parametrize(("service", "method"), list(EXPECTED), ids=[m for _, m in EXPECTED])
def test_no_token_or_a_bad_token_is_unauthenticated(api: Api, scene: dict[str, str],
                                                    service: str, method: str) -> None:
    for token in (None, "not-a-token", ""):
        client = api.anonymous(token)
        try:
            code = outcome(client, service, method, request_for(method, scene))
        finally:
            client.close()
        assert code == grpc.StatusCode.UNAUTHENTICATED, token


def test_a_wrong_scheme_is_unauthenticated(api: Api, scene: dict[str, str]) -> None:
    token = api.tokens["admin"]
    for header in (f"Basic {token}", token, "Bearer", "Bearer  "):
        try:
            api.as_("admin").tables.GetTable(table_pb2.GetTableRequest(name=scene["table"]),
                                              metadata=(("authorization", header),))
        except grpc.RpcError as exc:
            assert exc.code() == grpc.StatusCode.UNAUTHENTICATED, header
        else:
            raise AssertionError(header)


ACCOUNT_BOUND = ["PlaceStake", "RaiseStake", "WithdrawStake", "InsureStake", "ChooseRefait31",
                 "MoveStake", "HalfWithdrawStake", "BatchStakes", "GetStake", "GetAccount",
                 "ListStatementEntries", "GetPlayerStatement"]


@pytest.mark.parametrize("method", ACCOUNT_BOUND)
def test_a_player_may_not_touch_another_players_account(api: Api, scene: dict[str, str],
                                                        method: str) -> None:
    service = next(svc for svc, m in EXPECTED if m == method)
    if method == "WithdrawStake":  # on bruno's real stake, not the missing one
        request = betting_pb2.WithdrawStakeRequest(
            request_id=new_request_id(), name=scene["bruno"], coup=scene["coup"])
    else:
        request = request_for(method, scene, account="bruno")
    code = outcome(api.as_("anne"), service, method, request)
    assert code == grpc.StatusCode.PERMISSION_DENIED


def test_a_player_lists_only_its_own_stakes(api: Api, scene: dict[str, str]) -> None:
    mine = api.as_("anne").betting.ListStakes(betting_pb2.ListStakesRequest(
        parent=scene["table"]))
    assert mine.stakes and {s.account for s in mine.stakes} == {"accounts/anne"}
    every = api.as_("croupier").betting.ListStakes(betting_pb2.ListStakesRequest(
        parent=scene["table"]))
    assert {"accounts/anne", "accounts/bruno"} <= {s.account for s in every.stakes}


def test_health_and_reflection_need_no_token(api: Api) -> None:
    from grpc_health.v1 import health_pb2
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    client = api.anonymous()
    try:
        reply = client.health.Check(health_pb2.HealthCheckRequest(service="sabot.v1.TableService"))
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        stub = reflection_pb2_grpc.ServerReflectionStub(client.channel)
        answers = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(
            list_services="")]))
        names = {s.name for a in answers for s in a.list_services_response.service}
        assert {f"sabot.v1.{s}" for s in SERVICE_OF.values()} <= names
    finally:
        client.close()
