"""A read model (view): its ``rm_`` tables, how it applies a batch of events, its digest.

The same view code runs on SQLite and PostgreSQL, under the poller or the projection runner.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, NamedTuple

from services.projections.store import COLUMN_TYPES, ReadStore, Tx


class Envelope(NamedTuple):
    """One recorded event as a view sees it: its position in the log, topic and time."""

    position: int
    topic: str
    event: Any
    time: datetime
    at: str  # time.isoformat()
    oid: str  # the event's originator id as text


@dataclass(frozen=True, slots=True)
class Table:
    """An ``rm_`` table: columns as (name, SQL type) and the primary key."""

    name: str
    columns: tuple[tuple[str, str], ...]
    key: tuple[str, ...]
    indexes: tuple[tuple[str, ...], ...] = ()
    # True when the view's own lookups (``apply``) use the secondary indexes: a rebuild keeps
    # them. Otherwise a rebuild drops them first and creates them after the last batch.
    indexes_in_apply: bool = False
    # Indexes of the readers' lookups (the search by log position), not of what the rows hold:
    # created if missing (IF NOT EXISTS) at every start, outside the schema digest, so adding
    # one rebuilds nothing; dropped and created like the others around a bulk rebuild.
    lookups: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        COLUMN_TYPES[self.name] = dict(self.columns)

    def create_sql(self) -> list[str]:
        cols = ", ".join(f"{n} {t}" for n, t in self.columns)
        return [
            f"CREATE TABLE IF NOT EXISTS {{s}}{self.name} ({cols}, "
            f"PRIMARY KEY ({', '.join(self.key)}))",
            *self.index_sql(),
        ]

    def index_sql(self) -> list[str]:
        """The secondary indexes, the lookups' last (idempotent)."""
        return [
            f"CREATE INDEX IF NOT EXISTS {self.name}_i{i} ON {{s}}{self.name} "
            f"({', '.join(idx)})"
            for i, idx in enumerate(self.indexes)
        ] + self.lookup_sql()

    def lookup_sql(self) -> list[str]:
        return [
            f"CREATE INDEX IF NOT EXISTS {self.name}_l{i} ON {{s}}{self.name} "
            f"({', '.join(idx)})"
            for i, idx in enumerate(self.lookups)
        ]

    def drop_index_sql(self) -> list[str]:
        return ([f"DROP INDEX IF EXISTS {{s}}{self.name}_i{i}" for i in range(len(self.indexes))]
                + [f"DROP INDEX IF EXISTS {{s}}{self.name}_l{i}"
                   for i in range(len(self.lookups))])

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.columns)


class View(ABC):
    """A read model kept from the event log. Subclasses set ``name``, ``tables``, ``topics``."""

    name: ClassVar[str]
    tables: ClassVar[tuple[Table, ...]]
    topics: ClassVar[frozenset[str] | None] = None  # None: every event
    version: ClassVar[int] = 1  # raise it when the rows a view writes change meaning
    # Per topic, the only fields of its events ``apply`` reads (getattr, None when absent): the
    # projector's decoder may leave the others out (``decode``). A topic not named: all fields.
    reads: ClassVar[Mapping[str, frozenset[str]]] = {}

    def schema_digest(self) -> str:
        """Digest of the tables' DDL (but their lookups') and ``version``: when it changes,
        the view is rebuilt."""
        lookups = {sql for table in self.tables for sql in table.lookup_sql()}
        text = "\n".join([f"{self.name} v{self.version}",
                          *(sql for sql in self.create_sql() if sql not in lookups)])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def wants(self, topic: str) -> bool:
        return self.topics is None or topic in self.topics

    @abstractmethod
    def apply(self, tx: Tx, batch: Sequence[Envelope]) -> None:
        """Apply events in log order, in the caller's transaction (with the tracking row)."""

    def create_sql(self) -> list[str]:
        return [sql for table in self.tables for sql in table.create_sql()]

    def drop_sql(self) -> list[str]:
        return [f"DROP TABLE IF EXISTS {{s}}{table.name}" for table in self.tables]

    def create(self, tx: Tx) -> None:
        tx.script(self.create_sql())

    def drop(self, tx: Tx) -> None:
        tx.script(self.drop_sql())

    def late_indexes(self) -> tuple[list[str], list[list[str]]]:
        """(drop, create) statements of the secondary indexes a rebuild builds after its last
        batch (bulk load: each row then updates fewer B-trees; one sorted build at the end);
        the create statements one list per table."""
        late = [t for t in self.tables if not t.indexes_in_apply]
        return (
            [sql for t in late for sql in t.drop_index_sql()],
            [t.index_sql() for t in late if t.index_sql()],
        )

    def empty_sql(self) -> list[str]:
        return [f"DELETE FROM {{s}}{table.name}" for table in self.tables]

    def digest(self, store: ReadStore) -> str:
        """SHA-256 over every row of every table, sorted in Python (identical on both stores)."""
        h = hashlib.sha256()
        with store.read() as tx:
            for table in self.tables:
                rows = tx.query(f"SELECT {', '.join(table.column_names)} FROM {{s}}{table.name}")
                lines = sorted("\t".join(_text(v) for v in row) for row in rows)
                h.update(f"#{table.name} {len(lines)}\n".encode())
                for line in lines:
                    h.update(line.encode())
                    h.update(b"\n")
        return h.hexdigest()


def _text(value: Any) -> str:
    if value is None:
        return "\\N"
    if isinstance(value, bool):
        return str(int(value))
    return str(value)
