"""Read models (projections) of the ledger's event log: bankrolls, shoe state, game recall and
reconciliation; their rebuild, the reconcile check against the write side, and reports."""

from __future__ import annotations

from collections.abc import Iterable

from services.projections import gamingday
from services.projections.bankrolls import BankrollView
from services.projections.games import ReadGame
from services.projections.gamingday import GamingDay
from services.projections.projector import Lag, Projector
from services.projections.recall import RecallView
from services.projections.reconciliation import ReconciliationView
from services.projections.shoes import ShoeStateView
from services.projections.view import View


def default_views(gaming_day: GamingDay | None = None, *, games: Iterable[ReadGame]
                  ) -> list[View]:
    """Every read model, in a fixed order: the core's, then those of ``games`` (the read side's
    part of each game, handed in by the composition root), in their order. ``gaming_day``: the
    site's gaming day (None: from the environment, ``SABOT_GAMING_DAY`` and ``SABOT_SHIFTS``,
    InvalidArgument naming the variable if one is malformed; if it sets neither, the setting
    the read models were built with)."""
    setting = gamingday.given() if gaming_day is None else gaming_day  # None: as stored
    games = tuple(games)
    # the facts of the game whose rounds of a shoe the core's views keep (its rule book's)
    cut = next((g.cards_behind_cut for g in games if g.cards_behind_cut is not None), 0)
    law = next((g.coup_law for g in games if g.coup_law is not None), None)
    core: list[View] = [BankrollView(), ShoeStateView(cut), RecallView(),
                        ReconciliationView(setting, coup_law=law)]
    return core + game_views(games)


def game_views(games: Iterable[ReadGame]) -> list[View]:
    """The games' own read models (``ReadGame.views``), in their order."""
    return [v for g in games if g.views is not None for v in g.views()]


__all__ = [
    "BankrollView",
    "GamingDay",
    "Lag",
    "Projector",
    "ReadGame",
    "RecallView",
    "ReconciliationView",
    "ShoeStateView",
    "View",
    "default_views",
    "game_views",
]
