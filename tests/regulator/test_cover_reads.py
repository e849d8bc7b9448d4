"""The replay's reads of the event table give the rows the table holds (SQLite and PostgreSQL).

``Database.event_rows`` reads PostgreSQL's results in binary (the same values as the text
rows); ``CoveredEvents.fill`` reads the rows around position ranges in two statements (on
PostgreSQL: the ranges as arrays, a ``LATERAL`` range scan per interval): whatever the ranges,
a covered table answers every question the chain check and the integrity check ask exactly as
the table does.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.regulator.source import CoveredEvents, Database, EventTable, RawEvent, _raw
from services.topics import CHAIN_LINKED

from .conftest import Played


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def table(request: pytest.FixtureRequest) -> Iterator[EventTable]:
    played: Played = request.getfixturevalue(
        "played_sqlite" if request.param == "sqlite" else "played_pg")
    db = Database(played.url)
    try:
        yield EventTable(db)
    finally:
        db.close()


def _all(events: EventTable) -> list[RawEvent]:
    return list(events.iterate())


def test_event_rows_are_the_text_rows(table: EventTable) -> None:
    sql = (f"SELECT {table._pos}, originator_id, originator_version, topic, state "
           f"FROM {table.table} ORDER BY {table._pos}")
    text = [_raw(r) for r in table.db.rows(sql)]
    binary = [_raw(r) for r in table.db.event_rows(sql)]
    assert binary == text
    assert len(text) > 100
    for a, b in zip(table.db.rows(sql), table.db.event_rows(sql), strict=True):
        assert [type(x) for x in a] == [type(x) for x in b]
        assert a == b


_SETTINGS = settings(max_examples=25, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])


@_SETTINGS
@given(data=st.data())
def test_covered_answers_as_the_table(table: EventTable, data: st.DataObject) -> None:
    stored = _all(table)
    last = stored[-1].position
    links = [e.position for e in stored if e.topic == CHAIN_LINKED]
    floor = data.draw(st.sampled_from([0, links[0]]))
    starts = st.integers(1, last + 3)
    ranges = data.draw(st.lists(
        st.tuples(starts, st.integers(0, 60)).map(lambda r: (r[0], r[0] + r[1])),
        min_size=1, max_size=12))
    covered = CoveredEvents(table).fill(ranges, CHAIN_LINKED, floor)
    for a, b in ranges:
        assert covered.topic_before(CHAIN_LINKED, a, floor) == table.topic_before(
            CHAIN_LINKED, a, floor)
        assert covered.topic_at_or_after(CHAIN_LINKED, b) == table.topic_at_or_after(
            CHAIN_LINKED, b)
        for after in (a - 2, a - 1, a, b - 1, b):
            for limit in (1, 5, 2000):
                assert covered.read(after, limit) == table.read(after, limit)
        wanted = list(range(max(1, a - 2), b + 3))
        assert covered.at(wanted) == table.at(wanted)
