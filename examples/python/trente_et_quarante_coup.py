"""One Trente et Quarante coup with the Python client, each role with its own token: the
croupier opens a table and a shoe (its commitment published) and has it cut, opens a coup; a
player stakes on noir; the croupier closes the betting, deals both rows and settles; the
croupier closes the shoe (its seed revealed) and the regulator replays the coup.

    python examples/python/trente_et_quarante_coup.py --target HOST:PORT --croupier T \\
        --regulator T --player anne=T
"""

from __future__ import annotations

import uuid

from _args import parse

from services.api.client import Client, new_request_id
from services.api.gen.sabot.v1 import betting_pb2, common_pb2, regulator_pb2, table_pb2


def main() -> int:
    a = parse(__doc__ or "", "croupier", "regulator", players=1)
    croupier = Client(a.target, a.croupier)
    account, token = next(iter(a.players.items()))
    player = croupier.as_(token)
    t = croupier.tables
    table = t.OpenTable(table_pb2.OpenTableRequest(
        request_id=new_request_id(), table_id=f"tq-{uuid.uuid4().hex[:8]}")).name
    shoe = t.OpenShoe(table_pb2.OpenShoeRequest(request_id=new_request_id(), parent=table))
    print(f"{shoe.name}: commitment {shoe.commitment}")
    t.CutShoe(table_pb2.CutShoeRequest(request_id=new_request_id(), name=shoe.name,
                                       cut_position=150, cut_by=account))
    coup = t.OpenCoup(table_pb2.OpenCoupRequest(request_id=new_request_id(), parent=shoe.name))
    player.betting.PlaceStake(betting_pb2.PlaceStakeRequest(
        request_id=new_request_id(), coup=coup.name, account=f"accounts/{account}",
        chance=common_pb2.CHANCE_NOIR,
        amount=common_pb2.Money(currency_code="EUR", amount_minor=1_000)))
    t.CloseBetting(table_pb2.CloseBettingRequest(request_id=new_request_id(), name=coup.name))
    t.DealCoup(table_pb2.DealCoupRequest(request_id=new_request_id(), name=coup.name))
    coup = t.SettleCoup(table_pb2.SettleCoupRequest(request_id=new_request_id(), name=coup.name))
    print(f"{coup.name}: noir {coup.noir_total}, rouge {coup.rouge_total}: {coup.result}")
    t.CloseShoe(table_pb2.CloseShoeRequest(request_id=new_request_id(), name=shoe.name))
    regulator = croupier.as_(a.regulator).regulator
    identical = False
    for answer in regulator.ReplayCoup(regulator_pb2.ReplayCoupRequest(name=coup.name)):
        if answer.HasField("verdict"):
            identical = answer.verdict.identical
            print(f"replay: {'identical' if identical else 'DIFFERS'} "
                  f"({answer.verdict.steps} steps)")
    croupier.close()
    return 0 if identical else 1


if __name__ == "__main__":
    raise SystemExit(main())
