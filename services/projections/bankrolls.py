"""Bankrolls: the balance and statement of every account, each movement with its cause.

``rm_account``: one row per account (kind, currency, table, balance, entries).
``rm_statement``: one row per entry in the order posted: signed amount (in > 0, out < 0), the
balance after it, the movement kind (stake, premium, partage, prison_loss, deposit, ...), the
cause (the coup or cage operation), the counter account and the stake.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from services.projections import topics as T
from services.projections.store import Tx
from services.projections.view import Envelope, Table, View

ACCOUNT = Table(
    "rm_account",
    (
        ("account_id", "TEXT"),
        ("originator_id", "TEXT"),
        ("kind", "TEXT"),
        ("currency", "TEXT"),
        ("table_id", "TEXT"),
        ("balance", "BIGINT"),
        ("entries", "BIGINT"),
    ),
    ("account_id",),
    indexes=(("originator_id",),),
    indexes_in_apply=True,  # apply finds accounts by originator id
)
STATEMENT = Table(
    "rm_statement",
    (
        ("account_id", "TEXT"),
        ("seq", "BIGINT"),
        ("position", "BIGINT"),
        ("at", "TEXT"),
        ("amount", "BIGINT"),
        ("balance_after", "BIGINT"),
        ("kind", "TEXT"),
        ("cause", "TEXT"),
        ("counter_account", "TEXT"),
        ("stake_id", "TEXT"),
    ),
    ("account_id", "seq"),
)


class BankrollView(View):
    name = "bankrolls"
    tables = (ACCOUNT, STATEMENT)
    topics = frozenset({T.ACCOUNT_OPENED}) | T.ACCOUNT_ENTRIES

    def apply(self, tx: Tx, batch: Sequence[Envelope]) -> None:
        accounts: dict[str, list[Any]] = {  # originator id -> row (as in ACCOUNT)
            r[1]: list(r)
            for r in tx.query_in(
                "SELECT account_id, originator_id, kind, currency, table_id, balance, entries "
                "FROM {s}rm_account WHERE originator_id",
                {e.oid for e in batch if e.topic != T.ACCOUNT_OPENED},
            )
        }
        lines: list[tuple[Any, ...]] = []
        for e in batch:
            ev = e.event
            oid = e.oid
            if e.topic == T.ACCOUNT_OPENED:
                accounts[oid] = [ev.account_id, oid, ev.kind, ev.currency, ev.table_id, 0, 0]
                continue
            row = accounts.get(oid)
            if row is None:
                found = tx.one(
                    "SELECT account_id, originator_id, kind, currency, table_id, balance, entries "
                    "FROM {s}rm_account WHERE originator_id = ?",
                    (oid,),
                )
                if found is None:
                    raise LookupError(f"movement on unknown account {oid} at {e.position}")
                row = accounts[oid] = list(found)
            signed = ev.amount if e.topic in T.ACCOUNT_CREDITS else -ev.amount
            row[5] = int(row[5]) + signed
            row[6] = int(row[6]) + 1
            lines.append(
                (
                    row[0], row[6], e.position, e.at, signed, row[5],
                    ev.kind, ev.cause, ev.counter_account, ev.stake_id,
                )
            )
        tx.executemany(
            "INSERT INTO {s}rm_account (account_id, originator_id, kind, currency, table_id, "
            "balance, entries) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (account_id) DO UPDATE "
            "SET balance = excluded.balance, entries = excluded.entries",
            list(accounts.values()),
        )
        tx.executemany(
            "INSERT INTO {s}rm_statement (account_id, seq, position, at, amount, balance_after, "
            "kind, cause, counter_account, stake_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            lines,
        )


def balances(tx: Tx) -> dict[str, int]:
    return {r[0]: int(r[1]) for r in tx.query("SELECT account_id, balance FROM {s}rm_account")}
