"""A coup's replay reads less than it did, and gives the same answers (SQLite and PostgreSQL).

``vocabulary.coup_events`` reads a coup's events once (its shoe from the first): the shoe
``shoe_of_coup`` finds and the rows ``by_originator`` reads; ``shoe_events`` given them finds
what it finds reading them itself. ``Notary.leaves_around`` reads the leaves of a replay's
single events and of its span in one statement: for any positions and span (hypothesis),
``leaves_at_positions`` and ``leaves(index_at_or_after(first), index_at_or_after(last + 1))``.
The position after the span is answered from the rows read around it
(``CoveredEvents.positions``), as the table would.
"""

from __future__ import annotations

from collections.abc import Iterator
from uuid import UUID, uuid4

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.bootstrap import REGULATOR_GAMES, ROUND_END
from services.regulator.notary import Notary
from services.regulator.replay import Replayer
from services.regulator.source import CoveredEvents, Database, EventTable
from services.regulator.vocabulary import coup_events, shoe_events, shoe_of_coup, state
from services.topics import CHAIN_LINKED, SHOE_COUP_DEALT

from .conftest import Played


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def played(request: pytest.FixtureRequest) -> Played:
    found: Played = request.getfixturevalue(
        "played_sqlite" if request.param == "sqlite" else "played_pg")
    return found


@pytest.fixture
def notary(played: Played) -> Iterator[Notary]:
    db = Database(played.url)
    try:
        yield Notary(db, EventTable(db), None, "sabot-test", ROUND_END, create=False)
    finally:
        db.close()


def test_coup_events_read_once(played: Played) -> None:
    events = played.events()
    try:
        for sid in played.shoes[:1]:
            for cid in played.coups[sid]:
                got = coup_events(events, cid)
                assert got is not None
                assert got[0] == shoe_of_coup(events, cid) == sid
                assert got[1] == events.by_originator(UUID(cid))
                only = str(UUID(cid))
                assert shoe_events(events, sid, only, got[1]) == shoe_events(events, sid, only)
        assert coup_events(events, str(uuid4())) is None
        assert coup_events(events, "not a uuid") is None
        assert coup_events(events, played.shoes[0]) is None  # a shoe, not a coup
    finally:
        events.db.close()


def test_coup_replay_steps_unchanged(played: Played) -> None:
    """Replayer.coup gives the steps of the shoe's run for that coup, as before the change."""
    events = played.events()
    try:
        notary = Notary(events.db, events, None, "sabot-test", ROUND_END, create=False)
        replayer = Replayer(events, notary, games=REGULATOR_GAMES)
        sid = played.shoes[0]
        for cid in played.coups[sid][:3]:
            steps = list(replayer.coup(cid))
            assert steps == list(replayer._run(sid, only=str(UUID(cid))))
            assert steps and all(s.same for s in steps)
    finally:
        events.db.close()


def test_a_coup_replay_proves_the_shoe_events_it_reads(played: Played) -> None:
    """Each coup's replay checks the leaf (and so the chain's batch) of every shoe event it
    reads: the shoe's Shuffled, Cut and Closed, and the deals of the coups up to it (the later
    coups' deals, after its events, it neither reads nor needs)."""
    events = played.events()
    try:
        notary = Notary(events.db, events, None, "sabot-test", ROUND_END, create=False)
        replayer = Replayer(events, notary, games=REGULATOR_GAMES)
        sid = played.shoes[0]
        shoe = events.by_originator(UUID(sid))
        for k, cid in enumerate(played.coups[sid]):
            last = max(e.position for e in events.by_originator(UUID(cid)))
            read = {e.position for e in shoe if e.topic != SHOE_COUP_DEALT or e.position <= last}
            proved = {s.position for s in replayer.coup(cid) if s.what.startswith("event hash")}
            assert read <= proved
            dealt = [e for e in shoe if e.topic == SHOE_COUP_DEALT and e.position in proved]
            assert [str(state(e)["coup_id"]) for e in dealt] == played.coups[sid][:k + 1]
    finally:
        events.db.close()


_SETTINGS = settings(max_examples=30, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])


@_SETTINGS
@given(data=st.data())
def test_leaves_around_as_the_four_reads(notary: Notary, data: st.DataObject) -> None:
    top = notary.position + 3
    positions = data.draw(st.lists(st.integers(0, top), max_size=40))
    first = data.draw(st.integers(0, top))
    last = data.draw(st.integers(first - 2, top))
    at, spanned = notary.leaves_around(positions, first, last)
    assert at == notary.leaves_at_positions(positions)
    assert spanned == notary.leaves(notary.index_at_or_after(first),
                                    notary.index_at_or_after(last + 1))


@pytest.fixture
def table(played: Played) -> Iterator[EventTable]:
    db = Database(played.url)
    try:
        yield EventTable(db)
    finally:
        db.close()


@_SETTINGS
@given(data=st.data())
def test_covered_positions_as_the_table(table: EventTable, data: st.DataObject) -> None:
    """``CoveredEvents.positions`` (the replay asks it the position after its span) answers as
    the table, within the covered rows, at their ends and past them."""
    stored = list(table.iterate())
    last = stored[-1].position
    links = [e.position for e in stored if e.topic == CHAIN_LINKED]
    floor = data.draw(st.sampled_from([0, links[0]]))
    ranges = data.draw(st.lists(
        st.tuples(st.integers(1, last + 3), st.integers(0, 60)).map(
            lambda r: (r[0], r[0] + r[1])), min_size=1, max_size=12))
    covered = CoveredEvents(table).fill(ranges, CHAIN_LINKED, floor)
    extra = data.draw(st.lists(st.integers(-1, last + 3), max_size=10))
    for after in [x for a, b in ranges for x in (a - 2, a - 1, a, b - 1, b, b + 1)] + extra:
        for limit in (0, 1, 3, 2000):
            assert covered.positions(after, limit) == table.positions(after, limit)
