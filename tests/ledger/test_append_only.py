"""On PostgreSQL the event table refuses UPDATE, DELETE and TRUNCATE (the ops/ schema setup); on
SQLite the events and snapshots tables refuse UPDATE and DELETE."""

from __future__ import annotations

import psycopg
import pytest

from services.bootstrap import LEDGER_GAMES
from services.ledger.api import Ledger
from services.ledger.ids import account_uuid
from services.ledger.schema import apply_schema

from .play import FixedInputs


@pytest.mark.postgres
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
    ledger = Ledger(FixedInputs().config(postgres_store_url), games=LEDGER_GAMES)
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
    reopened = Ledger(FixedInputs().config(postgres_store_url), games=LEDGER_GAMES)
    assert reopened.get_account("ana").balance == 100
    reopened.close()


@pytest.mark.parametrize("statement", ["UPDATE {t} SET state = state", "DELETE FROM {t}",
                                       "DELETE FROM {t} WHERE originator_version >= 1"])
@pytest.mark.parametrize("table", ["stored_events", "stored_snapshots"])
def test_sqlite_tables_are_append_only_too(
    sqlite_store_url: str, table: str, statement: str
) -> None:
    """SQLite: BEFORE UPDATE / DELETE triggers abort (a guard against mistakes: whoever can write
    the file can drop them; the writer's evidence is the defence there)."""
    import sqlite3

    ledger = Ledger(FixedInputs().config(sqlite_store_url), games=LEDGER_GAMES)
    ledger.open_account("a", "ana")
    ledger.deposit("d", "ana", 100)
    ledger.app.take_snapshot(account_uuid("ana"))  # a row in the snapshots table too
    ledger.close()
    path = sqlite_store_url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:
        before = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute(statement.format(t=table))
        assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == before
    reopened = Ledger(FixedInputs().config(sqlite_store_url), games=LEDGER_GAMES)
    assert reopened.get_account("ana").balance == 100
    reopened.close()
