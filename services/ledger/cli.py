"""``sabot`` subcommands of the ledger: schema setup, the event log, balances, replay."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from domain.errors import InvalidArgument
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig, store_env

READ_ONLY_KEY = bytes(32)  # reading needs no seal key; dealing and closing shoes do


def _key(args: argparse.Namespace) -> bytes:
    text = args.seal_key or os.environ.get("SABOT_SEAL_KEY", "")
    if not text:
        return READ_ONLY_KEY
    try:
        key = bytes.fromhex(text)
    except ValueError:
        raise InvalidArgument("seal-key", "BAD_KEY", "must be 64 hex digits") from None
    if len(key) != 32:
        raise InvalidArgument("seal-key", "BAD_KEY", "must be 64 hex digits")
    return key


def _open(args: argparse.Namespace) -> Ledger:
    return Ledger(LedgerConfig(store_url=args.store, seal_key=_key(args)))


def cmd_schema(args: argparse.Namespace) -> int:
    env = store_env(args.store)
    if env["PERSISTENCE_MODULE"] != "eventsourcing.postgres":
        print("sabot: the SQLite store needs no schema setup", file=sys.stderr)
        return 0
    _open(args).close()  # creates the tables, then applies ops/postgres/append_only.sql
    print(f"append-only event table ready in {env['POSTGRES_DBNAME']}.{env['POSTGRES_SCHEMA']}")
    return 0


def cmd_events(args: argparse.Namespace) -> int:
    ledger = _open(args)
    try:
        for e in ledger.read_events(args.after, args.limit):
            row: dict[str, Any] = {
                "position": e.position, "originator_id": e.originator_id, "version": e.version,
                "topic": e.topic, "state": e.state,
            }
            print(json.dumps(row, sort_keys=True))
    finally:
        ledger.close()
    return 0


def cmd_balances(args: argparse.Namespace) -> int:
    ledger = _open(args)
    try:
        balances = ledger.balances()
    finally:
        ledger.close()
    for name, balance in sorted(balances.items()):
        print(f"{name:48s} {balance:>16d}")
    print(f"{'(sum)':48s} {sum(balances.values()):>16d}")
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from services.ledger.replay import event_log, replay

    source = _open(args)
    try:
        target = replay(source, args.into)
        try:
            same = event_log(target) == event_log(source)
        finally:
            target.close()
    finally:
        source.close()
    print("identical events" if same else "EVENTS DIFFER")
    return 0 if same else 1


def register(sub: Any) -> None:
    def store(p: argparse.ArgumentParser) -> None:
        p.add_argument("--store", required=True, help="sqlite:///path or postgresql://u@h:p/db")
        p.add_argument("--seal-key", default=None, help="64 hex digits (or SABOT_SEAL_KEY)")

    p = sub.add_parser("ledger-schema", help="create the store and its append-only triggers")
    store(p)
    p.set_defaults(func=cmd_schema)
    p = sub.add_parser("ledger-events", help="print the event log as JSON lines")
    store(p)
    p.add_argument("--after", type=int, default=0, help="log position to start after")
    p.add_argument("--limit", type=int, default=1000)
    p.set_defaults(func=cmd_events)
    p = sub.add_parser("ledger-balances", help="every account's balance and their sum")
    store(p)
    p.set_defaults(func=cmd_balances)
    p = sub.add_parser("ledger-replay", help="re-run the stored commands into an empty store "
                       "and compare the events")
    store(p)
    p.add_argument("--into", required=True, help="an empty store URL")
    p.set_defaults(func=cmd_replay)
