"""The ledger's stored events read straight from its table (SQLite or PostgreSQL), bytes as stored.

Reading the table itself, not the application, is deliberate: the regulator hashes what is really
stored, so an edit made behind the application's back shows. The event table is eventsourcing's:
``stored_events`` (SQLite, position = rowid) or ``<app>_events`` (PostgreSQL, position =
notification_id).
"""

from __future__ import annotations

import base64
import bisect
import json
import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import unquote
from uuid import UUID

from services.regulator.canonical import canonical_json

APP_NAME = "sabot"
_T = TypeVar("_T")  # a row, or its position


class StoreError(ValueError):
    """A store URL that cannot be used."""


@dataclass(frozen=True, slots=True)
class RawEvent:
    """One stored event: its log position and the row's columns."""

    position: int
    originator_id: str
    version: int
    topic: str
    state: bytes

    def content(self) -> dict[str, Any]:
        """The exported content; ``state`` parsed as JSON when it is JSON, else ``state_b64``."""
        out: dict[str, Any] = {
            "position": self.position,
            "originator_id": self.originator_id,
            "version": self.version,
            "topic": self.topic,
        }
        try:
            out["state"] = json.loads(self.state.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            out["state_b64"] = base64.b64encode(self.state).decode("ascii")
        return out

    def leaf(self) -> bytes:
        """The Merkle leaf: the canonical JSON of ``content()``."""
        return canonical_json(self.content(), strict=False)


class Database:
    """A DB-API connection to SQLite or PostgreSQL, with ``?`` placeholders on both."""

    def __init__(self, url: str) -> None:
        self.url = url
        scheme = url.partition("://")[0].lower()  # libpq's forms are not all urlparse's
        self.kind = scheme
        self._conn: Any
        if scheme == "sqlite":
            path = url[len("sqlite:///") :] if url.startswith("sqlite:///") else ""
            if not path:
                raise StoreError(f"store URL {url!r}: sqlite URL needs a path")
            self.path = unquote(path)
            self._conn = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        elif scheme in ("postgresql", "postgres"):
            import psycopg
            import psycopg.sql

            from domain.errors import InvalidArgument
            from services.ledger.config import NO_JIT, store_env
            from services.ledger.schema import conninfo

            try:  # as the ledger reads it: hosts, ports and libpq's parameters as libpq does
                env = store_env(url)
            except InvalidArgument as exc:
                raise StoreError(f"store URL: {exc.message}") from None
            self.kind = "postgresql"
            schema = env["POSTGRES_SCHEMA"]
            # no JIT: a replay's queries read a few rows each, and a plan's estimate over a
            # large log (stale statistics) put a 45 ms compilation before a 0.2 ms read
            self._conn = psycopg.connect(conninfo(env), autocommit=True, options=NO_JIT)
            self._conn.execute(
                psycopg.sql.SQL("SET search_path TO {}").format(psycopg.sql.Identifier(schema))
            )
        else:
            raise StoreError(f"store URL {url!r}: use sqlite:///PATH or postgresql://HOST/DB")

    @property
    def is_postgres(self) -> bool:
        return self.kind == "postgresql"

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.is_postgres else sql

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cur = self._conn.execute(self._sql(sql), tuple(params))
        return list(cur.fetchall())

    def event_rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """``rows`` of the event table's columns (position, originator id, version, topic,
        state). On PostgreSQL the results come in binary: the same Python values (int, UUID,
        int, str, bytes), without the bytea's hex text made by the server and parsed by
        psycopg (a coup's replay reads ~600 rows: 2.2 -> 1.5 ms wall, 0.9 -> 0.5 ms CPU)."""
        if not self.is_postgres:
            return list(self._conn.execute(sql, tuple(params)).fetchall())
        with self._conn.cursor(binary=True) as cur:
            cur.execute(self._sql(sql), tuple(params))
            return list(cur.fetchall())

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        if params:
            self._conn.execute(self._sql(sql), tuple(params))
        else:  # no placeholders to fill: the text is sent as it is (it may hold a '%')
            self._conn.execute(sql)

    def executemany(self, sql: str, seq: Sequence[Sequence[Any]]) -> None:
        if self.is_postgres:
            with self._conn.cursor() as cur:
                cur.executemany(self._sql(sql), seq)
        else:
            self._conn.executemany(sql, seq)

    def transaction(self) -> Any:
        """A context manager: one transaction."""
        if self.is_postgres:
            return self._conn.transaction()
        return _SqliteTransaction(self._conn)

    def table_exists(self, name: str) -> bool:
        if self.is_postgres:
            return bool(self.rows("SELECT to_regclass(?) IS NOT NULL", (name,))[0][0])
        return bool(
            self.rows("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,))
        )

    def close(self) -> None:
        self._conn.close()


class _SqliteTransaction:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def __enter__(self) -> None:
        self._conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self._conn.execute("COMMIT" if exc_type is None else "ROLLBACK")


class EventTable:
    """The ledger's event table, read in log order."""

    def __init__(self, db: Database, app_name: str = APP_NAME) -> None:
        self.db = db
        if db.is_postgres:
            self.table = f"{app_name.lower()}_events"
            self._pos = "notification_id"
        else:
            self.table = "stored_events"
            self._pos = "rowid"
        self._seen = False

    def _exists(self) -> bool:
        """Whether the ledger has created its table yet (once it has, it stays)."""
        if not self._seen:
            self._seen = self.db.table_exists(self.table)
        return self._seen

    def read(self, after_position: int = 0, limit: int = 1000) -> list[RawEvent]:
        """Events with position > ``after_position``, at most ``limit``, in log order."""
        if not self._exists():
            return []
        rows = self.db.event_rows(
            f"SELECT {self._pos}, originator_id, originator_version, topic, state "
            f"FROM {self.table} WHERE {self._pos} > ? ORDER BY {self._pos} LIMIT ?",
            (after_position, limit),
        )
        return [_raw(r) for r in rows]

    def positions(self, after_position: int = 0, limit: int = 100_000) -> list[int]:
        """Log positions > ``after_position``, at most ``limit``, in order (no content read)."""
        if not self._exists():
            return []
        rows = self.db.rows(
            f"SELECT {self._pos} FROM {self.table} WHERE {self._pos} > ? "
            f"ORDER BY {self._pos} LIMIT ?",
            (after_position, limit),
        )
        return [int(r[0]) for r in rows]

    def at(self, positions: Sequence[int]) -> dict[int, RawEvent]:
        """The events at these positions (missing ones are absent)."""
        out: dict[int, RawEvent] = {}
        for i in range(0, len(positions), 500):
            chunk = list(positions[i : i + 500])
            marks = ",".join("?" * len(chunk))
            rows = self.db.event_rows(
                f"SELECT {self._pos}, originator_id, originator_version, topic, state "
                f"FROM {self.table} WHERE {self._pos} IN ({marks})",
                chunk,
            )
            for r in rows:
                ev = _raw(r)
                out[ev.position] = ev
        return out

    def _one(self, originator_id: UUID) -> tuple[str, list[Any]]:
        """The condition naming one aggregate, and its parameters: eventsourcing's SQLite
        recorder stores 32 hex digits (either spelling accepted), PostgreSQL a uuid."""
        if self.db.is_postgres:
            return "originator_id = ?", [originator_id]
        return "originator_id IN (?, ?)", [originator_id.hex, str(originator_id)]

    def by_originator(self, originator_id: UUID, limit: int | None = None) -> list[RawEvent]:
        """One aggregate's events in version order (an index lookup, whatever the log's size)."""
        if not self._exists():
            return []
        cond, params = self._one(originator_id)
        sql = (
            f"SELECT {self._pos}, originator_id, originator_version, topic, state "
            f"FROM {self.table} WHERE {cond} ORDER BY originator_version"
        )
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [_raw(r) for r in self.db.event_rows(sql, params)]

    def topic_near(self, topic: str, position: int, width: int) -> list[RawEvent]:
        """The events of ``topic`` within ``width`` positions of ``position``, in log order (a
        range of the positions' index, whatever the log's size)."""
        if not self._exists():
            return []
        rows = self.db.event_rows(
            f"SELECT {self._pos}, originator_id, originator_version, topic, state "
            f"FROM {self.table} WHERE {self._pos} BETWEEN ? AND ? AND topic = ? "
            f"ORDER BY {self._pos}",
            (position - width, position + width, topic),
        )
        return [_raw(r) for r in rows]

    def versions(self, originator_id: UUID, ranges: Sequence[tuple[int, int]]
                 ) -> list[RawEvent]:
        """One aggregate's events whose versions lie in ``ranges`` (inclusive pairs), in
        version order: one statement of bounded index ranges, whatever the aggregate's
        history."""
        if not ranges or not self._exists():
            return []
        cond, one = self._one(originator_id)
        within = " OR ".join(["originator_version BETWEEN ? AND ?"] * len(ranges))
        rows = self.db.event_rows(
            f"SELECT {self._pos}, originator_id, originator_version, topic, state "
            f"FROM {self.table} WHERE {cond} AND ({within}) ORDER BY originator_version",
            [*one, *(v for r in ranges for v in r)],
        )
        return [_raw(r) for r in rows]

    def read_back(self, before_position: int, limit: int = 1000) -> list[RawEvent]:
        """Events with position < ``before_position``, at most ``limit``, last first."""
        if not self._exists():
            return []
        rows = self.db.event_rows(
            f"SELECT {self._pos}, originator_id, originator_version, topic, state "
            f"FROM {self.table} WHERE {self._pos} < ? ORDER BY {self._pos} DESC LIMIT ?",
            (before_position, limit),
        )
        return [_raw(r) for r in rows]

    def topic_before(self, topic: str, before_position: int, after_position: int = 0
                     ) -> RawEvent | None:
        """The last event of ``topic`` with ``after_position`` < position < ``before_position``
        (one query: a backward walk of the positions, the topic compared in the store)."""
        if not self._exists():
            return None
        rows = self.db.event_rows(
            f"SELECT {self._pos}, originator_id, originator_version, topic, state "
            f"FROM {self.table} WHERE {self._pos} < ? AND {self._pos} > ? AND topic = ? "
            f"ORDER BY {self._pos} DESC LIMIT 1",
            (before_position, after_position, topic),
        )
        return _raw(rows[0]) if rows else None

    def topic_at_or_after(self, topic: str, position: int) -> RawEvent | None:
        """The first event of ``topic`` at or after ``position`` (one query)."""
        if not self._exists():
            return None
        rows = self.db.event_rows(
            f"SELECT {self._pos}, originator_id, originator_version, topic, state "
            f"FROM {self.table} WHERE {self._pos} >= ? AND topic = ? "
            f"ORDER BY {self._pos} LIMIT 1",
            (position, topic),
        )
        return _raw(rows[0]) if rows else None

    def at_version(self, originator_id: UUID, version: int) -> RawEvent | None:
        """One aggregate's event at one version (an index lookup)."""
        if not self._exists():
            return None
        cond, params = self._one(originator_id)
        rows = self.db.event_rows(
            f"SELECT {self._pos}, originator_id, originator_version, topic, state "
            f"FROM {self.table} WHERE {cond} AND originator_version = ?",
            [*params, version],
        )
        return _raw(rows[0]) if rows else None

    def last_version(self, originator_id: UUID) -> RawEvent | None:
        """One aggregate's latest event (an index lookup)."""
        if not self._exists():
            return None
        cond, params = self._one(originator_id)
        rows = self.db.event_rows(
            f"SELECT {self._pos}, originator_id, originator_version, topic, state "
            f"FROM {self.table} WHERE {cond} ORDER BY originator_version DESC LIMIT 1",
            params,
        )
        return _raw(rows[0]) if rows else None

    def by_originators(self, originator_ids: Sequence[UUID]) -> dict[str, list[RawEvent]]:
        """Several aggregates' events (by hyphenated id), each in version order, in few
        queries."""
        out: dict[str, list[RawEvent]] = {str(o): [] for o in originator_ids}
        for ev in self._of_originators(originator_ids, "",
                                       " ORDER BY originator_id, originator_version"):
            out.setdefault(ev.originator_id, []).append(ev)
        return out

    def first_events(self, originator_ids: Sequence[UUID]) -> dict[str, RawEvent]:
        """Several aggregates' first events (version 1), by hyphenated id, in few queries."""
        return {ev.originator_id: ev for ev in self._of_originators(
            originator_ids, " AND originator_version = 1", "")}

    def _of_originators(self, originator_ids: Sequence[UUID], where: str, order: str
                        ) -> Iterator[RawEvent]:
        """The events of ``originator_ids`` (``where``: more conditions, ``order``: the
        rows' order within each query), 250 aggregates a query."""
        if not originator_ids or not self._exists():
            return
        ids = list(dict.fromkeys(originator_ids))
        for c in range(0, len(ids), 250):
            chunk = ids[c : c + 250]
            params: list[Any]
            if self.db.is_postgres:
                params = list(chunk)
            else:  # both spellings, as in by_originator
                params = [x for o in chunk for x in (o.hex, str(o))]
            marks = ",".join("?" * len(params))
            rows = self.db.event_rows(
                f"SELECT {self._pos}, originator_id, originator_version, topic, state "
                f"FROM {self.table} WHERE originator_id IN ({marks}){where}{order}",
                params,
            )
            yield from map(_raw, rows)

    def by_topic(self, topic: str) -> list[RawEvent]:
        """Every event of one topic, in log order (a scan of the table)."""
        if not self._exists():
            return []
        rows = self.db.event_rows(
            f"SELECT {self._pos}, originator_id, originator_version, topic, state "
            f"FROM {self.table} WHERE topic = ? ORDER BY {self._pos}",
            (topic,),
        )
        return [_raw(r) for r in rows]

    def iterate(self, after_position: int = 0, batch: int = 5000) -> Iterator[RawEvent]:
        while True:
            events = self.read(after_position, batch)
            if not events:
                return
            yield from events
            after_position = events[-1].position


    def cover(self, ranges: Sequence[tuple[int, int]], topic: str, floor: int = 0
              ) -> CoveredEvents:
        """The rows around each position range, read at once: ``CoveredEvents.fill``."""
        return CoveredEvents(self).fill(ranges, topic, floor)


MAX_COVER = 50_000  # positions in one covered interval, at most (larger: read from the table)


class CoveredEvents(EventTable):
    """An ``EventTable`` holding the rows of some position intervals, read at once (``fill``,
    ``EventTable.cover``), and the answers of the look-ups that found their ends. Within the
    intervals it answers from those rows, exactly as the table would (a position there with no
    row has none); ``topic_before`` and ``topic_at_or_after`` answer the questions asked then;
    everything else is asked of the table."""

    def __init__(self, base: EventTable) -> None:
        self.db, self.table, self._pos, self._seen = base.db, base.table, base._pos, base._seen
        self.base = base
        self._before: dict[tuple[str, int, int], int | None] = {}
        self._after: dict[tuple[str, int], int | None] = {}
        self._spans: list[tuple[int, int]] = []  # [lo, hi], sorted, disjoint, not touching
        self._starts: list[int] = []
        self._rows: list[RawEvent] = []
        self._positions: list[int] = []
        self._by_position: dict[int, RawEvent] = {}
        self._versions: dict[tuple[UUID, int], RawEvent | None] = {}

    # --- filling ---------------------------------------------------------------------------

    def fill(self, ranges: Sequence[tuple[int, int]], topic: str, floor: int = 0
             ) -> CoveredEvents:
        """Read the rows around each position range [first, last], in two queries: from the
        last ``topic`` event before ``first`` (and after ``floor``) to the first at or after
        ``last`` (the evidence chain's links around a range: the batches a check of the range
        reads; with none before it, from ``floor``). A range without an event of ``topic`` at or
        after its end, or wider than ``MAX_COVER`` positions, is not covered."""
        if not ranges or not self._exists():
            return self
        questions = sorted(set(ranges))
        if self.db.is_postgres:
            self._fill_postgres(questions, topic, floor)
            return self
        pos, table = self._pos, self.table
        for c in range(0, len(questions), 200):  # SQLite binds at most 999 parameters
            chunk = questions[c : c + 200]
            values = ", ".join(["(CAST(? AS BIGINT), CAST(? AS BIGINT))"] * len(chunk))
            bounds = self.db.rows(
                f"WITH q(a, b) AS (VALUES {values}) SELECT q.a, q.b, "
                f"(SELECT e.{pos} FROM {table} e WHERE e.{pos} < q.a AND e.{pos} > ? "
                f"AND e.topic = ? ORDER BY e.{pos} DESC LIMIT 1), "
                f"(SELECT e.{pos} FROM {table} e WHERE e.{pos} >= q.b AND e.topic = ? "
                f"ORDER BY e.{pos} LIMIT 1) FROM q",
                [*(x for r in chunk for x in r), floor, topic, topic],
            )
            self._bounds(topic, floor, bounds)
        intervals = self._intervals()
        one = (f"SELECT {pos}, originator_id, originator_version, topic, state FROM {table} "
               f"WHERE {pos} BETWEEN ? AND ?")
        for c in range(0, len(intervals), 200):
            chunk = intervals[c : c + 200]
            # one range scan of the positions' index each (a join on a VALUES list of them let
            # PostgreSQL plan a scan of the whole table: 4.9 s at 10^6 events)
            rows = self.db.event_rows(" UNION ALL ".join([one] * len(chunk)),
                                [x for iv in chunk for x in iv])
            self._hold([_raw(r) for r in rows])
        return self

    def _fill_postgres(self, questions: list[tuple[int, int]], topic: str, floor: int
                       ) -> None:
        """``fill`` on PostgreSQL: the same two questions in one statement whose text does not
        depend on how many ranges are asked (the ranges as two arrays), so psycopg prepares it
        once for the session (was: a statement of 32 ``UNION ALL`` branches, 0.8 ms of
        planning a replay; then two statements, one round trip each). Its first rows are the
        links around each range (``kind`` 0: ``q``), the others the rows of each span
        ``_bound`` keeps (``kind`` 1: the same start, end and ``MAX_COVER``; spans that overlap
        give a row twice, held once), each read by a ``LATERAL`` range scan of the positions'
        index, ``OFFSET 0`` keeping the subquery a subquery (pulled up, a join on a list of
        intervals could be planned as a scan of the whole table: 4.9 s at 10^6 events)."""
        pos, table = self._pos, self.table
        firsts, lasts = [a for a, _ in questions], [b for _, b in questions]
        got = self.db.event_rows(
            f"WITH q AS (SELECT q.a, q.b, "
            f"(SELECT e.{pos} FROM {table} e WHERE e.{pos} < q.a AND e.{pos} > ? "
            f"AND e.topic = ? ORDER BY e.{pos} DESC LIMIT 1) AS lo, "
            f"(SELECT e.{pos} FROM {table} e WHERE e.{pos} >= q.b AND e.topic = ? "
            f"ORDER BY e.{pos} LIMIT 1) AS hi "
            f"FROM unnest(CAST(? AS BIGINT[]), CAST(? AS BIGINT[])) AS q(a, b)), "
            f"s AS (SELECT DISTINCT coalesce(lo, CAST(? AS BIGINT)) AS a, hi + 1 AS b FROM q "
            f"WHERE hi IS NOT NULL AND hi - coalesce(lo, CAST(? AS BIGINT)) < ?) "
            f"SELECT 0 AS kind, q.a, q.b, q.lo, q.hi, NULL, NULL, NULL, NULL FROM q "
            f"UNION ALL SELECT 1, e.* FROM s CROSS JOIN LATERAL (SELECT {pos}, NULL::bigint, "
            f"NULL::bigint, NULL::bigint, originator_id, originator_version, topic, state "
            f"FROM {table} WHERE {pos} BETWEEN s.a AND s.b OFFSET 0) AS e",
            [floor, topic, topic, firsts, lasts, floor + 1, floor + 1, MAX_COVER],
        )
        self._bounds(topic, floor, [r[1:5] for r in got if r[0] == 0])
        self._intervals()
        self._hold([RawEvent(int(r[1]), _uuid_text(r[5]), int(r[6]), str(r[7]), bytes(r[8]))
                    for r in got if r[0] == 1])

    def _bounds(self, topic: str, floor: int, bounds: list[tuple[Any, ...]]) -> None:
        for a, b, lo, hi in bounds:
            self._bound(topic, int(a), int(b), floor,
                        None if lo is None else int(lo), None if hi is None else int(hi))

    def _bound(self, topic: str, first: int, last: int, floor: int, lo: int | None,
              hi: int | None) -> None:
        self._before[(topic, first, floor)] = lo
        self._after[(topic, last)] = hi
        start = floor + 1 if lo is None else lo  # none before: a walk starts after the floor
        if hi is not None and hi - start < MAX_COVER:
            self._spans.append((start, hi + 1))  # and the row after: where a walk sees its end

    def _intervals(self) -> list[tuple[int, int]]:
        merged: list[tuple[int, int]] = []
        for lo, hi in sorted(self._spans):
            if merged and lo <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
            else:
                merged.append((lo, hi))
        self._spans = merged
        self._starts = [lo for lo, _ in merged]
        return merged

    def _hold(self, rows: list[RawEvent]) -> None:
        for ev in rows:
            self._by_position[ev.position] = ev
        self._rows = sorted(self._by_position.values(), key=lambda e: e.position)
        self._positions = [e.position for e in self._rows]

    def _span_of(self, position: int) -> tuple[int, int] | None:
        i = bisect.bisect_right(self._starts, position) - 1
        if i >= 0 and position <= self._spans[i][1]:
            return self._spans[i]
        return None

    # --- the table's answers ----------------------------------------------------------------

    def _answer(self, kept: list[_T], table: Callable[[int, int], list[_T]],
                after_position: int, limit: int) -> list[_T]:
        """``kept``'s items (rows or their positions) after ``after_position`` within its
        span, at most ``limit``; ``table`` answers alone outside a span, and for the rest
        past the span's end."""
        span = self._span_of(after_position + 1)
        if span is None or limit <= 0:
            return table(after_position, limit)
        i = bisect.bisect_right(self._positions, after_position)
        j = bisect.bisect_right(self._positions, span[1], i)
        out = kept[i : min(j, i + limit)]
        if len(out) < limit:  # past the interval's end: the table has the rest
            out += table(span[1], limit - len(out))
        return out

    def read(self, after_position: int = 0, limit: int = 1000) -> list[RawEvent]:
        return self._answer(self._rows, self.base.read, after_position, limit)

    def positions(self, after_position: int = 0, limit: int = 100_000) -> list[int]:
        return self._answer(self._positions, self.base.positions, after_position, limit)

    def at(self, positions: Sequence[int]) -> dict[int, RawEvent]:
        out: dict[int, RawEvent] = {}
        rest: list[int] = []
        for p in positions:
            if self._span_of(p) is None:
                rest.append(p)
            elif p in self._by_position:
                out[p] = self._by_position[p]
        if rest:
            out.update(self.base.at(rest))
        return out

    def topic_before(self, topic: str, before_position: int, after_position: int = 0
                     ) -> RawEvent | None:
        key = (topic, before_position, after_position)
        if key not in self._before:
            return self.base.topic_before(topic, before_position, after_position)
        found = self._before[key]
        return None if found is None else self._found(found, topic)

    def topic_at_or_after(self, topic: str, position: int) -> RawEvent | None:
        key = (topic, position)
        if key not in self._after:
            return self.base.topic_at_or_after(topic, position)
        found = self._after[key]
        return None if found is None else self._found(found, topic)

    def _found(self, position: int, topic: str) -> RawEvent | None:
        ev = self._by_position.get(position)
        if ev is None or ev.topic != topic:  # not held (an interval without its other end)
            got = self.base.at([position]).get(position)
            return got if got is not None and got.topic == topic else None
        return ev

    def at_version(self, originator_id: UUID, version: int) -> RawEvent | None:
        """Asked of the table once per aggregate and version (the chain's first link: every
        check of a range starts from it)."""
        key = (originator_id, version)
        if key not in self._versions:
            self._versions[key] = self.base.at_version(originator_id, version)
        return self._versions[key]


class SnapshotTable:
    """The ledger's snapshot table (``stored_snapshots`` on SQLite, ``<app>_snapshots`` on
    PostgreSQL), read as stored."""

    def __init__(self, db: Database, app_name: str = APP_NAME) -> None:
        self.db = db
        self.table = f"{app_name.lower()}_snapshots" if db.is_postgres else "stored_snapshots"

    def records(self) -> Iterator[dict[str, Any]]:
        """Every snapshot, by aggregate and version: originator id, version, topic, state
        (parsed JSON, else ``state_b64``)."""
        if not self.db.table_exists(self.table):
            return
        rows = self.db.rows(
            f"SELECT originator_id, originator_version, topic, state FROM {self.table} "
            "ORDER BY originator_id, originator_version"
        )
        for oid, version, topic, state in rows:
            ev = RawEvent(0, _uuid_text(oid), int(version), str(topic), bytes(state))
            content = ev.content()
            del content["position"]
            yield content


def _raw(row: tuple[Any, ...]) -> RawEvent:
    pos, oid, version, topic, state = row
    return RawEvent(int(pos), _uuid_text(oid), int(version), str(topic), bytes(state))


_HEX32 = re.compile(r"[0-9a-f]{32}")


_TEXTS: dict[Any, str] = {}  # an originator id as read -> its text (aggregates have many rows)


def _uuid_text(oid: Any) -> str:
    """Originator ids as hyphenated UUID text (SQLite stores 32 hex digits, PostgreSQL a uuid),
    remembered (every row read passes here)."""
    text = _TEXTS.get(oid)
    if text is None:
        if len(_TEXTS) >= 65_536:
            _TEXTS.clear()
        text = _TEXTS[oid] = _id_text(oid)
    return text


def _id_text(oid: Any) -> str:
    """The 32 lowercase hex digits SQLite holds are cut into their groups as ``str(UUID(...))``
    would print them (without making the UUID)."""
    if type(oid) is str and _HEX32.fullmatch(oid):
        return f"{oid[:8]}-{oid[8:12]}-{oid[12:16]}-{oid[16:20]}-{oid[20:]}"
    try:
        return str(oid if isinstance(oid, UUID) else UUID(str(oid)))
    except ValueError:
        return str(oid)
