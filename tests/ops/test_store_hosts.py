"""A store URL that lists several PostgreSQL servers with ``target_session_attrs=read-write``
(issue 23: the runbook's failover setting) connects to the read-write one, whichever order the
hosts are listed in and in both of libpq's forms (``//h1:p1,h2:p2/db`` and ``?host=&port=``),
for every connection Sabot builds from it: the ledger's pool, its probe and its writer lease, the
read models' runner, the notary's database. Two clusters of the test's own (``initdb`` on free
ports, removed after); one made read-only with ``default_transaction_read_only=on``."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import psycopg
import pytest
from eventsourcing.postgres import PostgresApplicationRecorder

from services import bootstrap
from services.bootstrap import READ_GAMES, log_application
from services.settings import Settings

from .test_store_return import Cluster, _free_port

pytestmark = pytest.mark.postgres
SEAL = "11" * 32


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[Cluster, Cluster]]:
    """(read-write, read-only)."""
    folder = Path(tempfile.mkdtemp(prefix="sabot-pg-"))
    folder.chmod(0o755)
    made = [Cluster(folder / name, _free_port()) for name in ("rw", "ro")]
    try:
        for cluster in made:
            cluster.create()
            cluster.start()
        with psycopg.connect(made[1].dsn(), autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET default_transaction_read_only = on")
            conn.execute("SELECT pg_reload_conf()")
        yield made[0], made[1]
    finally:
        for cluster in made:
            with contextlib.suppress(Exception):
                cluster.stop("immediate")
        shutil.rmtree(folder, ignore_errors=True)


def _url(form: str, ports: list[int], attrs: str = "read-write") -> str:
    tail = f"target_session_attrs={attrs}" if attrs else ""
    if form == "hosts":
        hosts = ",".join(f"127.0.0.1:{p}" for p in ports)
        return f"postgresql://postgres@{hosts}/postgres" + (f"?{tail}" if tail else "")
    query = f"host={','.join('127.0.0.1' for _ in ports)}&port={','.join(map(str, ports))}"
    return f"postgresql://postgres@/postgres?{query}" + (f"&{tail}" if tail else "")


def _port(conn: psycopg.Connection[Any]) -> int:
    """The server's port, as the server says (the pools' rows are dicts)."""
    cur = conn.execute("SELECT inet_server_port() AS port")
    row = cur.fetchone()
    assert row is not None
    return int(row["port"] if isinstance(row, dict) else row[0])


@pytest.mark.parametrize("form", ["hosts", "query"])
@pytest.mark.parametrize("read_write_first", [True, False], ids=["rw-first", "ro-first"])
def test_every_connection_goes_to_the_read_write_server(
        pair: tuple[Cluster, Cluster], form: str, read_write_first: bool) -> None:
    from services.ledger.config import store_env
    from services.ledger.lease import PostgresLease, lease_for
    from services.projections import default_views
    from services.projections.runner import make_runner
    from services.regulator.source import Database

    rw, ro = pair
    ports = [rw.port, ro.port] if read_write_first else [ro.port, rw.port]
    url = _url(form, ports)
    settings = Settings.load(env={"SABOT_STORE": url, "SABOT_SEAL_KEY": SEAL}, env_file=None)
    ledger = bootstrap.open_ledger(settings)
    try:
        table = f"t-{uuid4().hex[:8]}"
        ledger.open_table(f"r-{table}", table, "francaise")  # a write: the read-write one
        recorder = ledger.app.recorder
        assert isinstance(recorder, PostgresApplicationRecorder)
        with recorder.datastore.get_connection() as conn:
            assert _port(conn) == rw.port
        probe = ledger.app.store_probe()
        try:
            probe()
            assert _port(probe._conn) == rw.port
        finally:
            probe.close()
        head = ledger.app.recorder.max_notification_id()
        with make_runner(log_application(), default_views(games=READ_GAMES), store_env(url),
                         batch_size=64) as runner:
            runner.wait(head, timeout=30)  # the views written: on the read-write one
            with runner.view.datastore.get_connection() as conn:
                assert _port(conn) == rw.port
        notary = Database(url)
        try:
            assert notary.rows("SELECT inet_server_port()")[0][0] == rw.port
            assert notary.table_exists("sabot_events")
        finally:
            notary.close()
    finally:
        ledger.close()
    lease = lease_for(url, "urlforms")  # the writer lease's own connection (the ledger's is gone)
    try:
        assert isinstance(lease, PostgresLease) and lease.try_acquire()
        assert lease._conn is not None and _port(lease._conn) == rw.port
    finally:
        lease.release()


def test_without_the_attribute_the_first_host_is_taken(pair: tuple[Cluster, Cluster]) -> None:
    """The control: the same URL without target_session_attrs connects to the first host,
    here the read-only one (so the test above shows the parameter passed through)."""
    from services.regulator.source import Database

    rw, ro = pair
    for form in ("hosts", "query"):
        notary = Database(_url(form, [ro.port, rw.port], attrs=""))
        try:
            assert notary.rows("SELECT inet_server_port()")[0][0] == ro.port
        finally:
            notary.close()
