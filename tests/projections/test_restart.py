"""Stopping the projections anywhere in a real ledger's stream and starting again: nothing is
counted twice or skipped (the digests equal a straight rebuild); the PostgreSQL runner agrees."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.bootstrap import READ_GAMES, log_application
from services.projections import default_views
from services.projections.projector import Projector
from services.projections.store import Tx
from services.projections.view import Envelope, View

from .conftest import play, sqlite_env
from .game import Game


class Crash(Exception):
    pass


def _crashing(view: View, at: int) -> View:
    """The view, failing (after writing part of its batch) when it meets position ``at``."""

    class Crashing(type(view)):  # type: ignore[misc]
        def apply(self, tx: Tx, batch: Sequence[Envelope]) -> None:
            ok = [e for e in batch if e.position < at]
            super().apply(tx, ok)
            if len(ok) < len(batch):
                raise Crash(batch[len(ok)].position)

    return Crashing()


def test_crash_in_every_view_then_restart(game: Game) -> None:
    app = game.ledger.app
    reference = Projector(app, default_views(games=READ_GAMES))
    reference.rebuild()
    expected = reference.digests()
    head = reference.head()
    # Fresh views in their own run: drop them, then crash one view at a time mid-stream.
    fresh = Projector(app, default_views(games=READ_GAMES))
    fresh.rebuild()
    with fresh.store.transaction() as tx:
        for v in fresh.views:
            v.drop(tx)
            tx.execute("DELETE FROM {s}rm_tracking WHERE view = ?", (v.name,))
    for i, at in enumerate((head // 5, head // 3, head // 2, 4 * head // 5)):
        views = default_views(games=READ_GAMES)
        views[i % len(views)] = _crashing(views[i % len(views)], at)
        p = Projector(app, views)
        with pytest.raises(Crash) as crash:
            p.catch_up(batch_size=97)
        failed_at = crash.value.args[0]
        assert failed_at >= at
        p.reload()  # what was committed: everything before the failed batch, nothing of it
        assert p.positions[views[i % len(views)].name] < failed_at
    final = Projector(app, default_views(games=READ_GAMES))
    final.catch_up(batch_size=211)
    assert final.digests() == expected


@settings(max_examples=5, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(stops=st.lists(st.integers(1, 1500), min_size=1, max_size=3), batch=st.integers(5, 400))
def test_any_stops_give_the_same_digests(
    played_sqlite: tuple[Game, dict[str, str]], stops: list[int], batch: int
) -> None:
    game, expected = played_sqlite
    app = game.ledger.app
    p = Projector(app, default_views(games=READ_GAMES))
    with p.store.transaction() as tx:
        for v in p.views:
            v.drop(tx)
            tx.execute("DELETE FROM {s}rm_tracking WHERE view = ?", (v.name,))
    for n in stops:
        Projector(app, default_views(games=READ_GAMES)).catch_up(batch_size=batch, max_events=n)
    last = Projector(app, default_views(games=READ_GAMES))
    last.catch_up(batch_size=batch)
    assert last.digests() == expected


@pytest.fixture(scope="module")
def played_sqlite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Game, dict[str, str]]:
    g = play(sqlite_env(str(tmp_path_factory.mktemp("stops"))))
    p = Projector(g.ledger.app, default_views(games=READ_GAMES))
    p.rebuild()
    return g, p.digests()


@pytest.mark.postgres
def test_pg_runner_follows_a_live_ledger(pg_env: dict[str, str]) -> None:
    """The eventsourcing ProjectionRunner keeps the views while shoes are played; its views
    equal a poller's rebuild."""
    from services.projections.runner import make_runner

    from .conftest import _url

    url, extra = _url(pg_env)
    g = Game(url, seed=11, extra_env=extra)
    try:
        g.open_table("t-fr", "francaise")
        g.open_player("ana", 1_000_000)
        g.open_player("bruno", 1_000_000)
        with make_runner(log_application(), default_views(games=READ_GAMES), pg_env,
                         batch_size=64) as runner:
            g.play_shoe("t-fr", max_coups=15)
            runner.wait(g.ledger.app.recorder.max_notification_id(), timeout=20)
        followed = Projector(g.ledger.app, default_views(games=READ_GAMES))
        assert {lag.events_behind for lag in followed.lag()} == {0}
        live = followed.digests()
        followed.rebuild()
        assert followed.digests() == live
    finally:
        g.close()


_FOLLOWER = """
import sys, time
from services.projections import default_views
from services.projections.log import open_log
from services.projections.projector import Projector
from services.bootstrap import READ_GAMES, TRANSCODINGS
url, schema = sys.argv[1], sys.argv[2]
p = Projector(open_log(url, {"POSTGRES_SCHEMA": schema} if schema else {},
                       transcodings=TRANSCODINGS), default_views(games=READ_GAMES))
while p.step(batch_size=37):
    time.sleep(0.002)
"""


def test_killed_process_restarts_without_double_counting(game: Game) -> None:
    """A projector process killed (SIGKILL) in the middle of the stream, then started again,
    ends with the same read models as a straight rebuild."""
    import subprocess
    import sys
    import time

    app = game.ledger.app
    reference = Projector(app, default_views(games=READ_GAMES))
    reference.rebuild()
    expected = reference.digests()
    head = reference.head()
    with reference.store.transaction() as tx:
        for v in reference.views:
            v.drop(tx)
            tx.execute("DELETE FROM {s}rm_tracking WHERE view = ?", (v.name,))
    schema = game.ledger.config.extra_env.get("POSTGRES_SCHEMA", "")
    argv = [sys.executable, "-c", _FOLLOWER, game.ledger.config.store_url, schema]
    probe = Projector(app, default_views(games=READ_GAMES))
    for _ in range(2):  # kill it twice, somewhere in the middle
        proc = subprocess.Popen(argv)
        try:
            deadline = time.monotonic() + 60
            start = min(lag.position for lag in probe.lag())
            while time.monotonic() < deadline and proc.poll() is None:
                if min(lag.position for lag in probe.lag()) > start + 300:
                    break
                time.sleep(0.01)
        finally:
            proc.kill()
            proc.wait()
        assert min(lag.position for lag in probe.lag()) < head  # stopped mid-stream
    final = Projector(app, default_views(games=READ_GAMES))
    final.catch_up()
    assert final.digests() == expected
