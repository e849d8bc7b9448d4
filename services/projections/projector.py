"""The projector: keeps views up to date from the event log, on SQLite and PostgreSQL alike.

It polls ``recorder.select_notifications`` (SQLite has no subscriptions) and, for each batch,
writes every view's rows and its tracking position in ONE transaction: exactly once.
"""

from __future__ import annotations

import gc
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import services.projections.tracking as tracking
from services.ledger.config import APP_NAME
from services.projections.decode import EPOCH as _EPOCH
from services.projections.decode import Row, decoders
from services.projections.store import ReadStore, Tx
from services.projections.tracking import PositionConflict
from services.projections.view import Envelope, View

DEFAULT_BATCH = 5000
# A rebuild's events per transaction. Each batch costs every view a fixed part (its lookups of
# the rows it touches, its statements, the tracking rows, the commit): ~25 ms a batch on the
# bench (docs/performance.md, "Rebuild"), so a rebuild in batches of 20,000 is ~20 % faster
# than in batches of 5,000; a batch of 20,000 events holds ~25 MB while it is applied (5,000:
# ~3 MB).
REBUILD_BATCH = 20_000


@dataclass(frozen=True, slots=True)
class Lag:
    """How far a view is behind the log: in events and in event-time seconds."""

    view: str
    position: int
    head: int
    events_behind: int
    seconds_behind: float


def apply_batch(
    store: ReadStore, views: Sequence[View], positions: dict[str, int], batch: Sequence[Envelope]
) -> dict[str, int]:
    """Apply ``batch`` (in log order) to every view past its position, in one transaction.

    Returns the new positions. Raises PositionConflict (nothing written) if any moved meanwhile.
    """
    if not batch:
        return positions
    last = batch[-1]
    # The time of the last event read (events no view wants are not decoded: "" = unknown).
    stamp = next((e.at for e in reversed(batch) if e.at), None)
    new = dict(positions)
    low = min(positions[v.name] for v in views)
    mine: dict[str, list[Envelope]] = {v.name: [] for v in views}
    if all(positions[v.name] == low for v in views):  # the usual case: one route per topic
        lists: dict[str, list[list[Envelope]]] = {}
        for e in batch:
            if e.position <= low:
                continue
            targets = lists.get(e.topic)
            if targets is None:
                targets = lists[e.topic] = [mine[v.name] for v in views if v.wants(e.topic)]
            for out in targets:
                out.append(e)
    else:  # views at different positions: each takes only what it has not applied
        routes: dict[str, list[tuple[int, list[Envelope]]]] = {}
        for e in batch:
            if e.position <= low:
                continue
            route = routes.get(e.topic)
            if route is None:
                route = routes[e.topic] = [
                    (positions[v.name], mine[v.name]) for v in views if v.wants(e.topic)
                ]
            for after, out in route:
                if e.position > after:
                    out.append(e)
    with store.transaction() as tx:
        for view in views:
            old = positions[view.name]
            if last.position <= old:
                continue
            tracking.advance(tx, view.name, old, last.position, stamp, view.schema_digest())
            if mine[view.name]:
                view.apply(tx, mine[view.name])
            new[view.name] = last.position
    return new


def partial_reads(views: Sequence[View]) -> dict[str, frozenset[str]]:
    """Topic -> the fields its events are read for, where every view that wants the topic
    names the fields it reads (``View.reads``): the decoder builds only those."""
    out: dict[str, frozenset[str]] = {}
    for topic in {t for v in views for t in v.reads}:
        readers = [v for v in views if v.wants(topic)]
        if all(topic in v.reads for v in readers):
            out[topic] = frozenset().union(*(v.reads[topic] for v in readers))
    return out


SETUP_ATTEMPTS = 6  # the read models' set-up, tried again after a lock not got in time


def contended(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is a lock not got: SQLite's "database is locked"
    (its busy timeout passed), PostgreSQL's deadlock, lock timeout or serialisation failure."""
    error: BaseException | None = exc
    for _ in range(5):
        if error is None:
            return False
        if getattr(error, "sqlstate", None) in ("40P01", "55P03", "40001"):
            return True
        if type(error).__module__ == "sqlite3" and "locked" in str(error):
            return True
        error = error.__cause__ or error.__context__
    return False


def prepare(tx: Tx, views: Sequence[View]) -> None:
    """Create what is missing (idempotent). A view built by another version of its code (its
    schema digest differs) is dropped and set back to position 0: it is rebuilt from the log."""
    tracking.create(tx)
    tracking.lock(tx)
    stored = tracking.schemas(tx)
    for view in views:
        digest = view.schema_digest()
        if view.name in stored and stored[view.name] != digest:
            tx.script(view.drop_sql())
            tracking.restart(tx, view.name, digest)
    tx.script([sql for view in views for sql in view.create_sql()])
    tracking.ensure(tx, {v.name: v.schema_digest() for v in views})
    share(tx, views)


EVENTS_TABLE = f"{APP_NAME.lower()}_events"


def share(tx: Tx, views: Sequence[View]) -> None:
    """PostgreSQL: every role that may read the event log may read the read models made from
    it (``SELECT`` on ``rm_tracking`` and the views' tables, granted by their owner, this
    role): the reader roles of ``sabot store init --reader-role`` read the reports from a
    standby (docs/operations.md, "Reads off the primary"). Only what is missing is granted:
    a start normally grants nothing."""
    if tx.dialect != "postgres":
        return
    schema = tx.schema or "public"
    tables = [tracking.TRACKING_TABLE, *(t.name for v in views for t in v.tables)]
    rows = tx.query(
        "SELECT quote_ident(r.rolname), t.name FROM pg_roles r "
        "CROSS JOIN unnest(?::text[]) AS t(name) "
        "WHERE left(r.rolname, 3) <> 'pg_' AND r.rolname <> current_user "
        "AND CASE WHEN to_regclass(format('%%I.%%I', ?::text, ?::text)) IS NULL THEN false "
        "    ELSE has_table_privilege(r.oid, format('%%I.%%I', ?::text, ?::text), 'SELECT') END "
        "AND pg_has_role(current_user, (SELECT relowner FROM pg_class "
        "    WHERE oid = to_regclass(format('%%I.%%I', ?::text, t.name))), 'USAGE') "
        "AND NOT has_table_privilege(r.oid, format('%%I.%%I', ?::text, t.name), 'SELECT')",
        (tables, schema, EVENTS_TABLE, schema, EVENTS_TABLE, schema, schema))
    missing: dict[str, list[str]] = {}
    for role, table in rows:
        missing.setdefault(str(role), []).append(str(table))
    for role, names in missing.items():
        tx.execute(f"GRANT SELECT ON {', '.join('{s}' + t for t in names)} TO {role}")

class ReadModelsAbsent(LookupError):
    """A projector that only reads found no read models (or ones of other settings)."""


class Projector:
    """Views over one application's log, with their positions in ``rm_tracking``: written in
    ``store`` (default: the log's own database). ``setup=False``: a projector that only reads
    the views as they are (on a standby, which refuses every write): it creates, catches up and
    writes nothing (``ReadModelsAbsent`` when they are not there, or were built with other
    settings)."""

    def __init__(self, app: Any, views: Sequence[View], store: ReadStore | None = None,
                 setup: bool = True) -> None:
        self.app = app
        self.views = tuple(views)
        self.store = store or ReadStore.of(app)
        self._wanted: frozenset[str] | None = frozenset()
        for v in self.views:
            if v.topics is None:
                self._wanted = None
                break
            assert self._wanted is not None
            self._wanted |= v.topics
        for view in self.views:  # a view whose settings are those it was built with
            adopt = getattr(view, "adopt", None)
            if adopt is not None:
                adopt(self.store)
        self.positions: dict[str, int] = {}
        self._decode, self._decode_row = decoders(app, partial_reads(self.views))
        self._select = _row_reader(app) if self._decode_row is not None else None
        if setup:
            self.setup()
        else:
            self._check_built()
            self.reload()

    def _check_built(self) -> None:
        """The views are there, built by the same code and settings (a reader's check)."""
        if not self.store.table_exists(tracking.TRACKING_TABLE):
            raise ReadModelsAbsent("no read models there yet (`sabot store projections run` "
                                   "builds them)")
        with self.store.read() as tx:
            stored = tracking.schemas(tx)
        other = [v.name for v in self.views if stored.get(v.name) != v.schema_digest()]
        if other:
            raise ReadModelsAbsent(
                f"the read models {', '.join(other)} there were built by another version or "
                "with another gaming day (SABOT_GAMING_DAY, SABOT_SHIFTS), or not at all")

    def setup(self) -> None:
        """Create the tables and tracking rows if missing (idempotent); read the positions.
        Beside a busy writer whose projector applies batches (a standby, a second server
        starting): the set-up orders its locks (``ReadStore.setup_transaction``,
        ``tracking.lock``) and is tried again after a lock it could not get in time."""
        for attempt in range(SETUP_ATTEMPTS):
            try:
                with self.store.setup_transaction() as tx:
                    prepare(tx, self.views)
                break
            except Exception as exc:
                if attempt == SETUP_ATTEMPTS - 1 or not contended(exc):
                    raise
                time.sleep(random.uniform(0.05, 0.1) * 2 ** attempt)
        self.reload()

    def reload(self) -> None:
        with self.store.read() as tx:
            found = tracking.read(tx, [v.name for v in self.views])
        self.positions = {k: p.position for k, p in found.items()}

    def head(self) -> int:
        return int(self.app.recorder.max_notification_id() or 0)

    def read_batch(self, start: int, limit: int) -> list[Envelope]:
        """Events with positions > ``start``, decoded (only topics some view wants)."""
        wanted = self._wanted
        out: list[Envelope] = []
        if self._select is not None and self._decode_row is not None:
            decode_row = self._decode_row
            if wanted is None:
                return [decode_row(r) for r in self._select(start, limit)]
            append = out.append
            make = tuple.__new__  # an Envelope without its generated (Python) __new__
            for r in self._select(start, limit):
                if r[3] in wanted:
                    append(decode_row(r))
                else:
                    append(make(Envelope, (r[0], r[3], None, _EPOCH, "", "")))
            return out
        notifications = self.app.recorder.select_notifications(
            start + 1, limit, inclusive_of_start=True
        )
        decode = self._decode
        for n in notifications:
            if wanted is None or n.topic in wanted:
                out.append(decode(n))
            else:
                out.append(Envelope(n.id, n.topic, None, _EPOCH, "", ""))
        # Keep the last position even if its event is of no interest, so tracking moves on.
        return out

    def step(self, batch_size: int = DEFAULT_BATCH) -> int:
        """Read and apply one batch; the number of events read (0: caught up)."""
        start = min(self.positions.values(), default=0)
        batch = self.read_batch(start, batch_size)
        if not batch:
            return 0
        try:
            self.positions = apply_batch(self.store, self.views, self.positions, batch)
        except PositionConflict:
            self.reload()
        return len(batch)

    def catch_up(
        self, batch_size: int = DEFAULT_BATCH, max_events: int | None = None, bulk: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Apply everything up to the head (or ``max_events``); the number of events read.
        ``bulk``: the cyclic garbage collector is paused during each batch (see
        :func:`_gc_paused`); ``progress``: told the events read so far after each batch."""
        total = 0
        while max_events is None or total < max_events:
            size = batch_size if max_events is None else min(batch_size, max_events - total)
            if bulk:
                with _gc_paused():
                    n = self.step(size)
            else:
                n = self.step(size)
            if n == 0:
                break
            total += n
            if progress is not None:
                progress(total)
        return total

    def run(self, stop: threading.Event, interval: float = 0.2) -> None:
        """Poll until ``stop`` is set (supervise it; errors propagate)."""
        while not stop.is_set():
            if self.step() == 0:
                stop.wait(interval)

    def rebuild(self, batch_size: int = REBUILD_BATCH, drop: bool = False,
                progress: Callable[[int], None] | None = None) -> int:
        """Drop every view's rows, set its position to 0 and replay the log from the start.

        A view whose tables already have the current shape (same schema digest) is emptied in
        place (``DELETE``, cheap); otherwise, or with ``drop``, its tables are dropped and
        created again (DDL costs a few hundred milliseconds on a busy PostgreSQL).

        Bulk load: the secondary indexes the views' own lookups do not use are dropped first
        and created after the last batch, before this returns, a transaction per table (on
        PostgreSQL several tables at once: ``ReadStore.script_apart``; a rebuild cut short
        leaves them missing until the next :meth:`setup` or rebuild creates them; rows and
        positions are unaffected)."""
        late: list[list[str]] = []  # a list per table
        with self.store.setup_transaction() as tx:
            tracking.create(tx)
            tracking.lock(tx)
            stored = tracking.schemas(tx)
            for view in self.views:
                digest = view.schema_digest()
                drop_indexes, create_indexes = view.late_indexes()
                if drop or stored.get(view.name) != digest:
                    tx.script(view.drop_sql())
                    tx.script(view.create_sql())
                    tx.script(drop_indexes)
                else:
                    tx.script(view.create_sql())  # IF NOT EXISTS: in case one went missing
                    tx.script(drop_indexes)
                    tx.script(view.empty_sql())
                late += create_indexes
                tracking.restart(tx, view.name, digest)
            share(tx, self.views)
        self.reload()
        try:
            return self.catch_up(batch_size, bulk=True, progress=progress)
        finally:
            self.store.script_apart(late)

    def digests(self) -> dict[str, str]:
        return {v.name: v.digest(self.store) for v in self.views}

    def lag(self) -> list[Lag]:
        """Per view: events behind the head of the log and event-time seconds behind it."""
        with self.store.read() as tx:
            found = tracking.read(tx, [v.name for v in self.views])
        head = self.head()
        head_time: datetime | None = None
        if head:
            last = self.app.recorder.select_notifications(head, 1)
            if last:
                head_time = self._decode(last[0]).time
        out: list[Lag] = []
        for v in self.views:
            p = found[v.name]
            seconds = 0.0
            if head_time is not None and p.position < head:
                if p.event_time:
                    seconds = (head_time - datetime.fromisoformat(p.event_time)).total_seconds()
                else:
                    first = self.app.recorder.select_notifications(1, 1)
                    if first:
                        t0 = self._decode(first[0]).time
                        seconds = (head_time - t0).total_seconds()
            out.append(Lag(v.name, p.position, head, max(0, head - p.position), max(0.0, seconds)))
        return out


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pauses Python's cyclic garbage collector (process-wide) for one batch, then sets it back.

    A batch allocates tens of thousands of acyclic objects (rows, decoded events, envelopes),
    all freed by reference counting when it ends; the collector's passes over them cost ~10 %
    of a rebuild. Objects freed by reference counting are freed as usual meanwhile."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _row_reader(app: Any) -> Callable[[int, int], list[Row]] | None:
    """Reads the log's rows after a position as plain tuples (:data:`decode.Row`), the
    originator id as text: the recorder's ``select_notifications`` without its per-event
    ``Notification`` and ``UUID`` objects (on PostgreSQL in the binary format). ``None`` for a
    recorder it does not know."""
    recorder = app.recorder
    datastore = getattr(recorder, "datastore", None)
    table = getattr(recorder, "events_table_name", None)
    module = type(datastore).__module__
    if datastore is None or not isinstance(table, str):
        return None
    if module.endswith("sqlite") and getattr(datastore, "originator_id_type", "") == "uuid":
        sql = (f"SELECT rowid, originator_id, originator_version, topic, state FROM {table} "
               "WHERE rowid > ? ORDER BY rowid LIMIT ?")

        texts: dict[str, str] = {}  # stored text (hex) -> the UUID's text, as str(UUID(...))

        def select_sqlite(start: int, limit: int) -> list[Row]:
            with datastore.transaction(commit=False) as c:
                c.execute(sql, (start, limit))
                rows = c.fetchall()
            if len(texts) > 100_000:
                texts.clear()
            out: list[Row] = []
            for nid, raw, over, topic, state in rows:
                oid = texts.get(raw)
                if oid is None:
                    oid = texts[raw] = str(UUID(raw))
                out.append((nid, oid, over, topic, state))
            return out

        return select_sqlite
    if module.endswith("postgres"):
        from psycopg.rows import tuple_row
        from psycopg.sql import SQL, Identifier

        statement = SQL(
            "SELECT notification_id, originator_id::text, originator_version, topic, state "
            "FROM {}.{} WHERE notification_id > %s ORDER BY notification_id LIMIT %s"
        ).format(Identifier(datastore.schema), Identifier(table))

        def select_postgres(start: int, limit: int) -> list[Row]:
            # binary: the states (bytea) come as their bytes, not as hex text to decode: the
            # read of a rebuild's log ~half the processor time and server time of text
            with (datastore.get_connection() as conn,
                  conn.cursor(row_factory=tuple_row, binary=True) as cur):
                cur.execute(statement, (start, limit), prepare=True)
                rows: list[Row] = cur.fetchall()
                return rows

        return select_postgres
    return None
