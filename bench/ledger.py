"""Ledger benchmarks: a full shoe with 8 players on each store (events/s, commands/s, p50/p99 of
placing a stake), and stakes/s from 32 concurrent clients through the batching writer.

``ledger.<store>.raw_inserts``: the floor under the latter, the same rows inserted raw (read
back from the store after the run: every event the stakes stored, their requests and the
evidence chain's links) in the same transactions (split where each save ended: its link),
into a fresh table of the same shape on the same store, by one thread (``executemany``, one
commit per transaction); ``.ledger_ratio``: the ledger's stakes/s over the raw inserts'
stakes/s (the same stakes' rows).

``ledger.<store>.stake_batch_50.cpu_us_per_stake``: the ledger's own processor time per batched
stake, in process on one thread (``stake_batch`` of 50 places, 8 players on 8 coups, 16 batches
to warm up, then ``BATCHES`` measured; no socket, no writer thread): the figure that moves least
with the machine's load. Under callgrind (``SABOT_BENCH_CALLGRIND=1 SABOT_BENCH_LEDGER=batch
valgrind --tool=callgrind --instr-atstart=no python -m bench.ledger``) only those batches are
instrumented (``callgrind_control -i on/off``): instruction counts that do not move at all.
``SABOT_BENCH_LEDGER=batch``: only that row.

``run()`` returns rows of (name, value); ``python -m bench.ledger`` prints them.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable

import psycopg

from bench._support import drop_pg_database, fresh_pg_database, percentile, player
from services.bootstrap import LEDGER_GAMES
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig
from services.trente_et_quarante.commands import TrenteEtQuaranteLedger

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
    start = int(ledger.app.recorder.max_notification_id() or 0)
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
    rate = len(flat) / elapsed
    raw = raw_inserts(url, store, start)
    raw_rate = len(flat) / raw[1] if raw[1] else float("nan")
    return [
        (f"{prefix}.stakes_per_s", rate),
        (f"{prefix}.place_stake_p50_ms", 1000 * statistics.median(flat)),
        (f"{prefix}.place_stake_p99_ms", 1000 * percentile(flat, 0.99)),
        (f"ledger.{store}.raw_inserts.rows", float(raw[0])),
        (f"ledger.{store}.raw_inserts.transactions", float(raw[2])),
        (f"ledger.{store}.raw_inserts.stakes_per_s", raw_rate),
        (f"ledger.{store}.raw_inserts.ledger_ratio", rate / raw_rate),
    ]


BATCHES = 40  # measured batches of ``stake_batches``


def stake_batches(url: str, store: str, batches: int = BATCHES) -> list[Row]:
    """Processor time per stake of ``stake_batch`` of 50 places in process, one thread (see
    the module's text)."""
    ledger = Ledger(LedgerConfig(store_url=url, seal_key=KEY), games=LEDGER_GAMES)
    coups = []
    for t in range(8):
        ledger.open_table(f"s{t}-o", f"s{t}", "francaise")
        shoe = ledger.open_shoe(f"s{t}-s", f"s{t}")
        ledger.cut(f"s{t}-c", shoe.shoe_id, 100, "croupier")
        coups.append(ledger.game(TrenteEtQuaranteLedger).open_coup(f"s{t}-oc", f"s{t}").coup_id)
    for p in PLAYERS:
        ledger.open_account(f"{p}-a", p)
        ledger.deposit(f"{p}-d", p, 10**12)
    game = ledger.game(TrenteEtQuaranteLedger)
    actors = [player(p) for p in PLAYERS]

    def one(k: int) -> None:
        i = k % len(PLAYERS)
        items: list[dict[str, object]] = [
            {"action": "place", "account_id": PLAYERS[i], "chance": CHANCES[2 * (j % 2)],
             "amount": 100, "stake_id": None, "choice": None} for j in range(50)]
        game.stake_batch(f"sb{k}", coups[i], items, False, actor=actors[i])

    for k in range(16):
        one(k)
    callgrind = os.environ.get("SABOT_BENCH_CALLGRIND") == "1"
    if callgrind:
        subprocess.run(["callgrind_control", "-i", "on", str(os.getpid())], check=False,
                       capture_output=True)
    t0 = time.process_time()
    for k in range(16, 16 + batches):
        one(k)
    cpu = time.process_time() - t0
    if callgrind:
        subprocess.run(["callgrind_control", "-i", "off", str(os.getpid())], check=False,
                       capture_output=True)
    ledger.close()
    return [(f"ledger.{store}.stake_batch_50.cpu_us_per_stake", 1e6 * cpu / (50 * batches))]


LINK_TOPIC = "sabot.ledger:Chain.Linked"  # the last event of each save (its evidence link)


def _batches(rows: list[tuple[object, ...]]) -> list[list[tuple[object, ...]]]:
    """Rows (originator_id, originator_version, topic, state) in log order, cut after each
    link: one list per transaction the writer committed."""
    batches: list[list[tuple[object, ...]]] = [[]]
    for row in rows:
        batches[-1].append(row)
        if row[2] == LINK_TOPIC:
            batches.append([])
    return [b for b in batches if b]


def raw_inserts(url: str, store: str, after: int) -> tuple[int, float, int]:
    """The rows the store holds after position ``after``, inserted again raw in the same
    transactions into a fresh table of the same shape on the same store: (rows, seconds,
    transactions)."""
    if store == "sqlite":
        path = url.removeprefix("sqlite:///")
        with sqlite3.connect(path) as source:
            rows = source.execute(
                "SELECT originator_id, originator_version, topic, state FROM stored_events "
                "WHERE rowid > ? ORDER BY rowid", (after,)).fetchall()
            ddl = [sql for (sql,) in source.execute(
                "SELECT sql FROM sqlite_master WHERE tbl_name = 'stored_events' AND sql "
                "IS NOT NULL")]
        batches = _batches(rows)
        target = path + ".raw"
        conn = sqlite3.connect(target, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")  # as the eventsourcing store runs
            for sql in ddl:
                conn.execute(sql)
            t0 = time.perf_counter()
            for batch in batches:
                conn.execute("BEGIN")
                conn.executemany(
                    "INSERT INTO stored_events (originator_id, originator_version, topic, "
                    "state) VALUES (?, ?, ?, ?)", batch)
                conn.execute("COMMIT")
            seconds = time.perf_counter() - t0
        finally:
            conn.close()
        return len(rows), seconds, len(batches)
    dsn = url.split("?", 1)[0]
    with psycopg.connect(dsn) as pg:
        rows = pg.execute(
            "SELECT originator_id, originator_version, topic, state FROM sabot_events "
            "WHERE notification_id > %s ORDER BY notification_id", (after,)).fetchall()
        pg.execute("DROP TABLE IF EXISTS bench_raw_events")
        pg.execute("CREATE TABLE bench_raw_events (LIKE sabot_events INCLUDING ALL)")
        pg.commit()
        batches = _batches(rows)
        t0 = time.perf_counter()
        for batch in batches:
            with pg.transaction(), pg.cursor() as cur:
                cur.executemany(
                    "INSERT INTO bench_raw_events (originator_id, originator_version, topic, "
                    "state) VALUES (%s, %s, %s, %s)", batch)
        seconds = time.perf_counter() - t0
        pg.execute("DROP TABLE bench_raw_events")
        pg.commit()
    return len(rows), seconds, len(batches)


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
        only_batch = os.environ.get("SABOT_BENCH_LEDGER") == "batch"
        for store, url in stores:
            if not only_batch:
                rows += full_shoe(url("shoe"), store)
                if store == "postgres":
                    _pg_url()  # a fresh database for the next run
                rows += concurrent_stakes(url("concurrent"), store)
                if store == "postgres":
                    _pg_url()
            rows += stake_batches(url("batches"), store)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        drop_pg_database(PG_DB)
    return rows


if __name__ == "__main__":
    for name, value in run():
        print(f"{name:60s} {value:12.2f}")
