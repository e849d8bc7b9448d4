"""Pages cover a list once each; concurrency conflicts are retried inside the server, and a
conflict that persists is ABORTED."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from domain.errors import InvalidArgument
from services.api import errors
from services.api.base import CONFLICT_RETRIES, Base
from services.api.client import new_request_id
from services.api.gen.sabot.v1 import cashier_pb2, events_pb2, table_pb2
from services.ledger.actor import SYSTEM, Actor
from services.ledger.errors import Conflict

from .support import Api, money, new_account, open_coup, open_shoe, open_table


def test_statement_pages_cover_every_entry_once(api: Api) -> None:
    account = new_account(api, deposit=0)
    cashier = api.as_("cashier").cashier
    for amount in range(1, 12):
        cashier.Deposit(cashier_pb2.DepositRequest(
            request_id=new_request_id(), name=f"accounts/{account}", amount=money(amount)))
    seen: list[int] = []
    token = ""
    pages = 0
    while True:
        page = cashier.ListStatementEntries(cashier_pb2.ListStatementEntriesRequest(
            parent=f"accounts/{account}", page_size=4, page_token=token))
        seen.extend(e.amount.amount_minor for e in page.entries)
        pages += 1
        token = page.next_page_token
        if not token:
            break
    assert seen == list(range(1, 12)) and pages == 3
    assert page.entries[-1].balance_after.amount_minor == sum(range(1, 12))


def test_recall_shows_the_last_game_plus_nine_by_default(api: Api) -> None:
    table = open_table(api)
    shoe = open_shoe(api, table.name)
    croupier = api.as_("croupier").tables
    for _ in range(11):
        coup = open_coup(api, shoe.name)
        croupier.DealCoup(table_pb2.DealCoupRequest(request_id=new_request_id(), name=coup.name))
        croupier.SettleCoup(table_pb2.SettleCoupRequest(request_id=new_request_id(),
                                                         name=coup.name))
    recall = api.as_("croupier").recall
    first = recall.ListRecalledCoups(events_pb2.ListRecalledCoupsRequest(parent=table.name))
    assert [c.coup.number for c in first.coups] == list(range(11, 1, -1))
    rest = recall.ListRecalledCoups(events_pb2.ListRecalledCoupsRequest(
        parent=table.name, page_token=first.next_page_token))
    assert [c.coup.number for c in rest.coups] == [1] and not rest.next_page_token


class _Hub:
    pokes = 0

    def poke(self) -> None:
        self.pokes += 1


def _base() -> Base:
    return Base(ledger=None, tokens={}, hub=_Hub())  # type: ignore[arg-type]


def test_a_conflict_is_retried_then_succeeds() -> None:
    base = _base()
    calls: list[int] = []

    def flaky(x: int, actor: Actor) -> int:
        calls.append(x)
        if len(calls) < 3:
            raise Conflict("coup_id", "CONFLICT", "someone else first")
        return x * 2

    assert base.write({}, flaky, 21, actor=SYSTEM) == 42
    assert len(calls) == 3


def test_a_persistent_conflict_is_aborted_naming_the_request_field() -> None:
    base = _base()
    calls: list[Any] = []

    def always(*args: Any, actor: Actor) -> None:
        calls.append(args)
        raise Conflict("coup_id", "CONFLICT", "someone else first")

    with pytest.raises(Conflict) as caught:
        base.write({"coup_id": "name"}, always, actor=SYSTEM)
    assert len(calls) == CONFLICT_RETRIES + 1
    assert caught.value.field == "name"
    assert errors.code_of(caught.value) is grpc.StatusCode.ABORTED


def test_a_rule_violation_is_not_retried() -> None:
    base = _base()
    calls: list[int] = []

    def refuse(actor: Actor) -> None:
        calls.append(1)
        raise InvalidArgument("amount", "OUT_OF_RANGE", "too much")

    with pytest.raises(InvalidArgument) as caught:
        base.write({"amount": "amount.amount_minor"}, refuse, actor=SYSTEM)
    assert calls == [1] and caught.value.field == "amount.amount_minor"
