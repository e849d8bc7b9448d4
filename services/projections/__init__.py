"""Read models (projections) of the ledger's event log: bankrolls, shoe state, game recall and
reconciliation; their rebuild, the reconcile check against the write side, and reports."""

from __future__ import annotations

from services.projections import gamingday
from services.projections.bankrolls import BankrollView
from services.projections.gamingday import GamingDay
from services.projections.projector import Lag, Projector
from services.projections.recall import RecallView
from services.projections.reconciliation import ReconciliationView
from services.projections.shoes import ShoeStateView
from services.projections.view import View


def default_views(gaming_day: GamingDay | None = None) -> list[View]:
    """Every read model, in a fixed order. ``gaming_day``: the site's gaming day (None: from
    the environment, ``SABOT_GAMING_DAY`` and ``SABOT_SHIFTS``, InvalidArgument naming the
    variable if one is malformed; if it sets neither, the setting the read models were built
    with)."""
    setting = gamingday.given() if gaming_day is None else gaming_day  # None: as stored
    core: list[View] = [BankrollView(), ShoeStateView(), RecallView(),
                        ReconciliationView(setting)]
    return core + game_views()


def game_views() -> list[View]:
    """Every game's own read models (``services.games.Game.projections``), in the registry's
    order."""
    from services import games

    return [v for g in games.games() if g.projections is not None for v in g.projections()]


__all__ = [
    "BankrollView",
    "GamingDay",
    "Lag",
    "Projector",
    "RecallView",
    "ReconciliationView",
    "ShoeStateView",
    "View",
    "default_views",
    "game_views",
]
