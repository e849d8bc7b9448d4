"""Read-model commands on a store: ``sabot store projections rebuild|catch-up|run|lag``,
``sabot store reconcile`` and ``sabot store report day|statement|shoes`` (text, CSV or JSON).

Given a read store (``--read-store``, ``SABOT_READ_STORE``: a standby of ``--store``), the
runner (``rebuild``, ``catch-up``, ``run``: the poller, a standby has no LISTEN) reads the log
there and writes the read models on ``--store``; ``lag`` and the reports read the read models as
the read store holds them (replicated from ``--store``), write nothing, and say how far behind
``--store`` the read store is (the report's ``read_store`` fact, ``lag``'s last line)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
import threading
import time
from datetime import date
from typing import Any, TypeVar

from eventsourcing.persistence import PersistenceError

from services import bootstrap
from services.cli import (
    OFFLINE_REPORTS,
    CliError,
    commands,
    has_store,
    keep_old_names,
    settings_of,
)
from services.cli.progress import Progress, quiet_argument
from services.projections.export import Report, render
from services.projections.floor import LAYOUTS, FloorReport, floor_day, render_floor
from services.projections.projector import REBUILD_BATCH, Projector, ReadModelsAbsent
from services.projections.reconcile import reconcile
from services.projections.reports import gaming_day, player_statement, shoe_history
from services.projections.service import units_views, views_gaming_day
from services.regulator.replica import NotACopy, ReadLag
from services.regulator.source import StoreError
from services.settings import add_flags

_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
R = TypeVar("R", Report, FloorReport)


def _store_args(p: argparse.ArgumentParser, read_store: bool = True) -> None:
    add_flags(p, "store", *(("read_store",) if read_store else ()), "gaming_day", "shifts")
    p.add_argument("--schema", default=None, help="PostgreSQL schema (default: public, or the "
                                                  "store URL's ?schema=)")


def _format_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=("text", "csv", "json"), default="text")
    p.add_argument("--output", default=None, help="write to this file instead of stdout")


def register(sub: Any) -> None:
    store = commands(sub).group("store")
    psub = store.group("projections", "read models: rebuild, catch up, follow, lag")
    r = psub.add_parser("rebuild", help="drop every read model and rebuild it from position 0")
    _store_args(r)
    r.add_argument("--batch", type=int, default=REBUILD_BATCH, help="events per transaction")
    r.add_argument("--drop", action="store_true",
                   help="drop and create the tables even when their shape is current")
    quiet_argument(r)
    r.set_defaults(func=cmd_rebuild)
    c = psub.add_parser("catch-up", help="apply every event not yet applied, then stop")
    _store_args(c)
    c.set_defaults(func=cmd_catch_up)
    f = psub.add_parser("run", help="follow the log until interrupted: on PostgreSQL the "
                        "eventsourcing projection runner (supervised), else the poller")
    _store_args(f)
    f.add_argument("--interval", type=float, default=0.5, help="seconds between polls when idle")
    f.add_argument("--poll", action="store_true", help="use the poller on PostgreSQL too")
    f.set_defaults(func=cmd_run)
    lag = psub.add_parser("lag", help="how far each read model is behind the log")
    _store_args(lag)
    lag.set_defaults(func=cmd_lag)

    rec = store.add_parser("reconcile", help="read-model balances against the write side; "
                         "exit 0 only when all agree (with --game: that game's reconciliation "
                         "of a table, exit 0 only when it balances)")
    _store_args(rec, read_store=False)
    _format_args(rec)
    rec.add_argument("--game", default=None, help="a game with read models of its own "
                     "(treinta-y-una, cuarenta): its reconciliation of --table per gaming day")
    rec.add_argument("--table", default=None, help="with --game: the table")
    rec.add_argument("--day", default=None, help="with --game: one gaming day, YYYY-MM-DD")
    rec.set_defaults(func=cmd_reconcile)

    rsub = store.group("report", "reports for accountants, players and auditors: day, "
                                 "statement, shoes (text, CSV, JSON)")
    d = rsub.add_parser("day", help="a gaming day for the floor: every game, per table and "
                        "shift, totals and the cage")
    _store_args(d)
    _format_args(d)
    d.add_argument("--day", required=True, help="the gaming day, YYYY-MM-DD")
    d.add_argument("--table", default=None, help="one table only")
    d.add_argument("--layout", choices=LAYOUTS, default=LAYOUTS[0],
                   help="floor: every game's handle, house win, hold and theoretical win "
                        "(default); chances: Trente et Quarante's reconciliation with its "
                        "handle by chance (the previous releases' report)")
    d.set_defaults(func=cmd_report_day)
    s = rsub.add_parser("statement", help="a player's (or any account's) statement")
    _store_args(s)
    _format_args(s)
    s.add_argument("--account", required=True)
    s.add_argument("--since", default=None, help="ISO 8601 time, inclusive")
    s.add_argument("--until", default=None, help="ISO 8601 time, exclusive")
    s.set_defaults(func=cmd_report_statement)
    h = rsub.add_parser("shoes", help="a table's shoe history")
    _store_args(h)
    _format_args(h)
    h.add_argument("--table", required=True)
    h.set_defaults(func=cmd_report_shoes)
    # the previous release's ``sabot report day|statement|shoes --store URL`` (now ``sabot store
    # report …``): ``sabot report`` is the server's reports, unless given --store
    if "report" in sub.choices:
        online = commands(sub).group("report")
        for name in OFFLINE_REPORTS:
            online.when(name, has_store, rsub.find(name))
    else:
        commands(sub).alias("report", store.find("report"))
    keep_old_names(sub)


def _projector(args: argparse.Namespace) -> Projector:
    try:
        return bootstrap.projector(settings_of(args), args.schema)
    except (OSError, PersistenceError) as exc:
        raise CliError(f"--store: cannot use the store: {exc}") from None


def _reading(args: argparse.Namespace) -> tuple[Projector, ReadLag | None]:
    """The read models to read: as of the head of the log after a catch-up (no read store),
    or as the read store holds them (nothing written), with how far behind it is."""
    settings = settings_of(args)
    if settings.read_store is None:
        return _caught_up(args), None
    flag = settings.sources.get("read_store", "--read-store")
    try:
        p = bootstrap.read_projector(settings, args.schema)
    except ReadModelsAbsent as exc:
        raise CliError(f"{flag}: {exc}; they are written on --store and reach the read store "
                       "by replication") from None
    except (OSError, PersistenceError) as exc:
        raise CliError(f"{flag}: cannot use the read store: {exc}".splitlines()[0]) from None
    return p, read_lag(args)


def read_lag(args: argparse.Namespace) -> ReadLag | None:
    """How far the read store is behind ``--store`` (None: no read store), measured now; a
    CliError when the read store is not a copy of the store or cannot be read."""
    settings = settings_of(args)
    if settings.read_store is None:
        return None
    flag = settings.sources.get("read_store", "--read-store")
    try:
        db = bootstrap.read_database(settings)
    except StoreError as exc:
        raise CliError(f"{flag}: {exc}") from None
    except Exception as exc:  # never the URL: it may hold a password
        raise CliError(f"{flag}: cannot connect: {type(exc).__name__}") from None
    try:
        return bootstrap.read_lag(settings, db)
    except NotACopy as exc:
        raise CliError(f"{flag}: {exc}") from None
    finally:
        db.close()


def _with_lag(args: argparse.Namespace, report: R, lag: ReadLag | None, p: Projector) -> R:
    """The report with the read store's lag among its facts (and on stderr for CSV, which has
    no facts)."""
    if lag is None:
        return report
    at = min(p.positions.values(), default=0)
    said = f"{lag.text()}; the read models there at log position {at}"
    if args.format == "csv":
        print(f"sabot: read store: {said}", file=sys.stderr)
    return dataclasses.replace(report, facts={**report.facts, "read_store": said})


def _emit(args: argparse.Namespace, report: Report) -> None:
    _write(args, render(report, args.format))


def _write(args: argparse.Namespace, text: str) -> None:
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)


def cmd_rebuild(args: argparse.Namespace) -> int:
    if args.batch < 1:
        raise CliError("--batch: must be at least 1")
    p = _projector(args)
    p.catch_up(args.batch)
    before = p.digests()
    t0 = time.perf_counter()
    with Progress("rebuild", total=p.head(), unit="events", quiet=args.quiet) as progress:
        n = p.rebuild(args.batch, drop=args.drop, progress=progress.update)
    seconds = time.perf_counter() - t0
    after = p.digests()
    for name in before:
        same = "same" if before[name] == after[name] else "DIFFERENT"
        print(f"{name}: {after[name]} ({same})")
    print(f"rebuilt from {n} events in {seconds:.2f} s ({n / seconds if seconds else 0:.0f} ev/s)")
    return 0 if before == after else 1


def cmd_catch_up(args: argparse.Namespace) -> int:
    n = _projector(args).catch_up()
    lag = read_lag(args)
    print(f"applied {n} events" + (f" from the read store, {lag.text()}" if lag else ""))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    p = _projector(args)
    stop = threading.Event()
    reading = settings_of(args).read_store is not None
    if reading:  # a standby has no LISTEN/NOTIFY: the poller reads it
        lag = read_lag(args)
        assert lag is not None
        print(f"sabot: the read models are written on --store from the read store's log: "
              f"{lag.text()}", file=sys.stderr)
    try:
        if p.store.dialect == "postgres" and not args.poll and not reading:
            from services.projections.runner import supervise

            env = bootstrap.log_env(settings_of(args), args.schema)
            supervise(bootstrap.log_application(), p.views, env, stop,
                      on_error=lambda exc: print(f"sabot: runner stopped: {exc}", file=sys.stderr))
        else:
            while not stop.is_set():  # supervise the poller: a store error is retried
                try:
                    p.reload()
                    p.run(stop, args.interval)
                except PersistenceError as exc:
                    print(f"sabot: poller stopped: {exc}", file=sys.stderr)
                    stop.wait(1.0)
    except KeyboardInterrupt:
        stop.set()
    return 0


def cmd_lag(args: argparse.Namespace) -> int:
    """Each read model's lag behind its log; given a read store, as the read store holds
    them, and a last line with the read store's own lag behind ``--store``."""
    if settings_of(args).read_store is None:
        p, store_lag = _projector(args), None
    else:
        p, store_lag = _reading(args)
    for lag in p.lag():
        print(json.dumps({"view": lag.view, "position": lag.position, "head": lag.head,
                          "events_behind": lag.events_behind,
                          "seconds_behind": lag.seconds_behind}))
    if store_lag is not None:
        print(json.dumps({"read_store": store_lag.as_json()}))
    return 0


def cmd_reconcile(args: argparse.Namespace) -> int:
    if args.game is None:
        if args.table is not None or args.day is not None:
            raise CliError(f"--{'table' if args.table is not None else 'day'}: only with --game")
    elif not args.table:
        raise CliError("--table: required with --game")
    p = _projector(args)
    if args.game is not None:
        return _game_reconcile(args, p)
    result = reconcile(p.app, projector=p)
    _emit(args, result.report())
    return 0 if result.ok else 1


def _game_reconcile(args: argparse.Namespace, p: Projector) -> int:
    views = units_views(p.views)
    view = views.get(args.game)
    if view is None:
        raise CliError(f"--game: no read model of the game {args.game!r} (one of "
                       f"{', '.join(views)})")
    if args.day is not None:
        try:
            if not _DAY.fullmatch(args.day):
                raise ValueError
            date.fromisoformat(args.day)
        except ValueError:
            raise CliError(f"--day: expected a date YYYY-MM-DD, got {args.day[:40]!r}") from None
    p.catch_up()
    report, balanced = view.report(
        args.table, view.reconcile(p.store, args.table, views_gaming_day(p.views)), args.day)
    _emit(args, report)
    return 0 if balanced else 1


def _caught_up(args: argparse.Namespace) -> Projector:
    p = _projector(args)
    p.catch_up()
    return p  # keep it (and its application's connections) alive while reading


def cmd_report_day(args: argparse.Namespace) -> int:
    p, lag = _reading(args)
    if args.layout == "chances":
        _emit(args, _with_lag(args, gaming_day(p.store, args.day, args.table, views=p.views),
                              lag, p))
    else:
        floor = floor_day(p.store, args.day, p.views, args.table)
        _write(args, render_floor(_with_lag(args, floor, lag, p), args.format))
    return 0


def cmd_report_statement(args: argparse.Namespace) -> int:
    p, lag = _reading(args)
    report = player_statement(p.store, args.account, args.since, args.until)
    _emit(args, _with_lag(args, report, lag, p))
    return 0


def cmd_report_shoes(args: argparse.Namespace) -> int:
    p, lag = _reading(args)
    _emit(args, _with_lag(args, shoe_history(p.store, args.table), lag, p))
    return 0
