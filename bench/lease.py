"""What one writer per store costs (services/ledger/lease.py).

PostgreSQL, the save's fence: the save's table lock taken through ``sabot_lock_events(pid)``
(the lease checked under the lock, as a server role must) against the library's own ``LOCK
TABLE`` (``fence`` off: what an owner role could do without the lease). Alone (a transaction
that only locks, on one connection: the fence's own cost) and in whole saves (one command per
save, deposits through a ledger that does not batch: the worst case, one fence per command), in
alternating rounds of one run; medians over the rounds, and their ratio.

Taking over, each store: a second ledger stands by while the first holds the lease; the time
from the first's ``close`` (a clean stop) to the second deciding, median of a few rounds.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from typing import Any

from psycopg import sql

from bench._support import drop_pg_database, fresh_pg_database
from services.bootstrap import LEDGER_GAMES
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig

KEY = bytes(range(32))
CHAIN_KEY = bytes([0x5A]) * 32  # one evidence key for every ledger of the run
PG_DB = f"sabot_bench_lease_{os.getpid()}"
ROUNDS = 10
SAVES = 100
LOCKS = 500
Row = tuple[str, float]


def _saves_per_s(ledger: Ledger, prefix: str, n: int) -> float:
    start = time.perf_counter()
    for i in range(n):
        ledger.deposit(f"{prefix}-{i}", "ana", 1)
    return n / (time.perf_counter() - start)


def _config(url: str, name: str = "") -> LedgerConfig:
    return LedgerConfig(store_url=url, seal_key=KEY, chain_key=CHAIN_KEY, writer_name=name)


def _locks_per_s(conn: Any, statement: Any, params: tuple[Any, ...], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        with conn.transaction():
            conn.execute(statement, params, prepare=True)
    return n / (time.perf_counter() - start)


def fence_cost(url: str) -> list[Row]:
    ledger = Ledger(_config(url), games=LEDGER_GAMES)
    try:
        ledger.open_account("o", "ana")
        recorder = ledger.app.recorder
        lease = recorder.fence  # type: ignore[attr-defined]
        fenced: list[float] = []
        plain: list[float] = []
        _saves_per_s(ledger, "warm", 50)
        for r in range(ROUNDS):
            recorder.fence = lease  # type: ignore[attr-defined]
            fenced.append(_saves_per_s(ledger, f"f{r}", SAVES))
            recorder.fence = None  # type: ignore[attr-defined]
            plain.append(_saves_per_s(ledger, f"p{r}", SAVES))
        recorder.fence = lease  # type: ignore[attr-defined]
        # the lock alone, on the lease's own connection (it holds the lease)
        conn = lease._conn
        fenced_lock = sql.SQL("SELECT {}.sabot_lock_events(%s)").format(
            sql.Identifier(lease.schema))
        library_lock = sql.SQL("LOCK TABLE {}.sabot_events IN EXCLUSIVE MODE").format(
            sql.Identifier(lease.schema))
        alone_f: list[float] = []
        alone_p: list[float] = []
        with lease._lock:
            for _ in range(ROUNDS):
                alone_f.append(_locks_per_s(conn, fenced_lock, (lease.pid,), LOCKS))
                alone_p.append(_locks_per_s(conn, library_lock, (), LOCKS))
    finally:
        ledger.close()
    f, p = statistics.median(fenced), statistics.median(plain)
    af, ap = statistics.median(alone_f), statistics.median(alone_p)
    return [
        ("lease.postgres.lock_alone_per_s_fenced", af),
        ("lease.postgres.lock_alone_per_s_library", ap),
        ("lease.postgres.fence_us_per_lock", 1e6 * (1 / af - 1 / ap)),
        ("lease.postgres.saves_per_s_fenced", f),
        ("lease.postgres.saves_per_s_library_lock", p),
        ("lease.postgres.fenced_over_library_lock", f / p),  # ~1: the fence is in the noise
    ]


def takeover(url: str, store: str) -> list[Row]:
    waits: list[float] = []
    for r in range(5):
        a = Ledger(_config(url, "a"), batching=True, games=LEDGER_GAMES)
        b = Ledger(_config(url, "b"), batching=True, games=LEDGER_GAMES)
        try:
            a.open_account(f"o{r}", f"p{r}")
            start = time.perf_counter()
            a.close()
            while not b.writer_status()["active"]:
                time.sleep(0.002)
            waits.append(time.perf_counter() - start)
            b.deposit(f"d{r}", f"p{r}", 1)
        finally:
            a.close()
            b.close()
    return [(f"lease.{store}.takeover_after_close_ms", 1000 * statistics.median(waits))]


def run() -> list[Row]:
    rows: list[Row] = []
    tmp = tempfile.mkdtemp(prefix="sabot-bench-lease-")
    try:
        rows += takeover(f"sqlite:///{tmp}/takeover.db", "sqlite")
        pg = fresh_pg_database(PG_DB)
        if pg is None:
            if os.environ.get("SABOT_REQUIRE_POSTGRES") == "1":
                raise RuntimeError("PostgreSQL unreachable and SABOT_REQUIRE_POSTGRES=1")
            return rows
        rows += fence_cost(f"{pg}?schema=public")
        rows += takeover(f"{pg}?schema=public", "postgres")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        drop_pg_database(PG_DB)
    return rows


if __name__ == "__main__":
    for name, value in run():
        print(f"{name:60s} {value:12.2f}")
