"""The batch calls against a real server (SQLite, PostgreSQL, the ledger in its own process):
BettingService.BatchStakes (a player's several stakes of one coup) and CashierService.
BatchMovements (a cashier's several movements), issue 25 item 2. Each item has its own answer;
atomic means all or nothing; one request id makes a retry return the first answer; bad input is
INVALID_ARGUMENT / PERMISSION_DENIED naming the item's field, with nothing stored."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from services.api.client import new_request_id
from services.api.gen.sabot.v1 import betting_pb2, cashier_pb2, common_pb2
from services.ledger.batch import MAX_ITEMS

from .support import Api, balance, failure, money, new_account, ready_coup
from .test_retries_after_state_change import log_end

NOIR, ROUGE = common_pb2.CHANCE_NOIR, common_pb2.CHANCE_ROUGE
COULEUR, INVERSE = common_pb2.CHANCE_COULEUR, common_pb2.CHANCE_INVERSE
PLACE, RAISE = betting_pb2.STAKE_ACTION_PLACE, betting_pb2.STAKE_ACTION_RAISE
WITHDRAW = betting_pb2.STAKE_ACTION_WITHDRAW
INVALID = grpc.StatusCode.INVALID_ARGUMENT
DENIED = grpc.StatusCode.PERMISSION_DENIED
FAILED = grpc.StatusCode.FAILED_PRECONDITION
REQUEST_RECORDED = "sabot.ledger:Request.Recorded"


def place(account: str, chance: common_pb2.Chance.ValueType, amount: int,
          stake_id: str = "") -> betting_pb2.StakeItem:
    return betting_pb2.StakeItem(action=PLACE, account=f"accounts/{account}", chance=chance,
                                 amount=money(amount), stake_id=stake_id)


def batch(api: Api, who: str, coup: str, items: list[betting_pb2.StakeItem],
          atomic: bool = False, request_id: str = "") -> betting_pb2.BatchStakesResponse:
    answer: betting_pb2.BatchStakesResponse = api.as_(who).betting.BatchStakes(
        betting_pb2.BatchStakesRequest(request_id=request_id or new_request_id(), coup=coup,
                                       stakes=items, atomic=atomic))
    return answer


def _requests_since(api: Api, position: int) -> list[Any]:
    events = api.running.ledger.read_events(position, 1000)
    return [e for e in events if e.topic == REQUEST_RECORDED]


def test_a_layout_in_one_call_each_item_its_answer_and_one_stored_request(api: Api) -> None:
    _, coup = ready_coup(api)
    before, start = balance(api, "anne"), log_end(api)
    items = [place("anne", NOIR, 1_000), place("anne", ROUGE, 2_000),  # opposed to noir
             place("anne", COULEUR, 500), place("anne", NOIR, 300)]
    rid = new_request_id()
    answer = batch(api, "anne", coup.name, items, request_id=rid)
    assert answer.coup == coup.name and answer.accepted == 3
    assert [r.HasField("result") for r in answer.results] == [True, False, True, True]
    refused = answer.results[1].error
    assert (refused.code, refused.field, refused.reason) == (
        FAILED.value[0], "stakes[1].chance", "OPPOSED_STAKES")
    placed = [r.result for r in answer.results if r.HasField("result")]
    assert [p.stake.amount.amount_minor for p in placed] == [1_000, 500, 300]
    assert all(p.stake.account == "accounts/anne" for p in placed)
    assert [p.balance.amount_minor for p in placed] == [before - 1_000, before - 1_500,
                                                         before - 1_800]
    assert balance(api, "anne") == before - 1_800
    assert len({p.stake.name for p in placed}) == 3
    # ONE stored request for the batch, with every item
    stored = _requests_since(api, start)
    assert len(stored) == 1 and stored[0].state["command"] == "stake_batch"
    assert len(stored[0].state["arguments"]["items"]) == 4
    # a retry: the first answer, nothing more stored
    end = log_end(api)
    assert batch(api, "anne", coup.name, items, request_id=rid) == answer
    assert log_end(api) == end and balance(api, "anne") == before - 1_800
    # the same request id with other items: refused, not a second effect
    code, field, _ = failure(batch, api, "anne", coup.name, items[:1], request_id=rid)
    assert (code, field) == (grpc.StatusCode.ALREADY_EXISTS, "request_id")
    assert log_end(api) == end
    # the stakes are on the layout as placed one by one would be
    listed = api.as_("anne").betting.ListStakes(betting_pb2.ListStakesRequest(
        parent=coup.name.split("/shoes/")[0]))
    assert {s.name for s in listed.stakes} >= {p.stake.name for p in placed}


def test_raise_and_withdraw_in_one_call(api: Api) -> None:
    _, coup = ready_coup(api)
    first = batch(api, "bruno", coup.name, [place("bruno", NOIR, 1_000),
                                             place("bruno", COULEUR, 700)])
    noir, couleur = (r.result.stake.name for r in first.results)
    before = balance(api, "bruno")
    answer = batch(api, "bruno", coup.name, [
        betting_pb2.StakeItem(action=RAISE, name=noir, amount=money(400)),
        betting_pb2.StakeItem(action=WITHDRAW, name=couleur),
    ], atomic=True)
    assert answer.accepted == 2
    assert answer.results[0].result.stake.amount.amount_minor == 1_400
    assert not answer.results[1].result.HasField("stake")  # it left the layout
    assert answer.results[1].result.balance.amount_minor == before - 400 + 700
    assert balance(api, "bruno") == before + 300


def test_an_atomic_batch_refused_stores_nothing_and_names_the_item(api: Api) -> None:
    _, coup = ready_coup(api)
    account = new_account(api, deposit=2_500)  # the house's staff (admin) stakes for it
    start = log_end(api)
    items = [place(account, NOIR, 1_000), place(account, COULEUR, 1_000),
             place(account, NOIR, 1_000)]  # beyond what the two before leave it
    code, field, reason = failure(batch, api, "admin", coup.name, items, atomic=True)
    assert (code, field, reason) == (FAILED, "stakes[2].amount.amount_minor",
                                     "INSUFFICIENT_FUNDS")
    assert log_end(api) == start and balance(api, account) == 2_500
    # not atomic: the first two stand, the third is refused in its answer
    answer = batch(api, "admin", coup.name, items)
    assert answer.accepted == 2
    assert answer.results[2].error.field == "stakes[2].amount.amount_minor"
    assert balance(api, account) == 500


def test_bad_batches_are_refused_naming_the_field(api: Api) -> None:
    _, coup = ready_coup(api)
    start = log_end(api)
    call = api.as_("dora").betting.BatchStakes

    def refused(items: list[betting_pb2.StakeItem]) -> tuple[grpc.StatusCode, str, str]:
        return failure(call, betting_pb2.BatchStakesRequest(
            request_id=new_request_id(), coup=coup.name, stakes=items))

    assert refused([])[:2] == (INVALID, "stakes")
    assert refused([place("dora", NOIR, 10)] * (MAX_ITEMS + 1))[:2] == (INVALID, "stakes")
    assert refused([place("dora", NOIR, 100), place("dora", COULEUR, 0)])[:2] == (
        INVALID, "stakes[1].amount.amount_minor")
    assert refused([place("dora", NOIR, 100), betting_pb2.StakeItem(
        account="accounts/dora", chance=NOIR, amount=money(100))])[:2] == (
        INVALID, "stakes[1].action")
    assert refused([place("dora", common_pb2.CHANCE_UNSPECIFIED, 100)])[:2] == (
        INVALID, "stakes[0].chance")
    same = "6b7d0a53-0d4e-4f4b-9a55-0c6f1c3b8a11"
    assert refused([place("dora", NOIR, 100, same), place("dora", COULEUR, 100, same)]) == (
        INVALID, "stakes[1].stake_id", "DUPLICATE_ITEM")
    stake = f"{coup.name.split('/shoes/')[0]}/stakes/{same}"
    assert refused([betting_pb2.StakeItem(action=WITHDRAW, name=stake),
                    betting_pb2.StakeItem(action=RAISE, name=stake, amount=money(5))]) == (
        INVALID, "stakes[1].name", "DUPLICATE_ITEM")
    # another player's account or stake: PERMISSION_DENIED, atomic or not
    assert refused([place("dora", NOIR, 100), place("anne", COULEUR, 100)]) == (
        DENIED, "stakes[1].account", "NOT_YOUR_ACCOUNT")
    anne = batch(api, "anne", coup.name, [place("anne", NOIR, 100)]).results[0].result.stake
    assert refused([place("dora", COULEUR, 100), betting_pb2.StakeItem(
        action=RAISE, name=anne.name, amount=money(100))]) == (
        DENIED, "stakes[1].name", "NOT_YOUR_STAKE")
    assert len(_requests_since(api, start)) == 1  # anne's batch only


def test_a_cashiers_movements_in_one_call(api: Api) -> None:
    a, b = new_account(api, deposit=0), new_account(api, deposit=1_000)
    cashier = api.as_("cashier").cashier

    def move(kind: cashier_pb2.CageMovementKind.ValueType, account: str,
             amount: int) -> cashier_pb2.CageMovement:
        return cashier_pb2.CageMovement(kind=kind, name=f"accounts/{account}",
                                        amount=money(amount))

    dep, out = cashier_pb2.CAGE_MOVEMENT_KIND_DEPOSIT, cashier_pb2.CAGE_MOVEMENT_KIND_WITHDRAWAL
    items = [move(dep, a, 5_000), move(out, a, 2_000), move(out, b, 1_001), move(dep, b, 10)]
    rid, start = new_request_id(), log_end(api)
    request = cashier_pb2.BatchMovementsRequest(request_id=rid, movements=items)
    answer = cashier.BatchMovements(request)
    assert answer.accepted == 3
    assert [r.account.balance.amount_minor for r in answer.results if r.HasField("account")
            ] == [5_000, 3_000, 1_010]
    error = answer.results[2].error
    assert (error.code, error.field, error.reason) == (
        FAILED.value[0], "movements[2].amount.amount_minor", "INSUFFICIENT_FUNDS")
    assert (balance(api, a), balance(api, b)) == (3_000, 1_010)
    assert len(_requests_since(api, start)) == 1
    end = log_end(api)
    assert cashier.BatchMovements(request) == answer and log_end(api) == end
    # atomic: the refused movement refuses them all
    atomic = cashier_pb2.BatchMovementsRequest(request_id=new_request_id(), movements=[
        move(dep, a, 1), move(out, b, 99_999)], atomic=True)
    assert failure(cashier.BatchMovements, atomic) == (
        FAILED, "movements[1].amount.amount_minor", "INSUFFICIENT_FUNDS")
    assert log_end(api) == end and (balance(api, a), balance(api, b)) == (3_000, 1_010)
    assert failure(cashier.BatchMovements, cashier_pb2.BatchMovementsRequest(
        request_id=new_request_id()))[:2] == (INVALID, "movements")
    assert failure(cashier.BatchMovements, cashier_pb2.BatchMovementsRequest(
        request_id=new_request_id(), movements=[
            move(dep, a, 1), move(cashier_pb2.CAGE_MOVEMENT_KIND_UNSPECIFIED, a, 1)]))[:2] == (
        INVALID, "movements[1].kind")
    assert failure(cashier.BatchMovements, cashier_pb2.BatchMovementsRequest(
        request_id=new_request_id(), movements=[move(dep, "nobody-here", 1)]))[:2] == (
        grpc.StatusCode.NOT_FOUND, "movements[0].name")


@pytest.mark.parametrize("who, rpc", [("anne", "cashier"), ("cashier", "betting")])
def test_the_role_table_holds_for_the_batch_calls(api: Api, who: str, rpc: str) -> None:
    call: Any
    request: Any
    if rpc == "cashier":
        call, request = api.as_(who).cashier.BatchMovements, cashier_pb2.BatchMovementsRequest(
            request_id=new_request_id())
    else:
        call, request = api.as_(who).betting.BatchStakes, betting_pb2.BatchStakesRequest(
            request_id=new_request_id())
    assert failure(call, request)[0] == DENIED
