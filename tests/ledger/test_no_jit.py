"""Every PostgreSQL session the ledger and the regulator's reads open runs without the server's
JIT compiler: their statements read a few rows by index, and on a large log whose statistics
lag a plan's estimate can pass ``jit_above_cost``. Measured on a 10^6-event log before ANALYZE
(bench.replay_sizes, 2026-12-02 17:52 UTC): a coup's replay spent 45 ms compiling a 32-range
read of 0.2 ms, 60-118 ms a replay against 10-22 ms without JIT."""

from __future__ import annotations

import pytest
from psycopg_pool import ConnectionPool

from services.bootstrap import LEDGER_GAMES
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig
from services.regulator.source import Database


@pytest.mark.postgres
def test_the_ledgers_sessions_run_without_jit(postgres_store_url: str) -> None:
    ledger = Ledger(LedgerConfig(store_url=postgres_store_url, seal_key=bytes(32)),
                    games=LEDGER_GAMES)
    try:
        pool = ledger.app.recorder.datastore.pool  # type: ignore[attr-defined]
        assert isinstance(pool, ConnectionPool)
        with pool.connection() as conn:
            # the library's connections return rows as dicts
            assert conn.execute("SHOW jit").fetchone() == {"jit": "off"}
            # the timeouts set through the same libpq options are still set
            assert conn.execute("SHOW lock_timeout").fetchone() not in (None, {"lock_timeout": "0"})
    finally:
        ledger.close()


@pytest.mark.postgres
def test_the_regulators_reads_run_without_jit(postgres_store_url: str) -> None:
    db = Database(postgres_store_url)
    try:
        assert db.rows("SHOW jit") == [("off",)]
    finally:
        db.close()
