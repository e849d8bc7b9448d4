"""Ownership is decided by the ledger, from the command's actor; stake ids cannot collide;
request ids are scoped by principal. Each attack of issue 10 reproduced against a real server
(SQLite, PostgreSQL, and the ledger in its own process): refused, nothing stored."""

from __future__ import annotations

import uuid
from typing import Any

import grpc
import pytest

from services.api.client import new_request_id
from services.api.errors import details_of
from services.api.gen.sabot.v1 import betting_pb2, cashier_pb2, common_pb2, table_pb2
from services.ledger.actor import Actor
from services.ledger.errors import PermissionDenied

from .support import Api, balance, failure, money, open_coup, open_shoe, open_table
from .test_retries_after_state_change import _first_coup_refait31, log_end, place, step

NOIR, ROUGE = common_pb2.CHANCE_NOIR, common_pb2.CHANCE_ROUGE
PRISON = common_pb2.REFAIT31_CHOICE_PRISON
DENIED = grpc.StatusCode.PERMISSION_DENIED


def _events(api: Api) -> list[tuple[Any, ...]]:
    ledger = api.running.ledger
    return [(e.position, e.topic) for e in ledger.read_events(max(0, log_end(api) - 50), 100)]


def _prisoner_coup(api: Api) -> tuple[str, list[str]]:
    """A coup after a refait at 31: anne's two stakes on noir await her choice."""
    croupier = api.as_("croupier").tables
    table = open_table(api, "francaise", {"half_withdrawal": "true", "move_imprisoned": "true"})
    shoe_id, cut = _first_coup_refait31(f"{api.store}:{table.name}")
    shoe = croupier.OpenShoe(table_pb2.OpenShoeRequest(
        request_id=new_request_id(), parent=table.name, shoe_id=str(shoe_id)))
    croupier.CutShoe(table_pb2.CutShoeRequest(
        request_id=new_request_id(), name=shoe.name, cut_position=cut, cut_by="anne"))
    first = open_coup(api, shoe.name)
    stakes = [place(api, first.name, amount=a).stake.name for a in (1_000, 2_000)]
    assert step(api, "DealCoup", first.name).result == "refait"
    step(api, "SettleCoup", first.name)
    second = open_coup(api, shoe.name)
    assert all(s.awaiting_choice for s in second.layout)
    return second.name, stakes


def _collide(api: Api, victim_stake: str) -> betting_pb2.StakeResult:
    """Bruno reads the victim's stake id (stake names are public) and places his own minimum
    stake on another table with that id as his ``stake_id``."""
    other = open_coup(api, open_shoe(api, open_table(api).name).name)
    victim_id = victim_stake.rsplit("/", 1)[1]
    mine: betting_pb2.StakeResult = api.as_("bruno").betting.PlaceStake(
        betting_pb2.PlaceStakeRequest(
            request_id=new_request_id(), coup=other.name, account="accounts/bruno",
            chance=NOIR, amount=money(100), stake_id=victim_id))
    # the ledger made the stake's id: it is not the victim's
    assert mine.stake.name.rsplit("/", 1)[1] != victim_id
    assert mine.stake.account == "accounts/bruno"
    return mine


def _attack(api: Api, coup: str, stake: str, method: str) -> None:
    """Bruno's command on anne's stake: PERMISSION_DENIED naming the stake, nothing stored,
    and the answer shows nothing of anne's account."""
    extra: dict[str, Any] = {
        "RaiseStake": {"amount": money(50_000)},
        "MoveStake": {"chance": common_pb2.CHANCE_COULEUR},
        "ChooseRefait31": {"refait31_choice": PRISON},
    }.get(method, {})
    request = getattr(betting_pb2, f"{method}Request")(
        request_id=new_request_id(), name=stake, coup=coup, **extra)
    before = (balance(api, "anne"), balance(api, "bruno"), log_end(api), _events(api))
    try:
        getattr(api.as_("bruno").betting, method)(request)
    except grpc.RpcError as exc:
        assert (exc.code(), *details_of(exc)) == (DENIED, "name", "NOT_YOUR_STAKE"), method
        assert "anne" not in (exc.details() or "")
    else:
        raise AssertionError(f"{method} on another player's stake succeeded")
    after = (balance(api, "anne"), balance(api, "bruno"), log_end(api), _events(api))
    assert after == before, method


@pytest.mark.parametrize("method", ["RaiseStake", "InsureStake", "WithdrawStake"])
def test_a_stake_id_collision_then_a_command_on_a_free_stake_is_refused(
    api: Api, method: str,
) -> None:
    coup = open_coup(api, open_shoe(api, open_table(api).name).name)
    victim = place(api, coup.name, amount=1_000).stake.name
    _collide(api, victim)
    _attack(api, coup.name, victim, method)
    # the owner still may
    extra = {"amount": money(100)} if method == "RaiseStake" else {}
    getattr(api.as_("anne").betting, method)(getattr(betting_pb2, f"{method}Request")(
        request_id=new_request_id(), name=victim, coup=coup.name, **extra))


@pytest.mark.parametrize("method", ["ChooseRefait31", "MoveStake", "HalfWithdrawStake"])
def test_a_stake_id_collision_then_a_command_on_a_prisoner_is_refused(
    api: Api, method: str,
) -> None:
    coup, stakes = _prisoner_coup(api)
    anne = api.as_("anne").betting
    if method != "ChooseRefait31":  # in prison: moving or half-withdrawing it is legal
        anne.ChooseRefait31(betting_pb2.ChooseRefait31Request(
            request_id=new_request_id(), name=stakes[0], coup=coup, refait31_choice=PRISON))
    _collide(api, stakes[0])
    _attack(api, coup, stakes[0], method)
    extra: dict[str, Any] = {
        "MoveStake": {"chance": common_pb2.CHANCE_COULEUR},
        "ChooseRefait31": {"refait31_choice": PRISON},
    }.get(method, {})
    getattr(anne, method)(getattr(betting_pb2, f"{method}Request")(  # the owner still may
        request_id=new_request_id(), name=stakes[0], coup=coup, **extra))


def test_a_stake_that_left_the_layout_is_still_refused_to_another_player(api: Api) -> None:
    coup = open_coup(api, open_shoe(api, open_table(api).name).name)
    victim = place(api, coup.name, amount=1_000).stake.name
    api.as_("anne").betting.WithdrawStake(betting_pb2.WithdrawStakeRequest(
        request_id=new_request_id(), name=victim, coup=coup.name))
    _collide(api, victim)
    _attack(api, coup.name, victim, "WithdrawStake")
    _attack(api, coup.name, victim, "RaiseStake")


def test_a_new_stake_on_another_account_is_refused_by_the_ledger(api: Api) -> None:
    coup = open_coup(api, open_shoe(api, open_table(api).name).name)
    before = (balance(api, "anne"), log_end(api))
    code, field, reason = failure(
        api.as_("bruno").betting.PlaceStake, betting_pb2.PlaceStakeRequest(
            request_id=new_request_id(), coup=coup.name, account="accounts/anne", chance=NOIR,
            amount=money(100)))
    assert (code, field, reason) == (DENIED, "account", "NOT_YOUR_ACCOUNT")
    assert (balance(api, "anne"), log_end(api)) == before


def test_the_ledger_itself_refuses_a_player_actor(api: Api) -> None:
    """The decision, not the servicer: the ledger's own API called with bruno's actor."""
    ledger = api.running.ledger
    coup = open_coup(api, open_shoe(api, open_table(api).name).name)
    placed = place(api, coup.name, amount=1_000)
    coup_id, stake_id = coup.name.rsplit("/", 1)[1], placed.stake.name.rsplit("/", 1)[1]
    bruno = Actor("bruno", "player", "test", "bruno")
    end = log_end(api)
    with pytest.raises(PermissionDenied) as denied:
        ledger.raise_stake(new_request_id(), coup_id, stake_id, 100, actor=bruno)
    assert denied.value.field == "stake_id"
    with pytest.raises(PermissionDenied) as denied:
        ledger.place_stake(new_request_id(), coup_id, "anne", "rouge", 100, actor=bruno)
    assert denied.value.field == "account_id"
    assert log_end(api) == end
    # the house's actors are not bound to an account
    croupier = Actor("croupier-1", "admin", "test")
    assert ledger.raise_stake(new_request_id(), coup_id, stake_id, 100, actor=croupier).stake


def test_a_client_stake_id_names_one_stake_per_account_and_coup(api: Api) -> None:
    coup = open_coup(api, open_shoe(api, open_table(api).name).name)
    mine = str(uuid.uuid4())
    anne, bruno = api.as_("anne").betting, api.as_("bruno").betting

    def stake(who: Any, account: str, chance: Any) -> Any:
        return who.PlaceStake(betting_pb2.PlaceStakeRequest(
            request_id=new_request_id(), coup=coup.name, account=f"accounts/{account}",
            chance=chance, amount=money(100), stake_id=mine))

    first = stake(anne, "anne", NOIR)
    assert stake(bruno, "bruno", NOIR).stake.name != first.stake.name  # no collision
    code, field, reason = failure(stake, anne, "anne", ROUGE)  # the same id again: refused
    assert (code, field, reason) == (grpc.StatusCode.ALREADY_EXISTS, "stake_id", "STAKE_EXISTS")
    anne.WithdrawStake(betting_pb2.WithdrawStakeRequest(
        request_id=new_request_id(), name=first.stake.name, coup=coup.name))
    assert failure(stake, anne, "anne", NOIR)[:2] == (grpc.StatusCode.ALREADY_EXISTS, "stake_id")
    step(api, "DealCoup", coup.name)
    step(api, "SettleCoup", coup.name)
    table = coup.name.split("/")[1]
    following = open_coup(api, coup.name.rsplit("/coups/", 1)[0])
    again = anne.PlaceStake(betting_pb2.PlaceStakeRequest(  # another coup: another stake
        request_id=new_request_id(), coup=following.name, account="accounts/anne",
        chance=ROUGE, amount=money(100), stake_id=mine))
    assert again.stake.name.startswith(f"tables/{table}/stakes/")
    assert again.stake.name != first.stake.name


# --- request ids, scoped by principal --------------------------------------------------------


def test_a_request_id_used_by_a_player_first_does_not_burn_the_cashiers(api: Api) -> None:
    rid = f"cage-0001-{uuid.uuid4().hex[:8]}"
    coup = open_coup(api, open_shoe(api, open_table(api).name).name)
    anne, bruno = api.as_("anne").betting, api.as_("bruno").betting
    cashier = api.as_("cashier").cashier

    def anne_stakes(amount: int = 100) -> Any:
        return anne.PlaceStake(betting_pb2.PlaceStakeRequest(
            request_id=rid, coup=coup.name, account="accounts/anne", chance=NOIR,
            amount=money(amount)))

    def bruno_stakes() -> Any:
        return bruno.PlaceStake(betting_pb2.PlaceStakeRequest(
            request_id=rid, coup=coup.name, account="accounts/bruno", chance=ROUGE,
            amount=money(300)))

    def deposit() -> Any:
        return cashier.Deposit(cashier_pb2.DepositRequest(
            request_id=rid, name="accounts/chiara", amount=money(700)))

    placed = anne_stakes()
    chiara = balance(api, "chiara")
    deposited = deposit()  # the cashier's own request id: its own answer
    assert deposited.balance.amount_minor == chiara + 700
    other = bruno_stakes()
    assert other.stake.account == "accounts/bruno"
    end = log_end(api)
    # each principal's retry gets its own first answer, and stores nothing
    assert anne_stakes() == placed
    assert deposit() == deposited
    assert bruno_stakes() == other
    assert log_end(api) == end and balance(api, "chiara") == chiara + 700
    # the same principal, the same id, other arguments: ALREADY_EXISTS, naming its own command
    try:
        anne_stakes(200)
    except grpc.RpcError as exc:
        assert exc.code() is grpc.StatusCode.ALREADY_EXISTS
        assert details_of(exc) == ("request_id", "REQUEST_ID_REUSED")
        assert "deposit" not in (exc.details() or "")
    else:
        raise AssertionError("a reused request id with other arguments succeeded")
    assert log_end(api) == end
