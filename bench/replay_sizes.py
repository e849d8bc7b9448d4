"""A coup's replay with its verdict at 10^3, 10^5 and 10^6 events of history (issue 25 item 5:
"replay at a click", <= 10 ms in process at 10^6).

Each history is a SQLite store built once and kept outside the repository (``bench._support
.cached_store``: ``$SABOT_BENCH_CACHE``, default /var/tmp/sabot-bench): filler events of another
aggregate written straight into the event table, then a real shoe played through the ledger
(``bench.replay``'s: 4 players, one table, to the cut card), notarised. The coup replayed is the
shoe's middle one: ``Replayer.coup`` (what ``sabot regulator replay-coup`` and ReplayCoup run)
and ``verdict``, in process:
- ``cold``: with nothing remembered from an earlier replay (the shoe's order, the links'
  signatures: as a regulator's first click);
- ``warm``: the same coup again (the shuffle and the links' signatures remembered; every event
  still read and hashed, the notary's leaves and the chain still compared);
- ``floor``: the coup's own events read by aggregate id and their Merkle leaves hashed (no
  check, no recomputation): what any verdict on the coup reads at least.
Wall time and processor time (ms), medians of ``ROUNDS``; ``x_floor``: warm over floor;
``x_smallest``: this size's warm over the smallest size's (1.0: flat in history).
``SABOT_BENCH_REPLAY_SIZES`` (default ``1000,100000,1000000``) changes the sizes.

The same on PostgreSQL (``replay_sizes.postgres.<size>``, ``SABOT_BENCH_REPLAY_PG_SIZES``,
default ``1000,1000000``; skipped when PostgreSQL is unreachable, an error under
``SABOT_REQUIRE_POSTGRES=1``): a database per size kept in the cluster of ``SABOT_PG_PORT``
(``sabot_bench_replay_v1_<size>``, with its facts in a table ``bench_facts``: built once, the
filler copied straight into the event table), as the SQLite stores are kept on disk.
``python -m bench.replay_sizes`` prints the rows.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any
from uuid import UUID

import psycopg
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from bench._support import PG_ADMIN, PG_HOST, PG_PORT, PG_USER, cached_store
from bench.replay import _filler, _play_shoe
from services.bootstrap import LEDGER_GAMES, REGULATOR_GAMES, ROUND_END
from services.ledger import evidence
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig
from services.regulator import chain, replay, vocabulary
from services.regulator.merkle import leaf_hash
from services.regulator.notary import Notary
from services.regulator.replay import Replayer, verdict
from services.regulator.source import Database, EventTable

Row = tuple[str, float]
ROUNDS = 9
NOTARY_KEY = Ed25519PrivateKey.from_private_bytes(bytes([0x51]) * 32)
SHOE_EVENTS = 1_700  # about what the played shoe adds to the filler


def _build(size: int) -> Callable[[str], dict[str, Any]]:
    def build(url: str) -> dict[str, Any]:
        # creates the table
        Ledger(LedgerConfig(store_url=url, seal_key=bytes(32)), games=LEDGER_GAMES).close()
        _filler(url.removeprefix("sqlite:///"), max(0, size - SHOE_EVENTS))
        return _finish(url)

    return build


def _timed(fn: Callable[[], Any], before: Callable[[], None] | None = None
           ) -> tuple[float, float]:
    """Median wall and processor milliseconds of ``ROUNDS`` calls (``before`` each, untimed)."""
    wall, cpu = [], []
    for _ in range(ROUNDS):
        if before is not None:
            before()
        w, c = time.perf_counter(), time.process_time()
        fn()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return 1000 * statistics.median(wall), 1000 * statistics.median(cpu)


def _forget() -> None:
    """What a replay remembers for the next: the shoes' orders, the links parsed and checked,
    the events' states decoded, the ids' bytes, topics and keys met (a tree without them,
    measured with this module for comparison, has nothing to forget)."""
    sabot = getattr(replay, "_sabot", None)
    if sabot is not None:
        sabot.cache_clear()
    for memo in ("_CHECKED", "_PARSED", "_IDS", "_TOPICS"):
        getattr(chain, memo, {}).clear()
    getattr(evidence, "_RAW", {}).clear()
    getattr(replay, "_QUOTED", {}).clear()
    decoded = getattr(vocabulary, "_decoded", None)
    if decoded is not None:
        decoded.cache_clear()


def _pg_store(size: int) -> tuple[str, dict[str, Any]] | None:
    """The PostgreSQL history of ``size`` events (built the first time), or None when
    PostgreSQL is unreachable."""
    name = f"sabot_bench_replay_v1_{size}"
    url = f"postgresql://{PG_USER}@{PG_HOST}:{PG_PORT}/{name}?schema=public"
    try:
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            there = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
            if there is None:
                conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError:
        if os.environ.get("SABOT_REQUIRE_POSTGRES") == "1":
            raise
        return None
    conninfo = f"host={PG_HOST} port={PG_PORT} user={PG_USER} dbname={name}"
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bench_facts (facts TEXT NOT NULL)")
        row = conn.execute("SELECT facts FROM bench_facts").fetchone()
        if row is not None:
            return url, dict(json.loads(row[0]))
    Ledger(LedgerConfig(store_url=url, seal_key=bytes(32)), games=LEDGER_GAMES).close()
    state = (b'{"timestamp":{"_type_":"datetime_iso","_data_":"2026-01-01T00:00:00+00:00"},'
             b'"note":"filler"}')
    with psycopg.connect(conninfo) as conn, conn.cursor() as cur, cur.copy(
            "COPY sabot_events (originator_id, originator_version, topic, state) FROM STDIN"
    ) as copy:
        for i in range(max(0, size - SHOE_EVENTS)):
            copy.write_row((UUID(int=i + 1), 1, "bench:Filler", state))
    facts = _finish(url)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("INSERT INTO bench_facts (facts) VALUES (%s)", (json.dumps(facts),))
    return url, facts


def _finish(url: str) -> dict[str, Any]:
    """The shoe played after the filler, notarised: the facts kept about the store."""
    shoe_id, coups = _play_shoe(url)
    db = Database(url)
    try:
        events = EventTable(db)
        notary = Notary(db, events, NOTARY_KEY, "bench", ROUND_END)
        notary.sync(batch=20_000)
        notary.checkpoint_now()
        return {"shoe_id": shoe_id, "coups": coups, "events": notary.size}
    finally:
        db.close()


def _one(size: int, store: str = "sqlite") -> tuple[str, dict[str, float]] | None:
    if store == "sqlite":
        url, facts = cached_store(f"replay-history-v1-{size}", _build(size))
    else:
        found = _pg_store(size)
        if found is None:
            return None
        url, facts = found
    db = Database(url)
    try:
        events = EventTable(db)
        notary = Notary(db, events, NOTARY_KEY, "bench", ROUND_END, create=False)
        replayer = Replayer(events, notary, games=REGULATOR_GAMES)
        coup = str(facts["coups"][len(facts["coups"]) // 2])
        v = verdict(replayer.coup(coup))
        assert v.identical, str(v)

        def replay_coup() -> None:
            verdict(replayer.coup(coup))

        def floor() -> None:
            for ev in events.by_originator(UUID(coup)):
                leaf_hash(ev.leaf())

        got = {"events_stored": float(facts["events"]), "steps": float(v.steps)}
        for label, fn, before in (("cold", replay_coup, _forget), ("warm", replay_coup, None),
                                  ("floor", floor, None)):
            got[f"{label}_ms"], got[f"{label}_cpu_ms"] = _timed(fn, before)
        return (f"replay_sizes.{size}" if store == "sqlite"
                else f"replay_sizes.{store}.{size}"), got
    finally:
        db.close()


def run() -> list[Row]:
    sizes = [int(s) for s in os.environ.get(
        "SABOT_BENCH_REPLAY_SIZES", "1000,100000,1000000").split(",")]
    pg_sizes = [int(s) for s in os.environ.get(
        "SABOT_BENCH_REPLAY_PG_SIZES", "1000,1000000").split(",") if s]
    rows: list[Row] = []
    for store, wanted in (("sqlite", sizes), ("postgres", pg_sizes)):
        measured = [m for m in (_one(size, store) for size in wanted) if m is not None]
        if not measured:
            continue
        smallest = measured[0][1]["warm_cpu_ms"]
        for prefix, got in measured:
            rows += [(f"{prefix}.{k}", v) for k, v in got.items()]
            rows.append((f"{prefix}.warm_x_floor", got["warm_cpu_ms"] / got["floor_cpu_ms"]))
            rows.append((f"{prefix}.warm_x_smallest", got["warm_cpu_ms"] / smallest))
    return rows


if __name__ == "__main__":
    for name, value in run():
        print(f"{name:50s} {value:12.3f}")
