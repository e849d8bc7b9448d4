"""A retried request id always gets the first answer, whatever the state is now: for every
mutating RPC, do it, change the state so that the same command would now be refused (a fresh
request id shows the refusal), retry the first request id: the same answer, and no new event."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID, uuid5

import grpc
import pytest

from domain.cards import DeckKind
from domain.shuffle import load_sabot
from domain.trente_et_quarante.deal import deal_coup
from domain.trente_et_quarante.outcome import judge
from domain.trente_et_quarante.rules import CutCardRule
from services.api.client import new_request_id
from services.api.gen.sabot.v1 import betting_pb2, cashier_pb2, common_pb2, table_pb2

from .conftest import SEED
from .support import Api, failure, fresh, money, new_account, open_coup, open_shoe, open_table

NOIR = common_pb2.CHANCE_NOIR
PRISON = common_pb2.REFAIT31_CHOICE_PRISON
FAILED = grpc.StatusCode.FAILED_PRECONDITION


def log_end(api: Api) -> int:
    end = api.running.ledger.app.recorder.max_notification_id()
    return int(end or 0)


def retried(api: Api, call: Callable[[Any], Any], request: Any, first: Any,
            fresh_request: Any | None = None, refused: grpc.StatusCode = FAILED) -> None:
    """The state has changed: a fresh request id is refused, the first one answers as before."""
    if fresh_request is not None:
        assert failure(call, fresh_request)[0] == refused
    end = log_end(api)
    assert call(request) == first
    assert log_end(api) == end


def with_rid(request: Any) -> Any:
    again = type(request)()
    again.CopyFrom(request)
    again.request_id = new_request_id()
    return again


def step(api: Api, method: str, coup: str) -> Any:
    request_type = getattr(table_pb2, f"{method}Request")
    return getattr(api.as_("croupier").tables, method)(
        request_type(request_id=new_request_id(), name=coup))


def place(api: Api, coup: str, amount: int = 1_000) -> betting_pb2.StakeResult:
    """A stake of anne's on noir."""
    result: betting_pb2.StakeResult = api.as_("anne").betting.PlaceStake(
        betting_pb2.PlaceStakeRequest(request_id=new_request_id(), coup=coup,
                                      account="accounts/anne", chance=NOIR,
                                      amount=money(amount)))
    return result


# --- tables, shoes and coups ------------------------------------------------------------------


def test_open_table(api: Api) -> None:
    tables = api.as_("croupier").tables
    request = table_pb2.OpenTableRequest(request_id=new_request_id(), table_id=fresh("t"))
    first = tables.OpenTable(request)
    open_shoe(api, first.name)  # the table has changed
    retried(api, tables.OpenTable, request, first, with_rid(request),
            grpc.StatusCode.ALREADY_EXISTS)


def test_open_shoe(api: Api) -> None:
    tables = api.as_("croupier").tables
    table = open_table(api)
    request = table_pb2.OpenShoeRequest(request_id=new_request_id(), parent=table.name)
    first = tables.OpenShoe(request)
    assert first.HasField("create_time")
    tables.CutShoe(table_pb2.CutShoeRequest(request_id=new_request_id(), name=first.name,
                                            cut_position=50, cut_by="anne"))
    retried(api, tables.OpenShoe, request, first, with_rid(request))  # a shoe is open


def test_cut_shoe(api: Api) -> None:
    tables = api.as_("croupier").tables
    table = open_table(api)
    shoe = tables.OpenShoe(table_pb2.OpenShoeRequest(request_id=new_request_id(),
                                                     parent=table.name))
    request = table_pb2.CutShoeRequest(request_id=new_request_id(), name=shoe.name,
                                       cut_position=60, cut_by="anne")
    first = tables.CutShoe(request)
    step(api, "CloseShoe", shoe.name)
    retried(api, tables.CutShoe, request, first, with_rid(request))  # closed


def test_close_shoe(api: Api) -> None:
    tables = api.as_("croupier").tables
    table = open_table(api)
    shoe = open_shoe(api, table.name)
    request = table_pb2.CloseShoeRequest(request_id=new_request_id(), name=shoe.name)
    first = tables.CloseShoe(request)
    assert first.HasField("close_time")
    open_shoe(api, table.name)  # the table goes on with another shoe
    retried(api, tables.CloseShoe, request, first, with_rid(request))  # closed already


def test_open_coup_after_its_shoe_closed(api: Api) -> None:
    """The reported bug: the shoe was checked before the request id."""
    tables = api.as_("croupier").tables
    table = open_table(api)
    shoe = open_shoe(api, table.name)
    request = table_pb2.OpenCoupRequest(request_id=new_request_id(), parent=shoe.name)
    first = tables.OpenCoup(request)
    for method in ("DealCoup", "SettleCoup"):
        step(api, method, first.name)
    step(api, "CloseShoe", shoe.name)
    open_shoe(api, table.name)
    retried(api, tables.OpenCoup, request, first, with_rid(request))  # not the open shoe
    assert first.phase == "betting" and first.number == 1


def test_open_coup_in_a_shoe_that_is_not_open(api: Api) -> None:
    table = open_table(api)
    old = open_shoe(api, table.name)
    step(api, "CloseShoe", old.name)
    open_shoe(api, table.name)
    code, field, reason = failure(api.as_("croupier").tables.OpenCoup, table_pb2.OpenCoupRequest(
        request_id=new_request_id(), parent=old.name))
    assert (code, field, reason) == (FAILED, "parent", "SHOE_NOT_OPEN")


@pytest.mark.parametrize(("method", "then"), [("CloseBetting", "DealCoup"),
                                              ("DealCoup", "SettleCoup"),
                                              ("SettleCoup", "")])
def test_coup_steps(api: Api, method: str, then: str) -> None:
    tables = api.as_("croupier").tables
    table = open_table(api)
    shoe = open_shoe(api, table.name)
    coup = open_coup(api, shoe.name)
    place(api, coup.name)
    if method == "SettleCoup":
        step(api, "DealCoup", coup.name)
    request = getattr(table_pb2, f"{method}Request")(request_id=new_request_id(), name=coup.name)
    first = getattr(tables, method)(request)
    if then:
        step(api, then, coup.name)
    else:
        step(api, "CloseShoe", shoe.name)
    retried(api, getattr(tables, method), request, first, with_rid(request))


# --- stakes -----------------------------------------------------------------------------------


@pytest.fixture
def betting(api: Api) -> tuple[table_pb2.Coup, betting_pb2.StakeResult]:
    """An open coup with a free stake of anne's on noir."""
    coup = open_coup(api, open_shoe(api, open_table(api).name).name)
    return coup, place(api, coup.name)


def test_place_stake(api: Api) -> None:
    coup = open_coup(api, open_shoe(api, open_table(api).name).name)
    request = betting_pb2.PlaceStakeRequest(
        request_id=new_request_id(), coup=coup.name, account="accounts/anne", chance=NOIR,
        amount=money(1_500))
    anne = api.as_("anne").betting
    first = anne.PlaceStake(request)
    step(api, "CloseBetting", coup.name)
    retried(api, anne.PlaceStake, request, first, with_rid(request))


@pytest.mark.parametrize("method", ["RaiseStake", "WithdrawStake", "InsureStake"])
def test_commands_on_a_free_stake(api: Api, betting: tuple[Any, Any], method: str) -> None:
    coup, placed = betting
    extra = {"amount": money(100)} if method == "RaiseStake" else {}
    request = getattr(betting_pb2, f"{method}Request")(
        request_id=new_request_id(), name=placed.stake.name, coup=coup.name, **extra)
    anne = api.as_("anne").betting
    first = getattr(anne, method)(request)
    step(api, "CloseBetting", coup.name)
    retried(api, getattr(anne, method), request, first, with_rid(request))


def _first_coup_refait31(name: str) -> tuple[UUID, int]:
    """A shoe id and a cut whose first coup is a refait at 31."""
    for attempt in range(100):
        shoe_id = uuid5(UUID(int=31), f"{name}:{attempt}")
        for position in range(1, 312):
            cards = load_sabot(SEED, shoe_id, DeckKind.FRENCH_52, 6, position).cards
            if judge(deal_coup(cards, 0, CutCardRule.VOID_COUP)).is_refait31:
                return shoe_id, position
    raise AssertionError("no shoe gives a refait at 31 first")


@pytest.fixture
def prisoners(api: Api) -> tuple[str, list[str]]:
    """The second coup of a shoe whose first was a refait at 31: anne's two stakes on noir
    await her choice."""
    croupier = api.as_("croupier").tables
    table = open_table(api, "francaise", {"half_withdrawal": "true", "move_imprisoned": "true"})
    shoe_id, cut = _first_coup_refait31(f"{api.store}:{table.name}")
    shoe = croupier.OpenShoe(table_pb2.OpenShoeRequest(
        request_id=new_request_id(), parent=table.name, shoe_id=str(shoe_id)))
    croupier.CutShoe(table_pb2.CutShoeRequest(
        request_id=new_request_id(), name=shoe.name,
        cut_position=cut, cut_by="anne"))
    first = open_coup(api, shoe.name)
    stakes = [place(api, first.name, amount=a).stake.name for a in (1_000, 2_000)]
    assert step(api, "DealCoup", first.name).result == "refait"
    step(api, "SettleCoup", first.name)
    second = open_coup(api, shoe.name)
    assert all(s.awaiting_choice for s in second.layout)
    return second.name, stakes


def test_choose_refait31(api: Api, prisoners: tuple[str, list[str]]) -> None:
    coup, stakes = prisoners
    anne = api.as_("anne").betting
    request = betting_pb2.ChooseRefait31Request(
        request_id=new_request_id(), name=stakes[0], coup=coup, refait31_choice=PRISON)
    first = anne.ChooseRefait31(request)
    step(api, "CloseBetting", coup)
    retried(api, anne.ChooseRefait31, request, first, with_rid(request))


@pytest.mark.parametrize("method", ["MoveStake", "HalfWithdrawStake"])
def test_commands_on_a_prisoner(api: Api, prisoners: tuple[str, list[str]], method: str) -> None:
    coup, stakes = prisoners
    anne = api.as_("anne").betting
    anne.ChooseRefait31(betting_pb2.ChooseRefait31Request(
        request_id=new_request_id(), name=stakes[0], coup=coup, refait31_choice=PRISON))
    extra = {"chance": common_pb2.CHANCE_COULEUR} if method == "MoveStake" else {}
    request = getattr(betting_pb2, f"{method}Request")(
        request_id=new_request_id(), name=stakes[0], coup=coup, **extra)
    first = getattr(anne, method)(request)
    step(api, "CloseBetting", coup)
    retried(api, getattr(anne, method), request, first, with_rid(request))
    # carried over into this coup, and gone after a half withdrawal: still anne's
    coup_id, stake_id = coup.rsplit("/", 1)[1], stakes[0].rsplit("/", 1)[1]
    assert (method == "HalfWithdrawStake") == (first.stake.name == "")
    assert api.running.ledger.stake_account(coup_id, stake_id) == "anne"


# --- the cage -----------------------------------------------------------------------------------


def test_open_account(api: Api) -> None:
    cashier = api.as_("cashier").cashier
    request = cashier_pb2.OpenAccountRequest(request_id=new_request_id(),
                                             account_id=fresh("acct"), currency_code="EUR")
    first = cashier.OpenAccount(request)
    cashier.Deposit(cashier_pb2.DepositRequest(request_id=new_request_id(), name=first.name,
                                               amount=money(700)))
    retried(api, cashier.OpenAccount, request, first, with_rid(request),
            grpc.StatusCode.ALREADY_EXISTS)
    assert first.balance.amount_minor == 0


def test_withdraw(api: Api) -> None:
    account = new_account(api, deposit=5_000)
    cashier = api.as_("cashier").cashier
    request = cashier_pb2.WithdrawRequest(request_id=new_request_id(),
                                          name=f"accounts/{account}", amount=money(5_000))
    first = cashier.Withdraw(request)
    retried(api, cashier.Withdraw, request, first, with_rid(request))  # nothing left


def test_deposit(api: Api) -> None:
    account = new_account(api, deposit=0)
    cashier = api.as_("cashier").cashier
    request = cashier_pb2.DepositRequest(request_id=new_request_id(),
                                         name=f"accounts/{account}", amount=money(2_000))
    first = cashier.Deposit(request)
    cashier.Withdraw(cashier_pb2.WithdrawRequest(request_id=new_request_id(),
                                                 name=f"accounts/{account}",
                                                 amount=money(2_000)))
    retried(api, cashier.Deposit, request, first)
    assert first.balance.amount_minor == 2_000


def test_a_stake_keeps_its_owner_after_it_left_the_layout(api: Api) -> None:
    """What an owner check for a retried stake command can rely on (the current layout
    cannot: the stake may have left it)."""
    from domain.errors import NotFound

    ledger = api.running.ledger
    table = open_table(api)
    shoe = open_shoe(api, table.name)
    coup = open_coup(api, shoe.name)
    placed = place(api, coup.name)
    coup_id, stake_id = coup.name.rsplit("/", 1)[1], placed.stake.name.rsplit("/", 1)[1]
    api.as_("anne").betting.WithdrawStake(betting_pb2.WithdrawStakeRequest(
        request_id=new_request_id(), name=placed.stake.name, coup=coup.name))
    assert ledger.get_coup(coup_id).layout == ()
    assert ledger.stake_account(coup_id, stake_id) == "anne"
    kept = place(api, coup.name, amount=3_000).stake.name.rsplit("/", 1)[1]
    step(api, "DealCoup", coup.name)
    step(api, "SettleCoup", coup.name)
    assert ledger.stake_account(coup_id, kept) == "anne"  # won, lost or kept: still anne's
    with pytest.raises(NotFound):
        ledger.stake_account(coup_id, "00000000-0000-4000-8000-000000000000")
    following = open_coup(api, shoe.name).name.rsplit("/", 1)[1]
    if ledger.get_coup(following).layout:  # carried over (a refait or a void coup)
        assert ledger.stake_account(following, kept) == "anne"


# --- owner checks on a cold cache (after a restart) ---------------------------------------------


def test_retried_withdraw_after_a_restart(api: Api) -> None:
    """A player's retried WithdrawStake, the stake gone from the layout and the server's caches
    cold: the owner check finds the stake's account in the coup's history, the first answer
    comes back, nothing is written."""
    coup = open_coup(api, open_shoe(api, open_table(api).name).name)
    placed = place(api, coup.name)
    anne = api.as_("anne").betting
    request = betting_pb2.WithdrawStakeRequest(request_id=new_request_id(),
                                               name=placed.stake.name, coup=coup.name)
    first = anne.WithdrawStake(request)
    api.running.forget()
    retried(api, anne.WithdrawStake, request, first)
    api.running.forget()  # another player still may not touch it
    code, field, _ = failure(api.as_("bruno").betting.WithdrawStake, with_rid(request))
    assert (code, field) == (grpc.StatusCode.PERMISSION_DENIED, "name")


def test_retried_half_withdrawal_after_a_restart(api: Api,
                                                 prisoners: tuple[str, list[str]]) -> None:
    coup, stakes = prisoners
    anne = api.as_("anne").betting
    anne.ChooseRefait31(betting_pb2.ChooseRefait31Request(
        request_id=new_request_id(), name=stakes[0], coup=coup, refait31_choice=PRISON))
    request = betting_pb2.HalfWithdrawStakeRequest(request_id=new_request_id(),
                                                   name=stakes[0], coup=coup)
    first = anne.HalfWithdrawStake(request)
    assert first.stake.name == ""  # gone from the layout
    api.running.forget()
    retried(api, anne.HalfWithdrawStake, request, first)


def test_stake_never_on_the_coup_after_a_restart(api: Api) -> None:
    """A cold cache and a stake id the coup never had: NOT_FOUND on ``name``."""
    coup = open_coup(api, open_shoe(api, open_table(api).name).name)
    place(api, coup.name)
    table = coup.name.split("/shoes/")[0]
    api.running.forget()
    ghost = f"{table}/stakes/00000000-0000-4000-8000-000000000000"
    code, field, _ = failure(api.as_("anne").betting.WithdrawStake,
                             betting_pb2.WithdrawStakeRequest(
                                 request_id=new_request_id(), coup=coup.name, name=ghost))
    assert (code, field) == (grpc.StatusCode.NOT_FOUND, "name")
