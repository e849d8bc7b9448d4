"""The project's PostgreSQL schema setup (``ops/postgres/append_only.sql``), applied at start."""

from __future__ import annotations

from pathlib import Path

import psycopg
from psycopg import sql

from services.ledger.config import APP_NAME

# The source tree's ops/postgres/ (a checkout, an editable install), else the copy a wheel
# carries in services/ledger/sql/ (setup.py puts it there).
_SOURCE = Path(__file__).resolve().parents[2] / "ops" / "postgres" / "append_only.sql"
SQL_FILE = _SOURCE if _SOURCE.is_file() else Path(__file__).resolve().parent / "sql" / (
    "append_only.sql")
EVENT_TABLES = (f"{APP_NAME}_events",)


def schema_sql() -> str:
    return SQL_FILE.read_text(encoding="utf-8")


def apply_schema(conninfo: str, tables: tuple[str, ...] = EVENT_TABLES) -> None:
    """Create or replace the append-only triggers on each events table (``[schema.]name``),
    in one transaction."""
    template = schema_sql()
    with psycopg.connect(conninfo, autocommit=False) as conn:
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('sabot_schema'))")
        for table in tables:
            name = sql.Identifier(*table.split("."))
            text = template.replace("{events}", name.as_string(conn))
            conn.execute(text.encode("utf-8"))
        conn.commit()
