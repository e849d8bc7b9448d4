"""Ledger benchmarks: a full shoe with 8 players on each store (events/s, commands/s, p50/p99 of
placing a stake), and stakes/s from 32 concurrent clients through the batching writer.

``run()`` returns rows of (name, value); ``python -m bench.ledger`` prints them.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable

from bench._support import drop_pg_database, fresh_pg_database, percentile
from services.bootstrap import LEDGER_GAMES
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig

KEY = bytes(range(32))
PLAYERS = [f"p{i}" for i in range(8)]
CHANCES = ("noir", "rouge", "couleur", "inverse")
PG_DB = f"sabot_bench_ledger_{os.getpid()}"  # per run: parallel runs must not drop it

Row = tuple[str, float]


def _pg_url() -> str | None:
    return fresh_pg_database(PG_DB)


def full_shoe(url: str, store: str) -> list[Row]:
    """One table, 8 players, a 6-deck shoe played to the cut card; one stake per player per
    coup (row chances for even players, colour chances for odd ones)."""
    ledger = Ledger(LedgerConfig(store_url=url, seal_key=KEY), games=LEDGER_GAMES)
    n = 0

    def rid() -> str:
        nonlocal n
        n += 1
        return f"b{n}"

    ledger.open_table(rid(), "bench", "francaise")
    for p in PLAYERS:
        ledger.open_account(rid(), p)
        ledger.deposit(rid(), p, 10**9)
    start_events = ledger.app.recorder.max_notification_id() or 0
    commands = 0
    stake_latencies: list[float] = []
    t0 = time.perf_counter()
    shoe = ledger.open_shoe(rid(), "bench")
    ledger.cut(rid(), shoe.shoe_id, 156, "p0")
    commands += 2
    coups = 0
    while not ledger.get_shoe(shoe.shoe_id).cut_card_reached:
        coup = ledger.open_coup(rid(), "bench")
        commands += 1
        for i, p in enumerate(PLAYERS):
            if any(s.account_id == p for s in coup.layout):
                continue  # a stake carried over (void coup, partage, prison)
            chance = CHANCES[(i % 2) * 2 + coups % 2]
            s = time.perf_counter()
            ledger.place_stake(rid(), coup.coup_id, p, chance, 1000)
            stake_latencies.append(time.perf_counter() - s)
            commands += 1
        ledger.close_betting(rid(), coup.coup_id)
        ledger.deal(rid(), coup.coup_id)
        ledger.settle(rid(), coup.coup_id)
        commands += 3
        coups += 1
    ledger.close_shoe(rid(), shoe.shoe_id)
    commands += 1
    elapsed = time.perf_counter() - t0
    events = (ledger.app.recorder.max_notification_id() or 0) - start_events
    ledger.close()
    prefix = f"ledger.{store}.full_shoe_8_players"
    return [
        (f"{prefix}.coups", float(coups)),
        (f"{prefix}.events", float(events)),
        (f"{prefix}.events_per_s", events / elapsed),
        (f"{prefix}.commands_per_s", commands / elapsed),
        (f"{prefix}.place_stake_p50_ms", 1000 * statistics.median(stake_latencies)),
        (f"{prefix}.place_stake_p99_ms", 1000 * percentile(stake_latencies, 0.99)),
    ]


def concurrent_stakes(url: str, store: str, clients: int = 32, per_client: int = 40) -> list[Row]:
    """``clients`` threads (4 tables x 8 players) place stakes at once through the batching
    writer: stakes per second and the p50/p99 latency a client sees."""
    ledger = Ledger(LedgerConfig(store_url=url, seal_key=KEY), batching=True, games=LEDGER_GAMES)
    tables = [f"c{t}" for t in range(max(1, clients // 8))]
    coups: dict[str, str] = {}
    for table in tables:
        ledger.open_table(f"{table}-o", table, "francaise", {"allow_opposed_stakes": "true"})
        shoe = ledger.open_shoe(f"{table}-s", table)
        ledger.cut(f"{table}-c", shoe.shoe_id, 100, "croupier")
        coups[table] = ledger.open_coup(f"{table}-oc", table).coup_id
    players = [f"{tables[i % len(tables)]}-p{i}" for i in range(clients)]
    for p in players:
        ledger.open_account(f"{p}-a", p)
        ledger.deposit(f"{p}-d", p, 10**9)
    latencies: list[list[float]] = [[] for _ in players]
    barrier = threading.Barrier(clients + 1)

    def client(i: int) -> None:
        p = players[i]
        coup = coups[p.split("-")[0]]
        barrier.wait()
        for k in range(per_client):
            s = time.perf_counter()
            ledger.place_stake(f"{p}-{k}", coup, p, CHANCES[k % 4], 100)
            latencies[i].append(time.perf_counter() - s)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    ledger.close()
    flat = [x for xs in latencies for x in xs]
    prefix = f"ledger.{store}.batched_{clients}_clients"
    return [
        (f"{prefix}.stakes_per_s", len(flat) / elapsed),
        (f"{prefix}.place_stake_p50_ms", 1000 * statistics.median(flat)),
        (f"{prefix}.place_stake_p99_ms", 1000 * percentile(flat, 0.99)),
    ]


def run() -> list[Row]:
    rows: list[Row] = []
    tmp = tempfile.mkdtemp(prefix="sabot-bench-")
    try:
        stores: list[tuple[str, Callable[[str], str]]] = [
            ("sqlite", lambda name: f"sqlite:///{tmp}/{name}.db")
        ]
        pg = _pg_url()
        if pg is not None:
            stores.append(("postgres", lambda name: f"{pg}?schema=public"))
        elif os.environ.get("SABOT_REQUIRE_POSTGRES") == "1":
            raise RuntimeError("PostgreSQL unreachable and SABOT_REQUIRE_POSTGRES=1")
        for store, url in stores:
            rows += full_shoe(url("shoe"), store)
            if store == "postgres":
                _pg_url()  # a fresh database for the next run
            rows += concurrent_stakes(url("concurrent"), store)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        drop_pg_database(PG_DB)
    return rows


if __name__ == "__main__":
    for name, value in run():
        print(f"{name:60s} {value:12.2f}")
