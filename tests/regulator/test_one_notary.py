"""Only one notary may write a store: a second one stands by and takes over when the first stops
(or, on PostgreSQL, when its process is killed and its session ends); one-off writers are refused.
The tree is then checked leaf by leaf, checkpoint by checkpoint, and by ``sabot-verify``."""

from __future__ import annotations

import io
import itertools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from sabot_verify.__main__ import run

from services.bootstrap import ROUND_END
from services.regulator import merkle
from services.regulator.checkpoint import public_key_bytes, verify_checkpoint
from services.regulator.export import write_export
from services.regulator.notary import Follower, Notary, NotaryBusy
from services.regulator.source import Database, EventTable
from services.regulator.writer_lock import WriterLock

from .conftest import fresh_pg_database, postgres_or_skip, sabot
from .play import CHAIN_PUBLIC, Player, make_ledger

KEY = Ed25519PrivateKey.from_private_bytes(b"\x07" * 32)
PUBLIC = public_key_bytes(KEY.public_key())
PG_DB = f"sabot_test_{os.getpid()}_7e9a1a71"  # per test process (a shared cluster)
ROOT = Path(__file__).resolve().parents[2]


def check_tree(url: str, coups: list[str]) -> None:
    """One leaf per stored event, in order; every checkpoint signed, over the tree's root and
    consistent with the one before; one coup checkpoint per coup, in order; the export verifies."""
    db = Database(url)
    try:
        notary = Notary(db, EventTable(db), None, create=False)
        stored = EventTable(db).read(0, 1_000_000)
        assert notary.leaves() == [
            (i, ev.position, merkle.leaf_hash(ev.leaf())) for i, ev in enumerate(stored)
        ]
        cps = notary.checkpoints()
        for cp in cps:
            verify_checkpoint(cp, PUBLIC)
            assert notary.root(cp.size) == cp.root
        for old, new in itertools.pairwise(cps):
            assert old.size < new.size
            merkle.verify_consistency(old.size, new.size, old.root, new.root,
                                      notary.consistency_proof(old.size, new.size))
        assert [c.coup for c in cps if c.coup] == coups
        buf, out = io.StringIO(), io.StringIO()
        write_export(buf, EventTable(db), notary, PUBLIC)
        assert run(buf.getvalue().splitlines(), checkpoint_key=PUBLIC, out=out,
                   chain_keys=[CHAIN_PUBLIC]) == 0, out.getvalue()
    finally:
        db.close()


def two_notaries_one_writer(url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger, rng = make_ledger(url, 21)
    first = Follower(url, KEY, interval=0.05, retry=0.05, round_end=ROUND_END).start()
    second: Follower | None = None
    try:
        assert first.active.wait(10)
        second = Follower(url, KEY, interval=0.05, retry=0.05, round_end=ROUND_END).start()
        player = Player(ledger, rng, "t-one", "francaise")
        player.open_shoe()
        coups = [player.coup()[0] for _ in range(2)]
        assert first.checkpoint_now(10) is not None
        assert second.ready.wait(10) and not second.active.is_set()
        assert second.standby.wait(10)  # what the server's regulator service answers by
        assert second.checkpoint_now(0.2) is None  # standing by: it writes nothing
        # a one-off writer is refused while the first holds the store
        db = Database(url)
        try:
            with pytest.raises(NotaryBusy, match="only one notary may write a store"):
                Notary(db, EventTable(db), KEY).sync()
        finally:
            db.close()
        key = tmp_path / "op.key"
        if not key.exists():
            assert sabot("checkpoint-keygen", "--out", str(tmp_path / "op")) == 0
        capsys.readouterr()
        assert sabot("checkpoint", "--store", url, "--key", str(key), "--wait", "0.1") == 2
        assert "another notary is writing" in capsys.readouterr().err
        # an export still works: up to the writing notary's latest checkpoint, writing nothing
        pem = tmp_path / "notary.key"
        pem.write_bytes(KEY.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
        exported = tmp_path / "export.jsonl"
        assert sabot("export", "--store", url, "--key", str(pem), "-o", str(exported)) == 0
        assert "exporting up to its latest checkpoint" in capsys.readouterr().err
        verified = io.StringIO()
        assert run(exported.read_text().splitlines(), checkpoint_key=PUBLIC, out=verified,
                   chain_keys=[CHAIN_PUBLIC]) == 0, (
            verified.getvalue())
        # the first stops: the second takes over, from where the first left off
        first.stop()
        assert second.active.wait(10)
        assert not second.standby.is_set()
        coups += [player.coup()[0] for _ in range(2)]
        cp = second.checkpoint_now(10)
        assert cp is not None and cp.coup is None
    finally:
        ledger.close()
        first.stop()
        if second is not None:
            second.stop()
    assert second is not None and not second._thread.is_alive()
    check_tree(url, coups)
    lock = WriterLock(Database(url))  # released on stop
    assert lock.try_acquire()
    lock.release()
    lock.db.close()


def test_sqlite_one_notary_writes_the_other_takes_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    two_notaries_one_writer(f"sqlite:///{tmp_path / 'store.db'}", tmp_path, capsys)


def test_postgres_one_notary_writes_the_other_takes_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    postgres_or_skip()
    two_notaries_one_writer(fresh_pg_database(PG_DB), tmp_path, capsys)


HOLDER = """
import sys, time
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from services.regulator.notary import Follower
from services.bootstrap import ROUND_END
f = Follower(sys.argv[1], Ed25519PrivateKey.from_private_bytes(b"\\x07" * 32), interval=0.05,
             round_end=ROUND_END)
f.start()
assert f.active.wait(20)
print("active", flush=True)
time.sleep(600)
"""


def _killed_holder_is_taken_over(url: str) -> None:
    ledger, rng = make_ledger(url, 23)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, url], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    standby: Follower | None = None
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "active"
        standby = Follower(url, KEY, interval=0.05, retry=0.05, round_end=ROUND_END).start()
        player = Player(ledger, rng, "t-kill", "italiana")
        player.open_shoe()
        coups = [player.coup()[0] for _ in range(2)]
        assert standby.ready.wait(10)
        time.sleep(0.3)  # the holder notarises these coups; the standby writes nothing
        assert not standby.active.is_set()
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        assert standby.active.wait(10)  # the session ended with the process: the lock with it
        coups += [player.coup()[0] for _ in range(2)]
        assert standby.checkpoint_now(10) is not None
    finally:
        ledger.close()
        if holder.poll() is None:
            holder.kill()
            holder.wait(10)
        if standby is not None:
            standby.stop()
    check_tree(url, coups)


def test_postgres_a_killed_notary_is_taken_over() -> None:
    postgres_or_skip()
    _killed_holder_is_taken_over(fresh_pg_database(PG_DB))


def test_sqlite_a_killed_notary_is_taken_over(tmp_path: Path) -> None:
    _killed_holder_is_taken_over(f"sqlite:///{tmp_path / 'store.db'}")
