"""One JSON log line per RPC, with method, status, duration, request id, table and coup ids and
role; never a token, never a seed."""

from __future__ import annotations

import json
from typing import Any

from services.api import logs
from services.api.client import new_request_id
from services.api.gen.sabot.v1 import betting_pb2, common_pb2, table_pb2

from .conftest import SEED
from .support import Api, failure, money, ready_coup


def _lines(api: Api) -> list[dict[str, Any]]:
    logs.flush()
    return [json.loads(line) for line in api.log.getvalue().splitlines() if line.strip()]


def test_one_line_per_rpc_with_its_ids_and_never_a_token_or_seed(api: Api) -> None:
    table, coup = ready_coup(api)
    rid = new_request_id()
    api.as_("anne").betting.PlaceStake(betting_pb2.PlaceStakeRequest(
        request_id=rid, coup=coup.name, account="accounts/anne",
        chance=common_pb2.CHANCE_NOIR, amount=money(400)))
    bad = new_request_id()
    failure(api.as_("croupier").tables.SettleCoup, table_pb2.SettleCoupRequest(
        request_id=bad, name=coup.name))
    lines = _lines(api)
    placed = [line for line in lines if line.get("request_id") == rid]
    assert len(placed) == 1
    line = placed[0]
    assert line["method"] == "/sabot.v1.BettingService/PlaceStake"
    assert line["status"] == "OK" and line["role"] == "player"
    assert line["table_id"] == table.name.split("/")[1]
    assert line["coup_id"] == coup.name.rsplit("/", 1)[1]
    assert isinstance(line["duration_ms"], float) and line["duration_ms"] >= 0
    refused = [line for line in lines if line.get("request_id") == bad]
    assert len(refused) == 1 and refused[0]["status"] == "FAILED_PRECONDITION"
    assert refused[0]["error"].startswith("name:")
    text = api.log.getvalue()
    for token in [*api.tokens.values(), *api.player_tokens.values()]:
        assert token not in text
    assert SEED.hex() not in text


def test_a_refused_token_is_logged_without_the_token(api: Api) -> None:
    client = api.anonymous("secret-not-configured-123")
    try:
        failure(client.tables.GetTable, table_pb2.GetTableRequest(name="tables/x"))
    finally:
        client.close()
    lines = [line for line in _lines(api) if line.get("status") == "UNAUTHENTICATED"]
    assert lines and lines[-1]["method"] == "/sabot.v1.TableService/GetTable"
    assert "secret-not-configured-123" not in api.log.getvalue()


def test_the_log_lines_are_written_by_a_background_thread_soon_after(api: Api) -> None:
    import time

    rid = new_request_id()
    failure(api.as_("croupier").tables.DealCoup, table_pb2.DealCoupRequest(
        request_id=rid, name="tables/x/shoes/y/coups/z"))
    deadline = time.monotonic() + 2
    while rid not in api.log.getvalue():
        assert time.monotonic() < deadline
        time.sleep(0.01)
