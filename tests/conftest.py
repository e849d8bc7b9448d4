"""Shared store fixtures: a SQLite file per test, and PostgreSQL on a fresh database per session.

PostgreSQL tests are skipped only when PostgreSQL is unreachable AND ``SABOT_REQUIRE_POSTGRES``
is not "1"; with it set, an unreachable PostgreSQL fails the test.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from hypothesis import settings

# Time is measured by benchmarks, not tests: on a shared 2-core CI machine a per-example
# deadline only measures the neighbours' load.
settings.register_profile("sabot", deadline=None)
settings.load_profile("sabot")

PG_HOST = os.environ.get("SABOT_PG_HOST", "127.0.0.1")
PG_PORT = int(os.environ.get("SABOT_PG_PORT", "5432"))
PG_USER = os.environ.get("SABOT_PG_USER", "postgres")
ORPHAN = re.compile(r"sabot_test_(\d+)_[0-9a-f]{8}")
PG_ADMIN_DSN = f"host={PG_HOST} port={PG_PORT} user={PG_USER} dbname=postgres connect_timeout=3"


def postgres_required() -> bool:
    return os.environ.get("SABOT_REQUIRE_POSTGRES") == "1"


def _reachable() -> str | None:
    """None if PostgreSQL answers, else the reason."""
    try:
        with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as conn:
            conn.execute("SELECT 1")
        return None
    except psycopg.OperationalError as exc:
        return str(exc).strip()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _drop_orphans(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    """Drop the session databases of test runs whose process is gone (killed runs)."""
    rows = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'sabot_test_%'")
    for (name,) in rows.fetchall():
        match = ORPHAN.fullmatch(str(name))
        if match and not _alive(int(match.group(1))):
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """A fresh database for this test session, dropped at its end: its name."""
    reason = _reachable()
    if reason is not None:
        if postgres_required():
            pytest.fail(f"PostgreSQL unreachable and SABOT_REQUIRE_POSTGRES=1: {reason}")
        pytest.skip(f"PostgreSQL unreachable (set SABOT_REQUIRE_POSTGRES=1 to fail): {reason}")
    name = f"sabot_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as conn:
        _drop_orphans(conn)
        conn.execute(f'CREATE DATABASE "{name}"')
    yield name
    with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def postgres_dsn(postgres_database: str) -> str:
    """A libpq connection string to the session's database."""
    return f"host={PG_HOST} port={PG_PORT} user={PG_USER} dbname={postgres_database}"


@pytest.fixture
def postgres_schema(postgres_dsn: str) -> Iterator[str]:
    """A fresh schema in the session's database, for one test."""
    schema = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    yield schema


@pytest.fixture
def postgres_store_url(postgres_database: str, postgres_schema: str) -> str:
    """A ledger store URL on a fresh schema: ``postgresql://...?schema=...``."""
    return (
        f"postgresql://{PG_USER}@{PG_HOST}:{PG_PORT}/{postgres_database}"
        f"?schema={postgres_schema}"
    )


@pytest.fixture
def sqlite_store_url(tmp_path: Path) -> str:
    """A ledger store URL on a new SQLite file."""
    return f"sqlite:///{tmp_path / 'sabot.db'}"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest) -> str:
    """Both stores, in turn."""
    if request.param == "sqlite":
        return str(request.getfixturevalue("sqlite_store_url"))
    return str(request.getfixturevalue("postgres_store_url"))
