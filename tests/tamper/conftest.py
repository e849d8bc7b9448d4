"""The tamper suite's stores: played once per session and store, copied for each test.

The play: a table, three players' accounts opened and funded before the first shoe, 500 small
deposits in a burst (batched: an account snapshot falls inside a batch), a whole shoe closed,
a second shoe in play with two coups. The writer signs with a fixed evidence key and keeps its
head file beside the store. Nothing is notarised before a test tampers: the notary first sees
the tampered store (as it would when the insider is quicker than it), so what detects the
tampering is the evidence chain, not the Merkle log.

``Insider`` plays the database insider: owner or superuser rights, past the guards (SQLite: it
drops the triggers; PostgreSQL: ``session_replication_role = replica``, or the table owner's
``ALTER TABLE ... DISABLE TRIGGER USER``).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from regulator.conftest import postgres_or_skip, regulator_key
from regulator.play import CHAIN_KEY, Player, make_ledger

from services.regulator.checkpoint import public_key_bytes
from tests.conftest import PG_HOST, PG_PORT, PG_USER

CHAIN_PUBLIC = Ed25519PrivateKey.from_private_bytes(CHAIN_KEY).public_key().public_bytes_raw()
CHECKPOINT = Ed25519PrivateKey.from_private_bytes(b"\x0c" * 32)
CHECKPOINT_PUBLIC = public_key_bytes(CHECKPOINT.public_key())
PG_ADMIN = f"postgresql://{PG_USER}@{PG_HOST}:{PG_PORT}/postgres"
TABLE = "t-tq"


def _pg_name() -> str:
    return f"sabot_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"  # dropped if this run dies


@dataclass
class Played:
    """What the template's play left: the shoes, and who is where."""

    shoe: str
    coups: list[str]
    open_shoe: str
    players: list[str]


@dataclass
class Store:
    kind: str  # "sqlite" or "postgres"
    url: str
    head: Path  # the writer's head file (SABOT_CHAIN_HEAD)
    played: Played
    dir: Path

    @property
    def key_file(self) -> Path:
        """The checkpoint key, as ``sabot checkpoint-keygen`` writes it."""
        path = self.dir / "checkpoint.key"
        if not path.exists():
            path.write_bytes(CHECKPOINT.private_bytes(Encoding.PEM, PrivateFormat.PKCS8,
                                                      NoEncryption()))
        return path


def _play(url: str, head: Path) -> Played:
    reg = regulator_key().public_key().public_bytes_raw()
    draw = random.Random(29).randbytes
    burst, rng = make_ledger(url, seed=23, new_seed=lambda: draw(32), regulator_key=reg,
                             chain_head=str(head), batching=True)
    try:
        player = Player(burst, rng, TABLE, "francaise")
        rich = player.players[0]
        futures = [burst.submit("deposit", f"burst-{i}", rich, 1) for i in range(500)]
        for f in futures:
            f.result(timeout=60)
    finally:
        burst.close()
    ledger, _ = make_ledger(url, seed=24, new_seed=lambda: draw(32), regulator_key=reg,
                            chain_head=str(head))
    try:
        player.ledger = ledger
        shoe, coups = player.shoe()
        open_shoe = player.open_shoe()
        for _ in range(2):
            player.coup()
    finally:
        ledger.close()
    return Played(shoe, coups, open_shoe, player.players)


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Store:
    where = tmp_path_factory.mktemp("tamper-sqlite")
    path = where / "store.db"
    head = where / "head.json"
    played = _play(f"sqlite:///{path}", head)
    return Store("sqlite", f"sqlite:///{path}", head, played, where)


@pytest.fixture(scope="session")
def postgres_template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    postgres_or_skip()
    name = _pg_name()
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    where = tmp_path_factory.mktemp("tamper-pg")
    url = f"postgresql://{PG_USER}@{PG_HOST}:{PG_PORT}/{name}"
    head = where / "head.json"
    played = _play(url, head)
    yield Store("postgres", url, head, played, where)
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def copy_store(template: Store, where: Path) -> Iterator[Store]:
    """A copy of the template's store and head file, for one test to tamper with."""
    head = where / "head.json"
    shutil.copy(template.head, head)
    if template.kind == "sqlite":
        path = where / "store.db"
        src = sqlite3.connect(template.url.removeprefix("sqlite:///"))
        dst = sqlite3.connect(path)
        src.backup(dst)
        src.close()
        dst.close()
        yield Store("sqlite", f"sqlite:///{path}", head, template.played, where)
        return
    name = _pg_name()
    template_db = template.url.rsplit("/", 1)[1]
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template_db}"')
    try:
        yield Store("postgres", f"postgresql://{PG_USER}@{PG_HOST}:{PG_PORT}/{name}", head,
                    template.played, where)
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A fresh copy of the played store, on each store kind."""
    template: Store = request.getfixturevalue(f"{request.param}_template")
    yield from copy_store(template, tmp_path)


class Insider:
    """Someone with the database's owner or superuser rights, past every guard."""

    def __init__(self, store: Store, guard: str = "") -> None:
        self.store = store
        self.guard = guard or ("drop-triggers" if store.kind == "sqlite" else "replica")
        pg = store.kind == "postgres"
        self.events = "sabot_events" if pg else "stored_events"
        self.snapshots = "sabot_snapshots" if pg else "stored_snapshots"
        self.pos = "notification_id" if pg else "rowid"

    @contextmanager
    def session(self) -> Iterator[Any]:
        """A connection past the guards, committed at the end."""
        if self.store.kind == "sqlite":
            conn = sqlite3.connect(self.store.url.removeprefix("sqlite:///"))
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name IN (?, ?)",
                (self.events, self.snapshots),
            ).fetchall():
                conn.execute(f'DROP TRIGGER "{name}"')
            try:
                yield _Sqlite(conn)
                conn.commit()
            finally:
                conn.close()
            return
        with psycopg.connect(self.store.url) as conn:
            if self.guard == "replica":
                conn.execute("SET session_replication_role = replica")
            else:  # the owner switches the append-only guard off, and on again after
                for table in (self.events, self.snapshots):
                    conn.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
            yield _Postgres(conn)
            if self.guard != "replica":
                for table in (self.events, self.snapshots):
                    conn.execute(f"ALTER TABLE {table} ENABLE TRIGGER USER")
            conn.commit()

    # --- reading ----------------------------------------------------------------------------

    def positions(self, topic: str) -> list[int]:
        with self.session() as db:
            rows = db.rows(f"SELECT {self.pos} FROM {self.events} WHERE topic = ? "
                           f"ORDER BY {self.pos}", (topic,))
        return [int(r[0]) for r in rows]

    def last_position(self) -> int:
        with self.session() as db:
            return int(db.rows(f"SELECT max({self.pos}) FROM {self.events}")[0][0])

    def row(self, position: int) -> tuple[str, int, str, dict[str, Any]]:
        with self.session() as db:
            (oid, version, topic, state), = db.rows(
                f"SELECT originator_id, originator_version, topic, state FROM {self.events} "
                f"WHERE {self.pos} = ?", (position,))
        return str(oid), int(version), str(topic), json.loads(bytes(state))

    # --- tampering --------------------------------------------------------------------------

    def edit(self, position: int, change: Any) -> int:
        """Change the stored state at ``position`` (``change`` edits the parsed state)."""
        state = self.row(position)[3]
        change(state)
        with self.session() as db:
            db.execute(f"UPDATE {self.events} SET state = ? WHERE {self.pos} = ?",
                       (json.dumps(state, separators=(",", ":")).encode(), position))
        return position

    def delete(self, *positions: int) -> int:
        with self.session() as db:
            for p in positions:
                db.execute(f"DELETE FROM {self.events} WHERE {self.pos} = ?", (p,))
        return min(positions)

    def delete_from(self, position: int) -> int:
        with self.session() as db:
            db.execute(f"DELETE FROM {self.events} WHERE {self.pos} >= ?", (position,))
        return position

    def swap(self, a: int, b: int) -> int:
        with self.session() as db:
            db.execute(f"UPDATE {self.events} SET {self.pos} = -1 WHERE {self.pos} = ?", (a,))
            db.execute(f"UPDATE {self.events} SET {self.pos} = ? WHERE {self.pos} = ?", (a, b))
            db.execute(f"UPDATE {self.events} SET {self.pos} = ? WHERE {self.pos} = -1", (b,))
        return min(a, b)

    def insert(self, rows: list[tuple[str, int, str, dict[str, Any]]],
               before: int | None = None) -> int:
        """Append rows (or insert them at ``before``, moving every later row up): the first
        inserted position."""
        with self.session() as db:
            if before is not None:
                n = len(rows)
                db.execute(f"UPDATE {self.events} SET {self.pos} = -{self.pos} "
                           f"WHERE {self.pos} >= ?", (before,))
                db.execute(f"UPDATE {self.events} SET {self.pos} = -{self.pos} + ? "
                           f"WHERE {self.pos} < 0", (n,))
            first = None
            for i, (oid, version, topic, state) in enumerate(rows):
                data = json.dumps(state, separators=(",", ":")).encode()
                ident = oid if self.store.kind == "postgres" else uuid.UUID(oid).hex
                if before is not None:
                    db.execute(f"INSERT INTO {self.events} ({self.pos}, originator_id, "
                               "originator_version, topic, state) VALUES (?, ?, ?, ?, ?)",
                               (before + i, ident, version, topic, data))
                else:
                    db.execute(f"INSERT INTO {self.events} (originator_id, originator_version, "
                               "topic, state) VALUES (?, ?, ?, ?)", (ident, version, topic, data))
                if first is None:
                    first = before if before is not None else int(db.rows(
                        f"SELECT max({self.pos}) FROM {self.events}")[0][0])
        assert first is not None
        return first

    def snapshot_rows(self) -> list[tuple[str, int, str, dict[str, Any]]]:
        with self.session() as db:
            rows = db.rows(f"SELECT originator_id, originator_version, topic, state FROM "
                           f"{self.snapshots} ORDER BY originator_version")
        return [(str(uuid.UUID(str(r[0]))), int(r[1]), str(r[2]), json.loads(bytes(r[3])))
                for r in rows]

    def edit_snapshot(self, oid: str, version: int, change: Any) -> None:
        state = next(s for o, v, _, s in self.snapshot_rows() if o == oid and v == version)
        change(state)
        ident: Any = oid if self.store.kind == "postgres" else uuid.UUID(oid).hex
        with self.session() as db:
            db.execute(f"UPDATE {self.snapshots} SET state = ? WHERE originator_id = ? AND "
                       "originator_version = ?",
                       (json.dumps(state, separators=(",", ":")).encode(), ident, version))


class _Sqlite:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return list(self.conn.execute(sql, params).fetchall())

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        self.conn.execute(sql, params)


class _Postgres:
    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return list(self.conn.execute(sql.replace("?", "%s"), params).fetchall())

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        self.conn.execute(sql.replace("?", "%s"), params)


def uuid_text(oid: str) -> str:
    return str(uuid.UUID(oid))
