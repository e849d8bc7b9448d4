"""A request id sent twice gives one effect and the same answer; reused for another command or
other arguments, it is refused (ALREADY_EXISTS, field request_id)."""

from __future__ import annotations

import concurrent.futures

import grpc

from services.api.client import new_request_id
from services.api.gen.sabot.v1 import betting_pb2, cashier_pb2, common_pb2, events_pb2, table_pb2

from .support import Api, balance, failure, fresh, money, new_account, ready_coup


def test_a_deposit_sent_twice_credits_once(api: Api) -> None:
    account = new_account(api, deposit=0)
    cashier = api.as_("cashier").cashier
    request = cashier_pb2.DepositRequest(request_id=new_request_id(), name=f"accounts/{account}",
                                         amount=money(1234))
    first = cashier.Deposit(request)
    second = cashier.Deposit(request)
    assert first == second
    assert balance(api, account) == 1234
    statement = cashier.ListStatementEntries(cashier_pb2.ListStatementEntriesRequest(
        parent=f"accounts/{account}"))
    assert [e.amount.amount_minor for e in statement.entries] == [1234]


def test_a_stake_sent_twice_is_placed_once(api: Api) -> None:
    table, coup = ready_coup(api)
    anne = api.as_("anne").betting
    before = balance(api, "anne")
    request = betting_pb2.PlaceStakeRequest(
        request_id=new_request_id(), coup=coup.name, account="accounts/anne",
        chance=common_pb2.CHANCE_NOIR, amount=money(700))
    answers = [anne.PlaceStake(request) for _ in range(3)]
    assert answers[0] == answers[1] == answers[2]
    assert balance(api, "anne") == before - 700
    stakes = api.as_("croupier").betting.ListStakes(betting_pb2.ListStakesRequest(
        parent=table.name))
    assert [s.amount.amount_minor for s in stakes.stakes] == [700]


def test_concurrent_duplicates_have_one_effect(api: Api) -> None:
    account = new_account(api, deposit=0)
    cashier = api.as_("cashier").cashier
    request = cashier_pb2.DepositRequest(request_id=new_request_id(), name=f"accounts/{account}",
                                         amount=money(55))
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: cashier.Deposit(request), range(8)))
    assert all(a == answers[0] for a in answers)
    assert balance(api, account) == 55


def test_a_table_opened_twice_with_one_request_id(api: Api) -> None:
    croupier = api.as_("croupier").tables
    request = table_pb2.OpenTableRequest(request_id=new_request_id(), table_id=fresh("t"))
    assert croupier.OpenTable(request) == croupier.OpenTable(request)
    code, field, _ = failure(croupier.OpenTable, table_pb2.OpenTableRequest(
        request_id=new_request_id(), table_id=request.table_id))
    assert (code, field) == (grpc.StatusCode.ALREADY_EXISTS, "table_id")


def test_a_request_id_reused_with_other_arguments_is_refused(api: Api) -> None:
    account = new_account(api, deposit=0)
    cashier = api.as_("cashier").cashier
    rid = new_request_id()
    cashier.Deposit(cashier_pb2.DepositRequest(request_id=rid, name=f"accounts/{account}",
                                               amount=money(10)))
    code, field, reason = failure(cashier.Deposit, cashier_pb2.DepositRequest(
        request_id=rid, name=f"accounts/{account}", amount=money(11)))
    assert (code, field, reason) == (grpc.StatusCode.ALREADY_EXISTS, "request_id",
                                     "REQUEST_ID_REUSED")
    assert balance(api, account) == 10


def test_a_retried_deal_shows_no_second_deal_in_the_log(api: Api) -> None:
    _, coup = ready_coup(api)
    croupier = api.as_("croupier").tables
    request = table_pb2.DealCoupRequest(request_id=new_request_id(), name=coup.name)
    first = croupier.DealCoup(request)
    assert croupier.DealCoup(request) == first
    recall = api.as_("admin").recall.ListRecalledCoups(events_pb2.ListRecalledCoupsRequest(
        parent=coup.name.split("/shoes/")[0], page_size=1))
    kinds = [s.type for s in recall.coups[0].steps]
    assert kinds.count("sabot.ledger:Coup.Resolved") == 1
    assert kinds.count("sabot.ledger:Coup.CardDealt") == len(first.cards)
