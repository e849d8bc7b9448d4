"""The single writer: commands decided against cached aggregates, their events saved together.

Each command runs as ``decide(unit)``: it validates first, then triggers events on aggregates
it got from the unit of work. The writer saves the pending events of every aggregate touched,
with one ``Request`` per command, in ONE ``app.save`` (one transaction). In batching mode a
writer thread folds the commands queued meanwhile into one save (the PostgreSQL store locks
the events table per save, so throughput comes from events per transaction), and decides the
commands that arrive while a batch commits into the next batch (see ``Writer``). If the save
fails, the cache forgets what the batch touched and nothing of it was stored: on a key
collision (a request id already stored, or another writer ahead) each command is decided again
alone, looking its request id up first; on any other failure each fails with ``Conflict``.

Request ids are looked up in the store only when needed: the writer remembers the ids of the
last ``RECENT_REQUESTS`` requests it saved (the id alone: a retry of one reads its answer from
the store), a new id is saved optimistically (a stored one collides atomically), and a refused
command looks its id up before it answers. What the writer keeps is bounded: those ids (~50
bytes each), and the aggregates of ``AggregateCache`` by their measured size (``CACHE_BYTES``).

The writer thread is the serial part of every write, so what can run in the calling thread does:
the request's UUID is computed before the command is queued. No digest of the arguments is
computed per command: a retry is compared with its stored request by ``Request.matches``.

With a ``lease`` (``services/ledger/lease.py``) the writer decides only while it holds the
store's writer lease: otherwise every command gets ``NotTheWriter`` at once and queries read the
store without caching (``take_over`` forgets the cache when the lease is taken).

Failing fast (issue 15): a caller waits for its command at most until its call's deadline
(``call_deadline``, set by the server's interceptor) or the store's bound (``STORE_TIMEOUT``, 5 s
by default), then gets ``StoreUnavailable`` (UNAVAILABLE, "retry with the same request id"); a
command whose caller gave up before it was decided is not decided. A save or a read that cannot
reach the store, or a save in flight longer than the bound, trips the writer's ``StoreWatch``:
from then on every command and query is answered ``StoreUnavailable`` at once, without touching
the store, until a probe of its own finds the store answering again (every 0.1 s); then the
writer forgets everything it cached (aggregates, recent requests, the evidence chain's head)
before it decides the next command. A save that fails on a full disk (SQLite ``SQLITE_FULL``,
PostgreSQL ``disk_full``) does not trip the watch (the store answers): its commands are answered
``StoreFull`` (UNAVAILABLE ``STORE_FULL``) and ``state()`` says ``store_full`` (the health's
``sabot.writer`` NOT_SERVING) until a save succeeds again. A batch that
refuses commands and stores nothing confirms the lease before it answers: a refusal is not
stored, so it must have been decided on the latest state (a batch that stores passed the lease's
fence in its own transaction).

Evidence (issue 20): the writer spends only what its evidence chain covers. Every event it
loads is checked against the link covering it (``services.ledger.evidence.ChainGuard``), and
before each save the store must still hold the last link it committed. A break
(``ChainBroken``) stops writing for good: the batch is not stored, every command from then on
is answered ``EvidenceBroken`` (FAILED_PRECONDITION) without being decided, ``state()`` says
``active: False`` (health ``sabot.writer`` NOT_SERVING) and names the break, and the gauge
``sabot_writer_evidence_broken`` is 1 (alert ``SabotEvidenceBroken``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import gc
import logging
import queue
import sys
import threading
import time
import types
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from concurrent.futures import Future, InvalidStateError, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import IntegrityError

from domain.errors import RuleViolation
from services.ledger.actor import SYSTEM, Actor
from services.ledger.application import LedgerApplication
from services.ledger.errors import (
    Conflict,
    NotTheWriter,
    RequestIdReused,
    StoreFull,
    StoreUnavailable,
)
from services.ledger.evidence import ChainBroken, EvidenceBroken
from services.ledger.ids import check_request_id, request_uuid
from services.ledger.lease import POLL, Lease
from services.ledger.refused import Refused, answer_of
from services.ledger.request import Request
from services.ledger.views import from_dict
from services.metrics import WriterMetrics

log = logging.getLogger(__name__)
A = TypeVar("A", bound=Aggregate)
T = TypeVar("T")

CACHE_SIZE = 20_000  # aggregates cached, at most
# their measured size, at most (``footprint``): a coup weighs ~470 bytes a stake, and a cache
# visited in a cycle (the tables' open coups, one batch each in turn) that cannot hold them all
# drops, least recently used first, exactly the coup the next call needs: each call then loads
# its coup from the store (every event read and checked), ~14x a stake's cost (docs/performance.md,
# "The aggregate cache's budget"). 16 MiB was at that edge for 8 coups of ~3,000 stakes with
# their accounts; 64 MiB holds ~4x that, and a 5-minute soak's ledger process stays flat at it
CACHE_BYTES = 64 << 20
GROWTH = 4  # a cached aggregate is measured again once its version has grown this much
# request ids remembered (a retry of one reads its answer from the store without deciding):
# ~94 bytes each (a 128-bit int in a set and a deque, measured with tracemalloc), 4.7 MB; at
# 1,000 commands/s, more than this machine takes, the last 50 s: longer than a caller's deadline
# and its retry. An older retry is decided again and collides with its stored request on save
# (the store's primary key): it gets the stored answer, never a second effect.
RECENT_REQUESTS = 50_000
# requests kept whole (a retry of one is answered the very first answer, not its stored form),
# at most this many and this many bytes (their estimate, ``answer_weight``): 3.8 KB for a stake
# to 141 KB for the settlement of a coup of 40 stakes and 423 KB of one of 200 (``footprint``),
# so the last 256 commands of a table's play, or the last few settlements of large coups;
# filled within the first seconds of a load, flat from then on
RECENT_ANSWERS = 256
RECENT_ANSWER_BYTES = 4 << 20
# ``answer_weight``: a kept request's bytes, estimated from above (within 2x of ``footprint``
# for every command measured, a stake's to a 200-stake settlement's) by its answer's rows
ANSWER_BASE = 2_700
ANSWER_ROW = 1_100

# The deadline of the gRPC call being served (a ``time.monotonic()`` instant; None: none), set
# by the server's outermost interceptor (``services.metrics.MetricsInterceptor``).
call_deadline: ContextVar[float | None] = ContextVar("sabot_call_deadline", default=None)
# seconds: the answer leaves this long before the caller's deadline (a quarter of the time left
# when that is shorter), so that it crosses a loaded machine in time: 50 ms was seen too short
# with 80 callers on 2 cores (DEADLINE_EXCEEDED instead of UNAVAILABLE)
MARGIN = 0.25
PROBE_INTERVAL = 0.5  # seconds between the writer's looks at a save in flight
# seconds between looks at a store found unreachable: a refused connection costs nothing, and
# the writer serves again this soon after the store does (issue 20: within 1 s of its return)
DOWN_PROBE_INTERVAL = 0.1
PROBE_TIMEOUT = 2.0  # seconds a look may take


# The cyclic garbage collector's first threshold in a process that runs a batching writer
# (the interpreter's default: 700 allocations). Deciding and encoding a stake allocates a few
# hundred objects that die at once by reference counting; collecting every 700 allocations
# promoted many of them all the same, and the full collections that follow scan every cached
# aggregate: 19 % of the writer's processor time on the batch call (issue 25; the same
# objects are freed, the collections are fewer: docs/performance.md, "The batch call").
GC_THRESHOLD = 10_000


def collect_less_often() -> None:
    """Raise the collector's first threshold to ``GC_THRESHOLD`` (never lower it)."""
    first, second, third = gc.get_threshold()
    if 0 < first < GC_THRESHOLD:
        gc.set_threshold(GC_THRESHOLD, second, third)


def store_unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` says the store could not be reached (a connection refused, cut or timed
    out; the pool's wait for a connection; a statement cancelled by its timeout)."""
    import psycopg
    from eventsourcing import persistence

    if isinstance(exc, persistence.OperationalError | persistence.InterfaceError
                  | persistence.ConnectionUnavailableError
                  | persistence.ConnectionPoolClosedError | psycopg.OperationalError
                  | psycopg.InterfaceError | TimeoutError):
        return True
    cause = exc.__cause__ or exc.__context__
    return cause is not None and cause is not exc and isinstance(
        cause, psycopg.OperationalError | psycopg.InterfaceError)


SQLITE_FULL = 13  # sqlite3's error code: "database or disk is full"
DISK_FULL = "53100"  # PostgreSQL's SQLSTATE disk_full


def store_full(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it: the library wraps the driver's errors) says the
    store's disk is full: SQLite's SQLITE_FULL, PostgreSQL's disk_full."""
    import sqlite3

    seen: set[int] = set()
    error: BaseException | None = exc
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, sqlite3.Error) and (
                getattr(error, "sqlite_errorcode", None) == SQLITE_FULL
                or "database or disk is full" in str(error)):
            return True
        if getattr(error, "sqlstate", None) == DISK_FULL:
            return True
        error = error.__cause__ or error.__context__
    return False


def wait_bound(bound: float, deadline: float | None) -> float:
    """Seconds a caller may wait: ``bound``, or less to answer before its ``deadline``."""
    if deadline is None:
        return bound
    left = deadline - time.monotonic()
    return max(0.0, min(bound, left - min(MARGIN, left / 4)))


class StoreWatch:
    """Whether the store answers, as the writer found it: ``trip`` when a save or a read could
    not reach it; then a probe (``probe``, raising when the store does not answer) looks every
    ``interval`` s on a thread of its own, and once it answers ``on_back`` runs and the watch
    is clear. A clear watch costs nothing: the writer's own saves say the store answers."""

    def __init__(self, probe: Callable[[], None], on_back: Callable[[], None],
                 metrics: WriterMetrics | None = None, interval: float = DOWN_PROBE_INTERVAL,
                 timeout: float = PROBE_TIMEOUT) -> None:
        self.probe = probe
        self.on_back = on_back
        self.metrics = metrics
        self.interval = interval
        self.timeout = timeout
        self.down_since: float | None = None  # time.monotonic() when tripped
        self.why = ""
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._looking: Future[None] | None = None
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="sabot-store-probe")

    @property
    def down(self) -> bool:
        return self.down_since is not None

    def trip(self, exc: BaseException | str) -> None:
        with self._lock:
            if self.down_since is not None or self._closed.is_set():
                return
            self.down_since = time.monotonic()
            self.why = exc if isinstance(exc, str) else f"{type(exc).__name__}: " + (
                str(exc).strip().splitlines() or [""])[0][:200]
        if self.metrics is not None:
            self.metrics.outage()
        log.error("ledger writer: the store cannot be reached (%s); failing fast until it "
                  "answers again", self.why)
        threading.Thread(target=self._watch, name="sabot-store-watch", daemon=True).start()

    def close(self) -> None:
        self._closed.set()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._close_probe()

    def _close_probe(self) -> None:
        close = getattr(self.probe, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):
                close()

    def check(self, why: str, timeout: float = 1.0) -> None:
        """Probe the store now (waiting ``timeout`` s at most) and trip if it does not answer."""
        if not self.down and not self._answers(timeout):
            self.trip(why)

    def _watch(self) -> None:
        while not self._closed.wait(self.interval):
            if not self._answers():
                continue
            try:
                self.on_back()
            except Exception:  # keep failing fast, and look again
                log.exception("ledger writer: could not start afresh after the outage")
                continue
            down_for = time.monotonic() - (self.down_since or time.monotonic())
            with self._lock:
                self.down_since, self.why = None, ""
            self._close_probe()  # its connection is not kept while the store answers
            log.warning("ledger writer: the store answers again after %.1f s; the cache was "
                        "emptied, commands are decided again", down_for)
            return

    def _answers(self, timeout: float | None = None) -> bool:
        looking = self._looking
        if looking is None or looking.done():  # a look still hanging is waited for, not doubled
            try:
                looking = self._looking = self._pool.submit(self.probe)
            except RuntimeError:  # closed
                return False
        try:
            looking.result(self.timeout if timeout is None else timeout)
        except Exception:
            return False
        return True


_LEAVES: frozenset[type[Any]] = frozenset({str, bytes, int, float, bool, type(None), UUID,
                                            datetime})
_SHARED = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
           types.MethodType, enum.Enum)  # not an aggregate's own: not counted
_SLOTS: dict[type[Any], tuple[str, ...]] = {}


def _slots(cls: type[Any]) -> tuple[str, ...]:
    found = _SLOTS.get(cls)
    if found is None:
        names: list[str] = []
        for klass in cls.__mro__:
            declared = klass.__dict__.get("__slots__", ())
            names += [declared] if isinstance(declared, str) else list(declared)
        found = _SLOTS[cls] = tuple(n for n in names if n not in ("__dict__", "__weakref__"))
    return found


def footprint(root: Any) -> int:
    """The bytes ``root`` holds as Python objects (``sys.getsizeof`` of every object it reaches
    through containers, ``__dict__`` and ``__slots__``; classes, functions, modules and enum
    members are shared, not counted, nor are the text keys of dicts, the names of fields). An
    estimate from above: a value shared with other aggregates is counted in each, and a text,
    a number or a time each time it is reached."""
    seen: set[int] = set()
    stack = [root]
    total = 0
    size = sys.getsizeof
    leaves = _LEAVES
    while stack:
        obj = stack.pop()
        key = id(obj)
        if key in seen:
            continue
        seen.add(key)
        if isinstance(obj, _SHARED):
            continue
        total += size(obj)
        if isinstance(obj, dict):
            values: Any = obj.values()
            for k in obj:
                if type(k) is not str:
                    values = [*obj.keys(), *obj.values()]
                    break
        elif isinstance(obj, list | tuple | set | frozenset | deque):
            values = obj
        elif isinstance(obj, Mapping):  # a persistent map (immutables.Map): keys and values
            values = [*obj.keys(), *obj.values()]
        else:
            values = [getattr(obj, name, None) for name in _slots(type(obj))]
            attrs = getattr(obj, "__dict__", None)
            if attrs is not None:
                values.append(attrs)
        for value in values:
            if type(value) in leaves:
                total += size(value)
            elif value is not None:
                stack.append(value)
    return total


class AggregateCache:
    """Committed aggregates by id, least recently used dropped first, bounded by their count
    (``size``) and by their measured size (``budget`` bytes, ``footprint``). An aggregate is
    measured when first put and again each time its version has grown ``GROWTH`` times since
    (its size grows with its events: a coup with its stakes), so measuring costs O(1) per
    event (~8 us per stake on a growing coup); in between it counts as grown with its version
    (measured x version / version measured at: from above for one whose size does not grow)."""

    def __init__(self, size: int = CACHE_SIZE, budget: int = CACHE_BYTES) -> None:
        self._items: OrderedDict[UUID, Aggregate] = OrderedDict()
        # id -> (its bytes as measured, the version measured at, its bytes as now counted)
        self._weights: dict[UUID, tuple[int, int, int]] = {}
        self._size = size
        self._budget = budget
        self.bytes = 0  # the measured size of what is cached

    def __len__(self) -> int:
        return len(self._items)

    def get(self, agg_id: UUID) -> Aggregate | None:
        agg = self._items.get(agg_id)
        if agg is not None:
            self._items.move_to_end(agg_id)
        return agg

    def put(self, agg: Aggregate) -> None:
        items, weights = self._items, self._weights
        agg_id = agg.id
        version = agg.version
        old = weights.get(agg_id)
        if old is not None and items.get(agg_id) is agg and version < GROWTH * old[1]:
            measured, at, _ = old  # counted as grown with its version since measured
            weight = measured * version // at if version > at else measured
        else:
            measured, at = footprint(agg), max(version, 1)
            weight = measured
        if old is not None:
            self.bytes -= old[2]
        items[agg_id] = agg
        items.move_to_end(agg_id)
        weights[agg_id] = (measured, at, weight)
        self.bytes += weight
        while len(items) > 1 and (len(items) > self._size or self.bytes > self._budget):
            dropped, _ = items.popitem(last=False)
            self.bytes -= weights.pop(dropped)[2]

    def forget(self, agg_id: UUID) -> None:
        if self._items.pop(agg_id, None) is not None:
            self.bytes -= self._weights.pop(agg_id)[2]

    def clear(self) -> None:
        self._items.clear()
        self._weights.clear()
        self.bytes = 0


def _rows(value: Any, depth: int = 0) -> int:
    """The items of the lists in an answer, two levels deep (its stakes, movements, cards)."""
    if isinstance(value, dict):
        return sum(_rows(v, depth + 1) for v in value.values()) if depth < 2 else 0
    if isinstance(value, list):
        return len(value) + (sum(_rows(v, depth + 1) for v in value) if depth < 1 else 0)
    return 0


def answer_weight(request: Any) -> int:
    """A kept request's bytes as Python objects, estimated from its answer's rows (a walk of
    a few dicts, not ``footprint``'s of every object: it runs for every command)."""
    return ANSWER_BASE + ANSWER_ROW * _rows(getattr(request, "result", None))


class RecentRequests:
    """The ids of the last ``size`` requests saved (their ``UUID.int``: ~94 bytes each), the
    oldest forgotten first: a command whose id is here is a retry, answered from the store; and
    the last ``whole`` requests themselves, within ``budget`` bytes (``answer_weight``; the
    latest one kept whatever its size), so that a retry soon after is answered the first
    answer itself (from the store, a dict's keys come back sorted: a map in the answer would
    be serialized in another order)."""

    def __init__(self, size: int = RECENT_REQUESTS, whole: int = RECENT_ANSWERS,
                 budget: int = RECENT_ANSWER_BYTES) -> None:
        self._ids: set[int] = set()
        self._order: deque[int] = deque()
        self._size = size
        self._whole: OrderedDict[UUID, tuple[Request, int]] = OrderedDict()
        self._whole_size = whole
        self._budget = budget
        self.bytes = 0  # the estimated size of the requests kept whole

    def request(self, rid: UUID) -> Request | None:
        """The request of id ``rid`` if it is among the last ones kept whole."""
        kept = self._whole.get(rid)
        return None if kept is None else kept[0]

    def __contains__(self, rid: UUID) -> bool:
        return rid.int in self._ids

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, requests: dict[UUID, Request]) -> None:
        ids, order, whole = self._ids, self._order, self._whole
        for rid, request in requests.items():
            key = rid.int
            if key not in ids:
                ids.add(key)
                order.append(key)
            weight = answer_weight(request)
            old = whole.pop(rid, None)
            if old is not None:
                self.bytes -= old[1]
            whole[rid] = (request, weight)
            self.bytes += weight
        while len(order) > self._size:
            ids.discard(order.popleft())
        while len(whole) > self._whole_size or (len(whole) > 1 and self.bytes > self._budget):
            self.bytes -= whole.popitem(last=False)[1][1]

    def clear(self) -> None:
        self._ids.clear()
        self._order.clear()
        self._whole.clear()
        self.bytes = 0


class UnitOfWork:
    """The aggregates one batch of commands reads and changes."""

    def __init__(self, app: LedgerApplication, cache: AggregateCache) -> None:
        self.app = app
        self.cache = cache
        self.touched: dict[UUID, Aggregate] = {}
        self.requests: dict[UUID, Request] = {}
        self.now: datetime = datetime.min  # the time of the command being decided
        self._marks: dict[UUID, int] = {}  # pending events of each aggregate the command got

    def begin(self) -> None:
        """A command starts: remember what it finds, to tell whether it changed anything."""
        self._marks = {}

    def changed(self) -> bool:
        """Whether the command since ``begin`` added events to what it got or added."""
        touched = self.touched
        return any(
            len(touched[agg_id].pending_events) != n for agg_id, n in self._marks.items()
        )

    def get(self, cls: type[A], agg_id: UUID) -> A | None:
        """The aggregate (with the batch's changes), or None if it does not exist."""
        touched = self.touched
        agg = touched.get(agg_id)
        if agg is not None:  # got before in this batch (marked if this command got it)
            if not isinstance(agg, cls):
                return None
            marks = self._marks
            if agg_id not in marks:
                marks[agg_id] = len(agg.pending_events)
            return agg
        agg = self.cache.get(agg_id)
        if agg is None:
            try:
                agg = self.app.repository.get(agg_id)
            except AggregateNotFoundError:
                return None
            self.cache.put(agg)
        if not isinstance(agg, cls):
            return None
        touched[agg_id] = agg
        self._marks[agg_id] = len(agg.pending_events)
        return agg

    def add(self, agg: Aggregate) -> None:
        """A new aggregate."""
        self.touched[agg.id] = agg
        self._marks.setdefault(agg.id, 0)

    def effects(self) -> list[list[Any]]:
        """The events the command since ``begin`` added: ``[originator_id, version]`` pairs."""
        touched = self.touched
        out: list[list[Any]] = []
        for agg_id, n in self._marks.items():
            events = touched[agg_id].pending_events[n:]
            if events:  # an aggregate's events are all its own: its id as text once
                oid = str(agg_id)
                out += [[oid, event.originator_version] for event in events]
        return out

    def added(self) -> list[tuple[Aggregate, Any]]:
        """The events the command since ``begin`` added, each with its aggregate, in the
        order of ``effects``."""
        touched = self.touched
        out: list[tuple[Aggregate, Any]] = []
        for agg_id, n in self._marks.items():
            agg = touched[agg_id]
            out += [(agg, event) for event in agg.pending_events[n:]]
        return out

    def pending_count(self) -> int:
        return sum(len(a.pending_events) for a in self.touched.values())

    def to_save(self) -> list[Aggregate]:
        changed: list[Aggregate] = [a for a in self.touched.values() if a.pending_events]
        return changed + list(self.requests.values())

    def commit(self) -> None:
        """Cache what was saved."""
        for agg in self.touched.values():
            self.cache.put(agg)

    def forget(self) -> None:
        """Drop the batch's aggregates from the cache (they may hold unsaved events)."""
        for agg_id, agg in self.touched.items():
            agg.collect_events()
            self.cache.forget(agg_id)


class Answer(Future[T]):
    """A command's answer, as a ``Future`` for its callers (``result``/``exception`` with a
    timeout, ``done``, ``add_done_callback``; ``set_result``/``set_exception`` once), lighter:
    one lock held until the answer is set (a waiter acquires and releases it), and a second
    guarding the state, instead of ``Future``'s condition over a reentrant lock, its waiters'
    list and its ``notify_all`` per answer (issue 25: the writer answers every command, one at
    a time). Not cancellable (a caller that stops waiting marks its command ``abandoned``);
    not for ``concurrent.futures.wait``/``as_completed``. Not ``Future.__init__``: its
    condition is what this saves."""

    def __init__(self) -> None:
        self._answered = threading.Lock()
        self._answered.acquire()  # released once the answer is set: waiters get through
        self._guard = threading.Lock()
        self._set = False
        self._value: Any = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[Future[T]], object]] | None = None

    def _wait(self, timeout: float | None) -> None:
        if self._set:
            return
        if not self._answered.acquire(timeout=-1 if timeout is None else max(0.0, timeout)):
            raise FutureTimeout()
        self._answered.release()  # the next waiter's turn

    def result(self, timeout: float | None = None) -> T:
        self._wait(timeout)
        error = self._error
        if error is not None:
            try:
                raise error
            finally:
                del error  # no cycle through the frame
        value: T = self._value
        return value

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._wait(timeout)
        return self._error

    def __repr__(self) -> str:
        state = "pending" if not self._set else "raised" if self._error is not None else "done"
        return f"<Answer at {id(self):#x} {state}>"

    def done(self) -> bool:
        return self._set

    def running(self) -> bool:
        return False  # as a ``Future`` never started: pending, then done

    def cancel(self) -> bool:
        return False

    def cancelled(self) -> bool:
        return False

    def add_done_callback(self, fn: Callable[[Future[T]], object]) -> None:
        with self._guard:
            if not self._set:
                if self._callbacks is None:
                    self._callbacks = []
                self._callbacks.append(fn)
                return
        self._call(fn)

    def _call(self, fn: Callable[[Future[T]], object]) -> None:
        try:
            fn(self)
        except Exception:
            log.exception("exception calling callback for %r", self)

    def set_result(self, result: T) -> None:
        self._finish(result, None)

    def set_exception(self, exception: BaseException | None) -> None:
        self._finish(None, exception)

    def _finish(self, value: Any, error: BaseException | None) -> None:
        with self._guard:
            if self._set:
                raise InvalidStateError(f"already answered: {self!r}")
            self._value, self._error = value, error
            self._set = True
            callbacks, self._callbacks = self._callbacks, None
        self._answered.release()
        if callbacks is not None:
            for fn in callbacks:
                self._call(fn)


def _answer() -> Answer[Any]:
    return Answer()


@dataclass
class Command:
    """A mutating command: its name, request id, arguments (JSON data), decision and actor."""

    name: str
    request_id: str
    args: dict[str, Any]
    decide: Callable[[UnitOfWork], Any]
    result_type: type[Any]
    future: Future[Any] = field(default_factory=_answer)
    actor: Actor = SYSTEM
    deadline: float | None = None  # the caller's (time.monotonic()); None: the writer's bound
    abandoned: bool = False  # its caller stopped waiting: not decided if not yet

    @cached_property
    def rid(self) -> UUID:
        """The Request aggregate's id (scoped by the actor's principal)."""
        return request_uuid(self.request_id, self.actor.scope)

    def prepare(self) -> None:
        """Check the request id and compute what does not need the writer (caller's thread)."""
        check_request_id(self.request_id)
        _ = self.rid


@dataclass
class Decided:
    """A decided batch: its unit of work, its answers and refusals, the events to store."""

    unit: UnitOfWork
    lookup: bool = False
    commands: list[Command] = field(default_factory=list)
    results: list[tuple[Command, Any]] = field(default_factory=list)
    refused: list[tuple[Command, RuleViolation]] = field(default_factory=list)
    events: list[Any] = field(default_factory=list)
    snapshots: list[Any] = field(default_factory=list)
    collected: list[tuple[Aggregate, int]] = field(default_factory=list)  # pending until stored
    seconds: float = 0.0  # the time its save took
    started: float = 0.0  # time.monotonic() when its save began

    @property
    def requests(self) -> dict[UUID, Request]:
        return self.unit.requests


class Writer:
    """Runs commands one batch at a time; ``batching`` starts a thread folding queued commands.

    In batching mode the writer decides the commands arriving while a batch commits (one batch
    in flight) into the next batch, stored as soon as the one in flight is: the commit waits for
    the disk, deciding needs the processor, and the batches grow with the load. The next batch
    is decided on top of the one in flight; no answer leaves before its batch is committed, and
    if the batch in flight is not stored, the next one is decided again. Queries wait until no
    decided state is unstored (they see committed state only); while one waits, the writer
    stores synchronously and lets it in before deciding again."""

    def __init__(
        self,
        app: LedgerApplication,
        clock: Callable[[], datetime],
        batching: bool = False,
        max_batch: int = 256,
        linger: float = 0.0,
        lease: Lease | None = None,
    ) -> None:
        self.app = app
        self.clock = clock
        self.lease = lease
        self.active = lease is None or lease.held  # decides commands (holds the lease)
        self._holder: tuple[str, float] = ("", 0.0)  # the active writer's name, and when read
        self.cache = AggregateCache()
        self.recent = RecentRequests()  # the last requests saved: a retry reads its answer
        self.lock = threading.RLock()
        self._changed = threading.Condition(self.lock)  # in-flight batch settled, reader done
        self._readers = 0  # queries waiting or running
        self._inflight: Decided | None = None  # being committed
        self._dirty = False  # the cache holds decided state not stored yet
        self.saved_position = 0  # the log position of the last event this writer saved
        self.max_batch = max_batch
        self.linger = linger  # seconds to wait for more commands once one is queued
        self.metrics = WriterMetrics()  # its series (services/metrics.py), read when scraped
        bound = getattr(app, "store_timeout", None)
        self.bound = float(bound) if isinstance(bound, int | float) else 5.0
        probe = getattr(app, "store_probe", None)
        check = probe() if callable(probe) else None
        self.watch = StoreWatch(check, self._afresh, self.metrics) if check else None
        self._stale = False  # the store came back: forget the cache before deciding again
        self.full = ""  # why the last save failed on a full disk ("": the last one did not)
        self.broken: str | None = None  # the evidence chain's break: nothing is written
        self._queue: queue.Queue[Any] | None = None
        self._thread: threading.Thread | None = None
        self._committer: ThreadPoolExecutor | None = None
        if batching:
            collect_less_often()
            commands: queue.Queue[Any] = queue.Queue()
            self._queue = commands
            self.metrics.queue(commands.qsize)
            self._committer = ThreadPoolExecutor(1, thread_name_prefix="sabot-commit")
            self._thread = threading.Thread(target=self._loop, name="sabot-writer", daemon=True)
            self._thread.start()

    def execute(self, command: Command) -> Any:
        """Submit and wait: at most until the call's deadline or the bound, then
        ``StoreUnavailable`` (the command is not decided if it was not yet)."""
        future = self.submit(command)
        try:
            return future.result(wait_bound(self.bound, command.deadline))
        except FutureTimeout:
            command.abandoned = True
            if future.done():  # answered just now
                return future.result()
            self.metrics.outcome("unavailable")
            raise StoreUnavailable(
                "the store did not answer within the call's deadline; the command may be "
                "stored later: retry with the same request id") from None

    def submit(self, command: Command) -> Future[Any]:
        """Queue a command (decided and answered now when not batching); its future answers
        once its batch is stored. Raises at once for a malformed request id."""
        command.prepare()
        if command.deadline is None:
            command.deadline = call_deadline.get()
        if self.broken is not None:
            command.future.set_exception(EvidenceBroken(self._broken_message()))
            return command.future
        if self.store_down():
            self._unavailable([command])
            return command.future
        if not self.active:
            command.future.set_exception(self.not_the_writer())
            return command.future
        if self._queue is None:
            with self.lock:
                self._forget_if_stale()
                self._run_batch([command])
        else:
            self._queue.put(command)
        return command.future

    # --- the evidence chain's break ------------------------------------------------------------

    def halt(self, exc: ChainBroken) -> None:
        """The store's evidence chain is broken: write nothing more (the first break is kept)."""
        if self.broken is None:
            self.broken = str(exc)
            self.metrics.evidence_broken.set(1)
            log.error("ledger writer: evidence chain broken: %s; writing stopped", self.broken)

    def _broken_message(self) -> str:
        return (f"the store's evidence chain is broken ({self.broken}): this server writes "
                "nothing until the store is investigated; nothing was stored")

    def _refuse_broken(self, commands: list[Command]) -> None:
        for command in commands:
            if not command.future.done():
                command.future.set_exception(EvidenceBroken(self._broken_message()))
                self.metrics.outcome("failed")

    # --- the store's outages ------------------------------------------------------------------

    def store_down(self) -> bool:
        watch = self.watch
        return watch is not None and watch.down_since is not None

    def _unavailable(self, commands: list[Command]) -> None:
        """Answer ``StoreUnavailable`` now (the store is known to be down)."""
        watch = self.watch
        why = f" ({watch.why})" if watch is not None and watch.why else ""
        for command in commands:
            if not command.future.done():
                command.future.set_exception(StoreUnavailable(
                    f"the store cannot be reached{why}; nothing was stored: retry with the "
                    "same request id"))
                self.metrics.outcome("unavailable")

    def _afresh(self) -> None:
        """The store answers again: the pool's connections cut by the outage replaced, and the
        cache forgotten before the next command (the writer thread does, between batches; or
        now, when nothing is being decided)."""
        pool = getattr(getattr(self.app.recorder, "datastore", None), "pool", None)
        check = getattr(pool, "check", None)
        if callable(check):
            check()  # psycopg_pool: every idle connection tried, the broken ones replaced
        self._stale = True
        if self.lock.acquire(timeout=PROBE_TIMEOUT):
            try:
                if self._inflight is None and not self._dirty:
                    self._forget_if_stale()
            finally:
                self.lock.release()

    def _forget_if_stale(self) -> None:
        """(Holding the lock, nothing decided and unstored.)"""
        if not self._stale:
            return
        self._stale = False
        self.cache.clear()
        self.recent.clear()
        evidence = getattr(self.app, "evidence", None)
        if evidence is not None:
            evidence.forget()

    def read(self, fn: Callable[[UnitOfWork], T]) -> T:
        """Run a query against committed state (no batch half-decided or in flight)."""
        if self.store_down():
            self._refuse_read()
        with self.lock:
            self._readers += 1
            try:
                while self._dirty:
                    self._changed.wait()
                self._forget_if_stale()
                # a standby caches nothing: the active writer changes the store under it
                unit = UnitOfWork(self.app, self.cache if self.active else AggregateCache(256))
                try:
                    return fn(unit)
                except ChainBroken as exc:  # what it read is not what the chain covers
                    self.halt(exc)
                    raise EvidenceBroken(self._broken_message()) from None
            finally:
                self._readers -= 1
                self._changed.notify_all()

    def _refuse_read(self) -> None:
        watch = self.watch
        why = f" ({watch.why})" if watch is not None and watch.why else ""
        raise StoreUnavailable(f"the store cannot be reached{why}: retry")

    def close(self) -> None:
        if self.watch is not None:
            self.watch.close()
        if self._queue is not None and self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=10)
            self._queue = None
        if self._committer is not None:
            self._committer.shutdown(wait=True)
            self._committer = None

    # --- the lease ----------------------------------------------------------------------------

    def take_over(self) -> None:
        """The lease was just taken: wait until the previous writer's saves have ended, forget
        what was cached (that writer changed the store), then decide commands."""
        if self.lease is not None:
            self.lease.barrier()
        with self.lock:
            self.cache.clear()
            self.recent.clear()
            evidence = getattr(self.app, "evidence", None)
            if evidence is not None:  # the previous writer's links: read the chain's head again
                evidence.forget()
            self.active = True
        log.info("ledger writer: holding the store's writer lease; deciding commands")

    def step_down(self) -> None:
        """The lease was lost: decide nothing more until it is taken again."""
        if self.watch is not None:  # lost to an outage? then say so, not "a standby"
            self.watch.check("the writer lease was lost and the store does not answer")
        with self.lock:
            if self.active:
                log.warning("ledger writer: the store's writer lease was lost; standing by")
            self.active = False

    def state(self) -> dict[str, Any]:
        """What the health monitor asks, from memory (never the store): whether this writer
        decides commands (holds the lease) and how many wait for it."""
        q = self._queue
        state: dict[str, Any] = {"active": self.active and self.broken is None,
                                 "queue": q.qsize() if q is not None else 0,
                                 "store_down": self.store_down(), "store_full": bool(self.full)}
        if self.broken is not None:
            state["evidence_broken"] = self.broken
        return state

    def not_the_writer(self) -> NotTheWriter:
        """The answer of a standby, naming the active writer (read at most every POLL s)."""
        name, read_at = self._holder
        now = time.monotonic()
        if self.lease is not None and now - read_at > POLL:
            try:
                name = self.lease.holder()
            except Exception:  # a name is a courtesy
                name = ""
            self._holder = (name, now)
        return NotTheWriter(name, POLL)

    # --- the writer thread ------------------------------------------------------------------

    def _loop(self) -> None:
        assert self._queue is not None and self._committer is not None
        q = self._queue
        committer = self._committer
        inflight: tuple[Future[None], Decided] | None = None
        nxt: Decided | None = None  # being decided (while ``inflight`` commits)
        stopping = False
        while True:
            try:
                item = q.get(timeout=None if inflight is None else PROBE_INTERVAL)
            except queue.Empty:
                item = _WAKE
                if inflight is not None and self.watch is not None and (
                        time.monotonic() - inflight[1].started > self.bound):
                    self.watch.trip(f"a save has waited more than {self.bound:g} s")
            if item is None:
                stopping = True
            elif item is not _WAKE and self.broken is not None:
                self._refuse_broken([item])
            elif item is not _WAKE and (item.abandoned or self.store_down()):
                self._unavailable([item])  # its caller gave up, or the store is down
            elif item is not _WAKE:
                try:
                    with self.lock:
                        if nxt is None:
                            if inflight is None:
                                while self._readers:  # queries first, while nothing is unstored
                                    self._changed.wait()
                                self._forget_if_stale()
                            nxt = Decided(UnitOfWork(self.app, self.cache))
                            self._dirty = True
                        if not self._decide_into(nxt, [item]):
                            nxt = None
                            self._dirty = inflight is not None
                except BaseException as exc:  # never leave a caller waiting
                    log.exception("ledger writer failed on a command")
                    self._fail_all([item], exc)
            if inflight is not None and (inflight[0].done() or stopping):
                stored = self._finish(*inflight, after=nxt)
                inflight = None
                if not stored and nxt is not None:  # decided on state that was not stored
                    commands, nxt = nxt.commands, None
                    with self.lock:
                        self._dirty = True
                        try:
                            self._run_batch(commands)
                        except BaseException as exc:  # never leave a caller waiting
                            log.exception("ledger writer failed deciding a batch again")
                            self._fail_all(commands, exc)
                        finally:
                            self._dirty = False
                            self._changed.notify_all()
            if (
                inflight is None
                and nxt is not None
                and (q.empty() or stopping or self._readers
                     or len(nxt.commands) >= self.max_batch)
            ):
                decided, nxt = nxt, None
                try:
                    inflight = self._ship(committer, decided)
                except BaseException as exc:
                    log.exception("ledger writer failed storing a batch")
                    self._fail_all(decided.commands, exc)
            if stopping and inflight is None and nxt is None:
                return

    def _ship(self, committer: ThreadPoolExecutor, decided: Decided
              ) -> tuple[Future[None], Decided] | None:
        """Store a decided batch: in flight (returned), or now if a query waits."""
        with self.lock:
            try:
                if not self._close(decided):
                    return None
                if not decided.events or self._readers:
                    self._store_now(decided)
                    return None
                self._inflight = decided
                decided.started = time.monotonic()
                saving = committer.submit(self._save, decided)
                saving.add_done_callback(self._wake)
                return saving, decided
            except BaseException:
                self._inflight = None
                raise
            finally:
                self._dirty = self._inflight is not None
                self._changed.notify_all()

    def _wake(self, _: Future[None]) -> None:
        queue_ = self._queue
        if queue_ is not None:
            queue_.put(_WAKE)

    def _finish(
        self, saving: Future[None], decided: Decided, after: Decided | None = None
    ) -> bool:
        """Wait for the batch in flight and answer its commands; whether it was stored.
        ``after``: the batch decided on top of it, forgotten first if it was not stored."""
        error = saving.exception()
        with self.lock:
            self._inflight = None  # its requests are stored, or must not answer anything
            try:
                if error is None:
                    self._settle(decided)
                else:
                    if after is not None:
                        after.unit.forget()
                    self._failed(decided, error)
            except BaseException as exc:
                log.exception("ledger writer failed answering a batch")
                self._fail_all(decided.commands, exc)
            finally:
                self._dirty = after is not None and error is None
                self._changed.notify_all()
        return error is None

    # --- one batch --------------------------------------------------------------------------

    def _run_batch(self, batch: list[Command], lookup: bool = False) -> None:
        """Decide, store and answer a batch in the calling thread (holding the lock)."""
        if self.broken is not None:
            self._refuse_broken(batch)
            return
        if self.store_down():
            self._unavailable(batch)
            return
        decided = self._decide_batch(batch, lookup)
        if decided is not None:
            self._store_now(decided, lookup)

    def _store_now(self, decided: Decided, lookup: bool = False) -> None:
        if decided.events:
            try:
                self._save(decided)
            except Exception as exc:
                self._failed(decided, exc, lookup)
                return
        self._settle(decided)

    def _decide_batch(self, batch: list[Command], lookup: bool = False) -> Decided | None:
        """Decide a batch and collect its events (None: it failed, every command was answered)."""
        decided = Decided(UnitOfWork(self.app, self.cache), lookup)
        if not self._decide_into(decided, batch) or not self._close(decided):
            return None
        return decided

    def _decide_into(self, decided: Decided, commands: list[Command]) -> bool:
        """Decide more commands into a batch; answers nothing yet. False: the batch failed,
        its state was forgotten and every command of it got ``Conflict``."""
        unit = decided.unit
        decided.commands.extend(commands)
        try:
            for command in commands:
                unit.begin()
                try:
                    result = self._decide(unit, command, decided.lookup)
                except RuleViolation as exc:
                    if unit.changed():
                        raise RuntimeError(f"{command.name} failed after changing state") from exc
                    decided.refused.append((command, exc))
                    continue
                decided.results.append((command, result))
        except Exception as exc:
            unit.forget()
            if not isinstance(exc, ChainBroken):  # that one is said in one line (``halt``)
                log.exception("ledger batch of %d commands not decided", len(decided.commands))
            self._fail_all(decided.commands, exc)
            return False
        return True

    def _close(self, decided: Decided) -> bool:
        """Collect the batch's events (and snapshots due); cache its aggregates."""
        unit = decided.unit
        try:
            to_save = unit.to_save()
            # the events stay pending on their aggregates until stored (the next batch's
            # events follow them): an aggregate's stored version stays version - pending
            decided.collected = [(agg, len(agg.pending_events)) for agg in to_save]
            decided.events = [event for agg in to_save for event in agg.pending_events]
            decided.snapshots = self.app.snapshots_due(decided.events, unit.touched)
        except Exception as exc:
            unit.forget()
            log.exception("ledger batch of %d commands not collected", len(decided.commands))
            self._fail_all(decided.commands, exc)
            return False
        unit.commit()  # the next batch is decided on top of this one
        return True

    def _save(self, decided: Decided) -> None:
        """One transaction: the batch's events (and, with evidence, the link closing them);
        then the snapshots taken with it, which that link names."""
        recorder = self.app.recorder
        if hasattr(recorder, "budget"):  # what is left of the batch's earliest deadline
            deadlines = [c.deadline for c in decided.commands if c.deadline is not None]
            recorder.budget = wait_bound(self.bound, min(deadlines) if deadlines else None)
        started = time.perf_counter()
        recordings = self.app.save(*decided.events, snapshots=decided.snapshots)
        decided.seconds = time.perf_counter() - started
        last = max((r.notification.id for r in recordings), default=0)
        if last > self.saved_position:
            self.saved_position = last

    def _settle(self, decided: Decided) -> None:
        """The batch is stored: remember its requests, answer its commands."""
        if decided.refused and not decided.events and self.lease is not None and not (
                self.lease.confirm()):  # decided on state another writer may have changed
            self.step_down()
            standby = self.not_the_writer()
            decided.refused = [(command, standby) for command, _ in decided.refused]
        for agg, stored in decided.collected:
            del agg.pending_events[:stored]
        self.recent.add(decided.requests)
        metrics = self.metrics
        if decided.events and self.full:
            log.warning("ledger writer: a save succeeded again after the store was full")
            self.full = ""
        if decided.events:
            metrics.stored(len(decided.commands), len(decided.events), decided.seconds)
        metrics.outcome("stored", len(decided.results))
        metrics.outcome("refused", len(decided.refused))
        for command, exc in decided.refused:
            command.future.set_exception(exc)
        for command, result in decided.results:
            if isinstance(result, Refused):  # refused, its consequence stored (refused.py)
                command.future.set_exception(result.error)
            else:
                command.future.set_result(result)

    def _failed(self, decided: Decided, error: BaseException, lookup: bool = False) -> None:
        """The batch was not stored: forget its state; on a key collision decide each command
        again alone (its request id looked up first), else answer ``Conflict``."""
        decided.unit.forget()
        for command, exc in decided.refused:
            command.future.set_exception(exc)
        if isinstance(error, ChainBroken):  # nothing stored: the save stopped before it
            self._fail_all([c for c, _ in decided.results], error)
            return
        if isinstance(error, IntegrityError):
            if not lookup:
                for command, _ in decided.results:
                    self._run_batch([command], lookup=True)
                return
            for command, _ in decided.results:
                command.future.set_exception(
                    Conflict(
                        "request_id",
                        "CONFLICT",
                        "another writer changed the same state first; nothing was stored; retry",
                    )
                )
            return
        log.error("ledger batch of %d commands not stored", len(decided.results),
                  exc_info=error)
        if self.lease is not None and not self.lease.confirm():  # fenced off: stand by
            self.step_down()
        self._fail_all([c for c, _ in decided.results], error)

    def _fail_all(self, commands: list[Command], exc: BaseException) -> None:
        """Answer every command not answered yet: nothing of it was stored, or (the store cut
        off during the commit) it is not known: ``StoreUnavailable`` when the store could not
        be reached (and the watch tripped), ``EvidenceBroken`` when the evidence chain broke
        (the writer halts), else ``Conflict``."""
        if isinstance(exc, ChainBroken):
            self.halt(exc)
            self._refuse_broken(commands)
            return
        full = store_full(exc)
        if full:  # the store answers: no watch to trip; a save that succeeds clears it
            self.full = f"{type(exc).__name__}: " + (str(exc).strip().splitlines() or [""])[0][
                :200]
        unreachable = not full and store_unreachable(exc)
        if unreachable and self.watch is not None:
            self.watch.trip(exc)
        for command in commands:
            if command.future.done():
                continue
            if full:
                command.future.set_exception(StoreFull(
                    f"the store is full ({self.full}); the command may not have been stored: "
                    "free space, then retry with the same request id"))
                self.metrics.outcome("unavailable")
            elif unreachable:
                command.future.set_exception(StoreUnavailable(
                    f"the store could not be reached ({type(exc).__name__}); the command may "
                    "not have been stored: retry with the same request id"))
                self.metrics.outcome("unavailable")
            else:
                command.future.set_exception(
                    Conflict("request_id", "NOT_STORED",
                             f"nothing was stored ({type(exc).__name__}); retry the command"))
                self.metrics.outcome("failed")

    def _stored_request(self, rid: UUID) -> Request | None:
        try:
            known: Aggregate = self.app.repository.get(rid)
        except AggregateNotFoundError:
            return None
        assert isinstance(known, Request)
        return known

    def _answer(self, command: Command, known: Request) -> Any:
        """The stored answer to a retry, or RequestIdReused."""
        if not known.matches(command.name, command.args):
            raise RequestIdReused(
                f"request id {command.request_id!r} was used for another {known.command}"
                if known.command != command.name
                else f"request id {command.request_id!r} was used with other arguments"
            )
        refusal = answer_of(known.result)  # a refusal stored with its consequence
        if refusal is not None:
            raise refusal
        return from_dict(command.result_type, known.result)

    def _decide(self, unit: UnitOfWork, command: Command, lookup: bool) -> Any:
        if not self.active:
            raise self.not_the_writer()
        if "rid" not in command.__dict__:  # not prepared yet (``prepare`` caches it)
            command.prepare()
        rid = command.rid
        inflight = self._inflight
        known = (
            unit.requests.get(rid)
            or (inflight.requests.get(rid) if inflight is not None else None)
            or self.recent.request(rid)
        )
        if known is None and (lookup or rid in self.recent):  # a retry: its answer stored
            known = self._stored_request(rid)
        if known is not None:
            return self._answer(command, known)
        unit.now = self.clock()  # one time stamp for all the events of a command
        try:
            result = command.decide(unit)
        except RuleViolation:
            known = None if lookup else self._stored_request(rid)
            if known is None:
                raise
            return self._answer(command, known)
        except Refused as refused:  # refused, and what the rules give for it triggered
            result = refused
        effects = unit.effects()
        refusal = isinstance(result, Refused)
        request = Request._create(
            Request.Recorded,
            id=rid,
            request_id=command.request_id,
            command=command.name,
            arguments=command.args,
            result=result.stored() if isinstance(result, Refused) else plain(result),
            actor=command.actor.to_dict(),
            effects=[] if refusal else effects,
            timestamp=unit.now,
        )
        unit.requests[rid] = request
        if isinstance(result, Refused):  # the consequence: the ledger's own command
            c = result.consequence
            done = c.request(rid, unit.now, effects, plain(c.result))
            unit.requests[done.id] = done
        return result


_WAKE: Any = object()  # queued when a commit ends: the writer thread looks at it


def writer_of(ledger: Any) -> Writer | None:
    """The writer of a ``Ledger`` (None for one that has none here: a ``RemoteLedger``)."""
    found = getattr(ledger, "_writer", None)
    return found if isinstance(found, Writer) else None




_ATOMS: frozenset[type[Any]] = frozenset({str, int, bool, float, type(None)})
_CONVERT: dict[type[Any], Callable[[Any], dict[str, Any]]] = {}


def plain(value: Any) -> Any:
    """``views.to_dict``, faster: a view as JSON-ready data. Each dataclass gets a converter
    made for its fields (no call per field whose value is a str, int, bool, float or None)."""
    cls = type(value)
    convert = _CONVERT.get(cls)
    if convert is not None:
        return convert(value)
    if cls in _ATOMS:
        return value
    if isinstance(value, tuple | list):
        return [v if type(v) in _ATOMS else plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        _CONVERT[cls] = _leave_implied(_converter(tuple(f.name for f in fields)), tuple(
            (f.name, f.default) for f in fields if f.metadata.get("implied_by_default")))
        return plain(value)
    return value


def _leave_implied(convert: Callable[[Any], dict[str, Any]], implied: tuple[tuple[str, Any], ...]
                   ) -> Callable[[Any], dict[str, Any]]:
    """``convert`` leaving out the fields marked ``views.IMPLIED`` while at their default."""
    if not implied:
        return convert

    def leave(value: Any) -> dict[str, Any]:
        out = convert(value)
        for name, default in implied:
            if out[name] == default:
                del out[name]
        return out

    return leave


def _converter(names: tuple[str, ...]) -> Callable[[Any], dict[str, Any]]:
    """``lambda v: {name: plain(v.name), ...}`` for these field names, written out."""
    values = "\n".join(f"    x{i} = v.{name}" for i, name in enumerate(names))
    items = ", ".join(
        f"{name!r}: x{i} if type(x{i}) in atoms else plain(x{i})" for i, name in enumerate(names)
    )
    source = f"def convert(v):\n{values}\n    return {{{items}}}\n"
    scope: dict[str, Any] = {"atoms": _ATOMS, "plain": plain}
    exec(source, scope)  # the source: a dataclass's field names, nothing else
    convert: Callable[[Any], dict[str, Any]] = scope["convert"]
    return convert
