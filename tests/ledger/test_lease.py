"""One active writer per store (services/ledger/lease.py): the others stand by, answer queries
from the store, refuse commands naming the active writer, and take over when it stops or dies,
with nothing of what they cached before; on PostgreSQL a writer that lost its lease stores
nothing and refuses nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from domain.errors import FailedPrecondition
from services.bootstrap import LEDGER_GAMES
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig
from services.ledger.errors import Conflict, NotTheWriter

from .play import KEY

ROOT = Path(__file__).resolve().parents[2]
CHAIN_KEY = bytes([0x66]) * 32  # the writers of one store sign with the same evidence key


def ledger(url: str, name: str, batching: bool = False) -> Ledger:
    return Ledger(LedgerConfig(store_url=url, seal_key=KEY, writer_name=name,
                               chain_key=CHAIN_KEY), batching=batching, games=LEDGER_GAMES)


def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def events(led: Ledger) -> int:
    return int(led.app.recorder.max_notification_id() or 0)


def test_a_standby_refuses_commands_reads_the_store_and_takes_over(store_url: str) -> None:
    a = ledger(store_url, "server-a:50051", batching=True)
    b = ledger(store_url, "server-b:50051", batching=True)
    try:
        assert a.writer_status() == {"active": True, "holder": "server-a:50051"}
        assert b.writer_status() == {"active": False, "holder": "server-a:50051"}
        with pytest.raises(NotTheWriter) as refused:
            b.open_account("o1", "ana")
        assert refused.value.holder == "server-a:50051"
        assert refused.value.reason == "NOT_THE_WRITER" and refused.value.retry_after > 0
        assert events(a) == 0  # nothing decided, nothing stored
        a.open_account("o1", "ana")
        a.deposit("d1", "ana", 100)
        assert b.get_account("ana").balance == 100  # read from the store
        a.deposit("d2", "ana", 50)
        assert b.get_account("ana").balance == 150  # not from a cache
        end = events(a)
        a.close()
        until(lambda: b.writer_status()["active"])
        assert b.writer_status()["holder"] == "server-b:50051"
        # what the other wrote is known: its answers, its balances
        assert b.deposit("d2", "ana", 50).balance == 150  # the stored answer, no second effect
        assert events(b) == end
        with pytest.raises(FailedPrecondition):
            b.withdraw("w1", "ana", 151)
        assert b.withdraw("w2", "ana", 150).balance == 0
        assert sum(b.balances().values()) == 0
    finally:
        a.close()
        b.close()


def test_a_killed_writer_is_replaced(store_url: str) -> None:
    """SIGKILL: the store ends the holder's session (PostgreSQL) or the kernel drops its flock
    (SQLite); the standby takes over and knows what the dead one stored."""
    script = (
        "import sys, time\n"
        "from services.ledger.api import Ledger\n"
        "from services.ledger.config import LedgerConfig\n"
        f"led = Ledger(LedgerConfig(store_url={store_url!r}, seal_key=bytes(range(32)), "
        f"writer_name='doomed:1', chain_key={CHAIN_KEY!r}), batching=True, games=())\n"
        "led.open_account('o1', 'bea')\n"
        "led.deposit('d1', 'bea', 700)\n"
        "print('ready', flush=True)\n"
        "time.sleep(600)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    b: Ledger | None = None
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        b = ledger(store_url, "heir:2", batching=True)
        assert b.writer_status() == {"active": False, "holder": "doomed:1"}
        assert b.get_account("bea").balance == 700
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        until(lambda: b is not None and b.writer_status()["active"])
        assert b.deposit("d1", "bea", 700).balance == 700  # its answer, not a second deposit
        assert b.withdraw("w1", "bea", 700).balance == 0
        with pytest.raises(FailedPrecondition):
            b.withdraw("w2", "bea", 1)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if b is not None:
            b.close()


def test_the_sqlite_lease_names_its_holder(sqlite_store_url: str) -> None:
    a = ledger(sqlite_store_url, "croupier-pc:50051")
    try:
        path = Path(sqlite_store_url.removeprefix("sqlite:///") + ".writer-lock")
        assert path.read_text().strip() == "croupier-pc:50051"
        assert path.stat().st_mode & 0o077 == 0
        reader = Ledger(LedgerConfig(store_url=sqlite_store_url, seal_key=KEY), standby=True,
                        games=LEDGER_GAMES)
        assert reader.writer_status() == {"active": False, "holder": "croupier-pc:50051"}
        reader.close()
        assert a.writer_status()["active"]  # a reader never took it
    finally:
        a.close()


@pytest.mark.postgres
def test_a_writer_that_lost_its_lease_stores_and_refuses_nothing(
    postgres_store_url: str, postgres_dsn: str,
) -> None:
    """Its lease's session ends (killed by an operator, a network cut, idle past the lease's
    timeout) before it noticed: its refusals become NOT_THE_WRITER (decided on state another
    writer may have changed) and its saves fail at the fence, storing nothing."""
    a = ledger(postgres_store_url, "a:1")
    b: Ledger | None = None
    try:
        a.open_account("o1", "ana")
        a.deposit("d1", "ana", 100)
        assert a._keeper is not None
        a._keeper.stop()  # it will not notice by itself: only the refusal's check and the fence
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            conn.execute("SELECT pg_terminate_backend(%s)", (a.lease.pid,))
        b = ledger(postgres_store_url, "b:2")
        until(lambda: b is not None and b.lease.try_acquire())
        b._writer.take_over()
        end = events(b)
        with pytest.raises(NotTheWriter) as standby:  # not "the balance is 100"
            a.withdraw("w1", "ana", 1000)
        assert standby.value.holder == "b:2"
        assert not a.writer_status()["active"]
        a._writer.active = True  # as if it had not noticed yet: the fence stops its save
        with pytest.raises(Conflict) as fenced:
            a.deposit("d2", "ana", 5)
        assert fenced.value.reason == "NOT_STORED"
        assert not a.writer_status()["active"]
        assert events(b) == end
        assert b.get_account("ana").balance == 100
        with pytest.raises(FailedPrecondition):
            b.withdraw("w1", "ana", 1000)
        assert b.deposit("d2", "ana", 5).balance == 105
    finally:
        a.close()
        if b is not None:
            b.close()
