"""Stores for the projection tests: SQLite (a temp file) and PostgreSQL (a fresh schema).

PostgreSQL tests are skipped only when it is unreachable and SABOT_REQUIRE_POSTGRES is not "1".
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import psycopg
import pytest

from tests.conftest import PG_HOST, PG_PORT, PG_USER

from .game import Game

PG_DB = "sabot_test_projections"
PG_DSN = f"host={PG_HOST} port={PG_PORT} user={PG_USER}"


def _pg_ready() -> bool:
    try:
        with psycopg.connect(PG_DSN + " dbname=postgres", autocommit=True, connect_timeout=3) as c:
            if not c.execute("SELECT 1 FROM pg_database WHERE datname=%s", (PG_DB,)).fetchone():
                # two test processes (pytest -n 2, or two runs) may create it at once
                with suppress(psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
                    c.execute(f'CREATE DATABASE "{PG_DB}"')
        return True
    except psycopg.OperationalError:
        if os.environ.get("SABOT_REQUIRE_POSTGRES") == "1":
            raise
        return False


def sqlite_env(directory: str) -> dict[str, str]:
    return {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": directory + "/store.db"}


@contextmanager
def postgres_env() -> Iterator[dict[str, str]]:
    """A fresh schema in the test database, dropped afterwards (skips if unreachable)."""
    if not _pg_ready():
        pytest.skip("PostgreSQL unreachable (set SABOT_REQUIRE_POSTGRES=1 to fail instead)")
    schema = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(PG_DSN + f" dbname={PG_DB}", autocommit=True) as c:
        c.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield {
            "PERSISTENCE_MODULE": "eventsourcing.postgres",
            "POSTGRES_DBNAME": PG_DB,
            "POSTGRES_HOST": "127.0.0.1",
            "POSTGRES_PORT": str(PG_PORT),
            "POSTGRES_USER": "postgres",
            "POSTGRES_PASSWORD": "",
            "POSTGRES_SCHEMA": schema,
            "POSTGRES_POOL_SIZE": "3",
            "POSTGRES_MAX_OVERFLOW": "3",
            "POSTGRES_ENABLE_DB_FUNCTIONS": "n",
        }
    finally:
        with psycopg.connect(PG_DSN + f" dbname={PG_DB}", autocommit=True) as c:
            c.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    """The eventsourcing environment of an empty store, on each store."""
    if request.param == "sqlite":
        yield sqlite_env(str(tmp_path))
        return
    with postgres_env() as env:
        yield env


@pytest.fixture
def pg_env() -> Iterator[dict[str, str]]:
    with postgres_env() as env:
        yield env


def _url(env: dict[str, str]) -> tuple[str, dict[str, str]]:
    if env["PERSISTENCE_MODULE"] == "eventsourcing.sqlite":
        return "sqlite:///" + env["SQLITE_DBNAME"], {}
    url = f"postgresql://{PG_USER}@{PG_HOST}:{PG_PORT}/{env['POSTGRES_DBNAME']}"
    return url, {"POSTGRES_SCHEMA": env["POSTGRES_SCHEMA"]}


def play(env: dict[str, str]) -> Game:
    """Four shoes on three tables under the three presets, across shifts and gaming days; the
    last shoe stops after a refait at 31 and its table closes with the prisoners it made."""
    url, extra = _url(env)
    g = Game(url, seed=56, extra_env=extra)  # 56: every metric, and a prisoner at the close
    g.open_table("t-fr", "francaise")
    g.open_table("t-it", "italiana", {"cut_card": "finish_coup"})
    g.open_table("t-es", "espanola", {"decks": "2"})
    for i, name in enumerate(("ana", "bruno", "carla")):
        g.open_player(name, 5_000_000 + i)
    g.play_shoe("t-fr")
    g.play_shoe("t-it", max_coups=25)
    g.play_shoe("t-es")
    g.cash("bruno", -12_345)
    g.play_shoe("t-it", max_coups=12, stop=lambda outcome: outcome.is_refait31)
    g.closed_with_prisoners = g.close_table("t-it")  # the read models account for the close
    return g


@pytest.fixture(scope="session",
                params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def game(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
         ) -> Iterator[Game]:
    """One played ledger per store, shared by the tests (they only read it)."""
    if request.param == "sqlite":
        g = play(sqlite_env(str(tmp_path_factory.mktemp("played"))))
        yield g
        g.close()
        return
    with postgres_env() as env:
        g = play(env)
        yield g
        g.close()
