"""A tiny event-sourced application and a view over it, to test the projection machinery."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.domain import Aggregate, event

from services.projections.store import Tx
from services.projections.view import Envelope, Table, View


class Till(Aggregate):
    TOPIC = "tests.projections:Till"

    class Created(Aggregate.Created):
        TOPIC = "tests.projections:Till.Created"
        name: str

    class Moved(Aggregate.Event):
        TOPIC = "tests.projections:Till.Moved"
        amount: int

    @event(Created)
    def __init__(self, name: str) -> None:
        self.name = name
        self.balance = 0

    @event(Moved)
    def move(self, amount: int) -> None:
        self.balance += amount


class Tills(Application[UUID]):
    name = "Tills"


class TillView(View):
    """Balance and number of movements per till."""

    name = "tills"
    tables = (
        Table(
            "rm_till",
            (("till_id", "TEXT"), ("name", "TEXT"), ("balance", "BIGINT"), ("moves", "BIGINT")),
            ("till_id",),
        ),
    )
    topics = frozenset({Till.Created.TOPIC, Till.Moved.TOPIC})

    def apply(self, tx: Tx, batch: Sequence[Envelope]) -> None:
        cache: dict[str, list[Any]] = {}
        for e in batch:
            key = str(e.event.originator_id)
            if e.topic == Till.Created.TOPIC:
                cache[key] = [key, e.event.name, 0, 0]
                continue
            row = cache.get(key)
            if row is None:
                found = tx.one(
                    "SELECT till_id, name, balance, moves FROM {s}rm_till WHERE till_id = ?",
                    (key,),
                )
                assert found is not None
                row = cache[key] = list(found)
            row[2] += e.event.amount
            row[3] += 1
        tx.executemany(
            "INSERT INTO {s}rm_till (till_id, name, balance, moves) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (till_id) DO UPDATE SET balance = excluded.balance, "
            "moves = excluded.moves",
            list(cache.values()),
        )
