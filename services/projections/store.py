"""The read-model store: the event store's own database (SQLite file or PostgreSQL schema).

Read models live beside the events, in tables prefixed ``rm_``. SQL is written once with ``?``
placeholders and ``{s}`` before every table name; :class:`ReadStore` adapts it to the dialect.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, Literal

Dialect = Literal["sqlite", "postgres"]
_INSERT = re.compile(r"INSERT INTO \{s\}(\w+)(?: AS \w+)? \(([^)]*)\)")
COLUMN_TYPES: dict[str, dict[str, str]] = {}  # rm_ table -> column -> SQL type (view.Table)
_VALUES = re.compile(r"VALUES\s*\((?:\?,\s*)*\?\)")


def _pg_array_type(column: Sequence[Any]) -> str:
    for value in column:
        if value is None:
            continue
        if isinstance(value, bool):
            return "boolean[]"
        return "bigint[]" if isinstance(value, int) else "text[]"
    return "text[]"


_BINARY_COPY = {"TEXT": "text", "BIGINT": "int8"}  # SQL type -> PostgreSQL's type name


def _copy_types(table: str, names: str) -> list[str] | None:
    """The PostgreSQL types of ``names`` (a column list) of ``table`` for a binary ``COPY``
    (a ``view.Table``'s columns: text values in ``TEXT``, integers or booleans in ``BIGINT``,
    or None); None when one is not known (the text format then)."""
    columns = COLUMN_TYPES.get(table)
    if columns is None:
        return None
    out: list[str] = []
    for name in names.split(","):
        found = _BINARY_COPY.get(columns.get(name.strip(), "").upper())
        if found is None:
            return None
        out.append(found)
    return out


class Tx:
    """One open transaction (or read) on the read-model store."""

    def __init__(self, store: ReadStore, cursor: Any) -> None:
        self._store = store
        self._cursor = cursor

    @property
    def dialect(self) -> Dialect:
        return self._store.dialect

    @property
    def schema(self) -> str:
        """The PostgreSQL schema of the tables ("": the default)."""
        return self._store.schema

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self._cursor.execute(self._store.sql(sql), tuple(params))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run ``sql`` (an ``INSERT ... VALUES (?, ...)``, maybe with ``ON CONFLICT``) for every
        row. On PostgreSQL a plain INSERT becomes one ``COPY ... FROM STDIN``; with
        ``ON CONFLICT`` the rows go as one array per column through ``unnest``: one statement
        and one round trip for the whole batch instead of one per row."""
        if not rows:
            return
        if self._store.dialect == "sqlite":  # sqlite3 binds any sequence: lists as they are
            self._cursor.executemany(self._store.sql(sql), rows)
            return
        values = _VALUES.search(sql)
        if values is None:
            self._cursor.executemany(self._store.sql(sql), [tuple(r) for r in rows])
            return
        target = _INSERT.search(sql)
        if target is not None and not sql[values.end() :].strip():
            # A plain INSERT (no ON CONFLICT): COPY, rows formatted by psycopg's C code; in the
            # binary format when every column's type is known (no text escaping: the rows of a
            # rebuild's steps in less than half the processor time).
            binary = _copy_types(target.group(1), target.group(2))
            copy = (f"COPY {{s}}{target.group(1)} ({target.group(2)}) FROM STDIN"
                    + ("" if binary is None else " (FORMAT BINARY)"))
            with self._cursor.copy(self._store.sql(copy)) as out:
                if binary is not None:
                    out.set_types(binary)
                write = out.write_row
                for row in rows:
                    write(row)
            return
        columns = list(zip(*rows, strict=True))
        types = COLUMN_TYPES.get(target.group(1), {}) if target else {}
        names = [n.strip() for n in target.group(2).split(",")] if target else []
        if len(names) != len(columns):
            names = [""] * len(columns)
        casts = ", ".join(
            f"%b::{types[n].lower() + '[]' if n in types else _pg_array_type(col)}"
            for n, col in zip(names, columns, strict=True)
        )
        statement = sql[: values.start()] + f"SELECT * FROM unnest({casts})" + sql[values.end() :]
        # %b: arrays go in binary format, no escaping of their text (several times faster).
        self._cursor.execute(self._store.sql(statement), [list(col) for col in columns])

    def script(self, statements: Sequence[str]) -> None:
        """Parameterless statements (DDL), in one round trip on PostgreSQL."""
        if not statements:
            return
        if self._store.dialect == "postgres":
            self._cursor.execute("; ".join(self._store.sql(s) for s in statements))
        else:
            for s in statements:
                self._cursor.execute(self._store.sql(s))

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        self._cursor.execute(self._store.sql(sql), tuple(params))
        rows = self._cursor.fetchall()
        if self._store.dialect == "postgres":
            return [tuple(r.values()) for r in rows]
        return [tuple(r) for r in rows]

    def query_in(self, sql: str, keys: Iterable[Any]) -> list[tuple[Any, ...]]:
        """``sql`` ends with ``WHERE <column>``: the rows whose column is one of ``keys``, in
        one round trip (PostgreSQL ``= ANY``) or a few (SQLite ``IN``)."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return []
        if self._store.dialect == "postgres":
            return self.query(sql + " = ANY(?)", (wanted,))
        out: list[tuple[Any, ...]] = []
        for i in range(0, len(wanted), 500):
            chunk = wanted[i : i + 500]
            out += self.query(sql + f" IN ({', '.join('?' * len(chunk))})", chunk)
        return out

    def columns(self, table: str) -> set[str]:
        """The column names of an ``rm_`` table (empty if it does not exist)."""
        if self._store.dialect == "sqlite":
            return {str(r[1]) for r in self.query(f"PRAGMA table_info({table})")}
        rows = self.query(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = ? AND table_name = ?",
            (self._store.schema or "public", table),
        )
        return {str(r[0]) for r in rows}

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        rows = self.query(sql, params)
        return rows[0] if rows else None


class ReadStore:
    """Transactions on the database of an application's recorder (its datastore)."""

    def __init__(self, datastore: Any, dialect: Dialect, schema: str = "") -> None:
        self.datastore = datastore
        self.dialect: Dialect = dialect
        self.schema = schema
        self._prefix = f'"{schema}".' if dialect == "postgres" and schema else ""
        self._cache: dict[str, str] = {}
        self.owner: Any = None  # the application whose datastore this is (kept open with it)

    @classmethod
    def of(cls, app: Any) -> ReadStore:
        """The read store of an ``eventsourcing`` application (SQLite or PostgreSQL)."""
        datastore = app.recorder.datastore
        module = type(datastore).__module__
        if module.endswith("sqlite"):
            found = cls(datastore, "sqlite")
        elif module.endswith("postgres"):
            found = cls(datastore, "postgres", datastore.schema)
        else:
            raise TypeError(f"unsupported event store {type(datastore).__qualname__}")
        found.owner = app  # an application closes its datastore when it is collected
        return found

    def table(self, name: str) -> str:
        return self._prefix + name

    def sql(self, text: str) -> str:
        out = self._cache.get(text)
        if out is None:
            out = text.replace("{s}", self._prefix)
            if self.dialect == "postgres":
                out = out.replace("?", "%s")
            self._cache[text] = out
        return out

    @contextmanager
    def transaction(self) -> Iterator[Tx]:
        """A writing transaction: committed on success, rolled back on error.

        The commit does not wait for the flush of the write-ahead log (PostgreSQL:
        ``synchronous_commit`` off for this transaction; SQLite in WAL mode: ``synchronous``
        NORMAL for this commit, then set back): a crash of the machine may lose the last
        read-model transactions, but each loses its tracking position with it, so they are
        simply applied again."""
        if self.dialect == "postgres":
            with self.datastore.transaction(commit=True) as cursor:
                cursor.execute("SET LOCAL synchronous_commit TO OFF")
                yield Tx(self, cursor)
            return
        if not getattr(getattr(self.datastore, "pool", None), "is_journal_mode_wal", False):
            with self.datastore.transaction(commit=True) as cursor:
                yield Tx(self, cursor)
            return
        # SQLite in WAL mode: this commit does not wait for the fsync (synchronous NORMAL, safe
        # from corruption in WAL mode), then the connection's setting is put back.
        with self.datastore.get_connection(commit=True) as conn:
            setting = conn.cursor()
            setting.execute("PRAGMA synchronous")
            before = int(setting.fetchone()[0])
            if before > 1:
                setting.execute("PRAGMA synchronous = NORMAL")
            try:
                with conn.transaction(commit=True) as cursor:
                    yield Tx(self, cursor)
            finally:
                if before > 1:
                    setting.execute(f"PRAGMA synchronous = {before}")

    def script_apart(self, groups: Sequence[Sequence[str]], workers: int = 4) -> None:
        """Groups of parameterless statements (DDL), each group in a transaction of its own; on
        PostgreSQL up to ``workers`` groups at a time, each on a connection of the pool (a
        rebuild's late indexes, a group per table: each index build waits for the sync of its
        file, so builds side by side take about as long as the slowest). On SQLite (one
        writer), or with a pool that has no connections to spare, all in one transaction."""
        groups = [list(g) for g in groups if g]
        workers = min(workers, len(groups), self._spare_connections())
        if workers < 2:
            with self.transaction() as tx:
                tx.script([sql for group in groups for sql in group])
            return

        def run(group: list[str]) -> None:
            with self.transaction() as tx:
                tx.script(group)

        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rm-ddl") as pool:
            for _ in pool.map(run, groups):  # an error is raised here, after the others end
                pass

    def _spare_connections(self) -> int:
        """Connections of the PostgreSQL pool that statements side by side may take, leaving
        two to the application's other users (0 on SQLite)."""
        if self.dialect != "postgres":
            return 0
        size = getattr(getattr(self.datastore, "pool", None), "max_size", 0)
        return max(0, int(size) - 2) if isinstance(size, int) else 0

    @contextmanager
    def setup_transaction(self) -> Iterator[Tx]:
        """A writing transaction that reads before it writes (the set-up of the read models):
        on SQLite it takes the write lock first (``BEGIN IMMEDIATE``, waiting up to the
        connection's busy timeout), since a deferred transaction that read while a busy writer
        committed cannot write at all ("database is locked" at once: its snapshot is stale).
        On PostgreSQL a plain ``transaction`` (``tracking.lock`` orders its locks)."""
        if self.dialect == "postgres":
            with self.transaction() as tx:
                yield tx
            return
        with self.datastore.get_connection(commit=True) as conn:
            cursor = conn.cursor()
            cursor.execute("BEGIN IMMEDIATE")
            try:
                yield Tx(self, cursor)
            except BaseException:
                conn.rollback()
                raise
            conn.commit()

    @contextmanager
    def read(self) -> Iterator[Tx]:
        """A read-only transaction (rolled back)."""
        with self.datastore.transaction(commit=False) as cursor:
            yield Tx(self, cursor)

    def table_exists(self, name: str) -> bool:
        with self.read() as tx:
            if self.dialect == "sqlite":
                row = tx.one("SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?",
                             (name,))
            else:
                row = tx.one(
                    "SELECT count(*) FROM information_schema.tables "
                    "WHERE table_schema=? AND table_name=?",
                    (self.schema or "public", name),
                )
        return bool(row and row[0])
