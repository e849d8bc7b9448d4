"""The server's notary thread (``Follower``): a checkpoint at every coup end as play goes on, a
checkpoint of the whole log on demand, a clean stop, and a store it cannot reach."""

from __future__ import annotations

import threading
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from services.bootstrap import ROUND_END
from services.regulator.checkpoint import public_key_bytes, verify_checkpoint
from services.regulator.notary import Follower, Notary
from services.regulator.source import Database, EventTable

from .play import Player, make_ledger

KEY = Ed25519PrivateKey.from_private_bytes(b"\x05" * 32)


def test_a_checkpoint_at_every_coup_end_and_on_demand(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    ledger, rng = make_ledger(url, 9)
    follower = Follower(url, KEY, interval=0.05, round_end=ROUND_END).start()
    try:
        assert follower.ready.wait(10)
        player = Player(ledger, rng, "t-follow", "francaise")
        player.open_shoe()
        coups = [player.coup()[0] for _ in range(3)]
        assert follower.sync_now(10)
        cp = follower.checkpoint_now(10)
        assert cp is not None and cp.coup is None
        verify_checkpoint(cp, public_key_bytes(KEY.public_key()))
    finally:
        ledger.close()
        follower.stop()
    assert not follower._thread.is_alive()
    db = Database(url)
    try:
        notary = Notary(db, EventTable(db), None, create=False)
        assert notary.present and notary.size == cp.size
        assert [c.coup for c in notary.checkpoints() if c.coup] == coups
        stored = EventTable(db).read(0, 100_000)
        assert notary.size == len(stored) and notary.position == stored[-1].position
    finally:
        db.close()


def test_an_unreachable_store_is_reported_and_retried(tmp_path: Path) -> None:
    errors: list[BaseException] = []
    seen = threading.Event()

    def on_error(exc: BaseException) -> None:
        errors.append(exc)
        seen.set()

    follower = Follower(f"sqlite:///{tmp_path}/no/such/dir/x.db", KEY, retry=0.05,
                        round_end=ROUND_END,
                        on_error=on_error).start()
    try:
        assert seen.wait(10)
        assert follower.checkpoint_now(0.3) is None and not follower.sync_now(0.3)
    finally:
        follower.stop()
    assert errors and not follower._thread.is_alive()


def test_a_reader_does_not_create_the_tree(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'empty.db'}")
    try:
        notary = Notary(db, EventTable(db), None, create=False)
        assert not notary.present and notary.size == 0
        assert notary.latest_checkpoint() is None and notary.checkpoints() == []
        assert notary.leaf_at_position(1) is None
        assert not db.table_exists("regulator_leaves")
    finally:
        db.close()
