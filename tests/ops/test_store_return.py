"""PostgreSQL itself stopped (``pg_ctl stop -m immediate``, as a crash) for N seconds and
started again under ``sabot serve`` (issue 20: after a 22.7 s outage the writer came back 6.2 s
after the database): the writer serves again within 1 s of the database's return, for outages
of up to 60 s. The cluster is the test's own (``initdb`` on a free port, removed after): the
shared clusters are never stopped.

The figure (seconds from ``pg_ctl start`` returning to the first write stored, with the same
request id retried every 0.1 s, and to ``sabot.writer`` SERVING) is printed (``pytest -s``)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import psycopg
import pytest

from tests.conftest import postgres_unavailable

from .support import Keys, Served, sabot
from .test_outage import NOT_SERVING, SERVING, Site

pytestmark = pytest.mark.postgres
RETURN_WITHIN = 1.0  # seconds: the writer serves again this soon after the database
CLIENTS = 16  # writing through the outage, each retrying its request id as told


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _bin(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        try:
            bindir = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True,
                                    check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            postgres_unavailable(f"no {name} here (PostgreSQL's server binaries)")
        found = str(Path(bindir) / name)
    return found


@dataclass
class Cluster:
    """A PostgreSQL cluster of the test's own (trust, 127.0.0.1:``port``), run as postgres
    (``initdb`` refuses root)."""

    folder: Path
    port: int

    def _as_postgres(self, *args: str, timeout: float = 120) -> None:
        command = list(args)
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, done.stdout + done.stderr

    def create(self) -> None:
        self.folder.mkdir(mode=0o700)
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        self._as_postgres(_bin("initdb"), "-D", str(self.folder / "data"), "-A", "trust",
                          "-U", "postgres", "--no-sync")

    def start(self) -> None:
        self._as_postgres(
            _bin("pg_ctl"), "-D", str(self.folder / "data"), "-w", "-t", "60", "-l",
            str(self.folder / "log"), "start", "-o",
            f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 "
            "-c max_connections=100 -c fsync=off")

    def stop(self, mode: str = "fast") -> None:
        self._as_postgres(_bin("pg_ctl"), "-D", str(self.folder / "data"), "-m", mode, "-w",
                          "stop")

    def dsn(self, database: str = "postgres") -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={database}"


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    folder = Path(tempfile.mkdtemp(prefix="sabot-pg-"))
    folder.chmod(0o755)
    here = Cluster(folder / "cluster", _free_port())
    try:
        here.create()
        here.start()
        yield here
    finally:
        with contextlib.suppress(Exception):
            here.stop("immediate")
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("outage", [22.0, 60.0])
def test_a_pool_in_use_through_an_outage_answers_within_a_second_of_postgres_returning(
        cluster: Cluster, outage: float) -> None:
    """The store's pool (every ``LedgerApplication``'s: the writer's, the server's reads, the
    read models') used by eight threads through the outage: each lost connection's replacement
    used to back off 1, 2, 4, 8, 16 ... s (psycopg_pool), so after a 22 s outage the pool
    answered 6.8 s after PostgreSQL did; now within a second."""
    from services.ledger.application import LedgerApplication
    from services.ledger.config import store_env

    app = LedgerApplication(env=store_env(
        f"postgresql://postgres@127.0.0.1:{cluster.port}/postgres"))
    stop = threading.Event()

    def use() -> None:
        while not stop.is_set():
            with contextlib.suppress(Exception):
                app.recorder.max_notification_id()
            stop.wait(0.05)

    users = [threading.Thread(target=use) for _ in range(8)]
    try:
        app.recorder.max_notification_id()
        cluster.stop("immediate")
        stopped = time.monotonic()
        for t in users:
            t.start()
        time.sleep(max(0.0, outage - (time.monotonic() - stopped)))
        cluster.start()
        back = time.monotonic()
        while True:
            try:
                app.recorder.max_notification_id()
                break
            except Exception:
                assert time.monotonic() - back < 30, "the pool never answered again"
                time.sleep(0.02)
        answered = time.monotonic() - back
        print(f"\nRETURN FIGURES: pool in use through a {outage:.0f} s outage: answered "
              f"{answered:.2f} s after the database returned")
        assert answered < RETURN_WITHIN, answered
    finally:
        stop.set()
        for t in users:
            if t.is_alive():
                t.join(timeout=30)
        app.close()


@pytest.mark.parametrize("outage", [5.0, 60.0])
def test_the_writer_serves_within_a_second_of_postgres_returning(
        cluster: Cluster, tmp_path: Path, outage: float) -> None:
    with psycopg.connect(cluster.dsn(), autocommit=True) as conn:
        conn.execute('CREATE DATABASE "sabot"')
    store = f"postgresql://postgres@127.0.0.1:{cluster.port}/sabot"
    done = sabot("ledger-schema", "--store", store)
    assert done.returncode == 0, done.stderr
    served = Served(store, Keys(tmp_path), tmp_path)
    try:
        served.wait_listening()
        site = Site(served, None, "sabot")  # type: ignore[arg-type]
        try:
            site.open_account("r-1")
            assert site.deposit("before", "r-1").balance.amount_minor == 1
            for k in range(CLIENTS):
                site.open_account(f"c-{k}")
            stop = threading.Event()
            acked: list[tuple[float, str]] = []  # (when, request id), written on as clients do

            def client(k: int) -> None:  # retries its request id until it is answered
                i = 0
                while not stop.is_set():
                    try:
                        site.deposit(f"c{k}-{i}", f"c-{k}", timeout=2.0)
                        acked.append((time.monotonic(), f"c{k}-{i}"))
                        i += 1
                    except grpc.RpcError:
                        time.sleep(0.2)

            clients = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
            for t in clients:
                t.start()
            time.sleep(1.0)
            cluster.stop("immediate")
            stopped = time.monotonic()
            site.wait_status(NOT_SERVING, "sabot.writer", timeout=15)
            time.sleep(max(0.0, outage - (time.monotonic() - stopped)))
            cluster.start()  # returns once the database accepts connections
            back = time.monotonic()
            stored_after = None
            while time.monotonic() - back < 30:
                try:
                    site.deposit("after", "r-1", timeout=2.0)
                    stored_after = time.monotonic() - back
                    break
                except grpc.RpcError as exc:
                    assert exc.code() in (grpc.StatusCode.UNAVAILABLE,
                                          grpc.StatusCode.DEADLINE_EXCEEDED), exc.details()
                    time.sleep(0.1)
            assert stored_after is not None, "no write stored 30 s after the database returned"
            site.wait_status(SERVING, "sabot.writer", timeout=30)
            serving_after = time.monotonic() - back
            print(f"\nRETURN FIGURES: {outage:.0f} s outage ({back - stopped:.1f} s measured): "
                  f"first write stored {stored_after:.2f} s after the database returned, "
                  f"sabot.writer SERVING at {serving_after:.2f} s")
            time.sleep(1.0)
            stop.set()
            for t in clients:
                t.join(timeout=30)
            first_client = min((at - back for at, _ in acked if at > back), default=-1.0)
            print(f"RETURN FIGURES: {CLIENTS} clients writing throughout: the first stored "
                  f"{first_client:.2f} s after the database returned")
            assert site.balance("r-1") == (2, 2)
            for k in range(CLIENTS):
                mine = sum(1 for _, rid in acked if rid.startswith(f"c{k}-"))
                assert site.balance(f"c-{k}") == (mine, mine)
            assert stored_after < RETURN_WITHIN, stored_after
        finally:
            site.channel.close()
    finally:
        served.stop()
