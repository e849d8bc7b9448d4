"""What every game's demo, played through the API, shares: picking its callers among the
configured tokens (``cast_from``), funding its players (``fund``) and saying amounts
(``euros``). Each game's demo is its own (Trente et Quarante's:
``services/trente_et_quarante/demo.py``; the others' in ``services/cli/<game>.py``), added to
``sabot demo --game`` by ``services.cli.server.add_demo``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import grpc

from domain.currency import format_minor
from services.api.client import Client, new_request_id
from services.api.gen.sabot.v1 import cashier_pb2, common_pb2
from services.api.roles import Principal, Role

DEPOSIT = 100_000  # 1,000.00 EUR


def euros(minor: int, currency: str = "EUR") -> str:
    """``minor`` in major units of ``currency`` (its own decimals: 500.00 EUR, 500 JPY)."""
    return format_minor(minor, currency)


@dataclass(frozen=True)
class Cast:
    """Who plays: the croupier's and the cashier's tokens, and each player's token and account."""

    croupier: str
    cashier: str
    players: tuple[tuple[str, str], ...]  # (token, account id)


def cast_from(tokens: Mapping[str, Principal], suffix: str = "", *, players: int = 3,
              own: int = 0, why: str = "") -> Cast:
    """Pick the demo's callers among configured tokens (an admin token can play every part),
    every game's demo the same way: ``players`` players, the missing ones played by an admin
    with accounts named after ``suffix``. ``own``: a game whose cards are face down wants at
    least ``own`` players with their own token and account (a face-down card is shown to its
    holder only), up to ``players`` of them and no admin among them (else ``ValueError(why)``)."""
    by_role: dict[Role, list[tuple[str, Principal]]] = {}
    for token, who in tokens.items():
        by_role.setdefault(who.role, []).append((token, who))
    admin = by_role.get(Role.ADMIN, [(None, None)])[0][0]

    def pick(role: Role) -> str:
        found = by_role.get(role)
        token = found[0][0] if found else admin
        if token is None:
            raise ValueError(f"the demo needs a {role.value} or an admin token")
        return token

    seated = by_role.get(Role.PLAYER, [])
    if own:
        mine = [(t, w.account) for t, w in seated if w.account][:players]
        if len(mine) < own:
            raise ValueError(why or f"the demo needs {own} player tokens")
        return Cast(pick(Role.CROUPIER), pick(Role.CASHIER), tuple(mine))
    chosen = [(t, w.account or "") for t, w in seated][:players]
    names = ("anne", "bruno", "chiara")
    while len(chosen) < players:
        if admin is None:
            raise ValueError("the demo needs three player tokens or an admin token")
        chosen.append((admin, f"{names[len(chosen)]}-{suffix}"))
    return Cast(pick(Role.CROUPIER), pick(Role.CASHIER), tuple(chosen))


def fund(cashier: Client, account: str, currency: str, amount: int = DEPOSIT
         ) -> cashier_pb2.Account:
    """Open ``account`` (a configured player's may exist already) and deposit ``amount``; the
    account after the deposit. Every game's demo funds its players so."""
    try:
        cashier.cashier.OpenAccount(cashier_pb2.OpenAccountRequest(
            request_id=new_request_id(), account_id=account, currency_code=currency))
    except grpc.RpcError as exc:
        if exc.code() is not grpc.StatusCode.ALREADY_EXISTS:
            raise
    acc: cashier_pb2.Account = cashier.cashier.Deposit(cashier_pb2.DepositRequest(
        request_id=new_request_id(), name=f"accounts/{account}",
        amount=common_pb2.Money(currency_code=currency, amount_minor=amount)))
    return acc


