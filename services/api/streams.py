"""WatchService (a table's events as they happen) and FeedService (every event from a position,
in batches, resumable); RecallService (the last coups of a table) is Trente et Quarante's
(``services/trente_et_quarante/recall.py``).

Watch shows a player token other players' stakes without their account ids
(``convert.viewer_of``); the feed is the back office's and shows everything."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import grpc

from domain.errors import RuleViolation
from services import topics
from services.api import convert, errors, names
from services.api.base import Base
from services.api.game import Played
from services.api.gen.sabot.v1 import events_pb2, events_pb2_grpc
from services.ledger.ids import table_uuid
from services.ledger.views import StoredEvent

WAIT_SECONDS = 0.5
DEFAULT_BATCH = 100
MAX_BATCH = 1000

R = TypeVar("R")


class _TableFilter:
    """Which events belong to one table: its own, its shoes' and its games' rounds of a shoe
    (its coups: placed by their game, ``ApiGame.feed_keys`` of one of ``games``)."""

    def __init__(
        self,
        table_id: str,
        shoe_id: str | None,
        round_home: dict[str, str],
        viewer: str | None = None,
        games: Played | None = None,
    ) -> None:
        self.games = Played() if games is None else games
        self.table_id = table_id
        self.viewer = viewer
        self.table_aggregate = str(table_uuid(table_id))
        self.shoes: set[str] = {shoe_id} if shoe_id else set()
        self.rounds: dict[str, str] = dict(round_home)  # round id -> shoe id

    def match(self, event: StoredEvent) -> events_pb2.Event | None:
        origin = str(event.originator_id)
        state = event.state
        if origin == self.table_aggregate:
            return convert.event(event, self.table_id, viewer=self.viewer)
        if event.topic == topics.SHOE_SHUFFLED and state.get("table_id") == self.table_id:
            self.shoes.add(origin)
        placed = self.games.placed(event)
        if placed is not None and placed[1].table_id == self.table_id:
            self.rounds[origin] = placed[1].shoe_id or ""
        if origin in self.shoes:
            return convert.event(event, self.table_id, origin, viewer=self.viewer)
        if origin in self.rounds:
            return convert.event(
                event, self.table_id, self.rounds[origin], origin, viewer=self.viewer
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


@dataclass
class Turn(Generic[R]):
    """One turn of a watch stream: the answers to send now, then ``over`` (the stream ends), or
    ``wait`` (sleep until an event is stored beyond that position) or neither (at once again)."""

    send: Sequence[R] = field(default_factory=tuple)
    wait: int | None = None
    over: bool = False


def stream(base: Base, context: grpc.ServicerContext, turn: Callable[[], Turn[R]]
           ) -> Iterator[R]:
    """A watch stream, every game's and the core's: ``turn`` after ``turn`` while the RPC is
    active and the server open, each turn's answers sent. It holds a stream slot from its
    first turn; the slot is released in this generator's ``finally`` (its end, the RPC's end
    or cancellation: grpc closes the generator, ``yield from`` closes this one)."""
    ended = _ended(base, context)
    with _slot(base):
        while context.is_active() and not base.hub.closed:
            t = turn()
            yield from t.send
            if t.over:
                return
            if t.wait is not None:
                base.hub.wait_beyond(t.wait, WAIT_SECONDS, ended)


def follow(base: Base, context: grpc.ServicerContext, position: int,
           answer: Callable[[list[StoredEvent]], R | None], *, size: int = MAX_BATCH,
           stop_at_end: bool = False,
           done: Callable[[list[StoredEvent]], bool] | None = None) -> Iterator[R]:
    """The log after ``position`` as a :func:`stream`: batches of up to ``size`` events, each
    batch's ``answer`` sent (unless None); at the log's end, waiting for more (or ending, with
    ``stop_at_end``); ending after a batch where ``done``."""
    at = position

    def turn() -> Turn[R]:
        nonlocal at
        batch = base.ledger.read_events(at, size)
        if not batch:
            return Turn(over=True) if stop_at_end else Turn(wait=at)
        at = batch[-1].position
        found = answer(batch)
        return Turn(send=() if found is None else (found,),
                    over=done is not None and done(batch))

    return stream(base, context, turn)


class WatchServicer(Base, events_pb2_grpc.WatchServiceServicer):
    def WatchTable(
        self, request: events_pb2.WatchTableRequest, context: grpc.ServicerContext
    ) -> Iterator[events_pb2.WatchTableResponse]:
        table_id = names.table_name("table", request.table)
        if request.after_position < 0:
            raise errors.invalid("after_position", "must not be negative")
        viewer = convert.viewer_of(self.caller(context))
        table = self.read({"table_id": "table"}, self.ledger.get_table, table_id)
        # the latest coup's shoe, as its game shows it (a game's round that is no coup, as a
        # Treinta y Una round, has none: its events are its own stream's)
        homes: dict[str, str] = {}
        if table.coup_id and table.coup_shoe_id:
            homes[table.coup_id] = table.coup_shoe_id
        selector = _TableFilter(table_id, table.shoe_id, homes, viewer, self.games)

        def answer(batch: list[StoredEvent]) -> events_pb2.WatchTableResponse | None:
            found = [e for e in (selector.match(s) for s in batch) if e is not None]
            return events_pb2.WatchTableResponse(events=found) if found else None

        yield from follow(self, context, request.after_position or self.hub.catch_up(), answer)


class FeedServicer(Base, events_pb2_grpc.FeedServiceServicer):
    def StreamEvents(
        self, request: events_pb2.StreamEventsRequest, context: grpc.ServicerContext
    ) -> Iterator[events_pb2.StreamEventsResponse]:
        if request.after_position < 0:
            raise errors.invalid("after_position", "must not be negative")
        if request.batch_size < 0 or request.batch_size > MAX_BATCH:
            raise errors.invalid("batch_size", f"0..{MAX_BATCH} (0: {DEFAULT_BATCH})")

        def answer(batch: list[StoredEvent]) -> events_pb2.StreamEventsResponse:
            actors = self.actors(batch)
            return events_pb2.StreamEventsResponse(
                events=[self._located(e, actors.get((e.originator_id, e.version)))
                        for e in batch],
                last_position=batch[-1].position,
            )

        yield from follow(self, context, request.after_position, answer,
                          size=request.batch_size or DEFAULT_BATCH,
                          stop_at_end=request.stop_at_end)

    def _located(self, event: StoredEvent, by: dict[str, Any] | None = None
                 ) -> events_pb2.Event:
        """The event with its table, shoe and coup names filled in where it has them, and
        ``by``: the actor of its command."""
        origin = str(event.originator_id)
        try:
            placed = self.games.placed(event)
            if placed is not None:
                game, place = placed
                if place.table_id is not None and place.shoe_id is not None:
                    self.remember_round(place.round_id, place.table_id, place.shoe_id)
                table_id, shoe_id = self.round_home(place.round_id, "after_position", game)
                return convert.event(event, table_id, shoe_id, origin, by=by)
            if event.topic in topics.SHOE_EVENTS:
                return convert.event(event, self.shoe_table(origin, "after_position"), origin,
                                     by=by)
        except RuleViolation:  # not (or no longer) readable as such: leave the names empty
            pass
        return convert.event(event, by=by)
