"""Everything the ledger keeps in memory is bounded by a stated size, the oldest forgotten first,
and the store is the truth for what it forgot (issue 25, item 4): a retry whose request id the
writer forgot gets the first answer from the store (its lookup an index search on both stores),
never a second effect; the evidence chain's memory (``ChainGuard``), the event times of views
(``Core._times``) and a table's round ids each stay within their size, and what fell out is
read again from the store with the same outcome."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any
from uuid import UUID, uuid4

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.bootstrap import LEDGER_GAMES
from services.ledger import table as table_module
from services.ledger.api import Ledger
from services.ledger.errors import RequestIdReused
from services.ledger.evidence import CHECKED, LATEST, VOUCHED
from services.ledger.ids import request_uuid, table_uuid
from services.ledger.table import Table
from services.ledger.writer import (
    RECENT_REQUESTS,
    RecentRequests,
    answer_weight,
    footprint,
    writer_of,
)
from services.trente_et_quarante.coup import COUP_IDS

from .play import FixedInputs, cut_table


@pytest.fixture
def ledger(store_url: str) -> Iterator[Ledger]:
    ledger = cut_table(store_url)
    yield ledger
    ledger.close()


def _forget_requests(ledger: Ledger) -> None:
    writer = writer_of(ledger)
    assert writer is not None
    writer.recent = RecentRequests(2, whole=1)


def test_a_forgotten_retry_that_the_rules_now_refuse_gets_the_first_answer(
        ledger: Ledger) -> None:
    """The coup's betting closed since: deciding the retry again would be refused; the writer
    looks its id up in the store and answers the stake it placed."""
    _forget_requests(ledger)
    coup = ledger.open_coup("oc", "t1")
    first = ledger.place_stake("p1", coup.coup_id, "ana", "noir", 1000)
    ledger.close_betting("cb", coup.coup_id)
    for k in range(3):  # p1 is forgotten
        ledger.deposit(f"more{k}", "ana", 1)
    writer = writer_of(ledger)
    assert writer is not None and request_uuid("p1") not in writer.recent
    mark = ledger.app.recorder.max_notification_id()
    assert ledger.place_stake("p1", coup.coup_id, "ana", "noir", 1000) == first
    assert ledger.app.recorder.max_notification_id() == mark
    assert ledger.get_account("ana").balance == 9003


def test_a_retry_after_a_restart_gets_the_first_answer_from_the_store(store_url: str) -> None:
    """A new writer remembers no request: every retry is a miss, answered from the store,
    together with new commands in the same batches."""
    inputs = FixedInputs()
    ledger = Ledger(inputs.config(store_url), games=LEDGER_GAMES)
    try:
        ledger.open_table("t", "t1", "francaise")
        ledger.open_account("a", "ana")
        ledger.deposit("d", "ana", 10_000)
        shoe = ledger.open_shoe("s", "t1")
        ledger.cut("c", shoe.shoe_id, 100, "ana")
        coup = ledger.open_coup("oc", "t1")
        first = [ledger.place_stake(f"p{k}", coup.coup_id, "ana", "rouge", 100)
                 for k in range(4)]
    finally:
        ledger.close()
    again = Ledger(inputs.config(store_url), games=LEDGER_GAMES)
    try:
        retries = [again.submit("place_stake", f"p{k}", coup.coup_id, "ana", "rouge", 100)
                   for k in range(4)]
        fresh = again.submit("place_stake", "p-new", coup.coup_id, "ana", "rouge", 100)
        assert [r.result(timeout=30) for r in retries] == first
        fresh.result(timeout=30)
        with pytest.raises(RequestIdReused):
            again.place_stake("p0", coup.coup_id, "ana", "rouge", 200)
        assert again.get_account("ana").balance == 10_000 - 500
        assert len(again.get_coup(coup.coup_id).layout) == 5
    finally:
        again.close()


def _plan(store_url: str, request: UUID) -> str:
    """How the store finds the events of aggregate ``request`` (the writer's look-up of a
    stored request: ``repository.get``, by ``originator_id``)."""
    if store_url.startswith("sqlite"):
        path = store_url.removeprefix("sqlite:///")
        with sqlite3.connect(path) as conn:
            tables = [r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name LIKE '%events'")]
            rows = conn.execute(f"EXPLAIN QUERY PLAN SELECT * FROM {tables[0]} WHERE "
                                "originator_id=? ORDER BY originator_version",
                                (str(request),)).fetchall()
        return " ".join(str(r[-1]) for r in rows)
    dsn = store_url.split("?")[0]
    schema = store_url.split("schema=")[1] if "schema=" in store_url else "public"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}"')
        conn.execute("SET enable_seqscan = off")
        table = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s AND "
                             "tablename LIKE '%%events' ORDER BY tablename",
                             (schema,)).fetchall()[0][0]
        rows = conn.execute(f"EXPLAIN SELECT * FROM {table} WHERE originator_id = %s "
                            "ORDER BY originator_version", (request,)).fetchall()
    return " ".join(str(r[0]) for r in rows)


def test_a_stored_request_is_found_by_an_index_on_both_stores(ledger: Ledger,
                                                             store_url: str) -> None:
    plan = _plan(store_url, request_uuid("d"))
    if store_url.startswith("sqlite"):
        assert "USING PRIMARY KEY" in plan or "USING INDEX" in plan, plan
    else:
        assert "Index" in plan and "Seq Scan" not in plan, plan


@settings(max_examples=200)
@given(size=st.integers(1, 6), whole=st.integers(1, 4),
       batches=st.lists(st.integers(0, 5), max_size=12))
def test_recent_requests_keep_exactly_the_last_ids_saved(
        size: int, whole: int, batches: list[int]) -> None:
    """Requests are saved once each, in batches: the last ``size`` ids saved are known, the
    last ``whole`` requests kept whole, the older ones forgotten."""
    recent = RecentRequests(size, whole)
    saved: list[UUID] = []
    for n in batches:
        batch = [UUID(int=len(saved) + k + 1) for k in range(n)]
        recent.add({rid: rid for rid in batch})
        saved += batch
        assert len(recent) <= size and len(recent._whole) <= whole
    everyone = [UUID(int=k + 1) for k in range(len(saved) + 3)]
    assert [i for i in everyone if i in recent] == saved[max(0, len(saved) - size):]
    assert [i for i in everyone if recent.request(i) is not None] == saved[
        max(0, len(saved) - whole):]


def test_the_stated_sizes_are_the_defaults() -> None:
    assert RecentRequests()._size == RECENT_REQUESTS
    assert (CHECKED, LATEST, VOUCHED) == (50_000, 16_384, 8_192)


def _guard(ledger: Ledger) -> Any:
    guard = getattr(ledger.app.events, "guard", None)
    assert guard is not None
    return guard


def test_the_chain_guard_stays_within_its_sizes_and_reloads_what_it_forgot(
        ledger: Ledger) -> None:
    guard = _guard(ledger)
    guard.sizes = {"checked": 7, "latest": 3, "vouched": 2}
    coup = ledger.open_coup("oc", "t1")
    for k in range(6):
        ledger.open_account(f"acc{k}", f"p{k}")
        ledger.deposit(f"dep{k}", f"p{k}", 1_000)
        ledger.place_stake(f"st{k}", coup.coup_id, f"p{k}", "rouge", 100)
        assert len(guard.checked) <= 7 and len(guard.latest) <= 3
    writer = writer_of(ledger)
    assert writer is not None
    writer.cache.clear()  # every aggregate is loaded again, its events checked again
    for k in range(6):
        assert ledger.get_account(f"p{k}").balance == 900
        assert len(guard.checked) <= 7 and len(guard.latest) <= 3
        assert len(guard.vouched) <= 2
    assert len(ledger.get_coup(coup.coup_id).layout) == 6
    assert len(guard.vouched) == 2  # links were vouched for, the oldest forgotten
    assert max(guard.vouched) == max(guard.vouched.keys())


def test_an_aggregate_seen_again_moves_to_the_end_of_latest(ledger: Ledger) -> None:
    """``latest`` forgets the aggregate not seen for longest, not the one remembered first."""
    guard = _guard(ledger)
    guard.sizes = {**guard.sizes, "latest": 4}
    a, b, c, d, e = (uuid4() for _ in range(5))
    base = 10**9  # positions no event of the ledger has

    def seen(oid: UUID, version: int) -> None:
        nonlocal base
        base += 1
        guard.remember([(base, oid, version)], base, [bytes(32)])

    for oid in (a, b, c, d):
        seen(oid, 1)
    seen(a, 2)  # a again: the newest now
    seen(e, 1)  # b, not seen for longest, goes
    assert list(guard.latest)[-4:] == [c, d, a, e] and b not in guard.latest
    assert guard.latest[a][0] == 2


def test_event_times_stay_within_their_size_and_read_the_store_again(ledger: Ledger) -> None:
    core = ledger.core
    views = []
    for k in range(4):
        coup = ledger.open_coup(f"oc{k}", "t1")
        ledger.deal(f"dl{k}", coup.coup_id)
        ledger.settle(f"se{k}", coup.coup_id)
        views.append(ledger.get_coup(coup.coup_id))
    core._times_size = 2
    core._times.clear()
    writer = writer_of(ledger)
    assert writer is not None
    writer.cache.clear()  # the views' times come from the stored events
    for _ in range(3):
        again = [ledger.get_coup(v.coup_id) for v in views]
        assert again == views
        assert len(core._times) <= 2


def _settled_coups(ledger: Ledger, n: int) -> list[str]:
    """Play ``n`` coups on t1 to their settlement: their ids, in order."""
    coups = []
    for k in range(n):
        coup = ledger.open_coup(f"oc{k}", "t1")
        ledger.deal(f"dl{k}", coup.coup_id)
        ledger.settle(f"se{k}", coup.coup_id)
        coups.append(coup.coup_id)
    return coups


def test_a_table_keeps_its_latest_rounds_and_counts_them_all(
        ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(table_module, "ROUNDS_KEPT", 3)
    coups = _settled_coups(ledger, 5)
    table: Table = ledger.app.repository.get(table_uuid("t1"))
    assert table.rounds(COUP_IDS) == coups[-3:]
    assert table.latest_round(COUP_IDS) == (coups[-1], 5)
    view = ledger.get_table("t1")
    assert (view.coup_id, view.coups) == (coups[-1], 5)
    assert [c.number for c in map(ledger.get_coup, coups)] == [1, 2, 3, 4, 5]
    listed, token = ledger.list_coups("t1", page_size=2)
    while token:
        more, token = ledger.list_coups("t1", page_size=2, page_token=token)
        listed += more
    assert [c.coup_id for c in listed] == coups  # the older ones read from the store
    assert [c.coup.coup_id for c in ledger.last_coups("t1", 5)] == coups[::-1]


def test_a_table_loaded_from_its_events_keeps_as_many(
        ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(table_module, "ROUNDS_KEPT", 2)
    coups = _settled_coups(ledger, 4)
    writer = writer_of(ledger)
    assert writer is not None
    writer.cache.clear()
    table: Table = ledger.app.repository.get(table_uuid("t1"))
    assert (table.rounds(COUP_IDS), table.round_count(COUP_IDS)) == (coups[-2:], 4)
    fifth = ledger.open_coup("oc-last", "t1")
    assert fifth.number == 5


def test_many_requests_leave_the_writer_within_its_sizes(ledger: Ledger) -> None:
    writer = writer_of(ledger)
    assert writer is not None
    writer.recent = RecentRequests(5, whole=2)
    for k in range(20):
        ledger.deposit(f"many{k}-{uuid4().hex[:6]}", "ana", 1)
        assert len(writer.recent) <= 5 and len(writer.recent._whole) <= 2
        assert len(writer.recent._order) <= 5


def test_a_treinta_y_una_table_lists_and_numbers_the_rounds_it_forgot(
        sqlite_store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from services.treinta_y_una.round import ROUND_IDS
    from tests.treinta_y_una.support import Croupier, table_ledger

    monkeypatch.setattr(table_module, "ROUNDS_KEPT", 1)
    with table_ledger(sqlite_store_url) as (ledger, tyu):
        croupier = Croupier(ledger, tyu)
        played = [croupier.play().round_id, croupier.play().round_id]
        third = croupier.open()
        assert third.number == 3
        table: Table = ledger.app.repository.get(table_uuid("tyu-1"))
        assert table.rounds(ROUND_IDS) == [third.round_id]
        assert tyu.list_rounds("tyu-1") == [*played, third.round_id]
        assert ledger.get_table("tyu-1").coups == 3


def test_the_answers_kept_whole_stay_within_their_bytes(ledger: Ledger) -> None:
    """The estimate of a kept request's size is within 2x of its measured size for every
    command of a coup's play, and the requests kept whole stay within their budget (the
    latest one kept whatever its size)."""
    writer = writer_of(ledger)
    assert writer is not None
    coup = ledger.open_coup("oc", "t1")
    for k in range(12):
        ledger.place_stake(f"p{k}", coup.coup_id, "ana", "noir", 100)
    ledger.close_betting("cb", coup.coup_id)
    ledger.deal("dl", coup.coup_id)
    ledger.settle("se", coup.coup_id)
    kept = [r for r, _ in writer.recent._whole.values()]
    assert {r.command for r in kept} >= {"place_stake", "deal", "settle"}
    for request in kept:
        measured = footprint(request)
        assert measured / 2 <= answer_weight(request) <= 2 * measured, request.command
    settle = next(r for r in kept if r.command == "settle")
    stake = next(r for r in kept if r.command == "place_stake")
    budget = answer_weight(settle) + 2 * answer_weight(stake)
    recent = RecentRequests(100, whole=100, budget=budget)
    for request in kept:
        recent.add({request.id: request})
        assert recent.bytes <= max(budget, answer_weight(request))
        assert recent.request(request.id) is request  # the latest: always kept
    assert recent.bytes == sum(answer_weight(r) for r, _ in recent._whole.values())
    assert len(recent) == len(kept)  # every id still known: a retry reads the store
    assert 1 <= len(recent._whole) < len(kept)
    assert list(recent._whole) == [r.id for r in kept][-len(recent._whole):]  # the latest
