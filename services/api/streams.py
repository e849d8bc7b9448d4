"""WatchService (a table's events as they happen), FeedService (every event from a position, in
batches, resumable) and RecallService (the last coups of a table, each step in order).

Watch and recall show a player token other players' stakes without their account ids
(``convert.viewer_of``); the feed is the back office's and shows everything."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import grpc

from domain.errors import RuleViolation
from services import topics
from services.api import convert, errors, names
from services.api.base import Base
from services.api.gen.sabot.v1 import events_pb2, events_pb2_grpc
from services.ledger.ids import table_uuid
from services.ledger.views import StoredEvent

WAIT_SECONDS = 0.5
DEFAULT_BATCH = 100
MAX_BATCH = 1000


class _TableFilter:
    """Which events belong to one table: its own, its shoes' and its coups'."""

    def __init__(
        self,
        table_id: str,
        shoe_id: str | None,
        coup_home: dict[str, str],
        viewer: str | None = None,
    ) -> None:
        self.table_id = table_id
        self.viewer = viewer
        self.table_aggregate = str(table_uuid(table_id))
        self.shoes: set[str] = {shoe_id} if shoe_id else set()
        self.coups: dict[str, str] = dict(coup_home)  # coup id -> shoe id

    def match(self, event: StoredEvent) -> events_pb2.Event | None:
        origin = str(event.originator_id)
        state = event.state
        if origin == self.table_aggregate:
            return convert.event(event, self.table_id, viewer=self.viewer)
        if event.topic == topics.SHOE_SHUFFLED and state.get("table_id") == self.table_id:
            self.shoes.add(origin)
        if event.topic == topics.COUP_OPENED and state.get("table_id") == self.table_id:
            self.coups[origin] = str(state.get("shoe_id", ""))
        if origin in self.shoes:
            return convert.event(event, self.table_id, origin, viewer=self.viewer)
        if origin in self.coups:
            return convert.event(
                event, self.table_id, self.coups[origin], origin, viewer=self.viewer
            )
        return None


@contextmanager
def _slot(base: Base) -> Iterator[None]:
    """A stream holds a worker thread: at most half of them stream at once."""
    if not base.hub.stream_slots.acquire(blocking=False):
        raise errors.exhausted("", "too many streams open; retry later")
    try:
        yield
    finally:
        base.hub.stream_slots.release()


def _ended(base: Base, context: grpc.ServicerContext) -> Callable[[], bool]:
    """Whether the RPC has ended (cancelled, out of time); its end wakes the waiting streams."""
    context.add_callback(base.hub.nudge)
    return lambda: not context.is_active()


class WatchServicer(Base, events_pb2_grpc.WatchServiceServicer):
    def WatchTable(
        self, request: events_pb2.WatchTableRequest, context: grpc.ServicerContext
    ) -> Iterator[events_pb2.WatchTableResponse]:
        table_id = names.table_name("table", request.table)
        if request.after_position < 0:
            raise errors.invalid("after_position", "must not be negative")
        viewer = convert.viewer_of(self.caller(context))
        table = self.read({"table_id": "table"}, self.ledger.get_table, table_id)
        homes: dict[str, str] = {}
        if table.coup_id:
            homes[table.coup_id] = self.coup_home(table.coup_id, "table")[1]
        selector = _TableFilter(table_id, table.shoe_id, homes, viewer)
        position = request.after_position or self.hub.catch_up()
        ended = _ended(self, context)
        with _slot(self):
            while context.is_active() and not self.hub.closed:
                batch = self.ledger.read_events(position, MAX_BATCH)
                if not batch:
                    self.hub.wait_beyond(position, WAIT_SECONDS, ended)
                    continue
                position = batch[-1].position
                found = [e for e in (selector.match(s) for s in batch) if e is not None]
                if found:
                    yield events_pb2.WatchTableResponse(events=found)


class FeedServicer(Base, events_pb2_grpc.FeedServiceServicer):
    def StreamEvents(
        self, request: events_pb2.StreamEventsRequest, context: grpc.ServicerContext
    ) -> Iterator[events_pb2.StreamEventsResponse]:
        if request.after_position < 0:
            raise errors.invalid("after_position", "must not be negative")
        if request.batch_size < 0 or request.batch_size > MAX_BATCH:
            raise errors.invalid("batch_size", f"0..{MAX_BATCH} (0: {DEFAULT_BATCH})")
        size = request.batch_size or DEFAULT_BATCH
        position = request.after_position
        ended = _ended(self, context)
        with _slot(self):
            while context.is_active() and not self.hub.closed:
                batch = self.ledger.read_events(position, size)
                if not batch:
                    if request.stop_at_end:
                        return
                    self.hub.wait_beyond(position, WAIT_SECONDS, ended)
                    continue
                position = batch[-1].position
                actors = self.actors(batch)
                yield events_pb2.StreamEventsResponse(
                    events=[self._located(e, actors.get((e.originator_id, e.version)))
                            for e in batch],
                    last_position=position,
                )

    def _located(self, event: StoredEvent, by: dict[str, Any] | None = None
                 ) -> events_pb2.Event:
        """The event with its table, shoe and coup names filled in where it has them, and
        ``by``: the actor of its command."""
        origin = str(event.originator_id)
        state = event.state
        try:
            if event.topic == topics.COUP_OPENED:
                self.remember_coup(origin, str(state["table_id"]), str(state["shoe_id"]))
            if event.topic in topics.COUP_EVENTS:
                table_id, shoe_id = self.coup_home(origin, "after_position")
                return convert.event(event, table_id, shoe_id, origin, by=by)
            if event.topic in topics.SHOE_EVENTS:
                return convert.event(event, self.shoe_table(origin, "after_position"), origin,
                                     by=by)
        except RuleViolation:  # not (or no longer) readable as such: leave the names empty
            pass
        return convert.event(event, by=by)


class RecallServicer(Base, events_pb2_grpc.RecallServiceServicer):
    def ListRecalledCoups(
        self, request: events_pb2.ListRecalledCoupsRequest, context: grpc.ServicerContext
    ) -> events_pb2.ListRecalledCoupsResponse:
        table_id = names.table_name("parent", request.parent)
        offset, size = names.page(request.page_size, request.page_token, default=10)
        if offset + size > 10_000:
            raise errors.invalid("page_token", "recall reaches back 10,000 coups at most")
        currency = self.table_currency(table_id, "parent")
        viewer = convert.viewer_of(self.caller(context))
        coups = self.read(
            {"table_id": "parent", "n": "page_size"},
            self.ledger.last_coups,
            table_id,
            offset + size + 1,
        )
        page = coups[offset : offset + size]
        return events_pb2.ListRecalledCoupsResponse(
            coups=[
                events_pb2.RecalledCoup(
                    coup=convert.coup(c.coup, currency, viewer),
                    steps=[
                        convert.step(table_id, c.coup.shoe_id, c.coup.coup_id, s, viewer)
                        for s in c.steps
                    ],
                    dealt_by=convert.actor(c.dealt_by, viewer),
                )
                for c in page
            ],
            next_page_token=names.next_token(offset, size, len(coups)),
        )
