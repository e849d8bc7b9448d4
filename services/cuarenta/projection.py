"""Cuarenta's read models (``ReadGame.views``): its matches, each with its
history move by move, and their reconciliation facts (``services/projections/games.py``).

A match's moves are those anyone may see (``commands.moves_of``): a deal by its seat and how
many cards, a card first when it is played (and what it captured); never a card in a hand.
"""

from __future__ import annotations

from typing import Any

from services import topics as T
from services.cuarenta import reconcile as R
from services.cuarenta.commands import GAME_NAME, TABLE_ACCOUNTS, moves_of
from services.cuarenta.views import MoveView
from services.ledger.ids import table_account
from services.ledger.views import from_dict, to_dict
from services.projections.games import Step, UnitsView
from services.projections.gamingday import GamingDay
from services.projections.store import ReadStore


class MatchesView(UnitsView, game=GAME_NAME, name="cuarenta_matches",
                  prefix="cuarenta_match", topics=T.CUARENTA, opened=T.CUARENTA_MATCH_OPENED,
                  end=(T.CUARENTA_MATCH_WON,), day=R.DayReconciliation):
    """Every match move by move, and its reconciliation facts (``reconcile.fold``)."""

    fold = staticmethod(R.fold)
    unit_name = "matches"
    table_accounts = TABLE_ACCOUNTS
    commission_option = "commission_rate"  # on the pot
    floor = staticmethod(R.floor)

    def steps(self, event: Any) -> list[tuple[str, dict[str, Any]]]:
        return [(m.kind, to_dict(m)) for m in moves_of(event)]

    def reconcile(self, store: ReadStore, table_id: str, setting: GamingDay) -> R.Reconciliation:
        """From the matches' facts, and the balances of the table's accounts from the
        bankrolls read model (``rm_account``, the accounts' own entries)."""
        ids = (table_account(table_id, "stakes"), table_account(table_id, "house_commission"))
        with store.read() as tx:
            found = dict(tx.query_in("SELECT account_id, balance FROM {s}rm_account "
                                     "WHERE account_id", ids))
        return R.result((u.facts for u in self.units(store, table_id)), table_id,
                        int(found.get(ids[0], 0)), int(found.get(ids[1], 0)), setting)


def move(step: Step) -> MoveView:
    """A stored step as the ledger's ``cuarenta_moves`` answers it."""
    return from_dict(MoveView, step.data)


def views() -> tuple[MatchesView, ...]:
    return (MatchesView(),)
