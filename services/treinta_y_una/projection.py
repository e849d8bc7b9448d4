"""Treinta y Una's read models (``ReadGame.views``): its rounds, each with
every step of its recall, and their reconciliation facts (``services/projections/games.py``).

A round's steps are its events as recorded (``commands.round_step``): a card dealt face down
by its position, holder and commitment only, its face first in the ``HandShown`` (showdown) or
``HandBust`` step that shows it; "carta" cards face up. The read model holds no face-down card
before it is shown.
"""

from __future__ import annotations

from typing import Any

from services import topics as T
from services.projections.games import UnitsView
from services.projections.gamingday import GamingDay
from services.projections.store import ReadStore
from services.treinta_y_una import reconcile as R
from services.treinta_y_una.commands import GAME, ROLES, round_step


class RoundsView(UnitsView, game=GAME, name="treinta_y_una_rounds", prefix="tyu_round",
                 topics=T.TREINTA_Y_UNA_ROUND_EVENTS, opened=T.TREINTA_Y_UNA_ROUND_OPENED,
                 end=(T.TREINTA_Y_UNA_ROUND_SETTLED, T.TREINTA_Y_UNA_ROUND_CANCELLED),
                 day=R.DayReconciliation):
    """Every round with its recall, and its reconciliation facts (``reconcile.fold``)."""

    fold = staticmethod(R.fold)
    unit_name = "rounds"
    table_accounts = ROLES
    commission_option = "commission"  # on each winning payout and each collection
    floor = staticmethod(R.floor)

    def steps(self, event: Any) -> list[tuple[str, dict[str, Any]]]:
        step = round_step(event)
        return [(step.event, step.data)]

    def reconcile(self, store: ReadStore, table_id: str,
                  setting: GamingDay) -> list[R.DayReconciliation]:
        return R.days((u.facts for u in self.units(store, table_id)), table_id, setting)


def views() -> tuple[RoundsView, ...]:
    return (RoundsView(),)
