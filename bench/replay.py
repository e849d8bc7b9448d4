"""Regulator benchmarks: notarising the log, replaying and verifying one coup with about 10^3 and
10^6 events stored (they should be close: proofs read O(log² n) nodes), and a whole shoe.

The store is SQLite: the large log is filler events written straight into the event table, then
a real shoe played through the ledger. ``SABOT_BENCH_REPLAY_EVENTS`` changes the large size.
``run()`` returns rows of (name, value); ``python -m bench.replay`` prints them.
"""

from __future__ import annotations

import io
import os
import random
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sabot_verify.__main__ import run as verify_export

from services.bootstrap import LEDGER_GAMES, REGULATOR_GAMES, ROUND_END
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig
from services.regulator.checkpoint import public_key_bytes
from services.regulator.export import write_export
from services.regulator.merkle import leaf_hash, verify_consistency, verify_inclusion
from services.regulator.notary import Notary
from services.regulator.replay import Replayer, verdict
from services.regulator.source import Database, EventTable

CHAIN_KEY = bytes([0x3B]) * 32  # the evidence chain's key, pinned by the verifier
CHAIN_PUBLIC = Ed25519PrivateKey.from_private_bytes(CHAIN_KEY).public_key().public_bytes_raw()

Row = tuple[str, float]


def _median_ms(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1000 * statistics.median(times)


def _filler(path: str, n: int) -> None:
    """``n`` events of another aggregate type, straight into the event table."""
    state = (
        b'{"timestamp":{"_type_":"datetime_iso","_data_":"2026-01-01T00:00:00+00:00"},'
        b'"note":"filler"}'
    )
    with sqlite3.connect(path) as conn:
        step = 50_000
        for a in range(0, n, step):
            conn.executemany(
                "INSERT INTO stored_events VALUES (?, ?, ?, ?)",
                (
                    (UUID(int=i + 1).hex, 1, "bench:Filler", state)
                    for i in range(a, min(n, a + step))
                ),
            )


def _play_shoe(url: str) -> tuple[str, list[str]]:
    rng = random.Random(3)
    clock = [datetime(2026, 1, 2, tzinfo=UTC)]

    def now() -> datetime:
        clock[0] += timedelta(seconds=1)
        return clock[0]

    ledger = Ledger(LedgerConfig(
        store_url=url, seal_key=bytes(32), clock=now,
        new_id=lambda: UUID(int=rng.getrandbits(128), version=4),
        new_seed=lambda: rng.randbytes(32), chain_key=CHAIN_KEY,
    ), games=LEDGER_GAMES)
    n = 0

    def rid() -> str:
        nonlocal n
        n += 1
        return f"b{n}"

    try:
        ledger.open_table(rid(), "bench", "francaise")
        players = [f"p{i}" for i in range(4)]
        for p in players:
            ledger.open_account(rid(), p)
            ledger.deposit(rid(), p, 10**9)
        shoe = ledger.open_shoe(rid(), "bench")
        ledger.cut(rid(), shoe.shoe_id, 150, "p0")
        coups = []
        while True:
            cid = ledger.open_coup(rid(), "bench").coup_id
            busy = {s.account_id for s in ledger.get_table("bench").layout}
            for p in players:
                if p not in busy:
                    chance = rng.choice(["noir", "rouge"])
                    ledger.place_stake(rid(), cid, p, chance, 100 * rng.randint(1, 20))
            end = ledger.deal(rid(), cid).cut_card_reached
            ledger.settle(rid(), cid)
            coups.append(cid)
            if end:
                break
        ledger.close_shoe(rid(), shoe.shoe_id)
        return shoe.shoe_id, coups
    finally:
        ledger.close()


def _one_size(tmp: str, filler: int, label: str) -> list[Row]:
    path = f"{tmp}/{label}.db"
    url = f"sqlite:///{path}"
    Ledger(LedgerConfig(store_url=url, seal_key=bytes(32)),
           games=LEDGER_GAMES).close()  # creates the table
    _filler(path, filler)
    shoe_id, coups = _play_shoe(url)
    db = Database(url)
    events = EventTable(db)
    key = Ed25519PrivateKey.generate()
    notary = Notary(db, events, key, "bench", ROUND_END)
    t = time.perf_counter()
    notary.sync(batch=20_000)
    sync_s = time.perf_counter() - t
    head = notary.checkpoint_now()
    assert head is not None
    size = notary.size
    rows: list[Row] = [
        (f"replay.{label}.events_stored", float(size)),
        (f"replay.{label}.notarise_events_per_s", size / sync_s),
    ]
    replayer = Replayer(events, notary, games=REGULATOR_GAMES)
    coup = coups[len(coups) // 2]
    v = verdict(replayer.coup(coup))
    assert v.identical, str(v)
    rows.append((f"replay.{label}.replay_one_coup_ms",
                 _median_ms(lambda: verdict(replayer.coup(coup)), 5)))

    coup_events = events.by_originator(UUID(coup))

    def verify_coup() -> None:
        for ev in coup_events:
            leaf = notary.leaf_at_position(ev.position)
            assert leaf is not None and leaf[1] == leaf_hash(ev.leaf())
            proof = notary.inclusion_proof(leaf[0], head.size)
            verify_inclusion(leaf[1], leaf[0], head.size, proof, head.root)

    rows.append((f"replay.{label}.verify_one_coup_proofs_ms", _median_ms(verify_coup, 5)))
    rows.append((f"replay.{label}.coup_events", float(len(coup_events))))
    mid = size // 2
    rows.append((f"replay.{label}.inclusion_proof_ms",
                 _median_ms(lambda: notary.inclusion_proof(mid, size), 20)))
    old = notary.checkpoints()[0]

    def consistency() -> None:
        proof = notary.consistency_proof(old.size, head.size)
        verify_consistency(old.size, head.size, old.root, head.root, proof)

    rows.append((f"replay.{label}.consistency_proof_ms", _median_ms(consistency, 20)))
    rows.append((f"replay.{label}.replay_whole_shoe_ms",
                 _median_ms(lambda: verdict(replayer.shoe(shoe_id)), 3)))

    def export_and_verify() -> None:
        buf = io.StringIO()
        write_export(buf, events, notary, public_key_bytes(key.public_key()), shoe_ids=[shoe_id])
        out = io.StringIO()
        code = verify_export(buf.getvalue().splitlines(),
                             checkpoint_key=public_key_bytes(key.public_key()), out=out,
                             chain_keys=[CHAIN_PUBLIC])
        assert code == 0, out.getvalue()

    rows.append((f"replay.{label}.export_and_verify_shoe_ms", _median_ms(export_and_verify, 3)))
    rows.append((f"replay.{label}.shoe_coups", float(len(coups))))
    db.close()
    return rows


def run() -> list[Row]:
    large = int(os.environ.get("SABOT_BENCH_REPLAY_EVENTS", "1000000"))
    tmp = tempfile.mkdtemp(prefix="sabot-bench-replay-")
    try:
        rows = _one_size(tmp, 0, "small")
        rows += _one_size(tmp, max(0, large - 1_700), "large")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


if __name__ == "__main__":
    for name, value in run():
        print(f"{name:60s} {value:12.2f}")
