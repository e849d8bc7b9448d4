"""A writer never takes a standby for a store it can write (issue 23; docs/operations.md,
"Failover of PostgreSQL"): a hot standby grants advisory locks of its own and answers
``SELECT 1``, so a server whose store URL names one (a node named directly, a multi-host URL
without ``target_session_attrs=read-write``, a primary demoted under it) would hold a "lease" no
other server sees and say its writer SERVING while every save fails read-only. The lease is
taken only where ``pg_is_in_recovery()`` is false, and the writer's store probe counts a
standby as not answering. On the test's own primary and streaming standby
(``tests/ops/test_read_replica.py``'s ``pair``)."""

from __future__ import annotations

import psycopg
import pytest

from services.ledger.application import STORE_SETTINGS, StoreProbe, connection_timeouts
from services.ledger.config import store_env
from services.ledger.lease import lease_for
from services.ledger.schema import conninfo

from .test_read_replica import OWNER, Pair, pair

pytestmark = pytest.mark.postgres
__all__ = ["pair"]  # the fixture, used by name


def _probe(url: str) -> StoreProbe:
    env = store_env(url)
    settings = {k: v for k in STORE_SETTINGS if (v := env.get(k)) is not None}
    return StoreProbe(conninfo(settings), connection_timeouts(2.0))


def test_the_lease_is_never_taken_on_a_standby(pair: Pair) -> None:
    on_standby = lease_for(pair.url(OWNER, standby=True), "standby-writer")
    on_primary = lease_for(pair.url(OWNER), "primary-writer")
    try:
        assert pair.sql("SELECT pg_is_in_recovery()", standby=True) == [(True,)]
        assert on_standby.try_acquire() is False
        assert on_standby.held is False
        assert on_primary.try_acquire() is True  # the primary's lease is free: none was taken
    finally:
        on_standby.release()
        on_primary.release()


def test_the_writers_probe_counts_a_standby_as_not_answering(pair: Pair) -> None:
    standby, primary = _probe(pair.url(OWNER, standby=True)), _probe(pair.url(OWNER))
    try:
        with pytest.raises(psycopg.OperationalError, match="standby"):
            standby()
        primary()  # answers
        primary()  # and again, on the connection it keeps
    finally:
        standby.close()
        primary.close()
