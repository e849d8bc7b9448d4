"""``sabot store init|events|balance-sheet|rerun``: the store's setup and grants, the event log,
the balances, the stored commands run again."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import psycopg

from domain.errors import RuleViolation
from services import bootstrap
from services.cli import CliError, commands, keep_old_names, settings_of
from services.cli.client import whole
from services.ledger.api import Ledger
from services.ledger.config import store_env
from services.settings import add_flags


def _open(args: argparse.Namespace, *, existing: bool = False) -> Ledger:
    """A ledger on ``--store`` that reads (a standby: it never takes the writer lease).
    Reading needs no seal key; re-running the commands does (``SABOT_SEAL_KEY``).
    ``existing``: a SQLite file that does not exist is refused (a command that only reads
    never creates one on a mistyped path)."""
    settings = settings_of(args)
    if existing:
        _check_exists(settings.store)
    return bootstrap.open_ledger(settings, standby=True)


def _check_exists(store: str) -> None:
    env = store_env(store)
    if env["PERSISTENCE_MODULE"] != "eventsourcing.sqlite":
        return
    name = env["SQLITE_DBNAME"]
    if name != ":memory:" and not name.startswith("file:") and not Path(name).is_file():
        raise CliError(f"--store: {name}: no such SQLite file (a command that reads creates "
                       "none); check the path")


def cmd_schema(args: argparse.Namespace) -> int:
    """Create the store's tables and guards as their owner, and grant the server and reader
    roles what they need (``--print``: only print the guards and grants, connecting nowhere)."""
    from services.ledger import schema

    settings = settings_of(args)
    env = store_env(settings.store)
    server_role, reader_roles = settings.server_role, list(settings.reader_roles)
    if env["PERSISTENCE_MODULE"] != "eventsourcing.postgres":
        if server_role or reader_roles:
            raise CliError("--server-role/--reader-role: a SQLite store has no roles")
        if args.print:
            print(";\n".join(schema.sqlite_guard_statements()) + ";")
            return 0
        _open(args).close()  # creates the tables and their guards
        print(f"append-only guards in place on {env['SQLITE_DBNAME']} (SQLite: against mistakes; "
              "anyone who can write the file can drop them)")
        return 0
    where = env["POSTGRES_SCHEMA"]
    servers = [server_role] if server_role else []
    if args.print:
        print(schema.setup_sql(where, servers, reader_roles), end="")
        return 0
    from services.ledger.application import LedgerApplication

    try:
        app = LedgerApplication(env={**env, schema.CREATE_TABLE: "y"})  # the tables
    except Exception as exc:
        raise CliError(f"cannot create the tables as {env['POSTGRES_USER']!r} (run this as the "
                       f"owner role): {type(exc).__name__}: {exc}".splitlines()[0]) from None
    app.close()
    info = schema.conninfo(env)
    try:
        schema.apply_schema(info, (f"{where}.{schema.EVENTS}",))
        db = bootstrap.store_database(settings)
        try:  # the notary's Merkle tables, append-only too, owned by the owner role
            bootstrap.store_notary(settings, db, create=True)
        finally:
            db.close()
        schema.apply_grants(info, where, servers, reader_roles)
        dropped: list[str] = []
        if server_role:
            dropped = schema.read_models_owned_by_others(info, where, server_role)
            schema.drop_tables(info, where, dropped)
    except schema.StoreNotReady as exc:
        raise CliError(str(exc)) from None
    except psycopg.errors.InsufficientPrivilege as exc:
        raise CliError(f"run this as the tables' owner role: {exc}".splitlines()[0]) from None
    print(f"store ready in {env['POSTGRES_DBNAME']}.{where}: append-only guards on "
          f"{schema.EVENTS} and {schema.SNAPSHOTS}, the writer lease's lock function, the "
          "notary's tables")
    for role in servers:
        print(f"  server role {role}: SELECT, INSERT (no UPDATE, DELETE, TRUNCATE, TRIGGER); "
              "creates its read models")
    for role in reader_roles:
        print(f"  reader role {role}: SELECT")
    if dropped:
        print(f"  dropped {len(dropped)} read-model tables {server_role} did not own "
              "(it rebuilds them from the log): " + ", ".join(dropped))
    return 0


EVENTS_PAGE = 1000  # events read per query (read_events takes 1..10,000)


def cmd_events(args: argparse.Namespace) -> int:
    """The log from ``--after`` to its end (read a page at a time), or ``--limit`` events; a
    limit that leaves events unread says so on stderr, with the ``--after`` to go on from."""
    ledger = _open(args, existing=True)
    left, after = args.limit, args.after
    try:
        while left is None or left > 0:
            page = ledger.read_events(after, EVENTS_PAGE if left is None
                                      else min(left, EVENTS_PAGE))
            for e in page:
                row: dict[str, Any] = {
                    "position": e.position, "originator_id": e.originator_id,
                    "version": e.version, "topic": e.topic, "state": e.state,
                }
                print(json.dumps(row, sort_keys=True))
                after = e.position
            if not page:
                return 0
            if left is not None:
                left -= len(page)
        if ledger.read_events(after, 1):
            print(f"sabot: --limit {args.limit}: more events follow position {after} (go on "
                  f"with --after {after})", file=sys.stderr)
    finally:
        ledger.close()
    return 0


def cmd_balances(args: argparse.Namespace) -> int:
    from domain.currency import format_minor

    ledger = _open(args, existing=True)
    try:
        balances = ledger.balances()
        currency = {name: ledger.get_account(name).currency for name in balances}
    finally:
        ledger.close()
    sums: dict[str, int] = {}
    for name, balance in sorted(balances.items()):
        print(f"{name:48s} {format_minor(balance, currency[name]):>20s}")
        sums[currency[name]] = sums.get(currency[name], 0) + balance
    for code, total in sorted(sums.items()):
        print(f"{'(sum ' + code + ')':48s} {format_minor(total, code):>20s}")
    print(f"{'(sum of every minor unit)':48s} {sum(balances.values()):>16d}")
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from services.ledger.replay import event_log, replay

    source = _open(args, existing=True)
    try:
        try:
            target = replay(source, args.into)
        except RuleViolation as exc:
            if exc.reason != "SEAL_KEY_MISMATCH":
                raise
            raise CliError("--seal-key: a shoe's sealed seed in --store does not open with this "
                           "key: give the seal key the store was written with (SABOT_SEAL_KEY)"
                           ) from None
        try:
            same = event_log(target) == event_log(source)
        finally:
            target.close()
    finally:
        source.close()
    print("identical events" if same else "EVENTS DIFFER")
    return 0 if same else 1


def register(sub: Any) -> None:
    def store(p: argparse.ArgumentParser, *, seal_key: bool = False) -> None:
        if seal_key:
            add_flags(p, "store", "seal_key")
        else:  # reading needs no seal key: the previous release's flag, accepted and unread
            add_flags(p, "store")
            p.add_argument("--seal-key", dest="unused_seal_key", help=argparse.SUPPRESS)

    sub = commands(sub)
    store_ = sub.group("store")
    p = store_.add_parser(
        "init",
        help="create the store, its append-only guards and the roles' grants (as the owner)",
        description="Run as the tables' owner role (--store's user). PostgreSQL: creates the "
                    "tables, their append-only triggers, the writer lease's lock function and "
                    "the notary's tables, then grants --server-role what sabot serve needs "
                    "(read and insert; never update, delete, truncate or triggers) and "
                    "--reader-role read access. --print prints the guards and grants instead "
                    "(no connection; never a password).")
    store(p)
    add_flags(p, "server_role", "reader_roles")
    p.add_argument("--print", action="store_true",
                   help="print the SQL of the guards and grants, apply nothing")
    p.set_defaults(func=cmd_schema)
    p = store_.add_parser("events", help="print the event log as JSON lines")
    store(p)
    p.add_argument("--after", type=int, default=0, help="log position to start after")
    p.add_argument("--limit", type=whole(1, 2**63 - 1), default=None,
                   help="at most N events (default: the whole log from --after)")
    p.set_defaults(func=cmd_events)
    p = store_.add_parser("balance-sheet", help="every account's balance and their sum, from "
                                                "the write side")
    store(p)
    p.set_defaults(func=cmd_balances)
    p = store_.add_parser("rerun", help="re-run the stored commands into an empty store and "
                                        "compare the events")
    store(p, seal_key=True)
    p.add_argument("--into", required=True, help="an empty store URL")
    p.set_defaults(func=cmd_replay)
    keep_old_names(sub)
