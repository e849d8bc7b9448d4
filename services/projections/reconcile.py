"""Reconcile: every account's balance in the read model against the write side's.

The write side's balance is the Account aggregate's, loaded from its own events; the accounts
are found by scanning the log for ``Account.Opened``. The read model is caught up to the head of
the log first, so a lagging projection is not reported as a difference. Run it on a quiet
ledger: an account that moves between the two reads shows as a difference.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from services import topics as T
from services.projections.bankrolls import BankrollView, balances
from services.projections.export import Report
from services.projections.projector import Projector

PAGE = 1000


@dataclass(frozen=True, slots=True)
class Difference:
    account_id: str
    read_model: int | None  # None: missing from the read model
    write_side: int | None  # None: unknown to the write side


@dataclass(frozen=True, slots=True)
class Reconciliation:
    accounts: int
    position: int  # the log position the read model was at
    differences: tuple[Difference, ...]
    currencies: Mapping[str, str] = field(default_factory=dict)  # of the accounts that differ

    @property
    def ok(self) -> bool:
        return not self.differences

    def report(self) -> Report:
        rows = tuple((d.account_id, d.read_model, d.write_side,
                      self.currencies.get(d.account_id, "")) for d in self.differences)
        facts = {"accounts": self.accounts, "position": self.position,
                 "differences": len(rows), "result": "agree" if self.ok else "DIFFER"}
        return Report("Reconciliation of balances",
                      ("account_id", "read_model", "write_side", "currency"), rows, facts,
                      frozenset({"read_model", "write_side"}))


def write_side_balances(app: Any) -> dict[str, int]:
    """Every account's balance from its aggregate (the write side)."""
    out: dict[str, int] = {}
    start = 1
    while True:
        page = app.recorder.select_notifications(start, PAGE, topics=[T.ACCOUNT_OPENED])
        if not page:
            return out
        for n in page:
            account = app.repository.get(n.originator_id)
            out[account.account_id] = int(account.balance)
        start = page[-1].id + 1


def reconcile(app: Any, write_side: Mapping[str, int] | None = None,
              projector: Projector | None = None) -> Reconciliation:
    """Catch the bankrolls up, then compare every balance; ``write_side`` may be given (e.g.
    ``Ledger.balances()``), else it is loaded from the aggregates."""
    p = projector or Projector(app, [BankrollView()])
    p.catch_up()
    expected = dict(write_side) if write_side is not None else write_side_balances(app)
    with p.store.read() as tx:
        got = balances(tx)
        diffs = [
            Difference(a, got.get(a), expected.get(a))
            for a in sorted(set(got) | set(expected))
            if got.get(a) != expected.get(a)
        ]
        currencies = {str(r[0]): str(r[1]) for r in tx.query_in(
            "SELECT account_id, currency FROM {s}rm_account WHERE account_id",
            {d.account_id for d in diffs})} if diffs else {}
    return Reconciliation(len(set(got) | set(expected)), p.positions.get("bankrolls", 0),
                          tuple(diffs), currencies)
