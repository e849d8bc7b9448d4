"""Helpers shared by the benchmark modules (not a benchmark: the runner skips ``_`` modules)."""

from __future__ import annotations

from contextlib import suppress

import psycopg

PG_ADMIN = "host=127.0.0.1 port=5432 user=postgres dbname=postgres connect_timeout=3"


def fresh_pg_database(name: str) -> str | None:
    """A new, empty database ``name`` (dropped first if it exists), as a store URL; None if
    PostgreSQL is unreachable."""
    try:
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError:
        return None
    return f"postgresql://postgres@127.0.0.1:5432/{name}"


def drop_pg_database(name: str) -> None:
    with suppress(psycopg.OperationalError), psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (nearest rank below), NaN when there is nothing to rank."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
