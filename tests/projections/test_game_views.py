"""The games' own read models (``ReadGame.views``, handed in) are among the read models
(``default_views``), and the PostgreSQL projection runner keeps them like the others: followed
live while a Treinta y Una round and a Cuarenta match are played, they equal a rebuild."""

from __future__ import annotations

import pytest

from services.bootstrap import READ_GAMES, log_application
from services.projections import default_views, game_views
from services.projections.games import UnitsView
from services.projections.projector import Projector


def test_every_game_contributes_its_views() -> None:
    names = [v.name for v in default_views(games=READ_GAMES)]
    assert names[:4] == ["bankrolls", "shoes", "recall", "reconciliation"]
    contributed = {v.game: v.name for v in game_views(READ_GAMES) if isinstance(v, UnitsView)}
    assert contributed == {"treinta-y-una": "treinta_y_una_rounds",
                           "cuarenta": "cuarenta_matches"}
    assert set(names) >= set(contributed.values())
    assert [g.name for g in READ_GAMES if g.views is not None] == [
        "treinta-y-una", "cuarenta"]


@pytest.mark.postgres
def test_pg_runner_follows_the_games(postgres_store_url: str) -> None:
    from services.ledger.config import store_env
    from services.projections.runner import make_runner
    from tests.cuarenta.support import Game as Cuarenta
    from tests.cuarenta.support import Referee, fund
    from tests.treinta_y_una.support import Croupier, table_ledger

    with table_ledger(postgres_store_url) as (ledger, tyu):
        ledger.open_table("table-mesa", "mesa-1", None, None, game="cuarenta")
        fund(ledger, ["eva", "fede"])
        cuarenta = Cuarenta(ledger)
        env = store_env(postgres_store_url)
        with make_runner(log_application(), default_views(games=READ_GAMES), env,
                         batch_size=16) as runner:
            rounds = [Croupier(ledger, tyu).play()]
            m = cuarenta.open_match("o", "mesa-1", ["eva", "fede"], stake=100).match
            Referee(cuarenta, m).finish()
            runner.wait(ledger.app.recorder.max_notification_id(), timeout=30)
        followed = Projector(ledger.app, default_views(games=READ_GAMES))
        assert {lag.events_behind for lag in followed.lag()} == {0}
        live = followed.digests()
        followed.rebuild()
        assert followed.digests() == live
        steps = {v.name: v.steps_of(followed.store, rounds[0].round_id)
                 for v in followed.views if isinstance(v, UnitsView)}
        assert steps["treinta_y_una_rounds"] and not steps["cuarenta_matches"]
