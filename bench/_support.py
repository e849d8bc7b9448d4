"""Helpers shared by the benchmark modules (not a benchmark: the runner skips ``_`` modules)."""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

import psycopg

from services.bootstrap import LEDGER_GAMES
from services.ledger.actor import Actor
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig
from services.ledger.writer import UnitOfWork

Row = tuple[str, float]

PG_HOST = os.environ.get("SABOT_PG_HOST", "127.0.0.1")
PG_PORT = int(os.environ.get("SABOT_PG_PORT", "5432"))
PG_USER = os.environ.get("SABOT_PG_USER", "postgres")
PG_ADMIN = f"host={PG_HOST} port={PG_PORT} user={PG_USER} dbname=postgres connect_timeout=3"


def fresh_pg_database(name: str) -> str | None:
    """A new, empty database ``name`` (dropped first if it exists), as a store URL; None if
    PostgreSQL is unreachable."""
    try:
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError:
        return None
    return f"postgresql://{PG_USER}@{PG_HOST}:{PG_PORT}/{name}"


def drop_pg_database(name: str) -> None:
    with suppress(psycopg.OperationalError), psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (nearest rank below), NaN when there is nothing to rank."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def player(name: str) -> Actor:
    """A player principal of its own account, as the games' benchmarks act."""
    return Actor(name, "player", "bench", account=name)


def funded_ledger(url: str, seal_key: bytes, table: tuple[str, str, dict[str, str], str],
                  players: list[str], balance: int = 10**10) -> tuple[Ledger, RequestIds]:
    """A ledger on ``url`` with one table open (``table``: id, variant, rules, game) and an
    account of ``balance`` per player, and the request ids it was opened with (go on with them:
    a fresh id per call)."""
    ledger = Ledger(LedgerConfig(store_url=url, seal_key=seal_key), games=LEDGER_GAMES)
    rid = RequestIds()
    try:
        ledger.open_table(rid(), *table)
        for p in players:
            ledger.open_account(rid(), p)
            ledger.deposit(rid(), p, balance)
    except BaseException:
        ledger.close()
        raise
    return ledger, rid


class RequestIds:
    """``b1``, ``b2``, …: a fresh request id per call."""

    def __init__(self) -> None:
        self.k = 0

    def __call__(self) -> str:
        self.k += 1
        return f"b{self.k}"


@dataclasses.dataclass(frozen=True)
class Nothing:
    done: bool


def _nothing(unit: UnitOfWork) -> Nothing:
    return Nothing(True)


def noop_floor(ledger: Ledger, commands: int, rid: Callable[[], str]) -> float:
    """Seconds for ``commands`` commands through the same single writer, each deciding nothing
    (a request stored, no game event): the floor a game's rate is set beside."""
    t1 = time.perf_counter()
    for _ in range(commands):
        ledger._run("noop", rid(), {}, _nothing, Nothing)
    return time.perf_counter() - t1


class Floor:
    """The no-op floor measured interleaved: ``after()`` runs one no-op (``noop_floor``) right
    after each command the benchmark counts, so the floor is taken at the same moment as the
    game, not in a phase of its own (on a shared machine the store's speed drifts 2x between
    phases). ``seconds``: the no-ops' time, to take off the run's; ``rate``: commands/s."""

    def __init__(self, ledger: Ledger, rid: Callable[[], str]) -> None:
        self.ledger = ledger
        self.rid = rid
        self.commands = 0
        self.seconds = 0.0

    def after(self) -> None:
        self.seconds += noop_floor(self.ledger, 1, self.rid)
        self.commands += 1

    @property
    def rate(self) -> float:
        return self.commands / self.seconds


def on_each_store(label: str, pg_db: str, bench: Callable[[str, str], list[Row]]) -> list[Row]:
    """``bench(url, store)`` on a fresh SQLite file, then on a fresh PostgreSQL database (when
    reachable; an error when SABOT_REQUIRE_POSTGRES=1 and it is not)."""
    rows: list[Row] = []
    tmp = tempfile.mkdtemp(prefix=f"sabot-bench-{label}-")
    try:
        rows += bench(f"sqlite:///{tmp}/{label}.db", "sqlite")
        pg = fresh_pg_database(pg_db)
        if pg is not None:
            rows += bench(f"{pg}?schema=public", "postgres")
        elif os.environ.get("SABOT_REQUIRE_POSTGRES") == "1":
            raise RuntimeError("PostgreSQL unreachable and SABOT_REQUIRE_POSTGRES=1")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        drop_pg_database(pg_db)
    return rows


# --- histories built once, kept outside the repository --------------------------------------

CACHE = Path(os.environ.get("SABOT_BENCH_CACHE", "/var/tmp/sabot-bench"))


def cached_store(name: str, build: Callable[[str], dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """A SQLite store kept in ``CACHE`` (env SABOT_BENCH_CACHE, default /var/tmp/sabot-bench)
    as ``<name>.db``, with what ``build`` returned about it (JSON, ``<name>.json``, written last:
    a store without it was not finished and is built again): built the first time
    (``build(url)`` on a fresh file), reused afterwards. ``name`` should carry a version: a
    builder that changes what it builds takes a new name. Two runs at once build it once (a
    lock file). Returns the store's URL and the facts."""
    CACHE.mkdir(parents=True, exist_ok=True)
    db, facts = CACHE / f"{name}.db", CACHE / f"{name}.json"
    with (CACHE / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not facts.exists():
            for stale in CACHE.glob(f"{name}.db*"):  # an unfinished build, its side files
                stale.unlink()
            made = build(f"sqlite:///{db}")
            facts.write_text(json.dumps(made))
    return f"sqlite:///{db}", json.loads(facts.read_text())
