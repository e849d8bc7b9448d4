"""Hundreds of malformed requests, generated: negative, zero and huge amounts, unknown ids,
wrong states, empty and oversized strings, unknown enum values. Each is answered
INVALID_ARGUMENT, FAILED_PRECONDITION or NOT_FOUND, with the field at fault named in the rich
details; never INTERNAL. And nothing was stored: the log does not move."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.api import logs
from services.api.client import new_request_id
from services.api.gen.sabot.v1 import (
    betting_pb2,
    cashier_pb2,
    common_pb2,
    events_pb2,
    table_pb2,
)

from .support import Api, failure, money, open_coup, open_shoe, open_table

BAD = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION,
       grpc.StatusCode.NOT_FOUND}
AMOUNTS = [0, -1, -100, -(2**63), 10**12 + 1, 2**63 - 1]
REQUEST_IDS = ["", "x" * 129, "has space", "é", "a/b", "\x00"]
CHANCES = [0, 5, 99, -1, 2**31 - 1]
NAME_SHAPES = ["", "x" * 400, "tables/", "tables/UPPER", "tables/a/b", "accounts/x y",
               "tables/-a", "coups/1", "tables/t/shoes", "/tables/t", "tables/t\n"]
GHOST = "00000000-0000-4000-8000-000000000000"


class Case:
    def __init__(self, service: str, method: str, request: Any, fields: str | set[str],
                 codes: set[grpc.StatusCode] | None = None) -> None:
        self.service, self.method, self.request = service, method, request
        self.fields = {fields} if isinstance(fields, str) else fields
        self.codes = codes or BAD

    def __repr__(self) -> str:
        return f"{self.method}({str(self.request)[:80]!r}) -> {sorted(self.fields)}"


def _rid() -> str:
    return new_request_id()


def cases(s: dict[str, str]) -> Iterator[Case]:
    coup, table, shoe, stake = s["coup"], s["table"], s["shoe"], s["stake"]
    acct = "accounts/anne"
    # amounts
    for amount in AMOUNTS:
        yield Case("betting", "PlaceStake", betting_pb2.PlaceStakeRequest(
            request_id=_rid(), coup=coup, account=acct, chance=1, amount=money(amount)),
            "amount.amount_minor")
        yield Case("betting", "RaiseStake", betting_pb2.RaiseStakeRequest(
            request_id=_rid(), name=stake, coup=coup, amount=money(amount)),
            "amount.amount_minor")
        yield Case("cashier", "Deposit", cashier_pb2.DepositRequest(
            request_id=_rid(), name=acct, amount=money(amount)), "amount.amount_minor")
        yield Case("cashier", "Withdraw", cashier_pb2.WithdrawRequest(
            request_id=_rid(), name=acct, amount=money(amount)), "amount.amount_minor")
    for amount in (1, 99, 1_000_001, 10**12):  # below the table minimum, above its maximum
        yield Case("betting", "PlaceStake", betting_pb2.PlaceStakeRequest(
            request_id=_rid(), coup=coup, account=acct, chance=1, amount=money(amount)),
            "amount.amount_minor")
    yield Case("cashier", "Withdraw", cashier_pb2.WithdrawRequest(
        request_id=_rid(), name=s["poor"], amount=money(10**11)), "amount.amount_minor")
    yield Case("betting", "PlaceStake", betting_pb2.PlaceStakeRequest(
        request_id=_rid(), coup=coup, account=s["poor"], chance=1, amount=money(100_000)),
        "amount.amount_minor")
    for currency in ("USD", "eur", "EURO", "E1R"):
        yield Case("betting", "PlaceStake", betting_pb2.PlaceStakeRequest(
            request_id=_rid(), coup=coup, account=acct, chance=1,
            amount=money(500, currency)), "amount.currency_code")
        yield Case("cashier", "Deposit", cashier_pb2.DepositRequest(
            request_id=_rid(), name=acct, amount=money(500, currency)), "amount.currency_code")
    for currency in ("eur", "EURO", "12"):
        yield Case("cashier", "OpenAccount", cashier_pb2.OpenAccountRequest(
            request_id=_rid(), account_id="newcomer", currency_code=currency), "currency_code")
    yield Case("cashier", "Deposit", cashier_pb2.DepositRequest(request_id=_rid(), name=acct),
               "amount")
    yield Case("betting", "PlaceStake", betting_pb2.PlaceStakeRequest(
        request_id=_rid(), coup=coup, account=acct, chance=1), "amount")
    # request ids
    for rid in REQUEST_IDS:
        yield Case("tables", "OpenTable", table_pb2.OpenTableRequest(
            request_id=rid, table_id="fine"), "request_id")
        yield Case("betting", "PlaceStake", betting_pb2.PlaceStakeRequest(
            request_id=rid, coup=coup, account=acct, chance=1, amount=money(500)),
            "request_id")
        yield Case("cashier", "Deposit", cashier_pb2.DepositRequest(
            request_id=rid, name=acct, amount=money(5)), "request_id")
        yield Case("tables", "DealCoup", table_pb2.DealCoupRequest(request_id=rid, name=coup),
                   "request_id")
    # enums
    for chance in CHANCES:
        yield Case("betting", "PlaceStake", betting_pb2.PlaceStakeRequest(
            request_id=_rid(), coup=coup, account=acct, chance=chance, amount=money(500)),
            "chance")
        yield Case("betting", "MoveStake", betting_pb2.MoveStakeRequest(
            request_id=_rid(), name=stake, coup=coup, chance=chance), "chance")
    for choice in (3, 7, -2):
        yield Case("betting", "PlaceStake", betting_pb2.PlaceStakeRequest(
            request_id=_rid(), coup=coup, account=acct, chance=1, amount=money(500),
            refait31_choice=choice), "refait31_choice")
    for choice in (0, 3, 99):
        yield Case("betting", "ChooseRefait31", betting_pb2.ChooseRefait31Request(
            request_id=_rid(), name=stake, coup=coup, refait31_choice=choice),
            "refait31_choice")
    # names: empty, oversized, misshapen
    for bad in NAME_SHAPES:
        yield Case("tables", "GetTable", table_pb2.GetTableRequest(name=bad), "name")
        yield Case("tables", "GetShoe", table_pb2.GetShoeRequest(name=bad), "name")
        yield Case("tables", "GetCoup", table_pb2.GetCoupRequest(name=bad), "name")
        yield Case("tables", "OpenShoe", table_pb2.OpenShoeRequest(request_id=_rid(),
                                                                   parent=bad), "parent")
        yield Case("tables", "SettleCoup", table_pb2.SettleCoupRequest(request_id=_rid(),
                                                                       name=bad), "name")
        yield Case("betting", "PlaceStake", betting_pb2.PlaceStakeRequest(
            request_id=_rid(), coup=bad, account=acct, chance=1, amount=money(500)), "coup")
        yield Case("betting", "PlaceStake", betting_pb2.PlaceStakeRequest(
            request_id=_rid(), coup=coup, account=bad, chance=1, amount=money(500)), "account")
        yield Case("betting", "InsureStake", betting_pb2.InsureStakeRequest(
            request_id=_rid(), name=bad, coup=coup), "name")
        yield Case("cashier", "GetAccount", cashier_pb2.GetAccountRequest(name=bad), "name")
        yield Case("cashier", "Deposit", cashier_pb2.DepositRequest(
            request_id=_rid(), name=bad, amount=money(5)), "name")
        yield Case("recall", "ListRecalledCoups", events_pb2.ListRecalledCoupsRequest(
            parent=bad), "parent")
    for bad_id in ("", "A", "x" * 65, "-", "a b", "é", "a_b"):
        yield Case("tables", "OpenTable", table_pb2.OpenTableRequest(
            request_id=_rid(), table_id=bad_id), "table_id")
        yield Case("cashier", "OpenAccount", cashier_pb2.OpenAccountRequest(
            request_id=_rid(), account_id=bad_id), "account_id")
    for bad_uuid in ("not-a-uuid", "1234", "x" * 36, GHOST + "0"):
        yield Case("tables", "OpenShoe", table_pb2.OpenShoeRequest(
            request_id=_rid(), parent=table, shoe_id=bad_uuid), "shoe_id")
        yield Case("betting", "PlaceStake", betting_pb2.PlaceStakeRequest(
            request_id=_rid(), coup=coup, account=acct, chance=1, amount=money(500),
            stake_id=bad_uuid), "stake_id")
    # unknown ids (well formed)
    ghost_table = "tables/no-such-table"
    ghost_coup = f"{shoe}/coups/{GHOST}"
    yield Case("tables", "GetTable", table_pb2.GetTableRequest(name=ghost_table), "name",
               {grpc.StatusCode.NOT_FOUND})
    yield Case("tables", "GetShoe", table_pb2.GetShoeRequest(name=f"{table}/shoes/{GHOST}"),
               "name", {grpc.StatusCode.NOT_FOUND})
    yield Case("tables", "OpenShoe", table_pb2.OpenShoeRequest(request_id=_rid(),
                                                               parent=ghost_table), "parent",
               {grpc.StatusCode.NOT_FOUND})
    for method, request_type in (("CloseBetting", table_pb2.CloseBettingRequest),
                                 ("DealCoup", table_pb2.DealCoupRequest),
                                 ("SettleCoup", table_pb2.SettleCoupRequest)):
        yield Case("tables", method, request_type(request_id=_rid(), name=ghost_coup), "name",
                   {grpc.StatusCode.NOT_FOUND})
    yield Case("tables", "GetCoup", table_pb2.GetCoupRequest(name=ghost_coup), "name",
               {grpc.StatusCode.NOT_FOUND})
    yield Case("betting", "PlaceStake", betting_pb2.PlaceStakeRequest(
        request_id=_rid(), coup=ghost_coup, account=acct, chance=1, amount=money(500)),
        "coup", {grpc.StatusCode.NOT_FOUND})
    yield Case("betting", "PlaceStake", betting_pb2.PlaceStakeRequest(
        request_id=_rid(), coup=coup, account="accounts/nobody-here", chance=1,
        amount=money(500)), "account", {grpc.StatusCode.NOT_FOUND})
    for method, request_type in (("WithdrawStake", betting_pb2.WithdrawStakeRequest),
                                 ("InsureStake", betting_pb2.InsureStakeRequest)):
        yield Case("betting", method, request_type(
            request_id=_rid(), name=f"{table}/stakes/{GHOST}", coup=coup), "name",
            {grpc.StatusCode.NOT_FOUND})
    # the table does not allow half withdrawals: that may be said before the stake is sought
    yield Case("betting", "HalfWithdrawStake", betting_pb2.HalfWithdrawStakeRequest(
        request_id=_rid(), name=f"{table}/stakes/{GHOST}", coup=coup), "name",
        {grpc.StatusCode.NOT_FOUND, grpc.StatusCode.FAILED_PRECONDITION})
    yield Case("betting", "GetStake", betting_pb2.GetStakeRequest(
        name=f"{table}/stakes/{GHOST}"), "name", {grpc.StatusCode.NOT_FOUND})
    yield Case("cashier", "GetAccount", cashier_pb2.GetAccountRequest(
        name="accounts/nobody-here"), "name", {grpc.StatusCode.NOT_FOUND})
    yield Case("cashier", "Deposit", cashier_pb2.DepositRequest(
        request_id=_rid(), name="accounts/nobody-here", amount=money(5)), "name",
        {grpc.StatusCode.NOT_FOUND})
    yield Case("recall", "ListRecalledCoups", events_pb2.ListRecalledCoupsRequest(
        parent=ghost_table), "parent", {grpc.StatusCode.NOT_FOUND})
    yield Case("watch", "WatchTable", events_pb2.WatchTableRequest(table=ghost_table), "table",
               {grpc.StatusCode.NOT_FOUND})
    # the coup of a stake command (documented, required): unknown -> NOT_FOUND, betting closed
    # -> FAILED_PRECONDITION, both on the field coup
    for coup_name, stake_name, codes in (
        (ghost_coup, stake, {grpc.StatusCode.NOT_FOUND}),
        (s["closed_coup"], s["closed_stake"], {grpc.StatusCode.FAILED_PRECONDITION}),
    ):
        on = {"request_id": _rid(), "name": stake_name, "coup": coup_name}
        for method, request in (
            ("RaiseStake", betting_pb2.RaiseStakeRequest(**on, amount=money(100))),
            ("WithdrawStake", betting_pb2.WithdrawStakeRequest(**on)),
            ("InsureStake", betting_pb2.InsureStakeRequest(**on)),
            ("ChooseRefait31", betting_pb2.ChooseRefait31Request(
                **on, refait31_choice=common_pb2.REFAIT31_CHOICE_PRISON)),
            ("MoveStake", betting_pb2.MoveStakeRequest(**on, chance=common_pb2.CHANCE_COULEUR)),
            ("HalfWithdrawStake", betting_pb2.HalfWithdrawStakeRequest(**on)),
        ):
            yield Case("betting", method, request, "coup", codes)
    yield Case("betting", "PlaceStake", betting_pb2.PlaceStakeRequest(
        request_id=_rid(), coup=s["closed_coup"], account=acct, chance=1, amount=money(500)),
        "coup", {grpc.StatusCode.FAILED_PRECONDITION})
    # a stake named under another table than its coup's
    yield Case("betting", "InsureStake", betting_pb2.InsureStakeRequest(
        request_id=_rid(), name=stake.replace(table, s["other_table"]), coup=coup), "coup")
    # wrong states
    settled = s["settled_coup"]
    yield Case("tables", "DealCoup", table_pb2.DealCoupRequest(request_id=_rid(), name=settled),
               "name", {grpc.StatusCode.FAILED_PRECONDITION})
    yield Case("tables", "SettleCoup", table_pb2.SettleCoupRequest(request_id=_rid(),
                                                                   name=settled), "name",
               {grpc.StatusCode.FAILED_PRECONDITION})
    yield Case("tables", "CloseBetting", table_pb2.CloseBettingRequest(request_id=_rid(),
                                                                       name=settled), "name",
               {grpc.StatusCode.FAILED_PRECONDITION})
    yield Case("tables", "SettleCoup", table_pb2.SettleCoupRequest(request_id=_rid(), name=coup),
               "name", {grpc.StatusCode.FAILED_PRECONDITION})
    yield Case("betting", "PlaceStake", betting_pb2.PlaceStakeRequest(
        request_id=_rid(), coup=settled, account=acct, chance=1, amount=money(500)), "coup",
        {grpc.StatusCode.FAILED_PRECONDITION})
    yield Case("tables", "CutShoe", table_pb2.CutShoeRequest(
        request_id=_rid(), name=shoe, cut_position=20, cut_by="anne"), "name",
        {grpc.StatusCode.FAILED_PRECONDITION})
    yield Case("tables", "OpenShoe", table_pb2.OpenShoeRequest(request_id=_rid(), parent=table),
               "parent", {grpc.StatusCode.FAILED_PRECONDITION})
    yield Case("tables", "OpenCoup", table_pb2.OpenCoupRequest(
        request_id=_rid(), parent=f"{table}/shoes/{GHOST}"), "parent",
        {grpc.StatusCode.FAILED_PRECONDITION})
    yield Case("betting", "PlaceStake", betting_pb2.PlaceStakeRequest(
        request_id=_rid(), coup=coup, account=acct, chance=common_pb2.CHANCE_ROUGE,
        amount=money(500)), "chance", {grpc.StatusCode.FAILED_PRECONDITION})  # opposed
    for method, request_type in (("MoveStake", betting_pb2.MoveStakeRequest),
                                 ("HalfWithdrawStake", betting_pb2.HalfWithdrawStakeRequest)):
        extra = {"chance": common_pb2.CHANCE_COULEUR} if method == "MoveStake" else {}
        yield Case("betting", method, request_type(
            request_id=_rid(), name=stake, coup=coup, **extra), "name",
            {grpc.StatusCode.FAILED_PRECONDITION})
    for position in (0, -5, 312, 100_000):
        yield Case("tables", "CutShoe", table_pb2.CutShoeRequest(
            request_id=_rid(), name=s["uncut_shoe"], cut_position=position, cut_by="anne"),
            "cut_position")
    for cut_by in ("", "x" * 65):
        yield Case("tables", "CutShoe", table_pb2.CutShoeRequest(
            request_id=_rid(), name=s["uncut_shoe"], cut_position=5, cut_by=cut_by), "cut_by")
    # presets and overrides
    for preset in ("nope", "FRANCAISE", "x" * 300):
        yield Case("tables", "OpenTable", table_pb2.OpenTableRequest(
            request_id=_rid(), table_id="fine-2", preset=preset), "preset")
    for key, value, field in (("bogus", "1", "overrides.bogus"), ("decks", "99", "overrides.decks"),
                              ("decks", "six", "overrides.decks"),
                              ("min_stake", "-1", "overrides.min_stake"),
                              ("insurance_rate", "1.5", "overrides.insurance_rate"),
                              ("refait31", "maybe", "overrides.refait31"),
                              ("cut_card", "", "overrides.cut_card"),
                              ("", "x", "overrides"),
                              ("decks", "9" * 100, "overrides.decks")):
        yield Case("tables", "OpenTable", table_pb2.OpenTableRequest(
            request_id=_rid(), table_id="fine-3", overrides={key: value}), field)
    # lists
    for size in (-1, -100):
        yield Case("tables", "ListTables", table_pb2.ListTablesRequest(page_size=size),
                   "page_size")
        yield Case("tables", "ListCoups", table_pb2.ListCoupsRequest(
            parent=table, page_size=size), "page_size")
    for token in ("garbage", "zzzz", "o:12", "!!!!", "W10", "x" * 401):
        yield Case("tables", "ListTables", table_pb2.ListTablesRequest(page_token=token),
                   "page_token")
        yield Case("tables", "ListCoups", table_pb2.ListCoupsRequest(
            parent=shoe, page_token=token), "page_token")
    for parent in [*NAME_SHAPES, f"{table}/shoes/x", f"{table}/shoes/-/coups"]:
        yield Case("tables", "ListCoups", table_pb2.ListCoupsRequest(parent=parent), "parent")
    for parent in (ghost_table, f"{table}/shoes/{GHOST}", f"{ghost_table}/shoes/-"):
        yield Case("tables", "ListCoups", table_pb2.ListCoupsRequest(parent=parent), "parent",
                   {grpc.StatusCode.NOT_FOUND})
    # pages and positions
    for size in (-1, -100):
        yield Case("betting", "ListStakes", betting_pb2.ListStakesRequest(
            parent=table, page_size=size), "page_size")
        yield Case("cashier", "ListStatementEntries", cashier_pb2.ListStatementEntriesRequest(
            parent=acct, page_size=size), "page_size")
    for token in ("garbage", "zzzz", "o:12", "!!!!"):
        yield Case("betting", "ListStakes", betting_pb2.ListStakesRequest(
            parent=table, page_token=token), "page_token")
        yield Case("recall", "ListRecalledCoups", events_pb2.ListRecalledCoupsRequest(
            parent=table, page_token=token), "page_token")
    yield Case("feed", "StreamEvents", events_pb2.StreamEventsRequest(after_position=-1),
               "after_position")
    for size in (-1, 1001, 10**6):
        yield Case("feed", "StreamEvents", events_pb2.StreamEventsRequest(batch_size=size),
                   "batch_size")
    yield Case("watch", "WatchTable", events_pb2.WatchTableRequest(table=table,
                                                                   after_position=-3),
               "after_position")


@pytest.fixture(scope="module")
def scene(api: Api) -> dict[str, str]:
    table = open_table(api)
    shoe = open_shoe(api, table.name)
    coup = open_coup(api, shoe.name)
    stake = api.as_("anne").betting.PlaceStake(betting_pb2.PlaceStakeRequest(
        request_id=new_request_id(), coup=coup.name, account="accounts/anne",
        chance=common_pb2.CHANCE_NOIR, amount=money(500))).stake.name
    other = open_table(api)
    other_shoe = open_shoe(api, other.name)
    done = open_coup(api, other_shoe.name)
    croupier = api.as_("croupier").tables
    croupier.DealCoup(table_pb2.DealCoupRequest(request_id=new_request_id(), name=done.name))
    croupier.SettleCoup(table_pb2.SettleCoupRequest(request_id=new_request_id(), name=done.name))
    third = open_table(api)
    uncut = croupier.OpenShoe(table_pb2.OpenShoeRequest(request_id=new_request_id(),
                                                        parent=third.name))
    closed = open_coup(api, open_shoe(api, open_table(api).name).name)
    closed_stake = api.as_("anne").betting.PlaceStake(betting_pb2.PlaceStakeRequest(
        request_id=new_request_id(), coup=closed.name, account="accounts/anne",
        chance=common_pb2.CHANCE_NOIR, amount=money(500))).stake.name
    croupier.CloseBetting(table_pb2.CloseBettingRequest(request_id=new_request_id(),
                                                        name=closed.name))
    poor = "accounts/" + third.name.split("/")[1].replace("t-", "p-")
    api.as_("cashier").cashier.OpenAccount(cashier_pb2.OpenAccountRequest(
        request_id=new_request_id(), account_id=poor.split("/")[1]))
    return {"table": table.name, "shoe": shoe.name, "coup": coup.name, "stake": stake,
            "other_table": other.name, "settled_coup": done.name, "uncut_shoe": uncut.name,
            "poor": poor, "closed_coup": closed.name, "closed_stake": closed_stake}


def _call(api: Api, case: Case) -> tuple[grpc.StatusCode, str, str]:
    call = getattr(getattr(api.as_("admin"), case.service), case.method)
    if case.service in ("feed", "watch"):
        return failure(lambda r: next(iter(call(r, timeout=2))), case.request)
    return failure(call, case.request)


def _position(api: Api) -> int:
    position: int = api.running.hub.position
    return position


def test_malformed_requests_are_refused_with_the_field_named(api: Api,
                                                             scene: dict[str, str]) -> None:
    all_cases = list(cases(scene))
    assert len(all_cases) >= 200
    api.running.hub.poke()
    wrong = []
    for case in all_cases:
        try:
            code, field, reason = _call(api, case)
        except AssertionError:
            code, field, reason = grpc.StatusCode.OK, "", ""
        if code not in case.codes or field not in case.fields or not reason:
            wrong.append((case, code, field, reason))
    assert not wrong, "\n".join(map(str, wrong[:20])) + f"\n{len(wrong)} wrong"
    logs.flush()
    assert '"status": "INTERNAL"' not in api.log.getvalue()


def test_refused_commands_store_nothing(api: Api, scene: dict[str, str]) -> None:
    from services.api.gen.sabot.v1 import events_pb2 as ev

    feed = api.as_("back_office").feed

    def end() -> int:
        last = 0
        for batch in feed.StreamEvents(ev.StreamEventsRequest(
                after_position=_position(api), stop_at_end=True, batch_size=1000)):
            last = batch.last_position
        return max(last, _position(api))

    mutating = [c for c in cases(scene) if c.method not in (
        "GetTable", "GetShoe", "GetCoup", "GetAccount", "GetStake", "ListStakes",
        "ListStatementEntries", "ListRecalledCoups", "StreamEvents", "WatchTable",
        "ListTables", "ListCoups")]
    before = end()
    for case in itertools.islice(mutating, 0, None, 3):
        _call(api, case)
    assert end() == before


@settings(max_examples=60, deadline=None)
@given(amount=st.one_of(st.integers(min_value=-(2**63), max_value=0),
                        st.integers(min_value=10**12 + 1, max_value=2**63 - 1)))
def test_any_amount_out_of_range_is_invalid(api: Api, amount: int) -> None:
    code, field, _ = failure(api.as_("cashier").cashier.Deposit, cashier_pb2.DepositRequest(
        request_id=new_request_id(), name="accounts/anne", amount=money(amount)))
    assert (code, field) == (grpc.StatusCode.INVALID_ARGUMENT, "amount.amount_minor")
