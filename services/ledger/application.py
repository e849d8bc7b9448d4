"""The eventsourcing application holding the ledger's aggregates (events table ``sabot_events``).

On PostgreSQL its recorder inserts a save's events as four plain arrays (ids, versions, topics,
states) instead of one array of a composite type: same statement shape, same table lock, same
transaction, but psycopg dumps plain arrays in C where it quotes composites in Python. And the
whole transaction (begin, lock, notify, insert, commit) goes to the server in one round trip:
the library syncs once before the commit, which costs a second wait on a busy machine. A key
collision still aborts the transaction and raises ``IntegrityError``.

Timeouts (issue 15: a store that is down or cut off is answered UNAVAILABLE within the call's
deadline, never waited for): ``STORE_TIMEOUT`` (seconds, default ``STORE_TIMEOUT``) bounds what
a caller waits for the store. Every PostgreSQL connection of the pool is made with libpq's
``connect_timeout`` and TCP keepalives and user timeout derived from it, and with
``statement_timeout`` and ``lock_timeout`` as a backstop (``BACKSTOP`` times it: a read
model's catch-up may read long; the library sets ``idle_in_transaction_session_timeout``, 5 s
by default); the pool's wait for a
connection is that bound; each save sets ``statement_timeout`` and ``lock_timeout`` for its own
transaction from what is left of its batch's earliest deadline (``ArrayInsertRecorder.budget``,
set by the writer), and is tried again once, only while that leaves time.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar, cast
from uuid import UUID

import psycopg
from eventsourcing.application import Application, ProcessingEvent
from eventsourcing.domain import Aggregate, DomainEvent
from eventsourcing.persistence import (
    EventStore,
    InterfaceError,
    JSONTranscoder,
    Mapper,
    Notification,
    OperationalError,
    ProgrammingError,
    Recording,
    StoredEvent,
    Transcoder,
    Transcoding,
)
from eventsourcing.postgres import PostgresApplicationRecorder
from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteCursor
from eventsourcing.utils import Environment, get_topic
from psycopg import Cursor
from psycopg.rows import DictRow
from psycopg.sql import SQL, Identifier

from services.ledger.account import Account
from services.ledger.config import APP_NAME, LIBPQ, NO_JIT, libpq_params
from services.ledger.evidence import (
    CHAIN_ID,
    ChainBroken,
    ChainWriter,
    VerifiedEvents,
    VerifiedSnapshots,
    chained_snapshot,
)
from services.ledger.frozen import fields_of, make
from services.ledger.schema import CREATE_TABLE, LOCK_FUNCTION, create_tables
from services.ledger.transcoder import CanonicalTranscoder

STORE_SETTINGS = ("POSTGRES_DBNAME", "POSTGRES_HOST", "POSTGRES_PORT", "POSTGRES_USER",
                  "POSTGRES_PASSWORD", "POSTGRES_SCHEMA", "POSTGRES_CONNECT_TIMEOUT", LIBPQ)
STORE_TIMEOUT = 5.0  # seconds: the default bound of a wait for the store (env STORE_TIMEOUT)
RECONNECT_DELAY = 0.5  # seconds between a pool's attempts to replace a lost connection
RECONNECT_FOR = 86_400.0  # seconds it keeps trying (psycopg_pool's default: 5 minutes)
BACKSTOP = 6  # connection-wide statement and lock timeouts: this many times the bound
MIN_BUDGET = 0.1  # seconds: a save is given at least this long

log = logging.getLogger(__name__)


class ArrayInsertRecorder(PostgresApplicationRecorder):
    """``PostgresApplicationRecorder`` whose insert takes plain arrays (see the module's doc).

    With a ``fence`` (the writer's lease, ``services/ledger/lease.py``), a save locks the table
    through ``sabot_lock_events(pid of the lease's connection)`` (``ops/postgres/
    writer_lease.sql``): the same lock, taken with the owner's rights (a role that may only
    insert cannot take it), and the save fails unless that connection still holds the lease."""

    fence: Any = None
    budget: float | None = None  # seconds left for the next save (the writer sets it)
    bound: float = STORE_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fenced_lock_statement = SQL("SELECT {schema}.{function}(%s)").format(
            schema=Identifier(self.datastore.schema), function=Identifier(LOCK_FUNCTION))
        names = {"schema": Identifier(self.datastore.schema),
                 "table": Identifier(self.events_table_name),
                 "id_type": Identifier(self.datastore.originator_id_type)}
        insert = ("INSERT INTO {schema}.{table} AS t"
                  " (originator_id, originator_version, topic, state)"
                  " SELECT * FROM unnest(%b::{id_type}[], %b::bigint[], %b::text[], %b::bytea[])")
        self.array_insert_statement = SQL(insert + " RETURNING notification_id").format(**names)
        # a chained save inserts only if the store still holds the writer's previous link
        # (services/ledger/evidence.py): checked in the insert, no read of its own
        self.array_insert_after_statement = SQL(
            insert + " WHERE EXISTS (SELECT 1 FROM {schema}.{table} AS l"
            " WHERE l.originator_id = %s AND l.originator_version = %s AND l.state = %b)"
            " RETURNING notification_id").format(**names)

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        """Insert in one transaction; tried again once after a connection error if that
        leaves time within the budget (a connection cut by a failover), never waited for."""
        budget = self.budget if self.budget is not None else self.bound
        started = time.monotonic()
        try:
            return self._insert_once(stored_events, budget, **kwargs)
        except (InterfaceError, OperationalError):
            left = budget - (time.monotonic() - started)
            if left < max(MIN_BUDGET, budget / 2):
                raise
            time.sleep(0.05)
            return self._insert_once(stored_events, left, **kwargs)

    def _insert_once(
        self, stored_events: Sequence[StoredEvent], budget: float, **kwargs: Any
    ) -> Sequence[int] | None:
        if not stored_events:
            return None
        kwargs["budget_ms"] = max(int(MIN_BUDGET * 1000), int(budget * 1000))
        with self.datastore.get_connection() as conn:
            exc: Exception | None = None
            with conn.cursor() as first, conn.cursor() as curs:
                try:
                    with conn.pipeline(), conn.transaction():
                        self._insert_events(first, stored_events, **kwargs)
                        self._insert_stored_events(curs, stored_events, **kwargs)
                except psycopg.Error as e:
                    exc = e  # raised once the pipeline is left (see the library's recorder)
                if exc is None:
                    ids = [row["notification_id"] for row in curs.fetchall()]
            if exc is not None:
                raise exc
        if not ids and kwargs.get("after_link") is not None:
            raise ChainBroken("the store no longer holds the previous link")  # nothing stored
        if len(ids) != len(stored_events):
            raise ProgrammingError(f"got {len(ids)} notification ids for {len(stored_events)}")
        return ids

    def _lock_table(self, curs: Cursor[DictRow]) -> None:
        fence = self.fence
        if fence is None:
            super()._lock_table(curs)
            return
        curs.execute(self.fenced_lock_statement, (fence.pid or 0,), prepare=True)

    def _insert_stored_events(
        self, curs: Cursor[DictRow], stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> None:
        ms = int(kwargs.get("budget_ms") or self.bound * 1000)
        curs.execute(SQL("SET LOCAL statement_timeout = {}").format(ms), prepare=False)
        curs.execute(SQL("SET LOCAL lock_timeout = {}").format(ms), prepare=False)
        self._lock_table(curs)
        self._notify_channel(curs)
        arrays: tuple[Any, ...] = (
            [e.originator_id for e in stored_events],
            [e.originator_version for e in stored_events],
            [e.topic for e in stored_events],
            [e.state for e in stored_events],
        )
        after = kwargs.get("after_link")
        if after is None:
            curs.execute(self.array_insert_statement, arrays, prepare=True)
        else:  # (chain id, sequence number, stored bytes) of the link that must be there
            curs.execute(self.array_insert_after_statement, (*arrays, *after), prepare=True)


class ChainedSQLiteRecorder(SQLiteApplicationRecorder):
    """SQLite's recorder, whose chained save inserts only if the store still holds the writer's
    previous link, checked in the save's own transaction (as ``ArrayInsertRecorder`` does)."""

    def _insert_events(self, c: SQLiteCursor, stored_events: Sequence[StoredEvent],
                       **kwargs: Any) -> Sequence[int] | None:
        # the insert first: it takes the write lock (waiting for it), as before; a read first
        # would make a second writer's transaction fail at once ("database is locked")
        returning = super()._insert_events(c, stored_events, **kwargs)
        after = kwargs.get("after_link")
        if after is not None:  # (chain id, sequence number, stored bytes)
            oid, seq, state = after
            c.execute(f"SELECT state FROM {self.events_table_name} "
                      "WHERE originator_id = ? AND originator_version = ?", (oid.hex, seq))
            row = c.fetchone()
            if row is None or bytes(row[0]) != state:
                raise ChainBroken("the store no longer holds the previous link")  # rolled back
        return returning


# the library's records, made without their frozen ``__init__`` where ``frozen.make`` may
_FAST_RECORDS = all(fields_of(cls) is not None for cls in (StoredEvent, Notification, Recording))


def stored_event(originator_id: Any, originator_version: int, topic: str, state: bytes
                 ) -> StoredEvent:
    """``StoredEvent(originator_id, originator_version, topic, state)``, made faster."""
    if not _FAST_RECORDS:
        return StoredEvent(originator_id=originator_id, originator_version=originator_version,
                           topic=topic, state=state)
    return make(StoredEvent, {"originator_id": originator_id,
                              "originator_version": originator_version, "topic": topic,
                              "state": state})


def recording(event: Any, stored: StoredEvent, position: int) -> Recording[Any]:
    """``Recording(event, Notification(...))`` of ``stored`` at ``position``, made faster."""
    if not _FAST_RECORDS:
        return Recording(event, Notification(
            originator_id=stored.originator_id, originator_version=stored.originator_version,
            topic=stored.topic, state=stored.state, id=position))
    notification = make(Notification, {
        "originator_id": stored.originator_id, "originator_version": stored.originator_version,
        "topic": stored.topic, "state": stored.state, "id": position})
    made: Recording[Any] = make(Recording, {"domain_event": event,
                                            "notification": notification})
    return made


class LedgerMapper(Mapper[UUID]):
    """The library's ``Mapper``, its ``StoredEvent`` made by ``stored_event`` (the same
    object: tests/ledger/test_frozen.py)."""

    def to_stored_event(self, domain_event: Any) -> StoredEvent:
        """As ``Mapper.to_stored_event``."""
        topic = get_topic(domain_event.__class__)
        event_state = dict(vars(domain_event))
        originator_id = event_state.pop("originator_id")
        originator_version = event_state.pop("originator_version")
        class_version = getattr(type(domain_event), "class_version", 1)
        if class_version > 1:
            event_state["class_version"] = class_version
        stored_state = self.transcoder.encode(event_state)
        if self.compressor:
            stored_state = self.compressor.compress(stored_state)
        if self.cipher:
            stored_state = self.cipher.encrypt(stored_state)
        return stored_event(originator_id, originator_version, topic, stored_state)


class LedgerApplication(Application):  # type: ignore[type-arg]
    """Accounts are snapshotted every 500 events so a busy account loads fast after a restart.
    The snapshot is taken of the saved aggregate in memory (the library reloads it from the
    store first); a failed snapshot is logged and does not fail the committed save.

    With ``evidence`` (a ``ChainWriter``, set by the ledger), every save is closed by a signed
    link in the same insert, and the snapshots saved with it are named in that link; the
    snapshot store (``VerifiedSnapshots``) uses a snapshot only if a link signed by a trusted
    key vouches for it. The transcoder writes keys sorted: a stored state is the canonical JSON
    of its content, so a verifier can hash an exported event's bytes again."""

    name = APP_NAME
    snapshotting_intervals: ClassVar[dict[type[Any], int]] = {Account: 500}
    evidence: ChainWriter | None = None
    # the games' transcodings of their value types (``LedgerGame.transcodings``)
    game_transcodings: tuple[Transcoding, ...] = ()

    def __init__(self, env: Any = None, transcodings: Sequence[Transcoding] | None = None
                 ) -> None:
        """``transcodings``: the games' (None: the class's, ``decoding``)."""
        if transcodings is not None:
            self.game_transcodings = tuple(transcodings)
        super().__init__(env=env)

    @classmethod
    def decoding(cls, transcodings: Sequence[Transcoding]) -> type[LedgerApplication]:
        """The application class whose instances register ``transcodings`` (for what builds
        the application itself: the projection runner)."""
        return type(cls.__name__, (cls,), {"game_transcodings": tuple(transcodings),
                                           "name": cls.name, "__module__": cls.__module__})

    def use_evidence(self, evidence: ChainWriter | None) -> None:
        """Close every save with a link of ``evidence`` (None: evidence off, for the bench's
        comparison; snapshots are then neither chained nor checked)."""
        self.evidence = evidence
        if evidence is not None:  # the insert confirms the previous link itself
            evidence.in_insert = isinstance(self.recorder,
                                            ArrayInsertRecorder | ChainedSQLiteRecorder)
        store = self.snapshots
        if isinstance(store, VerifiedSnapshots):
            store.verify = evidence is not None
            store.trusted = evidence.key.trusted() if evidence is not None else {}
        events = self.events
        if isinstance(events, VerifiedEvents):  # what the writer loads, checked (issue 20)
            events.guard = evidence.guard if evidence is not None and evidence.checks else None

    def construct_transcoder(self) -> Transcoder:
        if not self.env.get(self.factory.TRANSCODER_TOPIC):  # the library's JSONTranscoder's
            canonical = CanonicalTranscoder()  # bytes, written faster (``transcoder.py``)
            self.register_transcodings(canonical)
            return canonical
        transcoder = super().construct_transcoder()
        if isinstance(transcoder, JSONTranscoder):
            transcoder.encoder = json.JSONEncoder(
                default=transcoder._encode_obj, separators=(",", ":"), ensure_ascii=False,
                sort_keys=True,
            )
        return transcoder

    def construct_mapper(self) -> Mapper[Any]:
        """The library's mapper (``MAPPER_TOPIC`` if set), else ``LedgerMapper``."""
        if self.env.get(self.factory.MAPPER_TOPIC):
            return super().construct_mapper()
        return self.factory.mapper(transcoder=self.construct_transcoder(),
                                   mapper_class=LedgerMapper)

    def construct_snapshot_store(self) -> EventStore:  # type: ignore[type-arg]
        return VerifiedSnapshots(super().construct_snapshot_store(), self.recorder)

    def construct_event_store(self) -> EventStore:  # type: ignore[type-arg]
        return VerifiedEvents(super().construct_event_store())

    def _take_snapshots(self, processing_event: ProcessingEvent[Any]) -> None:
        self.put_snapshots(self.snapshots_due(processing_event.events, processing_event.aggregates))

    def snapshots_due(self, events: Sequence[Any], aggregates: Mapping[Any, Any]) -> list[Any]:
        """Snapshots (taken now, of the aggregates as they are) of the aggregates whose new
        ``events`` reach a multiple of their snapshotting interval."""
        if self.snapshots is None or not self.snapshotting_intervals:
            return []
        due: dict[Any, Aggregate] = {}
        for event in events:
            agg = aggregates.get(event.originator_id)
            if not isinstance(agg, Aggregate):
                continue
            interval = self.snapshotting_intervals.get(type(agg))
            if interval is not None and event.originator_version % interval == 0:
                due[agg.id] = agg
        snapshots = []
        for agg in due.values():
            snapshot_class = getattr(type(agg), "Snapshot", type(self).snapshot_class)
            if snapshot_class is not None:
                snapshots.append(snapshot_class.take(agg))
        return snapshots

    def put_snapshots(self, snapshots: list[Any]) -> None:
        """Store snapshots taken after their events were committed (never raises: a snapshot
        only speeds up loading)."""
        if snapshots and self.snapshots is not None:
            try:
                self.snapshots.put(snapshots)
            except Exception:
                log.exception("snapshot not stored")

    def _put_stored_snapshots(self, stored: list[StoredEvent]) -> None:
        if stored and self.snapshots is not None:
            try:
                self.snapshots.recorder.insert_events(stored)
            except Exception:
                log.exception("snapshot not stored")

    @property
    def store_timeout(self) -> float:
        """Seconds a caller waits for the store at most (env ``STORE_TIMEOUT``)."""
        return store_timeout(self.env)

    def construct_factory(self, env: Environment) -> Any:
        """The library's factory; on PostgreSQL, its pool's connections get the store URL's
        other libpq parameters (``LIBPQ``: the library has no setting for them) and the timeouts
        of the module's doc (set before the pool opens: every connection has them)."""
        factory = super().construct_factory(env)
        datastore = getattr(factory, "datastore", None)
        pool = getattr(datastore, "pool", None)
        if pool is not None and isinstance(getattr(pool, "kwargs", None), dict):
            bound = store_timeout(env)
            pool.kwargs.update(libpq_params(env))
            pool.kwargs.update(connection_timeouts(bound))
            pool.timeout = bound  # the wait for a free connection
            cap_reconnection_backoff()
            pool.reconnect_timeout = RECONNECT_FOR
        return factory

    def construct_recorder(self) -> Any:
        recorder = super().construct_recorder()
        if isinstance(recorder, ArrayInsertRecorder):
            recorder.bound = self.store_timeout
        return recorder

    def store_probe(self) -> Any:
        """A check that the store answers (raises if not), on a connection of its own with
        the bound's timeouts; None for SQLite (a file: no outage to wait out)."""
        if self.env.get("PERSISTENCE_MODULE") != "eventsourcing.postgres":
            return None
        from services.ledger.schema import conninfo

        settings = {k: v for k in STORE_SETTINGS if (v := self.env.get(k)) is not None}
        return StoreProbe(conninfo(settings), connection_timeouts(min(self.store_timeout, 2.0)))

    def construct_env(self, name: str, env: Any = None) -> Environment:
        constructed = super().construct_env(name, env)
        if constructed.get("PERSISTENCE_MODULE") == "eventsourcing.postgres":
            bound = store_timeout(constructed)
            if not constructed.get("POSTGRES_CONNECT_TIMEOUT"):  # the pool's wait, whole s
                constructed["POSTGRES_CONNECT_TIMEOUT"] = str(max(1, math.ceil(bound)))
        if (
            constructed.get("PERSISTENCE_MODULE") == "eventsourcing.postgres"
            and not constructed.get("APPLICATION_RECORDER_TOPIC")
        ):
            constructed["APPLICATION_RECORDER_TOPIC"] = get_topic(ArrayInsertRecorder)
        if (
            constructed.get("PERSISTENCE_MODULE") == "eventsourcing.sqlite"
            and not constructed.get("APPLICATION_RECORDER_TOPIC")
        ):
            constructed["APPLICATION_RECORDER_TOPIC"] = get_topic(ChainedSQLiteRecorder)
        if (
            constructed.get("PERSISTENCE_MODULE") == "eventsourcing.postgres"
            and constructed.get("CREATE_TABLE") is None
        ):  # a role that does not own the tables creates nothing (services/ledger/schema.py)
            settings = {k: v for k in STORE_SETTINGS if (v := constructed.get(k)) is not None}
            constructed[CREATE_TABLE] = "y" if create_tables(settings) else "n"
        return constructed

    def register_transcodings(self, transcoder: JSONTranscoder) -> None:
        super().register_transcodings(transcoder)
        for transcoding in self.game_transcodings:
            transcoder.register(transcoding)

    def save(self, *objs: Any, snapshots: Sequence[Any] = (), **kwargs: Any
             ) -> list[Recording[Any]]:
        """``Application.save`` (one transaction), collecting the events of ``Aggregate``
        objects directly: the library's runtime protocol checks cost more than the rest of
        collecting when the writer saves a batch of a few hundred aggregates. ``snapshots``:
        taken with this batch (the writer's); aggregates saved here are snapshotted as due."""
        processing_event: ProcessingEvent[Any] = ProcessingEvent()
        events = processing_event.events
        aggregates = processing_event.aggregates
        others: list[Any] = []
        for obj in objs:
            if isinstance(obj, Aggregate):
                events.extend(obj.collect_events())
                aggregates[obj.id] = obj
            elif isinstance(obj, DomainEvent):
                events.append(obj)
            elif obj is not None:
                others.append(obj)
        if others:
            processing_event.collect_events(*others)
        processing_event.saved_kwargs.update(kwargs)
        due = list(snapshots)
        if aggregates:
            due += self.snapshots_due(events, aggregates)
        if self.evidence is None:
            recordings = self._record(processing_event)
            self.put_snapshots(due)
        else:
            recordings = self._record_chained(processing_event, self.evidence, due)
        self._notify(recordings)
        self.notify(processing_event.events)  # the library's deprecated hook, kept
        return recordings

    def _record_chained(self, processing_event: ProcessingEvent[Any], evidence: ChainWriter,
                        snapshots: list[Any]) -> list[Recording[Any]]:
        """The batch's events and its link in one insert, then the snapshots it names."""
        events = processing_event.events
        if not events:
            return []
        to_stored = self.mapper.to_stored_event
        stored = [to_stored(e) for e in events]
        try:
            seq = evidence.next_seq()
            chained = [to_stored(chained_snapshot(s, seq)) for s in snapshots]
            timestamp = getattr(events[-1], "timestamp", None) or datetime.now(UTC)
            pending = evidence.link(stored, chained, timestamp)
            kwargs = processing_event.saved_kwargs
            if pending.confirm is not None:
                kwargs = {**kwargs, "after_link": (CHAIN_ID, *pending.confirm)}
            try:
                ids = self.recorder.insert_events([*stored, pending.stored], **kwargs)
            except ChainBroken:  # the insert found the previous link gone: stored nothing
                raise evidence.previous_gone() from None
        except BaseException:
            evidence.forget()  # another writer's link may be ahead: read the head again
            raise
        if not ids or len(ids) != len(stored) + 1:
            evidence.forget()
            raise ProgrammingError(f"got {len(ids or ())} notification ids for {len(stored) + 1}")
        evidence.committed(pending, ids[-1], ids[:-1])
        recordings: list[Recording[Any]] = [
            recording(d, s, n) for d, s, n in zip(events, stored, ids, strict=False)]
        link = pending.stored
        recordings.append(Recording(cast(Any, link), Notification(
            originator_id=link.originator_id, originator_version=link.originator_version,
            topic=link.topic, state=link.state, id=ids[-1])))
        self._put_stored_snapshots(chained)
        return recordings


class StoreProbe:
    """Whether the store answers and takes writes, on a connection of its own (kept between
    looks; ``close`` ends it): a standby (read-only, in recovery) counts as not answering."""

    def __init__(self, conninfo: str, options: dict[str, Any]) -> None:
        self.conninfo = conninfo
        self.options = options
        self._conn: Any = None

    def __call__(self) -> None:
        try:
            if self._conn is None or self._conn.closed:
                self._conn = psycopg.connect(self.conninfo, autocommit=True,
                                             application_name="sabot-writer-probe",
                                             **self.options)
            row = self._conn.execute("SELECT pg_is_in_recovery()").fetchone()
            if row is None or row[0]:
                raise psycopg.OperationalError("the store is a standby (read-only)")
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # already broken
                conn.close()


def cap_reconnection_backoff() -> None:
    """psycopg_pool replaces a lost connection with attempts 1, 2, 4, 8, 16 ... s apart, and a
    pool whose every place waits in that backoff cannot grow: after a 22 s outage the pool
    answered 6.8 s after PostgreSQL did (issue 20). Every RECONNECT_DELAY s instead (jittered
    by 10%), for RECONNECT_FOR s: a pool that gave up would wait for a caller to grow it, and
    its callers, once 64 timed-out waits are queued (``POSTGRES_MAX_WAITING``), are refused
    before they can. The library keeps its backoff in these class attributes: one setting for
    every pool of the process (all of them the store's)."""
    from psycopg_pool.base import AttemptWithBackoff

    AttemptWithBackoff.INITIAL_DELAY = RECONNECT_DELAY
    AttemptWithBackoff.DELAY_BACKOFF = 1.0


def store_timeout(env: Any) -> float:
    """``STORE_TIMEOUT`` of a library environment (seconds), or the default."""
    text = str(env.get("STORE_TIMEOUT") or "").strip()
    try:
        value = float(text) if text else STORE_TIMEOUT
    except ValueError:
        return STORE_TIMEOUT
    return value if 0 < value <= 3600 else STORE_TIMEOUT


def connection_timeouts(bound: float) -> dict[str, Any]:
    """libpq's parameters for a connection whose waits are bounded by ``bound`` seconds: the
    connect timeout (whole seconds, at least 2: libpq's floor), TCP keepalives and user timeout
    (a peer gone silent is noticed), and the server-side backstops."""
    ms = int(bound * 1000)
    backstop = BACKSTOP * ms
    return {
        "connect_timeout": max(2, math.ceil(bound)),
        "keepalives": 1, "keepalives_idle": max(1, int(bound)), "keepalives_interval": 1,
        "keepalives_count": 3, "tcp_user_timeout": max(1000, ms),
        "options": f"-c statement_timeout={backstop} -c lock_timeout={backstop} {NO_JIT}",
    }


def new_application(env: dict[str, Any]) -> LedgerApplication:
    return LedgerApplication(env=env)
