"""What a newcomer tripped over (issue 12, daily use), through the API: complete answers from
OpenShoe and CloseShoe, and NOT_FOUND / ALREADY_EXISTS details that name the resource."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2  # type: ignore[import-untyped]
from grpc_status import rpc_status

from services.api.client import Client, new_request_id
from services.api.gen.sabot.v1 import betting_pb2, cashier_pb2, regulator_pb2, table_pb2
from services.bootstrap import LEDGER_GAMES, SERVED

from .support import Api, new_account, open_coup, open_shoe, open_table

NO_ID = "00000000-0000-4000-8000-00000000000"


def resource(call: Any, request: Any) -> tuple[grpc.StatusCode, str, str]:
    """Call and expect an error: its code and its ResourceInfo's type and name."""
    with pytest.raises(grpc.RpcError) as failed:
        call(request)
    status = rpc_status.from_call(failed.value)  # type: ignore[arg-type]
    assert status is not None
    for detail in status.details:
        if detail.Is(error_details_pb2.ResourceInfo.DESCRIPTOR):
            info = error_details_pb2.ResourceInfo()
            detail.Unpack(info)
            return failed.value.code(), info.resource_type, info.resource_name
    raise AssertionError(f"no ResourceInfo in {status}")


def test_open_shoe_answers_the_whole_shoe(api: Api) -> None:
    table = open_table(api)
    tables = api.as_("croupier").tables
    opened = tables.OpenShoe(table_pb2.OpenShoeRequest(request_id=new_request_id(),
                                                       parent=table.name))
    got = tables.GetShoe(table_pb2.GetShoeRequest(name=opened.name))
    assert (opened.algorithm, opened.deck_kind) == ("SABOT-SHUFFLE-1", "FRENCH-52")
    assert opened.decks == 6 and opened.size == 312 == got.size
    assert opened == got  # nothing cut or dealt yet: the shoe as GetShoe shows it


def test_close_shoe_answers_the_whole_shoe(api: Api) -> None:
    table = open_table(api)
    shoe = open_shoe(api, table.name, cut=120)
    coup = open_coup(api, shoe.name)
    tables = api.as_("croupier").tables
    for method, request_type in (("DealCoup", table_pb2.DealCoupRequest),
                                 ("SettleCoup", table_pb2.SettleCoupRequest)):
        getattr(tables, method)(request_type(request_id=new_request_id(), name=coup.name))
    request = table_pb2.CloseShoeRequest(request_id=new_request_id(), name=shoe.name)
    closed = tables.CloseShoe(request)
    got = tables.GetShoe(table_pb2.GetShoeRequest(name=shoe.name))
    assert (closed.algorithm, closed.deck_kind, closed.decks, closed.size) == (
        "SABOT-SHUFFLE-1", "FRENCH-52", 6, 312)
    assert (closed.cut_position, closed.cut_by, closed.closed) == (120, "anne", True)
    assert closed.coups == 1 and closed.position > 0 and len(closed.seed) == 64
    assert closed == got  # every field of the shoe, as GetShoe shows it (nothing returned)
    assert tables.CloseShoe(request) == closed  # a retry: the same answer


def test_not_found_names_the_resource(api: Api) -> None:
    table = open_table(api)
    shoe = open_shoe(api, table.name)
    tables = api.as_("croupier").tables
    coup = f"{shoe.name}/coups/{NO_ID}1"
    assert resource(tables.GetCoup, table_pb2.GetCoupRequest(name=coup)) == (
        grpc.StatusCode.NOT_FOUND, "sabot.v1.Coup", coup)
    assert resource(tables.GetTable, table_pb2.GetTableRequest(name="tables/no-such-table")) == (
        grpc.StatusCode.NOT_FOUND, "sabot.v1.Table", "tables/no-such-table")
    missing_shoe = f"{table.name}/shoes/{NO_ID}2"
    assert resource(tables.GetShoe, table_pb2.GetShoeRequest(name=missing_shoe)) == (
        grpc.StatusCode.NOT_FOUND, "sabot.v1.Shoe", missing_shoe)
    # the table of a shoe's name does not exist: the table is named
    assert resource(tables.OpenCoup, table_pb2.OpenCoupRequest(
        request_id=new_request_id(), parent=f"tables/no-such-table/shoes/{NO_ID}3")) == (
        grpc.StatusCode.NOT_FOUND, "sabot.v1.Table", "tables/no-such-table")
    cashier = api.as_("cashier").cashier
    assert resource(cashier.GetAccount, cashier_pb2.GetAccountRequest(
        name="accounts/nobody-here")) == (
        grpc.StatusCode.NOT_FOUND, "sabot.v1.Account", "accounts/nobody-here")
    player = new_account(api, deposit=0)
    assert resource(cashier.OpenAccount, cashier_pb2.OpenAccountRequest(
        request_id=new_request_id(), account_id=player, currency_code="EUR")) == (
        grpc.StatusCode.ALREADY_EXISTS, "sabot.v1.Account", f"accounts/{player}")
    stake = f"{table.name}/stakes/{NO_ID}4"
    assert resource(api.as_("croupier").betting.GetStake, betting_pb2.GetStakeRequest(
        name=stake)) == (grpc.StatusCode.NOT_FOUND, "sabot.v1.Stake", stake)


def test_an_empty_store_exports_nothing_without_error(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """ExportEvents on a store that holds no event: no line, not UNAVAILABLE "retry"."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    import services.cli as cli
    from services.api import server
    from services.api.config import Config, parse_tokens
    from services.ledger.api import Ledger, LedgerConfig

    url = f"sqlite:///{tmp_path / 'empty.db'}"
    ledger = Ledger(LedgerConfig(store_url=url, seal_key=bytes(32)), batching=True,
                    games=LEDGER_GAMES)
    token = "empty-regulator-token-4d1c8e2a9f7b"
    running = server.start(Config(
        listen="127.0.0.1:0", store=url, tokens=parse_tokens(f"{token}:regulator"),
        seal_key=bytes(32), projections=False,
        checkpoint_key=Ed25519PrivateKey.generate().private_bytes_raw()), ledger, games=SERVED)
    client = Client(f"127.0.0.1:{running.port}", token)
    try:
        answers = list(client.regulator.ExportEvents(regulator_pb2.ExportEventsRequest()))
        assert [line for a in answers for line in a.lines] == []
        assert cli.main(["regulator", "export", "--target", f"127.0.0.1:{running.port}",
                         "--token", token]) == 0
        captured = capsys.readouterr()
        assert not [ln for ln in captured.out.splitlines() if ln.startswith("{")]  # no line
        assert captured.err == "the store holds no event yet: nothing to export\n"
    finally:
        client.close()
        running.stop(grace=1)
        ledger.close()
