"""Bankrolls: the balance and statement of every account, each movement with its cause.

``rm_account``: one row per account (kind, currency, table, balance, entries).
``rm_statement``: one row per entry in the order posted: signed amount (in > 0, out < 0), the
balance after it, the movement kind (stake, premium, partage, prison_loss, deposit, ...), the
cause (the coup or cage operation), the counter account, the stake, and who ran the command
that posted it (from its ``Request.Recorded``: see ``actors.ActorColumn``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from services import topics as T
from services.projections.actors import REQUEST_FIELDS, ActorColumn, Key, unattributed_index
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
        ("actor", "BIGINT"),  # who ran its command: an actor_id of rm_bankroll_actor
    ),
    ("account_id", "seq"),
)


BANKROLL_ACTOR = Table(
    "rm_bankroll_actor", (("actor_id", "BIGINT"), ("actor", "TEXT")), ("actor_id",)
)


def _unattributed(tx: Tx) -> list[tuple[Key, tuple[Any, ...]]]:
    """Entries left without an actor (partial index), each with its event's key: the entry
    ``seq`` is its account's event ``seq + 1`` (after ``Account.Opened``)."""
    return [
        ((str(oid), int(seq) + 1), (account_id, seq))
        for account_id, seq, oid in tx.query(
            "SELECT s.account_id, s.seq, a.originator_id FROM {s}rm_statement s "
            "JOIN {s}rm_account a ON a.account_id = s.account_id WHERE s.actor IS NULL"
        )
    ]


class BankrollView(View):
    name = "bankrolls"
    version = 2  # v2: each entry's event and actor
    tables = (ACCOUNT, STATEMENT, BANKROLL_ACTOR)
    topics = frozenset({T.ACCOUNT_OPENED, T.REQUEST_RECORDED}) | T.ACCOUNT_ENTRIES
    # of a request: its actor and effects only
    reads: ClassVar[Mapping[str, frozenset[str]]] = {T.REQUEST_RECORDED: REQUEST_FIELDS}

    def __init__(self) -> None:
        self._actors = ActorColumn("rm_statement", STATEMENT.key, 10, lambda r: (r[0], r[1]),
                                   "rm_bankroll_actor", _unattributed)

    def create_sql(self) -> list[str]:
        return [*super().create_sql(), unattributed_index("rm_statement", "account_id")]

    def apply(self, tx: Tx, batch: Sequence[Envelope]) -> None:
        pending = self._actors.batch()
        accounts: dict[str, list[Any]] = {  # originator id -> row (as in ACCOUNT)
            r[1]: list(r)
            for r in tx.query_in(
                "SELECT account_id, originator_id, kind, currency, table_id, balance, entries "
                "FROM {s}rm_account WHERE originator_id",
                {e.oid for e in batch if e.topic not in (T.ACCOUNT_OPENED, T.REQUEST_RECORDED)},
            )
        }
        lines: list[list[Any]] = []
        for e in batch:
            ev = e.event
            oid = e.oid
            if e.topic == T.REQUEST_RECORDED:
                pending.request(ev, e.position)
                continue
            pending.event(e.position)
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
            line = [row[0], row[6], e.position, e.at, signed, row[5],
                    ev.kind, ev.cause, ev.counter_account, ev.stake_id, None]
            pending.add(oid, ev.originator_version, line, e.position)
            lines.append(line)
        tx.executemany(
            "INSERT INTO {s}rm_account (account_id, originator_id, kind, currency, table_id, "
            "balance, entries) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (account_id) DO UPDATE "
            "SET balance = excluded.balance, entries = excluded.entries",
            list(accounts.values()),
        )
        tx.executemany(
            "INSERT INTO {s}rm_statement (account_id, seq, position, at, amount, balance_after, "
            "kind, cause, counter_account, stake_id, actor) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            lines,
        )
        pending.finish(tx)  # entries of earlier batches whose command's request came in this one


def balances(tx: Tx) -> dict[str, int]:
    return {r[0]: int(r[1]) for r in tx.query("SELECT account_id, balance FROM {s}rm_account")}
