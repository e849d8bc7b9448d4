"""The single writer: commands decided against cached aggregates, their events saved together.

Each command runs as ``decide(unit)``: it validates first, then triggers events on aggregates
it got from the unit of work. The writer saves the pending events of every aggregate touched,
with one ``Request`` per command, in ONE ``app.save`` (one transaction). In batching mode a
writer thread folds the commands queued meanwhile into one save (the PostgreSQL store locks
the events table per save, so throughput comes from events per transaction). If the save
fails, the cache forgets what the batch touched and nothing of it was stored: on a key
collision (a request id already stored, or another writer ahead) each command is decided again
alone, looking its request id up first; on any other failure each fails with ``Conflict``.

Request ids are looked up in the store only when needed: the writer remembers the requests it
saved, a new id is saved optimistically (a stored one collides atomically), and a refused
command looks its id up before it answers.
"""

from __future__ import annotations

import hashlib
import json
import logging
import queue
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import IntegrityError

from domain.errors import RuleViolation
from services.ledger.application import LedgerApplication
from services.ledger.errors import Conflict, RequestIdReused
from services.ledger.ids import check_request_id, request_uuid
from services.ledger.request import Request
from services.ledger.views import from_dict, to_dict

log = logging.getLogger(__name__)
A = TypeVar("A", bound=Aggregate)
T = TypeVar("T")

CACHE_SIZE = 20_000
RECENT_REQUESTS = 100_000


class AggregateCache:
    """Committed aggregates by id, least recently used dropped first."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self._items: OrderedDict[UUID, Aggregate] = OrderedDict()
        self._size = size

    def get(self, agg_id: UUID) -> Aggregate | None:
        agg = self._items.get(agg_id)
        if agg is not None:
            self._items.move_to_end(agg_id)
        return agg

    def put(self, agg: Aggregate) -> None:
        self._items[agg.id] = agg
        self._items.move_to_end(agg.id)
        while len(self._items) > self._size:
            self._items.popitem(last=False)

    def forget(self, agg_id: UUID) -> None:
        self._items.pop(agg_id, None)

    def clear(self) -> None:
        self._items.clear()


class UnitOfWork:
    """The aggregates one batch of commands reads and changes."""

    def __init__(self, app: LedgerApplication, cache: AggregateCache) -> None:
        self.app = app
        self.cache = cache
        self.touched: dict[UUID, Aggregate] = {}
        self.requests: dict[UUID, Request] = {}
        self.now: datetime = datetime.min  # the time of the command being decided

    def get(self, cls: type[A], agg_id: UUID) -> A | None:
        """The aggregate (with the batch's changes), or None if it does not exist."""
        agg = self.touched.get(agg_id) or self.cache.get(agg_id)
        if agg is None:
            try:
                agg = self.app.repository.get(agg_id)
            except AggregateNotFoundError:
                return None
            self.cache.put(agg)
        if not isinstance(agg, cls):
            return None
        self.touched[agg_id] = agg
        return agg

    def add(self, agg: Aggregate) -> None:
        """A new aggregate."""
        self.touched[agg.id] = agg

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


@dataclass
class Command:
    """A mutating command: its name, request id, arguments (JSON data) and decision."""

    name: str
    request_id: str
    args: dict[str, Any]
    decide: Callable[[UnitOfWork], Any]
    result_type: type[Any]
    future: Future[Any] = field(default_factory=Future)

    @property
    def digest(self) -> str:
        text = json.dumps({"command": self.name, "args": self.args}, sort_keys=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Writer:
    """Runs commands one batch at a time; ``batching`` starts a thread folding queued commands."""

    def __init__(
        self,
        app: LedgerApplication,
        clock: Callable[[], datetime],
        batching: bool = False,
        max_batch: int = 256,
        linger: float = 0.0,
    ) -> None:
        self.app = app
        self.clock = clock
        self.cache = AggregateCache()
        self.recent: OrderedDict[UUID, Request] = OrderedDict()
        self.lock = threading.RLock()
        self.max_batch = max_batch
        self.linger = linger  # seconds to wait for more commands once one is queued
        self._queue: queue.Queue[Command | None] | None = None
        self._thread: threading.Thread | None = None
        if batching:
            self._queue = queue.Queue()
            self._thread = threading.Thread(target=self._loop, name="sabot-writer", daemon=True)
            self._thread.start()

    def execute(self, command: Command) -> Any:
        check_request_id(command.request_id)
        if self._queue is None:
            with self.lock:
                self._run_batch([command])
        else:
            self._queue.put(command)
        return command.future.result()

    def read(self, fn: Callable[[UnitOfWork], T]) -> T:
        """Run a query against committed state (no batch is half-decided meanwhile)."""
        with self.lock:
            unit = UnitOfWork(self.app, self.cache)
            return fn(unit)

    def close(self) -> None:
        if self._queue is not None and self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=10)
            self._queue = None

    def _loop(self) -> None:
        assert self._queue is not None
        q = self._queue
        while True:
            first = q.get()
            if first is None:
                return
            batch = [first]
            stop = False
            while len(batch) < self.max_batch:
                try:
                    nxt = q.get(timeout=self.linger) if self.linger > 0 else q.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
            with self.lock:
                try:
                    self._run_batch(batch)
                except BaseException as exc:  # never leave a caller waiting
                    log.exception("ledger writer failed on a batch")
                    for command in batch:
                        if not command.future.done():
                            command.future.set_exception(
                                Conflict("request_id", "NOT_STORED",
                                         f"nothing was stored ({type(exc).__name__}); retry")
                            )
            if stop:
                return

    def _run_batch(self, batch: list[Command], lookup: bool = False) -> None:
        unit = UnitOfWork(self.app, self.cache)
        results: list[tuple[Command, Any]] = []
        try:
            for command in batch:
                before = unit.pending_count()
                try:
                    result = self._decide(unit, command, lookup)
                except RuleViolation as exc:
                    if unit.pending_count() != before:
                        raise RuntimeError(f"{command.name} failed after changing state") from exc
                    command.future.set_exception(exc)
                    continue
                results.append((command, result))
            to_save = unit.to_save()
            if to_save:
                self.app.save(*to_save)
        except IntegrityError:
            unit.forget()
            if not lookup:
                for command, _ in results:
                    self._run_batch([command], lookup=True)
                return
            for command, _ in results:
                command.future.set_exception(
                    Conflict(
                        "request_id",
                        "CONFLICT",
                        "another writer changed the same state first; nothing was stored; retry",
                    )
                )
            return
        except Exception as exc:
            unit.forget()
            if not isinstance(exc, RuleViolation):
                log.exception("ledger batch of %d commands not stored", len(batch))
            for command in batch:
                if command.future.done():
                    continue
                if isinstance(exc, RuleViolation):
                    command.future.set_exception(exc)
                else:
                    command.future.set_exception(
                        Conflict(
                            "request_id",
                            "NOT_STORED",
                            f"nothing was stored ({type(exc).__name__}); retry the command",
                        )
                    )
            return
        unit.commit()
        for rid, request in unit.requests.items():
            self.recent[rid] = request
        while len(self.recent) > RECENT_REQUESTS:
            self.recent.popitem(last=False)
        for command, result in results:
            command.future.set_result(result)

    def _stored_request(self, rid: UUID) -> Request | None:
        try:
            known: Aggregate = self.app.repository.get(rid)
        except AggregateNotFoundError:
            return None
        assert isinstance(known, Request)
        return known

    def _answer(self, command: Command, known: Request) -> Any:
        """The stored answer to a retry, or RequestIdReused."""
        if known.command != command.name or known.digest != command.digest:
            raise RequestIdReused(
                f"request id {command.request_id!r} was used for another {known.command}"
                if known.command != command.name
                else f"request id {command.request_id!r} was used with other arguments"
            )
        return from_dict(command.result_type, known.result)

    def _decide(self, unit: UnitOfWork, command: Command, lookup: bool) -> Any:
        check_request_id(command.request_id)
        rid = request_uuid(command.request_id)
        digest = command.digest
        known = unit.requests.get(rid) or self.recent.get(rid)
        if known is None and lookup:
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
        request = Request._create(
            Request.Recorded,
            id=rid,
            request_id=command.request_id,
            command=command.name,
            digest=digest,
            arguments=command.args,
            result=to_dict(result),
            timestamp=unit.now,
        )
        unit.requests[rid] = request
        return result
