"""On PostgreSQL the event table refuses UPDATE, DELETE and TRUNCATE (the ops/ schema setup)."""

from __future__ import annotations

import psycopg
import pytest

from services.ledger.api import Ledger
from services.ledger.schema import apply_schema

from .play import FixedInputs

pytestmark = pytest.mark.postgres


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE {t} SET state = state",
        "DELETE FROM {t}",
        "DELETE FROM {t} WHERE originator_version = 1",
        "TRUNCATE {t}",
    ],
)
def test_event_table_is_append_only(
    postgres_store_url: str, postgres_dsn: str, postgres_schema: str, statement: str
) -> None:
    ledger = Ledger(FixedInputs().config(postgres_store_url))
    ledger.open_account("a", "ana")
    ledger.deposit("d", "ana", 100)
    ledger.close()
    dsn = postgres_dsn
    table = f'"{postgres_schema}".sabot_events'
    # applying the setup again is harmless (idempotent)
    apply_schema(dsn, (f"{postgres_schema}.sabot_events",))
    with psycopg.connect(dsn) as conn:
        before = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"):
            conn.execute(statement.format(t=table))
        conn.rollback()
        assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == before
    reopened = Ledger(FixedInputs().config(postgres_store_url))
    assert reopened.get_account("ana").balance == 100
    reopened.close()
