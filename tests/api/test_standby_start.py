"""Servers started beside a busy writer start every time (issue 20: a standby failed at start 3
of 8 times on SQLite, "database is locked", and 1 of 8 on PostgreSQL, "deadlock detected"
between its read models' set-up and the writer's projection batch).

The writer serves deposits from six clients without pause and keeps its read models (its
projector applies batches); twenty times, two more servers (read models on) start at once on the
same store, stand by, and stop. Every start succeeds and every deposit is answered. On PostgreSQL
the servers connect as the restricted server role. A second test pins the PostgreSQL deadlock
itself: a set-up that meets a projector's batch in flight waits for it instead of deadlocking."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import pytest

from services.api import server
from services.api.client import Client
from services.api.config import Config, parse_tokens
from services.api.gen.sabot.v1 import cashier_pb2
from services.bootstrap import LEDGER_GAMES, READ_GAMES, SERVED, TRANSCODINGS
from services.ledger.api import Ledger, LedgerConfig
from services.ledger.config import store_env

from .support import money
from .test_one_writer import CHAIN_KEY, KEY, free_port

TOKEN = "tok-standby-start-admin"
ROUNDS = 20


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'sabot.db'}"
    else:
        yield str(request.getfixturevalue("postgres_restricted").server_url)


def start(url: str) -> tuple[str, Any]:
    target = f"127.0.0.1:{free_port()}"
    ledger = Ledger(LedgerConfig(store_url=url, seal_key=KEY, pool_size=4, writer_name=target,
                                 chain_key=CHAIN_KEY), batching=True, games=LEDGER_GAMES)
    try:
        running = server.start(Config(listen=target, store=url,
                                      tokens=parse_tokens(f"{TOKEN}:admin"), seal_key=KEY,
                                      workers=8, projections=True), ledger, games=SERVED)
    except BaseException:
        ledger.close()
        raise
    return target, running


def test_servers_start_beside_a_busy_writer_every_time(store: str) -> None:
    target, writer = start(store)
    stop = threading.Event()
    answered: list[int] = []
    failed: list[str] = []
    started: list[float] = []
    refused: list[str] = []

    def load(k: int) -> None:
        client = Client(target, TOKEN, timeout=20)
        try:
            i = 0
            while not stop.is_set():
                try:
                    client.cashier.Deposit(cashier_pb2.DepositRequest(
                        request_id=f"d{k}-{i}", name=f"accounts/p{k}", amount=money(1)))
                    answered.append(1)
                except Exception as exc:
                    failed.append(repr(exc))
                i += 1
        finally:
            client.close()

    def one() -> float:
        began = time.monotonic()
        _, running = start(store)
        took = time.monotonic() - began
        running.stop(grace=0.5)
        return took

    admin = Client(target, TOKEN, timeout=20)
    threads = [threading.Thread(target=load, args=(k,)) for k in range(6)]
    try:
        for k in range(6):
            admin.cashier.OpenAccount(cashier_pb2.OpenAccountRequest(
                request_id=f"open-{k}", account_id=f"p{k}", currency_code="EUR"))
        for t in threads:
            t.start()
        time.sleep(1.0)  # the writer and its projector are busy
        with ThreadPoolExecutor(2) as pool:
            for _ in range(ROUNDS):  # two servers at once, each round
                for future in [pool.submit(one), pool.submit(one)]:
                    try:
                        started.append(future.result())
                    except Exception as exc:
                        refused.append(f"{type(exc).__name__}: {exc}")
        before = len(answered)
        time.sleep(0.5)
        assert len(answered) > before  # still writing: the writer kept the lease
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
        admin.close()
        writer.stop(grace=1)
    assert not refused, refused[:3]
    assert len(started) == 2 * ROUNDS
    assert not failed, failed[:3]
    print(f"\nSTANDBY STARTS: {len(started)} of {2 * ROUNDS} beside a writer answering "
          f"{len(answered)} deposits; start {min(started):.2f}-{max(started):.2f} s")


@pytest.mark.postgres
def test_a_setup_meeting_a_projector_batch_waits_for_it_instead_of_deadlocking(
        postgres_store_url: str) -> None:
    """A projector's batch moves a tracking row first, then writes a view's table. The set-up
    of a second projector arrives between the two: it must not hold a view's table (its
    ``CREATE INDEX IF NOT EXISTS`` takes a SHARE lock) while it waits for that tracking row."""
    from services.ledger.application import LedgerApplication
    from services.projections.service import ReadModels

    app = LedgerApplication(env=store_env(postgres_store_url), transcodings=TRANSCODINGS)
    first = ReadModels(app, games=READ_GAMES)
    view = first.projector.views[0]
    env = store_env(postgres_store_url)
    conninfo = (f"host={env['POSTGRES_HOST']} port={env['POSTGRES_PORT']} "
                f"user={env['POSTGRES_USER']} dbname={env['POSTGRES_DBNAME']}")
    schema = env["POSTGRES_SCHEMA"]
    table = next(t.name for v in first.projector.views for t in v.tables if t.indexes)
    errors: list[BaseException] = []
    second_done = threading.Event()
    with psycopg.connect(conninfo) as batch:
        batch.execute(f'UPDATE "{schema}".rm_tracking SET position = position WHERE view = %s',
                      (view.name,))  # the batch's first step: its tracking row

        def second() -> None:
            try:
                ReadModels(LedgerApplication(env=store_env(postgres_store_url),
                                             transcodings=TRANSCODINGS), games=READ_GAMES)
            except BaseException as exc:
                errors.append(exc)
            finally:
                second_done.set()

        thread = threading.Thread(target=second)
        thread.start()
        time.sleep(1.5)  # the set-up now waits (on rm_tracking)
        assert not second_done.is_set()
        # the batch's next step: the view's table (deadlock_timeout is 1 s)
        batch.execute(f'LOCK TABLE "{schema}"."{table}" IN ROW EXCLUSIVE MODE')
        batch.commit()
    thread.join(timeout=30)
    assert second_done.is_set()
    assert not errors, errors
    app.close()
