"""The cashier with the Python client: open a player's account (an existing one is kept),
cash in, cash out, and read the account's balance and its entries.

    python examples/python/cashier.py --target HOST:PORT --cashier T --account ACCOUNT
"""

from __future__ import annotations

import argparse

import grpc

from services.api.client import Client, new_request_id
from services.api.gen.sabot.v1 import cashier_pb2, common_pb2


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--target", default="127.0.0.1:50051")
    p.add_argument("--cashier", required=True, metavar="TOKEN")
    p.add_argument("--account", required=True)
    a = p.parse_args()
    desk = Client(a.target, a.cashier).cashier
    name = f"accounts/{a.account}"
    try:
        desk.OpenAccount(cashier_pb2.OpenAccountRequest(
            request_id=new_request_id(), account_id=a.account, currency_code="EUR"))
    except grpc.RpcError as exc:
        if exc.code() is not grpc.StatusCode.ALREADY_EXISTS:
            raise
    rid = new_request_id()  # kept: a retry of the deposit with it has no second effect
    deposit = cashier_pb2.DepositRequest(request_id=rid, name=name, amount=common_pb2.Money(
        currency_code="EUR", amount_minor=50_000))
    desk.Deposit(deposit)
    again = desk.Deposit(deposit)  # the same request id: the first answer, no second deposit
    account = desk.Withdraw(cashier_pb2.WithdrawRequest(
        request_id=new_request_id(), name=name, amount=common_pb2.Money(
            currency_code="EUR", amount_minor=20_000)))
    print(f"{name}: balance {account.balance.amount_minor} {account.balance.currency_code} "
          f"(the deposit retried answered {again.balance.amount_minor})")
    entries = desk.ListStatementEntries(cashier_pb2.ListStatementEntriesRequest(parent=name))
    for e in entries.entries[-3:]:
        print(f"  {e}".replace("\n", " "))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
