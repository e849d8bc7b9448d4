"""Rebuild as a bulk load: secondary indexes built after the last batch, plain inserts by
``COPY`` on PostgreSQL, the garbage collector paused per batch; rows and digests unchanged."""

from __future__ import annotations

import gc
import re
from collections.abc import Sequence
from typing import Any

import pytest

from services.projections.projector import Projector
from services.projections.store import ReadStore, Tx
from services.projections.view import Envelope, Table, View

from .fakeapp import Till, Tills, TillView

LOG = Table(
    "rm_till_log",
    (("till_id", "TEXT"), ("seq", "BIGINT"), ("amount", "BIGINT"), ("note", "TEXT")),
    ("till_id", "seq"),
    indexes=(("amount",), ("note", "amount")),
)
SEEN = Table(
    "rm_till_seen",
    (("till_id", "TEXT"), ("moves", "BIGINT")),
    ("till_id",),
    indexes=(("moves",),),
    indexes_in_apply=True,
)
NOTES = ("plain", "tab\there", "new\nline", "back\\slash", "quote'\"", "\\N", "", "é€😀", None)


def _indexes(tx: Tx, store: ReadStore, pattern: str = r"rm_till_\w+_i\d+") -> set[str]:
    if store.dialect == "sqlite":
        rows = tx.query("SELECT name FROM sqlite_master WHERE type = 'index'")
    else:
        rows = tx.query("SELECT indexname FROM pg_indexes WHERE schemaname = ?",
                        (store.schema or "public",))
    # The secondary indexes (``<table>_i<n>``), not the primary keys' own.
    return {str(r[0]) for r in rows
            if re.fullmatch(pattern, str(r[0]))}


class LogView(View):
    """Every movement as a row (plain INSERT: COPY on PostgreSQL) with awkward text; records
    which secondary indexes exist while it applies a batch."""

    name = "till_log"
    tables = (LOG, SEEN)
    topics = frozenset({Till.Moved.TOPIC})

    def __init__(self, crash_at: int | None = None) -> None:
        self.crash_at = crash_at
        self.indexes_seen: list[set[str]] = []
        self.gc_seen: list[bool] = []
        self.store: ReadStore | None = None

    def apply(self, tx: Tx, batch: Sequence[Envelope]) -> None:
        if self.store is not None:
            self.indexes_seen.append(_indexes(tx, self.store))
        self.gc_seen.append(gc.isenabled())
        if self.crash_at is not None and batch[-1].position >= self.crash_at:
            raise RuntimeError(f"crash at {self.crash_at}")
        moves = {str(r[0]): int(r[1]) for r in tx.query_in(
            "SELECT till_id, moves FROM {s}rm_till_seen WHERE till_id",
            {e.oid for e in batch})}
        rows: list[tuple[Any, ...]] = []
        for e in batch:
            n = moves[e.oid] = moves.get(e.oid, 0) + 1
            rows.append((e.oid, n, e.event.amount * 10**12, NOTES[e.position % len(NOTES)]))
        tx.executemany(
            "INSERT INTO {s}rm_till_log (till_id, seq, amount, note) VALUES (?, ?, ?, ?)", rows
        )
        tx.executemany(
            "INSERT INTO {s}rm_till_seen (till_id, moves) VALUES (?, ?) "
            "ON CONFLICT (till_id) DO UPDATE SET moves = excluded.moves",
            list(moves.items()),
        )


def _play(app: Tills, n: int) -> list[Till]:
    tills = [Till(name=f"till-{i}") for i in range(3)]
    app.save(*tills)
    for i in range(n):
        t = tills[i % 3]
        t.move(i * 37 - 400)
        app.save(t)
    return tills


def _log(p: Projector) -> list[tuple[Any, ...]]:
    with p.store.read() as tx:
        return sorted(tx.query("SELECT till_id, seq, amount, note FROM {s}rm_till_log"),
                      key=lambda r: (r[0], r[1]))


LATE = {"rm_till_log_i0", "rm_till_log_i1"}
KEPT = {"rm_till_seen_i0"}


def test_copy_writes_every_value_as_given(store_env: dict[str, str]) -> None:
    """Text with tabs, newlines, backslashes, quotes, ``\\N``, unicode; NULL; large and
    negative integers: read back exactly (PostgreSQL writes them with COPY)."""
    app = Tills(env=store_env)
    tills = _play(app, 30)
    p = Projector(app, [LogView()])
    p.catch_up(batch_size=7)
    rows = _log(p)
    assert len(rows) == 30
    by_till: dict[str, list[tuple[Any, ...]]] = {}
    for r in rows:
        by_till.setdefault(r[0], []).append(r)
    for i, t in enumerate(tills):
        mine = by_till[str(t.id)]
        assert [r[1] for r in mine] == list(range(1, 11))
        assert [int(r[2]) for r in mine] == [(k * 37 - 400) * 10**12 for k in range(i, 30, 3)]
    assert {r[3] for r in rows} == set(NOTES)


def test_rebuild_builds_late_indexes_after_the_last_batch(store_env: dict[str, str]) -> None:
    app = Tills(env=store_env)
    _play(app, 40)
    view = LogView()
    p = Projector(app, [view, TillView()])
    view.store = p.store
    p.catch_up(batch_size=9)
    assert all(s == LATE | KEPT for s in view.indexes_seen)  # catch-up keeps every index
    before = p.digests()
    rows = _log(p)
    view.indexes_seen.clear()
    assert p.rebuild(batch_size=9) == 43
    assert len(view.indexes_seen) == 5
    assert all(s == KEPT for s in view.indexes_seen)  # only the ones apply uses
    with p.store.read() as tx:
        assert _indexes(tx, p.store) == LATE | KEPT
    assert p.digests() == before and _log(p) == rows
    view.indexes_seen.clear()
    assert p.rebuild(batch_size=50, drop=True) == 43
    assert view.indexes_seen == [KEPT]
    with p.store.read() as tx:
        assert _indexes(tx, p.store) == LATE | KEPT
    assert p.digests() == before


def test_a_rebuild_cut_short_leaves_indexes_and_positions_sound(
    store_env: dict[str, str],
) -> None:
    app = Tills(env=store_env)
    _play(app, 40)
    clean = Projector(app, [LogView()])
    clean.catch_up()
    expected = clean.digests()
    crashing = Projector(app, [LogView(crash_at=25)])
    with pytest.raises(RuntimeError, match="crash at 25"):
        crashing.rebuild(batch_size=10)
    with crashing.store.read() as tx:
        assert _indexes(tx, crashing.store) == LATE | KEPT  # built even so
    assert crashing.lag()[0].position == 20  # the batches before the crash, exactly
    again = Projector(app, [LogView()])
    assert again.positions == {"till_log": 20}
    assert again.catch_up() == 23
    assert again.digests() == expected


@pytest.mark.parametrize("enabled", [True, False])
def test_rebuild_pauses_the_collector_per_batch_and_puts_it_back(
    store_env: dict[str, str], enabled: bool
) -> None:
    app = Tills(env=store_env)
    _play(app, 20)
    view = LogView()
    p = Projector(app, [view])
    p.catch_up()
    assert view.gc_seen == [True]
    was = gc.isenabled()
    try:
        if not enabled:
            gc.disable()
        view.gc_seen.clear()
        p.rebuild(batch_size=6)
        assert view.gc_seen == [False] * 4
        assert gc.isenabled() is enabled
        with pytest.raises(RuntimeError):
            Projector(app, [LogView(crash_at=10)]).rebuild(batch_size=6)
        assert gc.isenabled() is enabled
    finally:
        if was:
            gc.enable()


def test_script_apart_runs_every_group_and_raises_a_failed_one(
    store_env: dict[str, str]
) -> None:
    """The late indexes' runner: every group's statements done (on PostgreSQL several groups
    at once, each in its own transaction, on the pool's connections); a group that fails
    raises once the others are done, which are kept (PostgreSQL) or rolled back with it (SQLite:
    one transaction)."""
    app = Tills(env=store_env)
    store = ReadStore.of(app)
    try:
        if store.dialect == "postgres":
            assert store._spare_connections() >= 2  # the groups do go side by side
        groups = [[f"CREATE TABLE IF NOT EXISTS {{s}}rm_apart_{i} (k BIGINT)",
                   f"CREATE INDEX IF NOT EXISTS rm_apart_{i}_i0 ON {{s}}rm_apart_{i} (k)"]
                  for i in range(7)]
        store.script_apart(groups)
        assert all(store.table_exists(f"rm_apart_{i}") for i in range(7))
        with store.read() as tx:
            assert _indexes(tx, store, r"rm_apart_\d+_i0") == {f"rm_apart_{i}_i0" for i in range(7)}
        broken = [[f"CREATE TABLE {{s}}rm_apart_new_{i} (k BIGINT)"] for i in range(3)]
        with pytest.raises(Exception, match="rm_apart_missing"):
            store.script_apart([*broken, ["CREATE INDEX x ON {s}rm_apart_missing (k)"]])
        kept = {store.table_exists(f"rm_apart_new_{i}") for i in range(3)}
        assert kept == ({True} if store.dialect == "postgres" else {False})
    finally:
        app.close()

