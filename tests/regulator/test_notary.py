"""The notary over a synthetic SQLite event table: same tree as in memory, proofs, checkpoints."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from services.bootstrap import ROUND_END
from services.regulator.checkpoint import public_key_bytes, verify_checkpoint
from services.regulator.merkle import MemoryTree, leaf_hash, verify_consistency, verify_inclusion
from services.regulator.notary import Notary, follow
from services.regulator.source import Database, EventTable, RawEvent

from .play import Player, make_ledger


def make_store(path: Path, n: int, first: int = 0) -> None:
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE IF NOT EXISTS stored_events (originator_id TEXT, originator_version "
        "INTEGER, topic TEXT, state BLOB, PRIMARY KEY (originator_id, originator_version))"
    )
    conn.executemany(
        "INSERT INTO stored_events VALUES (?, ?, ?, ?)",
        [
            (f"agg-{i % 7}", i, "test:End" if i % 10 == 9 else "test:Step",
             json.dumps({"i": i, "coup": f"c{i // 10}"}).encode())
            for i in range(first, first + n)
        ],
    )
    conn.commit()
    conn.close()


def coup_end(ev: RawEvent) -> str | None:
    return str(json.loads(ev.state)["coup"]) if ev.topic == "test:End" else None


def test_notary_matches_memory_tree(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    make_store(store, 95)
    db = Database(f"sqlite:///{store}")
    key = Ed25519PrivateKey.generate()
    pub = public_key_bytes(key.public_key())
    notary = Notary(db, EventTable(db), key, "test", coup_end)
    signed = notary.sync(batch=17)
    assert [c.size for c in signed] == [10 * k for k in range(1, 10)]
    assert [c.coup for c in signed] == [f"c{k}" for k in range(9)]
    events = list(EventTable(db).iterate())
    mem = MemoryTree(leaf_hash(e.leaf()) for e in events)
    assert notary.size == 95 and notary.root() == mem.root()
    for cp in signed:
        verify_checkpoint(cp, pub)
        assert cp.root == mem.root(cp.size)
    assert notary.inclusion_proof(41, 60) == mem.inclusion_proof(41, 60)
    verify_inclusion(mem.leaf(41), 41, 60, notary.inclusion_proof(41, 60), signed[5].root)
    proof = notary.consistency_proof(30, 90)
    verify_consistency(30, 90, signed[2].root, signed[8].root, proof)

    # reopen (frontier loaded from the tables), then more events
    make_store(store, 40, first=95)
    again = Notary(Database(f"sqlite:///{store}"), EventTable(db), key, "test", coup_end)
    assert again.size == 95 and again.latest_checkpoint() == signed[-1]
    more = again.sync()
    assert [c.size for c in more] == [100, 110, 120, 130]
    events = list(EventTable(db).iterate())
    mem = MemoryTree(leaf_hash(e.leaf()) for e in events)
    assert again.root() == mem.root() and more[-1].root == mem.root(130)
    now = again.checkpoint_now()
    assert now is not None and now.size == 135 and now.coup is None


def test_follow_signs_at_every_coup_end(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'live.db'}"
    ledger, rng = make_ledger(url, seed=3)
    key = Ed25519PrivateKey.generate()
    stop = threading.Event()
    thread = threading.Thread(target=follow, args=(url, key, stop, 0.05, "live"),
                              kwargs={"round_end": ROUND_END})
    try:
        player = Player(ledger, rng, "live", "francaise")
        player.open_shoe()
        thread.start()
        coups = [player.coup()[0] for _ in range(4)]
    finally:
        ledger.close()
        stop.set()
        thread.join(timeout=30)
    db = Database(url)
    notary = Notary(db, EventTable(db), None, "live")
    assert [c.coup for c in notary.checkpoints()] == coups
    assert notary.size == len(list(EventTable(db).iterate()))
