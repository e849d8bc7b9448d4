"""Helpers of the API tests: callers by role, fresh ids, rich error details, tables to play."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from services.api.client import Client, new_request_id
from services.api.errors import details_of
from services.api.gen.sabot.v1 import cashier_pb2, common_pb2, table_pb2

ROLES = ("croupier", "cashier", "player", "back_office", "regulator", "admin")
PLAYERS = ("anne", "bruno", "chiara", "dora")  # accounts bound to the player tokens
DEPOSIT = 10_000_000


@dataclass
class Api:
    """A running server under test and a caller per role."""

    target: str
    store: str
    tokens: dict[str, str]  # role -> token; "player" is anne's
    player_tokens: dict[str, str]  # account -> token
    log: Any
    running: Any
    _clients: dict[str, Client] = field(default_factory=dict)
    credentials: Path | None = None  # the credentials file the server reads (named principals)
    principals: dict[str, str] = field(default_factory=dict)  # role or account -> principal id

    def as_(self, role: str) -> Client:
        token = self.tokens.get(role) or self.player_tokens[role]
        if role not in self._clients:
            self._clients[role] = Client(self.target, token)
        return self._clients[role]

    def anonymous(self, token: str | None = None) -> Client:
        return Client(self.target, token)


def fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def money(amount: int, currency: str = "EUR") -> common_pb2.Money:
    return common_pb2.Money(currency_code=currency, amount_minor=amount)


def failure(call: Any, *args: Any, **kwargs: Any) -> tuple[grpc.StatusCode, str, str]:
    """Call and expect an RpcError: its (code, field, reason)."""
    try:
        call(*args, **kwargs)
    except grpc.RpcError as exc:
        code = exc.code()
        assert isinstance(code, grpc.StatusCode)
        found, reason = details_of(exc)
        return code, found, reason
    raise AssertionError("the call succeeded")


def open_table(api: Api, preset: str = "francaise",
               overrides: dict[str, str] | None = None) -> table_pb2.Table:
    table: table_pb2.Table = api.as_("croupier").tables.OpenTable(table_pb2.OpenTableRequest(
        request_id=new_request_id(), table_id=fresh("t"), preset=preset,
        overrides=overrides or {}))
    return table


def open_shoe(api: Api, table: str, cut: int = 100, shoe_id: str = "") -> table_pb2.Shoe:
    croupier = api.as_("croupier")
    shoe: table_pb2.Shoe = croupier.tables.OpenShoe(table_pb2.OpenShoeRequest(
        request_id=new_request_id(), parent=table, shoe_id=shoe_id))
    cut_shoe: table_pb2.Shoe = croupier.tables.CutShoe(table_pb2.CutShoeRequest(
        request_id=new_request_id(), name=shoe.name, cut_position=cut, cut_by="anne"))
    return cut_shoe


def open_coup(api: Api, shoe: str) -> table_pb2.Coup:
    coup: table_pb2.Coup = api.as_("croupier").tables.OpenCoup(
        table_pb2.OpenCoupRequest(request_id=new_request_id(), parent=shoe))
    return coup


def ready_coup(api: Api, preset: str = "francaise") -> tuple[table_pb2.Table, table_pb2.Coup]:
    table = open_table(api, preset)
    shoe = open_shoe(api, table.name)
    return table, open_coup(api, shoe.name)


def new_account(api: Api, deposit: int = 100_000) -> str:
    account = fresh("acct")
    cashier = api.as_("cashier").cashier
    cashier.OpenAccount(cashier_pb2.OpenAccountRequest(
        request_id=new_request_id(), account_id=account, currency_code="EUR"))
    if deposit:
        cashier.Deposit(cashier_pb2.DepositRequest(
            request_id=new_request_id(), name=f"accounts/{account}", amount=money(deposit)))
    return account


def balance(api: Api, account: str) -> int:
    acc = api.as_("admin").cashier.GetAccount(
        cashier_pb2.GetAccountRequest(name=f"accounts/{account}"))
    amount: int = acc.balance.amount_minor
    return amount
