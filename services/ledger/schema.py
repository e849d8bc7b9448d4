"""The store's guards and privileges: who may do what to the event store.

PostgreSQL. An **owner** role owns the tables (events, snapshots, the notary's Merkle tables)
and applies their guards: ``ops/postgres/append_only.sql`` (triggers refusing UPDATE, DELETE and
TRUNCATE on the events and snapshots tables) and ``ops/postgres/writer_lease.sql`` (the save's
table lock, fenced by the writer's lease; see ``services/ledger/lease.py``). The **server** role
(``sabot serve``, ``sabot store projections run``, ``sabot store checkpoint --follow``) owns
none of them: it may read them and insert into them, and call the lock function; it cannot
update, delete, truncate, or switch a trigger off (only a table's owner can
``ALTER TABLE ... DISABLE TRIGGER``).
It may create tables in the schema for its read models (``rm_*``), which it owns and rebuilds.
A **reader** role (an auditor's export) may only read the event store and the Merkle tables.
``sabot store init`` (``services/cli/store.py``) prints or applies all of it.

A ledger whose role owns the tables (a development store, the tests) creates them and applies
the guards itself at start, as before; one whose role does not own them creates nothing
(``SABOT_CREATE_TABLE=n`` for the ``eventsourcing`` library) and refuses to start if the guards
are missing or disabled.

SQLite. The events and snapshots tables get BEFORE UPDATE / BEFORE DELETE triggers that abort:
a guard against mistakes (anyone who can write the file can drop them; the writer's evidence is
the defence there).
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from services.ledger.config import APP_NAME

log = logging.getLogger(__name__)

# The source tree's ops/postgres/ (a checkout, an editable install), else the copy a wheel
# carries in services/ledger/sql/ (setup.py puts it there).
_SOURCE = Path(__file__).resolve().parents[2] / "ops" / "postgres"
SQL_DIR = _SOURCE if (_SOURCE / "append_only.sql").is_file() else (
    Path(__file__).resolve().parent / "sql")
SQL_FILE = SQL_DIR / "append_only.sql"
LEASE_SQL_FILE = SQL_DIR / "writer_lease.sql"

EVENTS = f"{APP_NAME}_events"
SNAPSHOTS = f"{APP_NAME}_snapshots"
EVENT_TABLES = (EVENTS,)
NOTARY_TABLES = ("regulator_leaves", "regulator_nodes", "regulator_checkpoints")
LOCK_FUNCTION = "sabot_lock_events"
TRIGGERS = ("sabot_append_only_rows", "sabot_append_only_truncate")
SQLITE_TABLES = ("stored_events", "stored_snapshots")  # the library's names on SQLite
CREATE_TABLE = f"{APP_NAME.upper()}_CREATE_TABLE"  # the library's setting, for this app only

# The writer lease's advisory lock key: (LEASE_CLASS, crc32 of the schema), both int4.
LEASE_CLASS = 0x5AB0_7E57


class StoreNotReady(RuntimeError):
    """The store is not set up for this role: its owner must run ``sabot store init``."""


def _int4(value: int) -> int:
    value &= 0xFFFF_FFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def lease_key(schema: str) -> tuple[int, int]:
    """The writer lease's advisory lock key for a schema (``pg_try_advisory_lock(a, b)``)."""
    return _int4(LEASE_CLASS), _int4(zlib.crc32(schema.encode("utf-8")))


def schema_sql() -> str:
    """The append-only template (``{schema}``, ``{table}``)."""
    return SQL_FILE.read_text(encoding="utf-8")


def _template(path: Path) -> str:
    """A template's SQL without its comment lines (they name the placeholders)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return "\n".join(x for x in lines if not x.startswith("--")).strip() + "\n"


def _ident(*names: str) -> str:
    return sql.Identifier(*names).as_string()


def guard_sql(schema: str, tables: Iterable[str] = (EVENTS, SNAPSHOTS)) -> str:
    """The guards of one schema's tables (idempotent): the append-only triggers on each of
    ``tables`` and the events table's fenced lock function."""
    template = _template(SQL_FILE)
    parts = [template.replace("{schema}", _ident(schema)).replace("{table}", _ident(schema, t))
             for t in tables]
    a, b = lease_key(schema)
    lease = (_template(LEASE_SQL_FILE)
             .replace("{schema_text}", schema.replace("'", "''"))
             .replace("{schema}", _ident(schema))
             .replace("{events}", _ident(schema, EVENTS))
             .replace("{lease_class}", str(a & 0xFFFF_FFFF))
             .replace("{lease_key}", str(b & 0xFFFF_FFFF)))
    return "\n".join([*parts, lease])


def _split(table: str) -> tuple[str, str]:
    schema, _, name = table.rpartition(".")
    return (schema.strip('"') or "public"), name.strip('"')


def apply_schema(conninfo: str, tables: tuple[str, ...] = EVENT_TABLES) -> None:
    """Create or replace the guards of each events table (``[schema.]name``) and of the
    snapshots table beside it, in one transaction. Needs the tables' owner."""
    with psycopg.connect(conninfo, autocommit=False) as conn:
        conn.execute("SET LOCAL search_path = pg_catalog, pg_temp")
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('sabot_schema'))")
        for table in tables:
            schema, events = _split(table)
            snapshots = events.removesuffix("_events") + "_snapshots"
            guarded = [t for t in (events, snapshots) if _exists(conn, schema, t)]
            conn.execute(guard_sql(schema, guarded).encode("utf-8"))
        conn.commit()


def _exists(conn: psycopg.Connection[Any], schema: str, table: str) -> bool:
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (_ident(schema, table),)).fetchone()
    return bool(row and row[0])


# --- what a role may do with a store -------------------------------------------------------


@dataclass(frozen=True)
class Rights:
    """What the connected role finds and may do in a schema."""

    role: str
    exists: bool  # the events table exists
    owner: bool  # the role owns it (or belongs to its owner), so it may alter it
    may_create: bool  # CREATE on the schema
    guarded: bool  # every trigger present and enabled on events and snapshots, lock function
    missing: tuple[str, ...] = ()  # what the guard lacks


def rights(conn: psycopg.Connection[Any], schema: str) -> Rights:
    role = str(_one(conn, "SELECT current_user"))
    may_create = bool(_one(
        conn, "SELECT CASE WHEN to_regnamespace(%s) IS NULL THEN false "
              "ELSE has_schema_privilege(%s, 'CREATE') END",
        (_ident(schema), schema)))
    events = _ident(schema, EVENTS)
    if not _one(conn, "SELECT to_regclass(%s) IS NOT NULL", (events,)):
        return Rights(role, False, False, may_create, False, ("the events table",))
    owner = bool(_one(conn, "SELECT pg_has_role(relowner, 'USAGE') FROM pg_class "
                            "WHERE oid = to_regclass(%s)", (events,)))
    missing: list[str] = []
    for table in (EVENTS, SNAPSHOTS):
        name = _ident(schema, table)
        if not _one(conn, "SELECT to_regclass(%s) IS NOT NULL", (name,)):
            continue
        found = dict(conn.execute(
            "SELECT tgname, tgenabled FROM pg_trigger WHERE tgrelid = to_regclass(%s) "
            "AND NOT tgisinternal", (name,)).fetchall())
        for trigger in TRIGGERS:
            if trigger not in found:
                missing.append(f"trigger {trigger} on {table}")
            elif found[trigger] == "D":
                missing.append(f"trigger {trigger} on {table} (disabled)")
    if not _one(conn, "SELECT to_regprocedure(%s) IS NOT NULL",
                (f"{_ident(schema, LOCK_FUNCTION)}(integer)",)):
        missing.append(f"function {LOCK_FUNCTION}")
    return Rights(role, True, owner, may_create, not missing, tuple(missing))


def _one(conn: psycopg.Connection[Any], query: str, params: Sequence[Any] = ()) -> Any:
    row = conn.execute(query, tuple(params)).fetchone()
    return None if row is None else row[0]


def conninfo(env: dict[str, str]) -> str:
    """A libpq connection string from the library's environment (``store_env``): the one
    place it is built, quoted by psycopg (``make_conninfo``: a password with a space or a
    quote), with the URL's other libpq parameters (``LIBPQ``: target_session_attrs, sslmode)."""
    from services.ledger.config import libpq_params

    parts = {**libpq_params(env),
        "dbname": env["POSTGRES_DBNAME"], "host": env["POSTGRES_HOST"],
        "port": env["POSTGRES_PORT"], "user": env["POSTGRES_USER"],
    }
    if env.get("POSTGRES_PASSWORD"):
        parts["password"] = env["POSTGRES_PASSWORD"]
    return make_conninfo(**parts)


def create_tables(env: dict[str, str]) -> bool:
    """Whether the ledger's application may create its tables (the library's CREATE_TABLE):
    yes when its role owns them, or when they do not exist yet and it may create them; no when
    the owner set the store up for it. Raises StoreNotReady when it can do neither, or when the
    guards it relies on are missing."""
    schema = env.get("POSTGRES_SCHEMA") or "public"
    timeout = env.get("POSTGRES_CONNECT_TIMEOUT") or "10"
    with psycopg.connect(conninfo(env), autocommit=True, connect_timeout=int(timeout)) as conn:
        found = rights(conn, schema)
    if found.owner:
        return True
    if not found.exists:
        if found.may_create:
            return True
        raise StoreNotReady(
            f"the store has no event table in schema {schema!r} and role {found.role!r} may not "
            "create one: run `sabot store init` as the owner role first (docs/postgres.md)")
    if not found.guarded:
        raise StoreNotReady(
            f"the store's guards are incomplete ({'; '.join(found.missing)}) and role "
            f"{found.role!r} does not own the tables: run `sabot store init` as the owner role "
            "(docs/postgres.md)")
    return False


# --- grants -----------------------------------------------------------------------------------


def grant_statements(schema: str, servers: Sequence[str] = (), readers: Sequence[str] = (),
                     notary: bool = True) -> list[str]:
    """The privileges of the server roles and reader roles on one schema (idempotent: every
    right the role should not have is revoked first)."""
    s = _ident(schema)
    store = [_ident(schema, t) for t in (EVENTS, SNAPSHOTS)]
    merkle = [_ident(schema, t) for t in NOTARY_TABLES] if notary else []
    tables = ", ".join(store + merkle)
    sequence = _ident(schema, f"{EVENTS}_notification_id_seq")
    function = f"{_ident(schema, LOCK_FUNCTION)}(integer)"
    out: list[str] = []
    for role in (*servers, *readers):
        r = _ident(role)
        out += [
            f"REVOKE ALL ON TABLE {tables} FROM {r};",
            f"REVOKE ALL ON SEQUENCE {sequence} FROM {r};",
            f"REVOKE ALL ON FUNCTION {function} FROM {r};",
            f"REVOKE CREATE ON SCHEMA {s} FROM {r};",
            f"GRANT USAGE ON SCHEMA {s} TO {r};",
        ]
    for role in servers:
        r = _ident(role)
        out += [
            f"GRANT SELECT, INSERT ON TABLE {tables} TO {r};",
            f"GRANT USAGE ON SEQUENCE {sequence} TO {r};",
            f"GRANT EXECUTE ON FUNCTION {function} TO {r};",
            f"GRANT CREATE ON SCHEMA {s} TO {r};  -- its read models (rm_*), which it owns",
        ]
    for role in readers:
        out.append(f"GRANT SELECT ON TABLE {tables} TO {_ident(role)};")
    return out


def setup_sql(schema: str, servers: Sequence[str] = (), readers: Sequence[str] = ()) -> str:
    """Everything ``sabot store init`` applies once the tables exist, as one script for the
    owner role (``--print``)."""
    lines = [
        f"-- Sabot store setup for schema {schema!r}, to run as the tables' owner role once",
        "-- the tables exist (`sabot store init --store URL` creates them, then runs this).",
        "BEGIN;",
        "SET LOCAL search_path = pg_catalog, pg_temp;",
        guard_sql(schema),
        *grant_statements(schema, servers, readers),
        "COMMIT;",
    ]
    return "\n".join(lines) + "\n"


def apply_grants(conn_info: str, schema: str, servers: Sequence[str] = (),
                 readers: Sequence[str] = ()) -> None:
    """Apply ``grant_statements`` in one transaction (as the owner), after checking that each
    role exists and that no table of the event store belongs to one of them."""
    with psycopg.connect(conn_info, autocommit=False) as conn:
        conn.execute("SET LOCAL search_path = pg_catalog, pg_temp")
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('sabot_schema'))")
        for role in (*servers, *readers):
            if not _one(conn, "SELECT count(*) FROM pg_roles WHERE rolname = %s", (role,)):
                raise StoreNotReady(f"role {role!r} does not exist: create it first "
                                    f"(CREATE ROLE {_ident(role)} LOGIN ...)")
            for table in (EVENTS, SNAPSHOTS, *NOTARY_TABLES):
                name = _ident(schema, table)
                if _one(conn, "SELECT to_regclass(%s) IS NOT NULL", (name,)) and _one(
                        conn, "SELECT pg_has_role(%s, relowner, 'USAGE') FROM pg_class "
                              "WHERE oid = to_regclass(%s)", (role, name)):
                    raise StoreNotReady(
                        f"role {role!r} owns {table} (or belongs to its owner): it could switch "
                        "the guards off; give the table to the owner role first")
        for statement in grant_statements(schema, servers, readers):
            conn.execute(statement.encode("utf-8"))
        conn.commit()


def read_models_owned_by_others(conn_info: str, schema: str, role: str) -> list[str]:
    """The ``rm_*`` tables of the schema that ``role`` does not own (it could not rebuild them)."""
    with psycopg.connect(conn_info, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind = 'r' AND c.relname LIKE 'rm\\_%%' "
            "AND NOT pg_has_role(%s, c.relowner, 'USAGE') ORDER BY 1", (schema, role)).fetchall()
    return [str(r[0]) for r in rows]


def drop_tables(conn_info: str, schema: str, tables: Sequence[str]) -> None:
    with psycopg.connect(conn_info, autocommit=False) as conn:
        for table in tables:
            conn.execute(f"DROP TABLE IF EXISTS {_ident(schema, table)}".encode())
        conn.commit()


# --- SQLite -----------------------------------------------------------------------------------


def sqlite_guard_statements(tables: Sequence[str] = SQLITE_TABLES) -> list[str]:
    """BEFORE UPDATE / DELETE triggers that abort, on each table (idempotent)."""
    out = []
    for table in tables:
        for op in ("UPDATE", "DELETE"):
            out.append(
                f"CREATE TRIGGER IF NOT EXISTS sabot_{table}_no_{op.lower()} BEFORE {op} ON "
                f"{table} BEGIN SELECT RAISE(ABORT, 'sabot: {op} on {table} is forbidden: the "
                "event log is append-only'); END"
            )
    return out


def apply_sqlite_guards(cursor: Any, tables: Sequence[str] = SQLITE_TABLES) -> None:
    """Create the SQLite guards on the tables of ``tables`` that exist, through a cursor of
    the store (in its transaction)."""
    cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    present = {str(r[0]) for r in cursor.fetchall()}
    for statement in sqlite_guard_statements([t for t in tables if t in present]):
        cursor.execute(statement)
