"""What the writer keeps in memory is bounded (issue 25, item 4): the ids of its last requests
only (a retry of an older one reads its answer from the store, never a second effect), its
aggregates by their measured size; and a stored request carries no digest (version 3), the
digest computed from the stored arguments as version 2 stored it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import pytest

from services.ledger.api import Ledger
from services.ledger.errors import RequestIdReused
from services.ledger.request import Request, digest_of
from services.ledger.writer import AggregateCache, RecentRequests, footprint, writer_of

from .play import cut_table

PRE_SEAM = Path(__file__).resolve().parents[1] / "data" / "pre_seam" / "events.jsonl"


@pytest.fixture
def ledger(store_url: str) -> Iterator[Ledger]:
    ledger = cut_table(store_url)
    yield ledger
    ledger.close()


def test_a_retry_the_writer_forgot_gets_the_first_answer_from_the_store(
        ledger: Ledger) -> None:
    writer = writer_of(ledger)
    assert writer is not None
    writer.recent = RecentRequests(2, whole=1)
    coup = ledger.open_coup("oc", "t1")
    first = ledger.place_stake("p1", coup.coup_id, "ana", "noir", 1000)
    for k in range(3):  # p1 is forgotten
        ledger.deposit(f"more{k}", "ana", 1)
    assert len(writer.recent) == 2
    mark = ledger.app.recorder.max_notification_id()
    assert ledger.place_stake("p1", coup.coup_id, "ana", "noir", 1000) == first
    with pytest.raises(RequestIdReused):
        ledger.place_stake("p1", coup.coup_id, "ana", "noir", 2000)
    assert ledger.app.recorder.max_notification_id() == mark
    assert ledger.get_account("ana").balance == 9003
    assert len(ledger.get_coup(coup.coup_id).layout) == 1


def test_a_stored_request_has_no_digest(ledger: Ledger) -> None:
    note = ledger.app.recorder.select_notifications(1, 1000,
                                                    topics=[Request.Recorded.TOPIC])[-1]
    state = json.loads(note.state)
    assert state["class_version"] == 3 and "digest" not in state
    request = ledger.app.repository.get(note.originator_id)
    assert isinstance(request, Request)
    assert request.digest == digest_of(state["command"], state["arguments"])


def test_a_version_2_digest_is_the_one_computed_from_its_arguments() -> None:
    states = [json.loads(row["state"]) for row in map(json.loads, PRE_SEAM.open())
              if row["topic"] == Request.Recorded.TOPIC]
    assert len(states) > 100 and {s["class_version"] for s in states} == {2}
    for state in states:
        assert digest_of(state["command"], state["arguments"]) == state["digest"]
        upcast = dict(state)
        Request.Recorded.upcast_v2_v3(upcast)
        assert "digest" not in upcast and upcast["arguments"] == state["arguments"]


def test_recent_requests_forget_the_oldest() -> None:
    recent = RecentRequests(3, whole=1)
    ids = [uuid4() for _ in range(5)]
    requests: dict[UUID, Any] = {i: object() for i in ids}
    recent.add(requests)
    recent.add({ids[-1]: requests[ids[-1]]})  # already there: not counted twice
    assert len(recent) == 3
    assert [i in recent for i in ids] == [False, False, True, True, True]
    assert [recent.request(i) for i in ids] == [None] * 4 + [requests[ids[-1]]]


def test_the_aggregate_cache_stays_within_its_budget(ledger: Ledger) -> None:
    writer = writer_of(ledger)
    assert writer is not None
    coup = ledger.open_coup("oc", "t1")
    for k in range(5):
        ledger.open_account(f"acc{k}", f"p{k}")
        ledger.deposit(f"dep{k}", f"p{k}", 10_000)
        ledger.place_stake(f"st{k}", coup.coup_id, f"p{k}", "rouge", 100)
    small = footprint(ledger.app.repository.get(ledger.get_coup(coup.coup_id).coup_id))
    for k in range(5, 30):
        ledger.open_account(f"acc{k}", f"p{k}")
        ledger.deposit(f"dep{k}", f"p{k}", 10_000)
        ledger.place_stake(f"st{k}", coup.coup_id, f"p{k}", "rouge", 100)
    big = footprint(ledger.app.repository.get(ledger.get_coup(coup.coup_id).coup_id))
    assert big > 2 * small  # a coup's size grows with its stakes, and is measured so
    cached = list(writer.cache._items.values())
    budget = sum(map(footprint, cached)) // 2
    cache = AggregateCache(size=1000, budget=budget)
    for agg in cached:
        cache.put(agg)
        assert cache.bytes <= max(budget, footprint(agg))
    assert 1 < len(cache) < len(cached)
    assert cache.bytes == sum(footprint(agg) for agg in cache._items.values())


def test_the_read_models_decode_a_version_2_request_as_the_mapper_does(
        ledger: Ledger) -> None:
    """The read models' fast decoder applies a request's plain upcasters itself: the event it
    gives has what the application's mapper gives (the upcast version 3)."""
    from eventsourcing.persistence import StoredEvent

    from services.projections.decode import decoders

    _, decode_row = decoders(ledger.app)
    assert decode_row is not None
    rows = [row for row in map(json.loads, PRE_SEAM.open())
            if row["topic"] == Request.Recorded.TOPIC]
    for row in rows:
        state = row["state"].encode()
        fast = decode_row((row["position"], row["originator_id"], row["version"],
                           row["topic"], state))
        slow = ledger.app.mapper.to_domain_event(StoredEvent(
            originator_id=UUID(row["originator_id"]), originator_version=row["version"],
            topic=row["topic"], state=state))
        assert fast.time == slow.timestamp and fast.event.effects == slow.effects
        for name in ("request_id", "command", "arguments", "result", "actor"):
            assert getattr(fast.event, name) == getattr(slow, name), name
        assert not hasattr(fast.event, "digest") and "digest" not in vars(slow)


def test_a_cached_aggregate_counts_as_grown_with_its_version_until_measured_again() -> None:
    class Grows:  # what the cache reads of an aggregate: its id, its version, its objects
        def __init__(self) -> None:
            self.id = uuid4()
            self.version = 10
            self.stakes = [str(k) * 40 for k in range(10)]

    agg = Grows()
    cache = AggregateCache(budget=10**9)
    cache.put(agg)  # type: ignore[arg-type]
    measured = cache.bytes
    assert measured == footprint(agg)
    agg.version, agg.stakes = 20, agg.stakes * 2
    cache.put(agg)  # type: ignore[arg-type]
    assert cache.bytes == 2 * measured  # not measured: counted as grown with its version
    agg.version, agg.stakes = 40, agg.stakes * 2
    cache.put(agg)  # type: ignore[arg-type]
    assert cache.bytes == footprint(agg)  # grown 4 times since measured: measured again
    cache.forget(agg.id)
    assert cache.bytes == 0 and len(cache) == 0
