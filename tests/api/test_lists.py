"""ListTables and ListCoups page with opaque tokens (AIP-158) without gap or duplicate; tables,
shoes and coups carry the times of their events (create, cut, betting closed, dealt, settled,
closed), the same in every answer."""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.errors import InvalidArgument, NotFound
from services.api.client import new_request_id
from services.api.gen.sabot.v1 import betting_pb2, common_pb2, table_pb2
from services.ledger import views
from services.ledger.api import Ledger

from .support import Api, failure, money, open_coup, open_shoe, open_table


def when(stamp: Timestamp) -> datetime:
    return stamp.ToDatetime(tzinfo=UTC)


def step(api: Api, method: str, name: str) -> Any:
    request = getattr(table_pb2, f"{method}Request")(request_id=new_request_id(), name=name)
    return getattr(api.as_("croupier").tables, method)(request)


def play(api: Api, shoe: str) -> table_pb2.Coup:
    """One coup, opened, dealt and settled."""
    coup = open_coup(api, shoe)
    step(api, "DealCoup", coup.name)
    settled: table_pb2.Coup = step(api, "SettleCoup", coup.name)
    return settled


def pages(call: Any, request: Any, field: str) -> list[list[Any]]:
    """Every page of a list, following the tokens."""
    found = []
    while True:
        answer = call(request)
        found.append(list(getattr(answer, field)))
        if not answer.next_page_token:
            return found
        request.page_token = answer.next_page_token


@pytest.fixture(scope="module")
def history(api: Api) -> dict[str, Any]:
    """A table with two coups in a closed shoe, then a shoe with one coup betting."""
    table = open_table(api)
    first = open_shoe(api, table.name)
    played = [play(api, first.name), play(api, first.name)]
    step(api, "CloseShoe", first.name)
    second = open_shoe(api, table.name)
    betting = open_coup(api, second.name)
    return {"table": table, "shoes": [first.name, second.name], "coups": [*played, betting]}


# --- ListTables -------------------------------------------------------------------------------


def test_list_tables_pages_through_every_table_in_opening_order(api: Api) -> None:
    opened = [open_table(api).name for _ in range(3)]
    tables = api.as_("back_office").tables
    found = pages(tables.ListTables, table_pb2.ListTablesRequest(page_size=2), "tables")
    assert all(len(p) <= 2 for p in found) and all(found)
    names = [t.name for p in found for t in p]
    assert len(names) == len(set(names))
    assert [n for n in names if n in opened] == opened
    assert names[-3:] == opened  # the newest last
    every = tables.ListTables(table_pb2.ListTablesRequest(page_size=1000))
    assert [t.name for t in every.tables] == names and every.next_page_token == ""


def test_list_tables_gives_the_tables_as_get_table_does(api: Api,
                                                         history: dict[str, Any]) -> None:
    tables = api.as_("croupier").tables
    name = history["table"].name
    listed = [t for t in tables.ListTables(table_pb2.ListTablesRequest(page_size=1000)).tables
              if t.name == name]
    assert listed == [tables.GetTable(table_pb2.GetTableRequest(name=name))]
    assert listed[0].current_coup == history["coups"][-1].name
    assert listed[0].current_shoe == history["shoes"][1]


def test_list_tables_refuses_bad_pages(api: Api) -> None:
    tables = api.as_("croupier").tables
    for request, field in (
        (table_pb2.ListTablesRequest(page_size=-1), "page_size"),
        (table_pb2.ListTablesRequest(page_token="not-a-token"), "page_token"),
        (table_pb2.ListTablesRequest(page_token="eyJ4Ijo"), "page_token"),
        (table_pb2.ListTablesRequest(page_token="x" * 500), "page_token"),
    ):
        assert failure(tables.ListTables, request)[:2] == (grpc.StatusCode.INVALID_ARGUMENT,
                                                           field)


# --- ListCoups --------------------------------------------------------------------------------


def test_list_coups_of_one_shoe_and_of_the_whole_table(api: Api,
                                                        history: dict[str, Any]) -> None:
    tables = api.as_("croupier").tables
    coups = [c.name for c in history["coups"]]
    first, second = history["shoes"]
    table = history["table"].name
    assert [c.name for c in tables.ListCoups(table_pb2.ListCoupsRequest(
        parent=first)).coups] == coups[:2]
    assert [c.name for c in tables.ListCoups(table_pb2.ListCoupsRequest(
        parent=second)).coups] == coups[2:]
    for parent in (f"{table}/shoes/-", table):
        found = pages(tables.ListCoups, table_pb2.ListCoupsRequest(parent=parent, page_size=2),
                      "coups")
        assert [[c.name for c in p] for p in found] == [coups[:2], coups[2:]]
        assert [c.number for p in found for c in p] == [1, 2, 3]
    listed = tables.ListCoups(table_pb2.ListCoupsRequest(parent=table)).coups
    assert list(listed) == [tables.GetCoup(table_pb2.GetCoupRequest(name=c)) for c in coups]
    assert [c.phase for c in listed] == ["settled", "settled", "betting"]


def test_list_coups_tokens_are_bound_to_their_list(api: Api, history: dict[str, Any]) -> None:
    tables = api.as_("croupier").tables
    table = history["table"].name
    token = tables.ListCoups(table_pb2.ListCoupsRequest(parent=table, page_size=1)
                             ).next_page_token
    assert token
    code, field, _ = failure(tables.ListCoups, table_pb2.ListCoupsRequest(
        parent=history["shoes"][0], page_token=token))
    assert (code, field) == (grpc.StatusCode.INVALID_ARGUMENT, "page_token")
    other = open_table(api).name
    code, field, _ = failure(tables.ListCoups, table_pb2.ListCoupsRequest(
        parent=other, page_token=token))
    assert (code, field) == (grpc.StatusCode.INVALID_ARGUMENT, "page_token")
    table_token = tables.ListTables(table_pb2.ListTablesRequest(page_size=1)).next_page_token
    code, field, _ = failure(tables.ListCoups, table_pb2.ListCoupsRequest(
        parent=table, page_token=table_token))
    assert (code, field) == (grpc.StatusCode.INVALID_ARGUMENT, "page_token")


def test_list_coups_refuses_unknown_parents(api: Api, history: dict[str, Any]) -> None:
    tables = api.as_("croupier").tables
    table = history["table"].name
    elsewhere = open_shoe(api, open_table(api).name).name
    stranger = f"{table}/shoes/{elsewhere.rsplit('/', 1)[1]}"
    ghost = f"{table}/shoes/00000000-0000-4000-8000-000000000000"
    cases = [
        ("tables/no-such-table", grpc.StatusCode.NOT_FOUND),
        (ghost, grpc.StatusCode.NOT_FOUND),
        (stranger, grpc.StatusCode.NOT_FOUND),
        (f"{table}/shoes/not-a-uuid", grpc.StatusCode.INVALID_ARGUMENT),
        (f"{table}/coups", grpc.StatusCode.INVALID_ARGUMENT),
        ("", grpc.StatusCode.INVALID_ARGUMENT),
    ]
    for parent, expected in cases:
        code, field, _ = failure(tables.ListCoups, table_pb2.ListCoupsRequest(parent=parent))
        assert (code, field) == (expected, "parent"), parent
    code, field, _ = failure(tables.ListCoups, table_pb2.ListCoupsRequest(
        parent=table, page_size=-5))
    assert (code, field) == (grpc.StatusCode.INVALID_ARGUMENT, "page_size")


def test_an_empty_table_lists_no_coup(api: Api) -> None:
    table = open_table(api)
    answer = api.as_("croupier").tables.ListCoups(table_pb2.ListCoupsRequest(parent=table.name))
    assert list(answer.coups) == [] and answer.next_page_token == ""


# --- times ------------------------------------------------------------------------------------


def test_a_coup_carries_the_time_of_each_step(api: Api) -> None:
    start = datetime.now(UTC) - timedelta(seconds=1)
    table = open_table(api)
    shoe = open_shoe(api, table.name)
    coup = open_coup(api, shoe.name)
    assert coup.HasField("create_time") and not coup.HasField("betting_close_time")
    api.as_("anne").betting.PlaceStake(betting_pb2.PlaceStakeRequest(
        request_id=new_request_id(), coup=coup.name, account="accounts/anne",
        chance=common_pb2.CHANCE_NOIR, amount=money(500)))
    closed = step(api, "CloseBetting", coup.name)
    assert closed.HasField("betting_close_time") and not closed.HasField("deal_time")
    dealt = step(api, "DealCoup", coup.name)
    assert not dealt.HasField("settle_time")
    settled = step(api, "SettleCoup", coup.name)
    end = datetime.now(UTC) + timedelta(seconds=1)
    times = [when(settled.create_time), when(settled.betting_close_time),
             when(settled.deal_time), when(settled.settle_time)]
    assert start <= times[0] <= times[1] <= times[2] <= times[3] <= end
    assert settled.create_time == coup.create_time
    assert settled.betting_close_time == closed.betting_close_time
    assert settled.deal_time == dealt.deal_time
    got = api.as_("regulator").tables.GetCoup(table_pb2.GetCoupRequest(name=coup.name))
    assert got == settled


def test_a_deal_that_closes_betting_gives_both_the_same_time(api: Api) -> None:
    coup = open_coup(api, open_shoe(api, open_table(api).name).name)
    dealt = step(api, "DealCoup", coup.name)
    assert dealt.betting_close_time == dealt.deal_time
    assert dealt.HasField("deal_time") and not dealt.HasField("settle_time")


def test_a_shoe_and_a_table_carry_their_times(api: Api) -> None:
    tables = api.as_("croupier").tables
    table = open_table(api)
    assert table.HasField("create_time")
    opened = tables.OpenShoe(table_pb2.OpenShoeRequest(request_id=new_request_id(),
                                                       parent=table.name))
    assert opened.HasField("create_time") and not opened.HasField("cut_time")
    cut = tables.CutShoe(table_pb2.CutShoeRequest(request_id=new_request_id(), name=opened.name,
                                                  cut_position=77, cut_by="anne"))
    assert cut.create_time == opened.create_time and cut.HasField("cut_time")
    assert not cut.HasField("close_time")
    play(api, opened.name)
    closed = step(api, "CloseShoe", opened.name)
    got = tables.GetShoe(table_pb2.GetShoeRequest(name=opened.name))
    assert (got.create_time, got.cut_time, got.close_time) == (
        opened.create_time, cut.cut_time, closed.close_time)
    assert when(got.create_time) <= when(got.cut_time) <= when(got.close_time)
    assert when(table.create_time) <= when(got.create_time)
    assert tables.GetTable(table_pb2.GetTableRequest(name=table.name)).create_time == (
        table.create_time)


def test_answers_stored_before_the_times_still_load() -> None:
    """A retry of a request stored before the time fields existed still gets its answer."""
    shoe = views.ShoeView("s", "t", "SABOT-SHUFFLE-1", "FRENCH-52", 6, 312, "c", 5, "anne", 9,
                          1, False, False, None, None, cut_time="2026-01-01T00:00:00+00:00")
    data = views.to_dict(shoe)
    assert views.from_dict(views.ShoeView, data) == shoe
    old = {k: v for k, v in data.items() if not k.endswith("_time")}
    assert views.from_dict(views.ShoeView, old) == dataclasses.replace(shoe, cut_time=None)


def test_the_cli_lists_tables_and_coups(api: Api, history: dict[str, Any],
                                        capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import services.cli as cli

    monkeypatch.setattr(cli, "COMMAND_MODULES", ("services.cli.client",))
    common = ["--target", api.target, "--token", api.tokens["croupier"], "--format", "json"]
    open_table(api)  # two tables at least
    capsys.readouterr()
    assert cli.main(["table", "list", "--page-size", "1", *common]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert len(listed["tables"]) == 1 and listed["next_page_token"]
    table = history["table"].name
    assert cli.main(["coup", "list", table.split("/")[1], "--page-size", "2", *common]) == 0
    coups = json.loads(capsys.readouterr().out)
    assert [c["name"] for c in coups["coups"]] == [c.name for c in history["coups"][:2]]
    assert cli.main(["coup", "list", table, "--page-token", coups["next_page_token"],
                     *common]) == 0
    rest = json.loads(capsys.readouterr().out)
    assert [c["name"] for c in rest["coups"]] == [history["coups"][2].name]
    assert cli.main(["coup", "list", history["shoes"][0], "--page-size", "-1", *common]) == 2


@settings(max_examples=150, deadline=None)
@given(token=st.one_of(
    st.text(max_size=60),
    st.binary(max_size=40).map(lambda b: base64.urlsafe_b64encode(b).decode()),
    st.lists(st.one_of(st.text(max_size=8), st.integers(), st.none()), max_size=4).map(
        lambda v: base64.urlsafe_b64encode(json.dumps(v).encode()).decode().rstrip("=")),
))
def test_any_page_token_not_issued_is_invalid_never_internal(api: Api, token: str) -> None:
    """Whatever a client sends as a token: a page, or INVALID_ARGUMENT on page_token."""
    ledger: Ledger = api.running.ledger
    calls: list[Callable[[], object]] = [
        lambda: ledger.list_tables(10, token),
        lambda: ledger.list_coups("no-such-table", None, 10, token),
    ]
    for call in calls:
        try:
            call()
        except InvalidArgument as exc:
            assert exc.field == "page_token"
        except NotFound as exc:  # a token that happens to be valid reaches the table lookup
            assert exc.field == "table_id"
