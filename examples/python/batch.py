"""The batch calls with the Python client (``client.batch``): the cashier funds two accounts in
one call (``CashierService.BatchMovements``); a player's terminal sends its whole layout for a
coup in one call (``BettingService.BatchStakes``): each item gets its own answer, one opposed
stake refused in its answer while the others stand; the same request id again returns the first
answer (nothing placed twice); an ``atomic`` batch with one opposed stake is refused whole,
naming the item's field, and stores nothing (not even its good item).

    python examples/python/batch.py --target HOST:PORT --croupier T --cashier T \\
        --player anne=T
"""

from __future__ import annotations

import uuid

import grpc
from _args import parse

from services.api.client import BatchCalls, Client, new_request_id
from services.api.errors import details_of
from services.api.gen.sabot.v1 import cashier_pb2, table_pb2


def main() -> int:
    a = parse(__doc__ or "", "croupier", "cashier", players=1)
    croupier = Client(a.target, a.croupier)
    account, token = next(iter(a.players.items()))
    cashier, player = croupier.as_(a.cashier), croupier.as_(token)
    guest = f"guest-{uuid.uuid4().hex[:8]}"
    cashier.cashier.OpenAccount(cashier_pb2.OpenAccountRequest(
        request_id=new_request_id(), account_id=guest))
    funded = cashier.batch.movements([BatchCalls.deposit(account, 50_000, "EUR"),
                                      BatchCalls.deposit(guest, 20_000, "EUR"),
                                      BatchCalls.withdrawal(guest, 5_000, "EUR")])
    for moved in funded.results:
        print(f"cage: {moved.account.name} balance {moved.account.balance.amount_minor}")

    t = croupier.tables
    table = t.OpenTable(table_pb2.OpenTableRequest(
        request_id=new_request_id(), table_id=f"tq-{uuid.uuid4().hex[:8]}")).name
    shoe = t.OpenShoe(table_pb2.OpenShoeRequest(request_id=new_request_id(), parent=table))
    t.CutShoe(table_pb2.CutShoeRequest(request_id=new_request_id(), name=shoe.name,
                                       cut_position=150, cut_by=account))
    coup = t.OpenCoup(table_pb2.OpenCoupRequest(request_id=new_request_id(), parent=shoe.name))
    layout = [BatchCalls.place(account, "noir", 1_000, "EUR"),
              BatchCalls.place(account, "rouge", 500, "EUR"),  # opposed to noir: refused
              BatchCalls.place(account, "couleur", 700, "EUR")]
    placed = player.batch.stakes(coup.name, layout)
    first = player.last_request_id
    for i, r in enumerate(placed.results):
        if r.HasField("error"):
            print(f"item {i}: refused {r.error.reason} ({r.error.field})")
        else:
            print(f"item {i}: {r.result.stake.name} {r.result.stake.amount.amount_minor}, "
                  f"balance {r.result.balance.amount_minor}")
    again = player.batch.stakes(coup.name, layout, request_id=first)
    print(f"the same request id again: {'the first answer' if again == placed else 'DIFFERS'}")
    try:
        player.batch.stakes(coup.name, [BatchCalls.place(account, "noir", 100, "EUR"),
                                        BatchCalls.place(account, "rouge", 100, "EUR")],
                            atomic=True)
        print("atomic: ACCEPTED (unexpected)")
        return 1
    except grpc.RpcError as exc:
        field, reason = details_of(exc)
        print(f"atomic: refused {exc.code().name} {reason} ({field}), nothing stored")
    croupier.close()
    return 0 if placed.accepted == 2 and again == placed else 1


if __name__ == "__main__":
    raise SystemExit(main())
