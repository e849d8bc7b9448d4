"""The poller: exactly once across restarts and concurrent projectors, rebuild digests, lag."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.projections.projector import Projector
from services.projections.store import Tx
from services.projections.view import Envelope

from .fakeapp import Till, Tills, TillView


def _play(app: Tills, moves: Sequence[tuple[int, int]], tills: int = 3) -> list[Till]:
    accounts = [Till(name=f"till-{i}") for i in range(tills)]
    app.save(*accounts)
    for who, amount in moves:
        t = accounts[who % tills]
        t.move(amount)
        app.save(t)
    return accounts


def _balances(projector: Projector) -> dict[str, tuple[int, int]]:
    with projector.store.read() as tx:
        rows = tx.query("SELECT till_id, balance, moves FROM {s}rm_till")
    return {r[0]: (int(r[1]), int(r[2])) for r in rows}


class Crash(Exception):
    pass


class CrashingView(TillView):
    """Fails when it meets a given position, after writing part of its batch."""

    def __init__(self, at: int) -> None:
        self.at = at

    def apply(self, tx: Tx, batch: Sequence[Envelope]) -> None:
        ok = [e for e in batch if e.position < self.at]
        super().apply(tx, ok)
        if len(ok) < len(batch):
            raise Crash(self.at)


def test_catch_up_matches_aggregates(store_env: dict[str, str]) -> None:
    app = Tills(env=store_env)
    tills = _play(app, [(i, i * 7 - 50) for i in range(40)])
    projector = Projector(app, [TillView()])
    assert projector.catch_up(batch_size=7) == 43
    got = _balances(projector)
    for t in tills:
        agg: Till = app.repository.get(t.id)
        assert got[str(t.id)] == (agg.balance, agg.version - 1)
    assert projector.catch_up() == 0
    assert [lag.events_behind for lag in projector.lag()] == [0]


def test_crash_mid_stream_neither_counts_twice_nor_skips(store_env: dict[str, str]) -> None:
    app = Tills(env=store_env)
    tills = _play(app, [(i, i + 1) for i in range(60)])
    crashing = Projector(app, [CrashingView(at=31)])
    with pytest.raises(Crash):
        crashing.catch_up(batch_size=10)
    # Batches up to position 30 committed; the failed one left nothing behind.
    assert crashing.lag()[0].position == 30
    restarted = Projector(app, [TillView()])
    assert restarted.positions == {"tills": 30}
    restarted.catch_up(batch_size=10)
    got = _balances(restarted)
    for t in tills:
        agg: Till = app.repository.get(t.id)
        assert got[str(t.id)] == (agg.balance, agg.version - 1)


def test_two_projectors_at_once_apply_each_event_once(store_env: dict[str, str]) -> None:
    app = Tills(env=store_env)
    tills = _play(app, [(i, 3) for i in range(150)])
    a, b = Projector(app, [TillView()]), Projector(app, [TillView()])
    errors: list[BaseException] = []

    def go(p: Projector) -> None:
        try:
            while p.step(batch_size=5):
                pass
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(p,)) for p in (a, b)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    a.catch_up()
    assert not errors
    got = _balances(a)
    assert sum(v[1] for v in got.values()) == 150
    for t in tills:
        assert got[str(t.id)][0] == app.repository.get(t.id).balance


def test_rebuild_gives_the_same_digest(store_env: dict[str, str]) -> None:
    app = Tills(env=store_env)
    _play(app, [(i, 10 - i) for i in range(30)])
    projector = Projector(app, [TillView()])
    projector.catch_up()
    before = projector.digests()
    assert projector.rebuild(batch_size=4) == 33
    assert projector.digests() == before
    _play(app, [(1, 5)], tills=1)
    projector.catch_up()
    assert projector.digests() != before


def test_lag_counts_events_and_seconds(store_env: dict[str, str]) -> None:
    app = Tills(env=store_env)
    _play(app, [(i, 1) for i in range(10)])
    projector = Projector(app, [TillView()])
    (lag,) = projector.lag()
    assert (lag.position, lag.head, lag.events_behind) == (0, 13, 13)
    assert lag.seconds_behind >= 0
    projector.catch_up(max_events=5)
    (lag,) = projector.lag()
    assert (lag.position, lag.events_behind) == (5, 8)
    projector.catch_up()
    (lag,) = projector.lag()
    assert (lag.events_behind, lag.seconds_behind) == (0, 0.0)


@settings(max_examples=15, deadline=None)
@given(
    moves=st.lists(st.tuples(st.integers(0, 4), st.integers(-1000, 1000)), max_size=40),
    batch=st.integers(1, 9),
    stops=st.lists(st.integers(1, 12), max_size=5),
)
def test_any_stop_pattern_gives_the_same_view(
    tmp_path_factory: pytest.TempPathFactory,
    moves: list[tuple[int, int]],
    batch: int,
    stops: list[int],
) -> None:
    """Stopping after any number of events and restarting equals one straight run."""
    path = tmp_path_factory.mktemp("h") / "s.db"
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(path)}
    app = Tills(env=env)
    tills = _play(app, moves, tills=5)
    for n in stops:
        Projector(app, [TillView()]).catch_up(batch_size=batch, max_events=n)
    final = Projector(app, [TillView()])
    final.catch_up(batch_size=batch)
    got = _balances(final)
    for t in tills:
        agg: Till = app.repository.get(t.id)
        assert got[str(t.id)] == (agg.balance, agg.version - 1)


@pytest.mark.postgres
def test_pg_projection_runner_follows_exactly_once(pg_env: dict[str, str]) -> None:
    """The eventsourcing runner (LISTEN/NOTIFY) and the poller share views and positions."""
    store_env = pg_env
    from services.projections.runner import make_runner

    app = Tills(env=store_env)
    tills = _play(app, [(i, 2) for i in range(30)])
    # A poller applies the first 10 events, then the runner takes over.
    Projector(app, [TillView()]).catch_up(max_events=10)
    with make_runner(Tills, [TillView()], store_env, batch_size=8) as runner:
        runner.wait(app.recorder.max_notification_id(), timeout=10)
        more = _play(app, [(i, 5) for i in range(20)], tills=2)
        runner.wait(app.recorder.max_notification_id(), timeout=10)
    got = _balances(Projector(app, [TillView()]))
    for t in [*tills, *more]:
        agg: Till = app.repository.get(t.id)
        assert got[str(t.id)] == (agg.balance, agg.version - 1)


@pytest.mark.postgres
def test_supervised_runner_restarts_after_a_failure(pg_env: dict[str, str]) -> None:
    """A runner that fails is replaced; the views end complete and counted once."""
    from services.projections.runner import supervise

    class FailsOnce(TillView):
        failed = False

        def apply(self, tx: Tx, batch: Sequence[Envelope]) -> None:
            super().apply(tx, batch)
            if not FailsOnce.failed and any(e.position >= 20 for e in batch):
                FailsOnce.failed = True
                raise Crash("connection lost")

    app = Tills(env=pg_env)
    tills = _play(app, [(i, 4) for i in range(40)])
    stop = threading.Event()
    errors: list[BaseException] = []
    result: list[int] = []
    th = threading.Thread(target=lambda: result.append(
        supervise(Tills, [FailsOnce()], pg_env, stop, batch_size=7, backoff=0.05,
                  on_error=errors.append)))
    th.start()
    try:
        probe = Projector(app, [TillView()])
        for _ in range(200):
            if probe.lag()[0].events_behind == 0:
                break
            stop.wait(0.05)
    finally:
        stop.set()
        th.join(timeout=20)
    assert FailsOnce.failed and result and result[0] >= 1
    assert any(isinstance(e, Crash) for e in errors)
    got = _balances(Projector(app, [TillView()]))
    for t in tills:
        agg: Till = app.repository.get(t.id)
        assert got[str(t.id)] == (agg.balance, agg.version - 1)


def test_a_new_version_of_a_view_is_rebuilt(store_env: dict[str, str]) -> None:
    """A view whose schema digest changed (new tables or a new ``version``) is dropped and
    rebuilt from position 0 on setup; an unchanged one keeps its rows and position."""
    app = Tills(env=store_env)
    tills = _play(app, [(i, i) for i in range(12)])
    Projector(app, [TillView()]).catch_up()

    class TillViewV2(TillView):
        version = 2

    same = Projector(app, [TillView()])
    assert same.positions == {"tills": 15}
    newer = Projector(app, [TillViewV2()])
    assert newer.positions == {"tills": 0}
    newer.catch_up()
    got = _balances(newer)
    for t in tills:
        agg: Till = app.repository.get(t.id)
        assert got[str(t.id)] == (agg.balance, agg.version - 1)
    before = newer.digests()
    assert newer.rebuild(drop=True) == 15 and newer.digests() == before
    assert newer.rebuild() == 15 and newer.digests() == before


def test_sqlite_commit_does_not_wait_for_the_fsync_and_puts_the_setting_back(
    tmp_path: Path,
) -> None:
    """A read-model transaction on SQLite (WAL) commits with synchronous NORMAL, written and
    read back by the application's writer connection, whose FULL setting is restored after."""
    from .conftest import sqlite_env

    app = Tills(env=sqlite_env(str(tmp_path)))
    p = Projector(app, [TillView()])
    _play(app, [(0, 5), (1, 7)])
    datastore: Any = getattr(app.recorder, "datastore")  # noqa: B009 (SQLite recorder)

    def setting() -> int:
        with datastore.get_connection(commit=True) as conn:
            c = conn.cursor()
            c.execute("PRAGMA synchronous")
            return int(c.fetchone()[0])

    assert datastore.pool.is_journal_mode_wal
    before = setting()
    assert before == 2  # FULL: sqlite3's default, the ledger's own writes
    with p.store.transaction() as tx:
        assert tx.query("PRAGMA synchronous") == [(1,)]
    assert setting() == before
    with pytest.raises(Crash), p.store.transaction() as tx:
        raise Crash
    assert setting() == before
    p.catch_up()
    assert sorted(_balances(p).values()) == [(0, 0), (5, 1), (7, 1)]
    app.close()
