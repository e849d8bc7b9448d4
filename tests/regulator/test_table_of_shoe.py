"""A shoe's events read whatever its table's years (SQLite and PostgreSQL): ``shoe_events`` reads
the table's ``Table.Opened`` and its events from the shoe's ``Table.ShoeStarted`` to the next
shoe's (``vocabulary._table_of_shoe``), not the table's whole history, and finds the same
events as the whole history gives: for every shoe of a table that played three (the first two
closed with a shoe after them, the last in play), and on a store where one of the table's events
inside a shoe was deleted behind the ledger's back (the whole history is then read).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from uuid import UUID

import psycopg
import pytest

from services.ledger.ids import table_uuid
from services.regulator.source import Database, EventTable, RawEvent
from services.regulator.vocabulary import shoe_events, state
from services.topics import TABLE_COUP_STARTED, TABLE_SHOE_STARTED

from .conftest import PG_ADMIN, PG_DB, Played, fresh_pg_database, play, postgres_or_skip
from .test_replay_memo import _delete

TABLE = "t-long"


class WholeHistory(EventTable):
    """An event table that never finds a shoe's start near its shuffle: ``shoe_events`` then
    reads the table's whole history (what it read before it read by ranges)."""

    def topic_near(self, topic: str, position: int, width: int) -> list[RawEvent]:
        return []


class Counted(EventTable):
    """An event table that counts the table's whole-history reads and the versions it reads."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.whole: list[UUID] = []
        self.versions_read: list[int] = []

    def by_originator(self, originator_id: UUID, limit: int | None = None) -> list[RawEvent]:
        if originator_id == table_uuid(TABLE):
            self.whole.append(originator_id)
        return super().by_originator(originator_id, limit)

    def versions(self, originator_id: UUID, ranges: Sequence[tuple[int, int]]
                 ) -> list[RawEvent]:
        found = super().versions(originator_id, ranges)
        self.versions_read += [e.version for e in found]
        return found


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Played]:
    """Three shoes at one table, the last in play with two coups (a fresh store per test)."""
    tables = [(TABLE, "francaise", 2)]
    if request.param == "sqlite":
        yield play(f"sqlite:///{tmp_path / 'store.db'}", tables, seed=17, in_play=2)
        return
    postgres_or_skip()
    url = fresh_pg_database(PG_DB)
    yield play(url, tables, seed=17, in_play=2)
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{PG_DB}" WITH (FORCE)')


def _shoes(p: Played) -> list[str]:
    assert p.open_shoe is not None
    return [*p.shoes, p.open_shoe]


def test_each_shoe_reads_its_part_of_the_table_and_finds_what_the_whole_history_gives(
        store: Played) -> None:
    db = Database(store.url)
    try:
        for sid in _shoes(store):
            counted = Counted(db)
            found = shoe_events(counted, sid)
            assert found is not None
            assert found == shoe_events(WholeHistory(db), sid)
            assert counted.whole == []  # never the table's whole history
            assert len(found.coups) == len(store.coups[sid])
            # what it read of the table: its first event and a range about the shoe's size
            # (one statement), never the other shoes' coups before it
            assert {e.version for e in found.table} <= set(counted.versions_read)
            assert len(counted.versions_read) <= 1 + 2 * (len(found.shoe) + 8)
            started = next(e.version for e in found.table if e.topic == TABLE_SHOE_STARTED)
            assert all(v == 1 or v >= started for v in counted.versions_read)
    finally:
        db.close()


def test_a_deleted_table_event_inside_a_shoe_reads_the_whole_history(store: Played) -> None:
    first = store.shoes[0]
    db = Database(store.url)
    try:
        found = shoe_events(EventTable(db), first)
        assert found is not None
        second_coup = next(e for e in found.table if e.topic == TABLE_COUP_STARTED
                           and str(state(e)["coup_id"]) == store.coups[first][1])
    finally:
        db.close()
    _delete(store, second_coup.position)
    db = Database(store.url)
    try:
        counted = Counted(db)
        tampered = shoe_events(counted, first)
        assert counted.whole == [table_uuid(TABLE)]  # the gap seen: the whole history read
        assert tampered == shoe_events(WholeHistory(db), first)
        assert tampered is not None and second_coup.position not in {
            e.position for e in tampered.table}
    finally:
        db.close()
