"""The outage harness itself: through the proxy PostgreSQL answers; cut, a connection fails at
once and a new one is refused; mended, a new connection works (the shared cluster untouched)."""

from __future__ import annotations

import time

import psycopg
import pytest

from tests.conftest import PG_HOST, PG_PORT, PG_USER

from .proxy import Proxy

pytestmark = pytest.mark.postgres


def test_the_proxy_cuts_like_a_stopped_server_and_mends(postgres_database: str) -> None:
    proxy = Proxy((PG_HOST, PG_PORT))
    dsn = (f"host=127.0.0.1 port={proxy.port} user={PG_USER} dbname={postgres_database} "
           "connect_timeout=2")
    try:
        conn = psycopg.connect(dsn, autocommit=True)
        assert conn.execute("SELECT 1").fetchone() == (1,)
        proxy.cut()
        started = time.monotonic()
        with pytest.raises(psycopg.OperationalError):
            conn.execute("SELECT 1")
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(dsn)
        assert time.monotonic() - started < 1.5  # refused, not timed out
        proxy.mend()
        with psycopg.connect(dsn, autocommit=True) as again:
            assert again.execute("SELECT 2").fetchone() == (2,)
        proxy.hang()
        started = time.monotonic()
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(dsn)  # accepted, never answered: the connect timeout ends it
        assert time.monotonic() - started >= 1.5
        proxy.mend()
        with psycopg.connect(dsn, autocommit=True) as again:
            assert again.execute("SELECT 3").fetchone() == (3,)
    finally:
        proxy.close()
