"""Fixtures: shoes played on a real ledger (SQLite and PostgreSQL), notarised and keyed."""

from __future__ import annotations

import os
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from services.bootstrap import ROUND_END
from services.regulator.checkpoint import public_key_bytes
from services.regulator.notary import Notary
from services.regulator.source import Database, EventTable
from tests.conftest import PG_HOST, PG_PORT, PG_USER, postgres_unavailable

from .play import Player, make_ledger

PG_ADMIN = f"postgresql://{PG_USER}@{PG_HOST}:{PG_PORT}/postgres"
# One database name per test process (several runs may share the PostgreSQL cluster); the
# pattern is tests/conftest.py's, so a killed run's database is dropped by the next run.
PG_DB = f"sabot_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"

@dataclass
class Played:
    url: str
    key: Ed25519PrivateKey
    regulator: X25519PrivateKey
    shoes: list[str] = field(default_factory=list)
    coups: dict[str, list[str]] = field(default_factory=dict)
    open_shoe: str | None = None  # a shoe still in play

    @property
    def public_key(self) -> bytes:
        return public_key_bytes(self.key.public_key())

    def notary(self) -> Notary:
        db = Database(self.url)
        return Notary(db, EventTable(db), self.key, "sabot-test", ROUND_END)

    def events(self) -> EventTable:
        return EventTable(Database(self.url))


def regulator_key() -> X25519PrivateKey:
    """A fixed regulator key pair: the ledger escrows every seed to it while playing."""
    return X25519PrivateKey.from_private_bytes(b"\x42" * 32)


def play(url: str, tables: list[tuple[str, str, int]], seed: int, in_play: int = 0) -> Played:
    """Play whole shoes (table, preset, shoes) and leave a shoe in play with ``in_play`` coups."""
    reg = regulator_key()
    pub = reg.public_key().public_bytes_raw()
    draw = random.Random(seed + 5).randbytes
    ledger, rng = make_ledger(url, seed, new_seed=lambda: draw(32), regulator_key=pub)
    out = Played(url, Ed25519PrivateKey.from_private_bytes(bytes([seed]) * 32), reg)
    player = None
    try:
        for table, preset, shoes in tables:
            player = Player(ledger, rng, table, preset)
            for _ in range(shoes):
                sid, coups = player.shoe()
                out.shoes.append(sid)
                out.coups[sid] = coups
        if in_play and player is not None:
            sid = player.open_shoe()
            out.open_shoe = sid
            out.coups[sid] = [player.coup()[0] for _ in range(in_play)]
    finally:
        ledger.close()
    notary = out.notary()
    try:
        notary.sync()
        notary.checkpoint_now()
    finally:
        notary.db.close()  # not left to the collector: the checkpoint is in the file, not the WAL
    return out


@pytest.fixture(scope="session")
def played_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Played:
    path: Path = tmp_path_factory.mktemp("regulator") / "store.db"
    return play(
        f"sqlite:///{path}",
        [("t-fr", "francaise", 2), ("t-es", "espanola", 1), ("t-it", "italiana", 1)],
        seed=7,
        in_play=3,
    )


def postgres_or_skip() -> None:
    try:
        import psycopg

        psycopg.connect(PG_ADMIN, connect_timeout=3).close()
    except Exception as exc:
        postgres_unavailable("PostgreSQL unreachable", str(exc))


def fresh_pg_database(name: str) -> str:
    import psycopg

    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"postgresql://{PG_USER}@{PG_HOST}:{PG_PORT}/{name}"


@pytest.fixture
def played_pg() -> Iterator[Played]:
    """A fresh PostgreSQL store per test (tamper tests change it)."""
    postgres_or_skip()
    url = fresh_pg_database(PG_DB)
    yield play(url, [("t-pg", "italiana", 1)], seed=11)
    import psycopg

    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{PG_DB}" WITH (FORCE)')


def sabot(*argv: str) -> int:
    """A ``sabot`` regulator command run in this process: its exit code (2 on a CliError)."""
    import argparse
    import sys

    from services.cli import CliError
    from services.cli import regulator as cli

    parser = argparse.ArgumentParser(prog="sabot")
    cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except CliError as exc:
        print(f"sabot: error: {exc}", file=sys.stderr)
        return 2
