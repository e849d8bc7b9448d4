"""ReadModelService: reports from the read models (the gaming day: the floor's report of every
game and Trente et Quarante's by chance; statements, shoe history),
recall, the reconcile check and the projections' lag; and the projection thread that keeps the
read models up to date while the server runs.

The read models live beside the events (``services.projections``). The thread catches them up
every half second when the log has moved, on SQLite and PostgreSQL alike; every report
also catches up first, so it is as of the head of the log when the call started.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import re
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

import grpc
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from services.api import convert, errors, names
from services.api.base import Base
from services.api.game import Played
from services.api.gen.sabot.v1 import common_pb2, reports_pb2, reports_pb2_grpc
from services.api.hub import Hub
from services.api.logs import get_logger
from services.api.roles import Principal, Role
from services.ledger.remote import AnyLedger
from services.projections import tracking
from services.projections.export import Report, render
from services.projections.floor import render_floor
from services.projections.games import ReadGame, Step, Unit
from services.projections.gamingday import GamingDay
from services.projections.projector import Lag
from services.projections.recall import RecalledCoup
from services.projections.reconcile import Reconciliation
from services.projections.reports import CHANCES, TOTAL
from services.projections.service import ReadModels

CATCH_UP_SECONDS = 0.5  # the thread looks at the log this often (one query when idle)
READ_STORE_WAIT = 5.0  # seconds a reconcile waits for the read store to reach the store
ERROR_BACKOFF = 1.0
RECONCILE_ATTEMPTS = 3
MAX_RECALL_PAGE = 100
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_MIN_SECONDS = -62_135_596_800  # 0001-01-01T00:00:00Z
_MAX_SECONDS = 253_402_300_799  # 9999-12-31T23:59:59Z
_FORMATS: dict[int, tuple[str, str]] = {reports_pb2.EXPORT_FORMAT_CSV: ("csv", "text/csv"),
            reports_pb2.EXPORT_FORMAT_JSON: ("json", "application/json"),
            reports_pb2.EXPORT_FORMAT_TEXT: ("text", "text/plain")}
_LAYOUTS = {reports_pb2.GAMING_DAY_LAYOUT_UNSPECIFIED: "chances",
            reports_pb2.GAMING_DAY_LAYOUT_CHANCES: "chances",
            reports_pb2.GAMING_DAY_LAYOUT_FLOOR: "floor"}
_CHANCE = {"noir": common_pb2.CHANCE_NOIR, "rouge": common_pb2.CHANCE_ROUGE,
           "couleur": common_pb2.CHANCE_COULEUR, "inverse": common_pb2.CHANCE_INVERSE}


class ProjectionKeeper:
    """The read models of the ledger's log, caught up by a thread when the log has moved (or,
    ``kept_elsewhere``, by the read models' own process, ``services.projections.follower``).

    Catch-ups are serialised by a lock (the thread's and those of the calls); the positions in
    ``rm_tracking`` make a catch-up by another process (``sabot projections run``) safe too.

    ``gaming_day``: the site's gaming day (``Config.gaming_day``; None: from the environment,
    ``SABOT_GAMING_DAY`` and ``SABOT_SHIFTS``). The reconciliation figures, and so the gaming
    days the reports take, are filed under it. ``games``: the read side's part of each game
    the server serves (its own read models)."""

    def __init__(self, ledger: AnyLedger, hub: Hub, follow: bool = True,
                 gaming_day: GamingDay | None = None, read_store: str | None = None, *,
                 games: Iterable[ReadGame]) -> None:
        """``read_store``: a standby of the ledger's store whose log the read models read
        (their rows are written beside the ledger's log: a standby cannot write)."""
        self.elsewhere = False  # the read models' own process keeps them (``kept_elsewhere``)
        self._seen: dict[str, int] = {}  # their positions as last read from the store
        self.ledger = ledger
        self.hub = hub
        self.follow = follow
        self.log: Any = None  # the read store's log, when there is one
        if read_store is None:
            self.models = ReadModels(ledger.app, gaming_day, games=games)
        else:
            from services.ledger.schema import CREATE_TABLE
            from services.projections.log import open_log
            from services.projections.store import ReadStore

            self.log = open_log(read_store, {CREATE_TABLE: "n"},  # a reader creates nothing
                                transcodings=ledger.app.game_transcodings)
            self.models = ReadModels(self.log, gaming_day, store=ReadStore.of(ledger.app),
                                     games=games)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.errors = 0  # catch-ups of the thread that failed (the store was down, ...)

    def kept_elsewhere(self) -> None:
        """The read models are kept up to date by a process of their own (before ``start``: no
        thread here); their positions are read from the store (``rm_tracking``), and queries
        still catch up first, from the positions that process reached."""
        self.elsewhere = True

    def start(self) -> None:
        if self.follow and self.elsewhere:  # their positions, read every half second
            with contextlib.suppress(Exception):  # (a store down now: at the next look)
                self._look()
            self._thread = threading.Thread(target=self._watch, name="sabot-projections",
                                            daemon=True)
            self._thread.start()
        elif self.follow:
            self._thread = threading.Thread(target=self._run, name="sabot-projections",
                                            daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread (it finishes the batch it is applying); close the read store's
        log."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if self.log is not None:
            self.log.close()

    def catch_up(self) -> int:
        with self._lock:
            self._sync()
            return self.models.catch_up()

    def _sync(self) -> None:
        """Under the lock: kept elsewhere, the positions that process reached (else the
        catch-up would read a batch it applied, only to find the positions moved)."""
        if self.elsewhere:
            self.models.projector.reload()

    def positions(self) -> dict[str, int]:
        """Each read model's position: kept here, as this process applied them; kept
        elsewhere, as the store held them at the last look (``_watch``)."""
        if not self.elsewhere:
            return dict(self.models.projector.positions)
        return dict(self._seen)  # as last read (never waiting for the store: the health asks)

    def _look(self) -> None:
        """Read the read models' positions from the store (``rm_tracking``)."""
        projector = self.models.projector
        with projector.store.read() as tx:
            found = tracking.read(tx, [v.name for v in projector.views])
        self._seen = {name: p.position for name, p in found.items()}

    def _watch(self) -> None:
        """Kept elsewhere: every ``CATCH_UP_SECONDS``, their positions as the store holds them
        (one small query; a store that is down leaves them as last read)."""
        while not self._stop.wait(CATCH_UP_SECONDS):
            with contextlib.suppress(Exception):  # the store may be down: the health says so
                self._look()

    def position(self) -> int:
        """The lowest position of the read models: all of them have applied the log to it."""
        return min(self.positions().values(), default=0)

    def head(self) -> int:
        return self.models.projector.head()

    def lag(self) -> list[Lag]:
        return self.models.lag()

    def game_steps(self, game: str, unit_id: str) -> list[Step]:
        """``game``'s public steps of a round or match, as of the head of the log now."""
        with self._lock:
            self._sync()
            return self.models.game_steps(game, unit_id)

    def game_units(self, game: str, table_id: str) -> list[Unit]:
        """``game``'s rounds or matches of ``table_id`` in the order they opened, as of now."""
        with self._lock:
            self._sync()
            return self.models.game_units(game, table_id)

    def game_units_where(self, game: str, table_id: str | None, account: str | None = None,
                         position: int | None = None) -> list[Unit]:
        """``game``'s rounds or matches of ``table_id`` (None: every table) in the order they
        opened, those where ``account`` had a step and the one that recorded the event at
        ``position`` (where given), as of now."""
        with self._lock:
            self._sync()
            units = self.models.game_units(game, table_id)
            view, store = self.models.game_view(game), self.models.projector.store
            if account is not None:
                theirs = view.units_of(store, account)
                units = [u for u in units if u.unit_id in theirs]
            if position is not None:
                at = view.unit_at(store, position)
                units = [u for u in units if u.unit_id == at]
        return units

    def game_reconcile(self, game: str, table_id: str) -> Any:
        """``game``'s reconciliation of ``table_id``, as of the head of the log now."""
        with self._lock:
            self._sync()
            return self.models.game_reconcile(game, table_id)

    def reconcile(self) -> Reconciliation:
        """Balances of the read model against the write side's, read while the log did not
        move (retried a few times when it did; the last answer otherwise). With a read store,
        the store's log is the one that must not move, and the read store must have reached
        it (waited for up to ``READ_STORE_WAIT`` seconds)."""
        result: Reconciliation | None = None
        for _ in range(RECONCILE_ATTEMPTS):
            before = self._store_head()
            write_side = self.ledger.balances()
            if self.log is not None:
                self._reach(before, READ_STORE_WAIT)
            with self._lock:
                self._sync()
                result = self.models.reconcile(write_side)
            if self._store_head() == before:
                break
        assert result is not None
        return result

    def _store_head(self) -> int:
        """The last position of the ledger's store (not the read store's)."""
        if self.log is None:
            return self.head()
        return int(self.ledger.app.recorder.max_notification_id() or 0)

    def _reach(self, position: int, timeout: float) -> bool:
        """Wait until the read store holds the log to ``position``."""
        deadline = time.monotonic() + timeout
        while self.head() < position:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        return True

    def _run(self) -> None:
        """Every ``CATCH_UP_SECONDS``, if the log moved past the read models: one catch-up in
        big batches (cheap under write load; reports catch up on demand before answering)."""
        log = get_logger()
        while not self._stop.wait(CATCH_UP_SECONDS):
            try:
                if self.hub.position > self.position() or self.head() > self.position():
                    self.catch_up()
            except Exception as exc:  # the store may be down for a while: retry
                self.errors += 1
                log.error("projections: catch-up failed; retrying", error=repr(exc))
                self._stop.wait(ERROR_BACKOFF)


class GameReadModels(Base):
    """A game's servicer that answers from the read models (its own, ``ReadGame.views``): the
    server's :class:`ProjectionKeeper`, which the server hands over (``use_read_models``)."""

    keeper: ProjectionKeeper | None = None

    def use_read_models(self, keeper: ProjectionKeeper) -> None:
        self.keeper = keeper

    def read_models(self) -> ProjectionKeeper:
        if self.keeper is None:
            raise RuntimeError("no read models were handed to this servicer (the server's "
                               "start hands them over: services.api.server.start)")
        return self.keeper

    def game_steps(self, game: str, unit_id: str) -> list[Step]:
        """A round's or match's public steps from ``game``'s read model, as of the head of
        the log when called."""
        return self.read_models().game_steps(game, unit_id)

    def game_units_asked(self, game: str, request: Any,
                         context: grpc.ServicerContext) -> tuple[list[Unit], str]:
        """A page of ``game``'s rounds or matches as a list request asks them (ListRounds,
        ListMatches: ``parent``, a table of the game or ``tables/-`` for every one; the filters
        ``player``, ``start_time``/``end_time``, ``position``; ``newest_first``; the page) and
        the next page's token. A player filters by its own account only."""
        table_id = None
        if request.parent != "tables/-":
            table_id = names.table_name("parent", request.parent)
            view = self.read({"table_id": "parent"}, self.ledger.get_table, table_id)
            if view.game != game:
                raise errors.ApiError(grpc.StatusCode.INVALID_ARGUMENT, "parent", "WRONG_GAME",
                                      f"not a {game} table: it plays {view.game}")
        offset, size = names.page(request.page_size, request.page_token)
        account = None
        if request.player:
            account = names.account_name("player", request.player)
            self.own(self.caller(context), account, "player")
        if request.position < 0:
            raise errors.invalid("position", "must not be negative")
        since, until = _time_range(request, "start_time", "end_time")
        units = [u for u in self.read_models().game_units_where(
            game, table_id, account, request.position or None)
            if (since is None or _after(u.opened_at, since))
            and (until is None or not _after(u.opened_at, until))]
        if request.newest_first:
            units.reverse()
        return units[offset:offset + size], names.next_token(offset, size, len(units))

    def game_reconciliation(self, game: str, table: str,
                            gaming_day: str) -> tuple[str, str, Any, int]:
        """``game``'s reconciliation of the table ``table`` names (``tables/{table}``) from the
        read models, as of the head of the log when called: (table id, its currency, the
        game's answer, the read models' position). INVALID_ARGUMENT naming ``table`` (not a
        table name, or a table of another game) or ``gaming_day`` (not YYYY-MM-DD); NOT_FOUND
        for an unknown table."""
        table_id = names.table_name("table", table)
        if gaming_day:
            _gaming_day(gaming_day)
        view = self.read({"table_id": "table"}, self.ledger.get_table, table_id)
        if view.game != game:
            raise errors.ApiError(grpc.StatusCode.INVALID_ARGUMENT, "table", "WRONG_GAME",
                                  f"not a {game} table: it plays {view.game}")
        keeper = self.read_models()
        found = keeper.game_reconcile(game, table_id)
        return table_id, view.currency, found, keeper.position()


class ReadModelServicer(Base, reports_pb2_grpc.ReadModelServiceServicer):
    def __init__(self, ledger: AnyLedger, tokens: Mapping[str, Principal], hub: Hub,
                 games: Played | None = None, *, keeper: ProjectionKeeper) -> None:
        super().__init__(ledger, tokens, hub, games)
        self.keeper = keeper

    def _fresh(self) -> ReadModels:
        self.keeper.catch_up()
        return self.keeper.models

    def _table(self, field: str, name: str) -> str:
        table_id = names.table_name(field, name)
        self.read({"table_id": field}, self.ledger.get_table, table_id)
        return table_id

    def GetGamingDayReport(
        self, request: reports_pb2.GetGamingDayReportRequest, context: grpc.ServicerContext
    ) -> reports_pb2.GamingDayReport:
        day = _gaming_day(request.gaming_day)
        fmt = _format(request.format)
        layout = _LAYOUTS.get(request.layout)
        if layout is None:
            raise errors.invalid("layout", f"unknown gaming-day layout {request.layout}")
        table_id = self._table("table", request.table) if request.table else None
        models = self._fresh()
        report = models.gaming_day(day, table_id, fresh=False)
        floor = models.floor_day(day, table_id, fresh=False)
        answer = reports_pb2.GamingDayReport(
            gaming_day=day, rows=[_day_row(r) for r in report.records()],
            tables=int(report.facts.get("tables", 0)), flags=int(report.facts.get("flags", 0)),
            totals=[_day_row(r) for r in report.total_records()],
            sections=[reports_pb2.FloorSection(
                game=s.game, title=s.title, unit_name=s.unit_name,
                rows=[_floor_row(ln.record()) for ln in s.lines],
                totals=[_floor_row(ln.record()) for ln in s.totals]) for s in floor.sections],
            floor_totals=[_floor_row(ln.record()) for ln in floor.totals],
            cage=[reports_pb2.CageDay(cage=c.cage, deposits_minor=c.deposits,
                                      withdrawals_minor=c.withdrawals, currency_code=c.currency)
                  for c in floor.cage])
        if layout == "floor":
            if fmt is not None:
                answer.export = render_floor(floor, fmt[0]).encode()
                answer.export_media_type = fmt[1]
        else:
            _export(answer, report, fmt)
        return answer

    def GetPlayerStatement(
        self, request: reports_pb2.GetPlayerStatementRequest, context: grpc.ServicerContext
    ) -> reports_pb2.PlayerStatement:
        who = self.caller(context)
        account_id = names.account_name("account", request.account,
                                        house=who.role is not Role.PLAYER)
        self.own(who, account_id, "account")
        since, until = _time_range(request, "start_time", "end_time")
        fmt = _format(request.format)
        size = _page_size(request.page_size, 100)
        query = f"statement|{account_id}|{since}|{until}"
        after = int(_read_token(request.page_token, query).get("a", 0))
        report = self.read({"account_id": "account", "since": "start_time",
                            "until": "end_time"},
                           self._fresh().player_statement, account_id, since, until, False)
        rows = [r for r in report.rows if int(r[0]) > after]
        page, more = rows[:size], len(rows) > size
        viewer = convert.viewer_of(who)
        if viewer is not None:  # to a player, the house's staff without their peer
            page = [_seen_by(r, report.columns, viewer) for r in page]
        f = report.facts
        answer = reports_pb2.PlayerStatement(
            account=names.account(account_id), kind=str(f["kind"]),
            currency_code=str(f["currency"]), opening_balance_minor=int(f["opening_balance"]),
            closing_balance_minor=int(f["closing_balance"]), entries=int(f["entries"]),
            balance_now_minor=int(f["balance_now"]),
            lines=[_statement_line(dict(zip(report.columns, r, strict=True))) for r in page],
            next_page_token=_token(query, {"a": int(page[-1][0])}) if more else "",
        )
        _export(answer, _page_of(report, page), fmt)
        return answer

    def ListShoeHistory(
        self, request: reports_pb2.ListShoeHistoryRequest, context: grpc.ServicerContext
    ) -> reports_pb2.ListShoeHistoryResponse:
        table_id = self._table("parent", request.parent)
        fmt = _format(request.format)
        size = _page_size(request.page_size, 50)
        query = f"shoes|{table_id}"
        offset = int(_read_token(request.page_token, query).get("o", 0))
        report = self.read({"table_id": "parent"}, self._fresh().shoe_history, table_id, False)
        page = report.rows[offset:offset + size]
        more = offset + size < len(report.rows)
        answer = reports_pb2.ListShoeHistoryResponse(
            shoes=[_shoe(table_id, dict(zip(report.columns, r, strict=True))) for r in page],
            next_page_token=_token(query, {"o": offset + size}) if more else "",
        )
        _export(answer, _page_of(report, page), fmt)
        return answer

    def RecallCoups(
        self, request: reports_pb2.RecallCoupsRequest, context: grpc.ServicerContext
    ) -> reports_pb2.RecallCoupsResponse:
        filters: dict[str, Any] = {}
        if request.table:
            filters["table_id"] = self._table("table", request.table)
        if request.shoe:
            table_id, shoe_id = names.shoe_name("shoe", request.shoe)
            if self.shoe_table(shoe_id, "shoe") != table_id:
                raise errors.ApiError(grpc.StatusCode.NOT_FOUND, "shoe", "NOT_FOUND",
                                      "no such shoe at this table")
            filters["shoe_id"] = shoe_id
        if request.coup:
            table_id, shoe_id, coup_id = names.coup_name("coup", request.coup)
            self.check_round(table_id, shoe_id, coup_id, "coup", "coup")
            filters["coup_id"] = coup_id
        if request.player:
            filters["player"] = names.account_name("player", request.player, house=True)
        if request.position < 0:
            raise errors.invalid("position", "must not be negative")
        if request.position:
            filters["position"] = request.position
        since, until = _time_range(request, "start_time", "end_time")
        filters["since"] = since
        size = _page_size(request.page_size, 10, MAX_RECALL_PAGE)
        query = "recall|" + json.dumps({**filters, "until": until}, sort_keys=True)
        token = _read_token(request.page_token, query)
        offset = int(token.get("o", 0))
        # Later pages stop at the newest coup of the first: coups opened since do not shift them.
        filters["until"] = token.get("u", until)
        if offset + size >= 10_000:
            raise errors.invalid("page_token", "too far: narrow the filters")
        coups = self._fresh().recall(False, **filters, limit=offset + size + 1)
        page, more = coups[offset:offset + size], len(coups) > offset + size
        bound = filters["until"]
        if bound is None and coups:
            newest = datetime.fromisoformat(coups[0].opened_at)
            bound = (newest + timedelta(microseconds=1)).isoformat()
        return reports_pb2.RecallCoupsResponse(
            coups=[_recalled(c, self.table_currency(c.table_id, "table")) for c in page],
            next_page_token=_token(query, {"o": offset + size, "u": bound}) if more else "",
        )

    def Reconcile(
        self, request: reports_pb2.ReconcileRequest, context: grpc.ServicerContext
    ) -> reports_pb2.ReconcileResponse:
        result = self.keeper.reconcile()
        diffs = [reports_pb2.BalanceDifference(account_id=d.account_id,
                                               read_model_minor=d.read_model,
                                               write_side_minor=d.write_side,
                                               currency_code=result.currencies.get(
                                                   d.account_id, ""))
                 for d in result.differences]
        return reports_pb2.ReconcileResponse(agree=result.ok, accounts=result.accounts,
                                             position=result.position, differences=diffs)

    def GetProjectionLag(
        self, request: reports_pb2.GetProjectionLagRequest, context: grpc.ServicerContext
    ) -> reports_pb2.GetProjectionLagResponse:
        return reports_pb2.GetProjectionLagResponse(projections=[
            reports_pb2.ProjectionLag(view=g.view, position=g.position, head=g.head,
                                      events_behind=g.events_behind,
                                      seconds_behind=g.seconds_behind)
            for g in self.keeper.lag()
        ])


# --- request fields --------------------------------------------------------------------------


def _gaming_day(text: str) -> str:
    if not text:
        raise errors.invalid("gaming_day", "required: YYYY-MM-DD")
    if not _DAY.fullmatch(text):
        raise errors.invalid("gaming_day", f"must be YYYY-MM-DD, got {text[:40]!r}", "BAD_DATE")
    try:
        date.fromisoformat(text)
    except ValueError:
        raise errors.invalid("gaming_day", f"no such date {text!r}", "BAD_DATE") from None
    return text


def _format(value: int) -> tuple[str, str] | None:
    if value == reports_pb2.EXPORT_FORMAT_UNSPECIFIED:
        return None
    if value not in _FORMATS:
        raise errors.invalid("format", f"unknown export format {value}")
    return _FORMATS[value]


def _time(request: Message, field: str) -> str | None:
    """An optional Timestamp field as the ISO 8601 UTC text the read models store."""
    if not request.HasField(field):
        return None
    stamp: Timestamp = getattr(request, field)
    if not _MIN_SECONDS <= stamp.seconds <= _MAX_SECONDS or not 0 <= stamp.nanos < 10**9:
        raise errors.invalid(field, "not a valid time (years 1 to 9999)", "BAD_TIME")
    return stamp.ToDatetime(tzinfo=UTC).isoformat()


def _after(at: str, bound: str) -> bool:
    """Whether the ISO 8601 time ``at`` is at or after ``bound`` (:func:`_time`'s text)."""
    return datetime.fromisoformat(at) >= datetime.fromisoformat(bound)


def _time_range(request: Message, start: str, end: str) -> tuple[str | None, str | None]:
    since, until = _time(request, start), _time(request, end)
    if since is not None and until is not None and until <= since:
        raise errors.invalid(end, f"must be after {start}", "BAD_TIME_RANGE")
    return since, until


def _page_size(value: int, default: int, limit: int = names.MAX_PAGE_SIZE) -> int:
    if value < 0:
        raise errors.invalid("page_size", "must not be negative")
    return min(value or default, limit)


def _digest(query: str) -> str:
    return hashlib.sha256(query.encode()).hexdigest()[:16]


def _token(query: str, state: dict[str, Any]) -> str:
    """An opaque page token: where the next page starts, bound to the request's filters."""
    text = json.dumps({"q": _digest(query), **state}, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode()


def _read_token(token: str, query: str) -> dict[str, Any]:
    if not token:
        return {}
    try:
        if len(token) > 400:
            raise ValueError("too long")
        state = json.loads(base64.urlsafe_b64decode(token.encode()))
        if not isinstance(state, dict) or not all(
            isinstance(state.get(k, 0), int) and state.get(k, 0) >= 0 for k in ("a", "o")
        ):
            raise ValueError(token)
        if state.get("u") is not None:
            datetime.fromisoformat(str(state["u"]))
    except ValueError:
        raise errors.invalid("page_token", "not a token this server issued") from None
    if state.get("q") != _digest(query):
        raise errors.invalid("page_token", "issued for other filters: repeat them unchanged")
    return state


# --- answers ---------------------------------------------------------------------------------


def _export(answer: Any, report: Report, fmt: tuple[str, str] | None) -> None:
    if fmt is not None:
        answer.export = render(report, fmt[0]).encode()
        answer.export_media_type = fmt[1]


def _page_of(report: Report, rows: Sequence[tuple[Any, ...]]) -> Report:
    return Report(report.title, report.columns, tuple(rows), dict(report.facts))


def _int(value: Any) -> int:
    return 0 if value is None or value == "" else int(value)


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _day_row(r: dict[str, Any]) -> reports_pb2.GamingDayRow:
    """A row of the report; a grand total's (table_id ``total``) names no table nor cage."""
    table_id = str(r["table_id"])
    cage = table_id.startswith("cage:")
    whole = table_id == TOTAL
    return reports_pb2.GamingDayRow(
        table="" if cage or whole else names.table(table_id), cage=table_id if cage else "",
        shift=0 if r["shift"] == "day" else int(r["shift"]),
        coups=_int(r["coups"]), void_coups=_int(r["void_coups"]),
        handle_by_chance=[reports_pb2.ChanceHandle(chance=_CHANCE[c],
                                                   amount_minor=_int(r[f"handle_{c}"]))
                          for c in CHANCES],
        handle_minor=_int(r["handle"]), collections_minor=_int(r["collections"]),
        payments_minor=_int(r["payments"]), bank_win_minor=_int(r["bank_win"]),
        coup_results_minor=_int(r["coup_results"]), bank_check_ok=r["bank_check"] != "DIFF",
        premiums_minor=_int(r["premiums"]), partage_minor=_int(r["partage"]),
        prison_loss_minor=_int(r["prison_loss"]), house_win_minor=_int(r["house_win"]),
        hold_percent=_text(r["hold_pct"]), theoretical_win=_text(r["theoretical_win"]),
        interval_low=_text(r["interval_low"]), interval_high=_text(r["interval_high"]),
        flag=_text(r["flag"]), prison_outstanding_minor=_int(r["prison_outstanding"]),
        cash_in_minor=_int(r["cash_in"]), cash_out_minor=_int(r["cash_out"]),
        currency_code=_text(r.get("currency")),
    )


def _floor_row(r: dict[str, Any]) -> reports_pb2.FloorRow:
    """A row of the floor's report; a total (table_id ``total``) names no table."""
    table_id = str(r["table_id"])
    row = reports_pb2.FloorRow(
        game=str(r["game"]), table="" if table_id == TOTAL else names.table(table_id),
        shift=0 if r["shift"] == "day" else int(r["shift"]), units=_int(r["units"]),
        handle_minor=_int(r["handle_minor"]), house_win_minor=_int(r["house_win_minor"]),
        hold_percent=_text(r["hold_pct"]), edge=_text(r["edge"]),
        theoretical_win=_text(r["theoretical_win_minor"]),
        interval_low=_text(r["interval_low_minor"]),
        interval_high=_text(r["interval_high_minor"]), flag=_text(r["flag"]),
        reconciled=_text(r["reconciled"]), currency_code=_text(r["currency"]))
    if r["levied_minor"] is not None:
        row.levied_minor = int(r["levied_minor"])
    return row


def _seen_by(row: tuple[Any, ...], columns: Sequence[str], viewer: str) -> tuple[Any, ...]:
    """A statement row with its actor as the player ``viewer`` may see it."""
    i = list(columns).index("actor")
    shown = convert.actor(json.loads(row[i]), viewer) if row[i] else None
    if shown is None:
        return row
    text = json.dumps({k: v for k, v in (("principal", shown.principal), ("role", shown.role),
                                         ("peer", shown.peer), ("account", shown.account))
                       if v}, sort_keys=True, separators=(",", ":"))
    return (*row[:i], text, *row[i + 1:])


def _statement_line(r: dict[str, Any]) -> reports_pb2.StatementLine:
    return reports_pb2.StatementLine(
        number=int(r["seq"]), time=convert.timestamp(r["at"]), kind=_text(r["kind"]),
        cause=_text(r["cause"]), counter_account=_text(r["counter_account"]),
        stake_id=_text(r["stake_id"]), amount_minor=int(r["amount"]),
        balance_after_minor=int(r["balance_after"]),
        actor=convert.actor(json.loads(r["actor"]) if r.get("actor") else None),
    )


def _shoe(table_id: str, r: dict[str, Any]) -> reports_pb2.ShoeRecord:
    return reports_pb2.ShoeRecord(
        name=names.shoe(table_id, str(r["shoe_id"])), open_time=convert.timestamp(r["opened_at"]),
        close_time=convert.timestamp(r["closed_at"]), cut_position=_int(r["cut_position"]),
        cut_by=_text(r["cut_by"]), coups=_int(r["coups"]), cards_dealt=_int(r["cards_dealt"]),
        position=_int(r["position"]), to_cut_card=_int(r["to_cut_card"]),
        status=_text(r["status"]), seed_status=_text(r["seed_status"]),
        commitment=_text(r["commitment"]), order_digest=_text(r["order_digest"]),
        results=_text(r["results"]),
    )


def _recalled(c: RecalledCoup, currency: str) -> reports_pb2.CoupRecall:
    return reports_pb2.CoupRecall(
        coup=names.coup(c.table_id, c.shoe_id, c.coup_id), number=c.number,
        number_in_shoe=c.number_in_shoe, open_time=convert.timestamp(c.opened_at),
        result=_text(c.result), noir_total=_int(c.noir_total), rouge_total=_int(c.rouge_total),
        announcement=_text(c.announcement), phase=c.phase,
        steps=[reports_pb2.CoupRecallStep(
            step=s.step, position=s.position, time=convert.timestamp(s.at), kind=s.kind,
            account_id=_text(s.account_id), stake_id=_text(s.stake_id),
            chance=_CHANCE.get(s.chance or "", common_pb2.CHANCE_UNSPECIFIED),
            amount_minor=_int(s.amount),
            detail_json=json.dumps(s.detail, sort_keys=True, separators=(",", ":")),
            actor=convert.actor(s.actor),
        ) for s in c.steps],
        dealt_by=convert.actor(c.dealt_by), currency_code=currency,
    )
