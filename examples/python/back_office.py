"""The back office with the Python client: the balance sheet (every account, their sum zero),
the read models' lag, and each game's reconciliation of a table (Treinta y Una's, Cuarenta's).

    python examples/python/back_office.py --target HOST:PORT --back-office T \\
        [--treinta-y-una TABLE] [--cuarenta TABLE]
"""

from __future__ import annotations

import argparse

from services.api.client import Client
from services.api.gen.sabot.v1 import cashier_pb2, reports_pb2


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--target", default="127.0.0.1:50051")
    p.add_argument("--back-office", required=True, metavar="TOKEN")
    p.add_argument("--treinta-y-una", metavar="TABLE", help="a Treinta y Una table")
    p.add_argument("--cuarenta", metavar="TABLE", help="a Cuarenta table")
    a = p.parse_args()
    office = Client(a.target, a.back_office)
    sheet = office.reports.GetBalanceSheet(cashier_pb2.GetBalanceSheetRequest())
    print(f"balance sheet: {len(sheet.balances)} accounts, sum {sheet.total_minor}")
    lag = office.read_models.GetProjectionLag(reports_pb2.GetProjectionLagRequest())
    print(f"read models: {lag}".replace("\n", " ")[:200])
    balanced = sheet.total_minor == 0
    if a.treinta_y_una:
        r = office.rounds.reconciliation(a.treinta_y_una)
        print(f"{r.table}: {sum(d.rounds for d in r.days)} rounds, balanced {r.balanced}")
        balanced = balanced and r.balanced
    if a.cuarenta:
        c = office.matches.reconciliation(a.cuarenta)
        print(f"{c.table}: {sum(d.matches for d in c.days)} matches, {c.in_play} in play, "
              f"balanced {c.balanced}")
        balanced = balanced and c.balanced
    office.close()
    return 0 if balanced else 1


if __name__ == "__main__":
    raise SystemExit(main())
