"""Shared store fixtures: a SQLite file per test, and PostgreSQL on a fresh database per session.

PostgreSQL tests are skipped only when PostgreSQL is unreachable AND ``SABOT_REQUIRE_POSTGRES``
is not "1"; with it set, an unreachable PostgreSQL fails the test.
"""

from __future__ import annotations

import fcntl
import os
import re
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import psycopg
import pytest
from hypothesis import settings

# Hypothesis profiles, explicit: "ci" (the default; HYPOTHESIS_PROFILE names another). Each
# property states its own example count (@settings(max_examples=...)) and no profile changes it:
# CI runs every property at full strength. "long" gives the properties that state no count 1000
# examples instead of hypothesis' 100, for a run by hand or at night. Time is measured by
# benchmarks, not tests: on a shared 2-core CI machine a per-example deadline only measures the
# neighbours' load. print_blob: a failure prints the line that reproduces it.
settings.register_profile("ci", deadline=None, print_blob=True)
settings.register_profile("sabot", settings.get_profile("ci"))  # the former name
settings.register_profile("long", settings.get_profile("ci"), max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

PG_HOST = os.environ.get("SABOT_PG_HOST", "127.0.0.1")
PG_PORT = int(os.environ.get("SABOT_PG_PORT", "5432"))
PG_USER = os.environ.get("SABOT_PG_USER", "postgres")
ORPHAN = re.compile(r"sabot_test_(\d+)_[0-9a-f]{8}")
PG_ADMIN_DSN = f"host={PG_HOST} port={PG_PORT} user={PG_USER} dbname=postgres connect_timeout=3"


# Tests that time the server's answers under load (deadlines of a few seconds through a store
# outage): `make test` runs them alone, in one process before the others, so that the second
# process's work does not eat their deadlines (they stay as strict as they are).
ALONE = ("tests/ops/test_outage.py", "tests/ops/test_store_return.py",
         # fills a tablespace of its own: its checkpoint failure fails any DROP DATABASE of
         # another process meanwhile ("checkpoint request failed", CI of 2026-12-02)
         "tests/ops/test_store_full.py")


# The shared PostgreSQL takes 100 connections (97 for tests) and a ``sabot serve`` on it holds
# ~46 (its server's pool, its ledger process's, its read models'): two test processes each
# running one or two servers on it at once ran out ("remaining connection slots are reserved",
# CI of 2026-12-02). A PostgreSQL test of a file that starts servers holds SERVE_LOCK (a file
# lock, shared by every test process on the machine) for its run: one such test at a time.
SERVE_LOCK = Path("/tmp/sabot-tests-pg-serve.lock")
_serving_files: dict[Path, bool] = {}


def sqlite_copy(url: str, path: Path) -> str:
    """A copy of the SQLite store at ``url`` in ``path`` (SQLite's backup, not a file copy:
    what its writers left in the WAL is in the copy too), as a store URL."""
    src = sqlite3.connect(url.removeprefix("sqlite:///"))
    dst = sqlite3.connect(path)
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()
    return f"sqlite:///{path}"


def _starts_servers(path: Path) -> bool:
    """The file runs ``sabot serve`` itself, or through tests/ops/support.py's helpers."""
    if path not in _serving_files:
        text = path.read_text(encoding="utf-8") if path.suffix == ".py" else ""
        _serving_files[path] = '"serve"' in text or (
            path.parent.name == "ops" and "support import" in text)
    return _serving_files[path]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.startswith(ALONE):
            item.add_marker(pytest.mark.alone)
        if item.get_closest_marker("postgres") is not None and _starts_servers(item.path):
            item.add_marker(pytest.mark.pg_serve)


@pytest.fixture(autouse=True)
def _one_postgres_server_test_at_a_time(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.node.get_closest_marker("pg_serve") is None:
        yield
        return
    with SERVE_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def postgres_required() -> bool:
    return os.environ.get("SABOT_REQUIRE_POSTGRES") == "1"


def postgres_unavailable(what: str, detail: str = "") -> NoReturn:
    """PostgreSQL (or a tool of its) is not there: skip the test, or fail it when
    SABOT_REQUIRE_POSTGRES=1. Every PostgreSQL test's one way of saying so."""
    tail = f": {detail}" if detail else ""
    if postgres_required():
        pytest.fail(f"{what} and SABOT_REQUIRE_POSTGRES=1{tail}")
    pytest.skip(f"{what} (set SABOT_REQUIRE_POSTGRES=1 to fail){tail}")


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
        postgres_unavailable("PostgreSQL unreachable", reason)
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


# --- PostgreSQL roles: the owner applies the schema, the server only reads and inserts ---------

OWNER_ROLE = "sabot_test_owner"  # cluster-wide, created if missing, never dropped (shared by runs)
SERVER_ROLE = "sabot_test_server"
READER_ROLE = "sabot_test_reader"


@dataclass(frozen=True)
class RestrictedStore:
    """A schema set up by ``sabot ledger-schema`` as its owner role, for a server role."""

    schema: str
    owner_url: str
    server_url: str
    reader_url: str
    owner_role: str = OWNER_ROLE
    server_role: str = SERVER_ROLE
    reader_role: str = READER_ROLE

    def dsn(self, role: str) -> str:
        return (f"host={PG_HOST} port={PG_PORT} user={role} "
                f"dbname={self.owner_url.rsplit('/', 1)[1].split('?')[0]} "
                f"options=-csearch_path={self.schema}")


def ensure_roles() -> None:
    """The test roles (LOGIN, no other attribute), created once per cluster; concurrent runs
    may create them at the same time."""
    with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as conn:
        for role in (OWNER_ROLE, SERVER_ROLE, READER_ROLE):
            conn.execute(
                f"DO $$ BEGIN CREATE ROLE {role} LOGIN; "
                "EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$")


def restricted_store(database: str, schema: str | None = None) -> RestrictedStore:
    """A fresh schema owned by the owner role, set up by ``sabot ledger-schema`` (as the owner)
    for the server role and the reader role."""
    import argparse

    from services.cli import store as cli

    ensure_roles()
    schema = schema or "r_" + uuid.uuid4().hex[:12]
    with psycopg.connect(f"host={PG_HOST} port={PG_PORT} user={PG_USER} dbname={database}",
                         autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}" AUTHORIZATION {OWNER_ROLE}')

    def url(role: str) -> str:
        return f"postgresql://{role}@{PG_HOST}:{PG_PORT}/{database}?schema={schema}"

    parser = argparse.ArgumentParser(prog="sabot")
    cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["ledger-schema", "--store", url(OWNER_ROLE), "--server-role",
                              SERVER_ROLE, "--reader-role", READER_ROLE])
    assert args.func(args) == 0
    return RestrictedStore(schema, url(OWNER_ROLE), url(SERVER_ROLE), url(READER_ROLE))


@pytest.fixture
def postgres_restricted(postgres_database: str) -> RestrictedStore:
    """A PostgreSQL store whose tables an owner role made; ``server_url`` connects as a role that
    may read and insert, and nothing more."""
    return restricted_store(postgres_database)


@pytest.fixture
def restricted_store_factory(postgres_database: str) -> Callable[[], RestrictedStore]:
    """Makes restricted stores (each a schema of its own) in the session's database."""
    return lambda: restricted_store(postgres_database)


@pytest.fixture(scope="session")
def restricted_setup() -> Callable[[str], RestrictedStore]:
    """``restricted_store`` for session-scoped fixtures that make their own database."""
    return restricted_store


# --- the API tests' real server --------------------------------------------------------------


@pytest.fixture(
    scope="session",
    params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres),
            "sqlite-ledger-process"],
)
def api(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real server on 127.0.0.1 per store (tests/api/conftest.py ``serve_api``): SQLite,
    PostgreSQL as the restricted server role, and SQLite through the ledger process's socket.
    Defined here once, so that tests/api, tests/cuarenta and tests/treinta_y_una share one
    server per store (each a fixture of its own would start three of each)."""
    from api.conftest import serve_api

    yield from serve_api(request, tmp_path_factory)
