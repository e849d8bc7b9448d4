"""The read models as one object, for the gRPC layer and the CLI: keep up, lag, reconcile,
recall and reports. Every query first applies what the log holds beyond the views' positions
(``fresh=True``), so answers are as of the head of the log when the call started."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from eventsourcing.persistence import Transcoding

from services.projections import ReadGame, default_views
from services.projections.export import Report
from services.projections.floor import FloorReport, floor_day
from services.projections.games import Step, Unit, UnitsView
from services.projections.gamingday import DEFAULT, GamingDay
from services.projections.log import open_log
from services.projections.projector import Lag, Projector
from services.projections.recall import RecalledCoup, recall
from services.projections.reconcile import Reconciliation, reconcile
from services.projections.reconciliation import ReconciliationView
from services.projections.reports import gaming_day, player_statement, shoe_history
from services.projections.store import ReadStore
from services.projections.view import View


def units_views(views: Iterable[View]) -> dict[str, UnitsView]:
    """The games' own read models among ``views`` (``ReadGame.views``), by game name."""
    return {v.game: v for v in views if isinstance(v, UnitsView)}


def views_gaming_day(views: Iterable[View]) -> GamingDay:
    """The site's gaming day ``views`` file days under (their ``ReconciliationView``'s)."""
    for view in views:
        if isinstance(view, ReconciliationView):
            return view.gaming_day
    return DEFAULT


class ReadModels:
    """The four read models of one ledger log (the application ``app``)."""

    def __init__(self, app: Any, gaming_day: GamingDay | None = None,
                 store: ReadStore | None = None, *, games: Iterable[ReadGame]) -> None:
        """``gaming_day``: the site's (None: from the environment, see ``default_views``);
        ``store``: where the rows are written (None: beside ``app``'s log; a log read from a
        standby has them written on the primary); ``games``: the read side's part of each game
        (its own read models)."""
        self.app = app
        self.projector = Projector(app, default_views(gaming_day, games=games), store)

    @classmethod
    def open(cls, store_url: str, schema: str | None = None,
             gaming_day: GamingDay | None = None, *, games: Iterable[ReadGame],
             transcodings: Sequence[Transcoding]) -> ReadModels:
        return cls(open_log(store_url, {"POSTGRES_SCHEMA": schema} if schema else {},
                            transcodings=transcodings), gaming_day, games=games)

    def catch_up(self) -> int:
        return self.projector.catch_up()

    def rebuild(self) -> dict[str, str]:
        """Drop and rebuild every read model; the digests after."""
        self.projector.rebuild()
        return self.projector.digests()

    def digests(self) -> dict[str, str]:
        return self.projector.digests()

    def lag(self) -> list[Lag]:
        """Per read model: events and event-time seconds behind the head of the log."""
        return self.projector.lag()

    def reconcile(self, write_side: Mapping[str, int] | None = None) -> Reconciliation:
        return reconcile(self.app, write_side, self.projector)

    def recall(self, fresh: bool = True, **filters: Any) -> list[RecalledCoup]:
        """Filters: table_id, shoe_id, coup_id, player, since, until, limit."""
        if fresh:
            self.catch_up()
        return recall(self.projector.store, **filters)

    def gaming_day(self, day: str, table_id: str | None = None, fresh: bool = True) -> Report:
        if fresh:
            self.catch_up()
        return gaming_day(self.projector.store, day, table_id, views=self.projector.views)

    def floor_day(self, day: str, table_id: str | None = None,
                  fresh: bool = True) -> FloorReport:
        """The floor's gaming-day report: every game's tables, totals, the cage."""
        if fresh:
            self.catch_up()
        return floor_day(self.projector.store, day, self.projector.views, table_id)

    def player_statement(self, account_id: str, since: str | None = None,
                         until: str | None = None, fresh: bool = True) -> Report:
        if fresh:
            self.catch_up()
        return player_statement(self.projector.store, account_id, since, until)

    def shoe_history(self, table_id: str, fresh: bool = True) -> Report:
        if fresh:
            self.catch_up()
        return shoe_history(self.projector.store, table_id)

    # --- the games' own read models (``ReadGame.views``) ------------------------------------

    def game_view(self, game: str) -> UnitsView:
        """The units view of ``game`` (LookupError: the game has none)."""
        found = units_views(self.projector.views).get(game)
        if found is None:
            raise LookupError(f"no read model of the game {game!r}")
        return found

    @property
    def setting(self) -> GamingDay:
        """The site's gaming day the read models file days under."""
        return views_gaming_day(self.projector.views)

    def game_reconcile(self, game: str, table_id: str, fresh: bool = True) -> Any:
        """``game``'s reconciliation of ``table_id`` (its own answer type, as its ledger query
        answers), from the read models."""
        if fresh:
            self.catch_up()
        return self.game_view(game).reconcile(self.projector.store, table_id, self.setting)

    def game_units(self, game: str, table_id: str | None = None,
                   fresh: bool = True) -> list[Unit]:
        if fresh:
            self.catch_up()
        return self.game_view(game).units(self.projector.store, table_id)

    def game_steps(self, game: str, unit_id: str, fresh: bool = True) -> list[Step]:
        """A round's or match's public steps in order (none: not in the read model)."""
        if fresh:
            self.catch_up()
        return self.game_view(game).steps_of(self.projector.store, unit_id)

    def close(self) -> None:
        self.app.close()
