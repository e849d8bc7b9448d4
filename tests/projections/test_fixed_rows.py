"""The rows of every read model rebuilt from a realistic log equal those the code gave before its
views were split by meaning (issue 21 item 6) and made faster (issue 25): the digests below were
computed from ``play``'s log (four shoes on three tables, prisoners, a refait at 31, a table
closed with its prisoners, cash at the cage) by the code of commit 1374f68, on SQLite and
PostgreSQL alike. A change that means to change a read model's rows changes its view's
``version`` and these digests with it; a change that does not must leave them as they are."""

from __future__ import annotations

import pytest

from services.bootstrap import READ_GAMES
from services.projections import default_views
from services.projections.projector import Projector

from .game import Game

EVENTS = 3138
DIGESTS = {
    "bankrolls": "8a926e563e2f348c6e4a930e3e9e8556f4ebbe5f6c233f6253c5ed339d24c441",
    "shoes": "327f341e79d8185a974eab57c436ecd044af4d00065d0d6ead28b475ab7105aa",
    "recall": "a8cb19e7a6c2975efd9c53d19f19fcde70f92f14dc2384b3e6978178ae6e279e",
    "reconciliation": "b7159b1ebd4cb6e8b5bde16b6a958a53547b2b4138f0fa4d3a5ea062629b9ef6",
    "treinta_y_una_rounds": "fa4f6d163a9ed6bca5f1949de615465c37855aed890e872af47acd5659a09c99",
    "cuarenta_matches": "1924b269b0854b881b2caaecdba0e35c82e25ae7c993ee1cee1699e09bfafd66",
}


@pytest.mark.parametrize("batch_size", [5000, 53, 7])
def test_a_rebuild_gives_the_rows_of_before(game: Game, batch_size: int) -> None:
    """Whole batches, batches that cut coups and shoes in the middle (every lookup of what an
    earlier batch wrote), a few events at a time."""
    p = Projector(game.ledger.app, default_views(games=READ_GAMES))
    assert p.rebuild(batch_size) == EVENTS
    assert p.digests() == DIGESTS


def test_following_in_steps_gives_the_rows_of_before(game: Game) -> None:
    """Caught up a few events at a time after a rebuild cut short: the same rows."""
    p = Projector(game.ledger.app, default_views(games=READ_GAMES))
    p.rebuild(batch_size=700)
    with p.store.transaction() as tx:
        for v in p.views:
            tx.script(v.empty_sql())
            tx.execute("UPDATE {s}rm_tracking SET position = 0, event_time = '' WHERE view = ?",
                       (v.name,))
    p.reload()
    assert p.catch_up(batch_size=389, max_events=1500) == 1500
    again = Projector(game.ledger.app, default_views(games=READ_GAMES))
    assert again.positions == {v.name: 1500 for v in p.views}
    assert again.catch_up(batch_size=211) == EVENTS - 1500
    assert again.digests() == DIGESTS
