"""The read models' actors (``rm_coup_step.actor``, ``rm_statement.actor``): every row gets the
actor of its command, whatever batch boundary or restart falls between an event and its
command's ``Request.Recorded``."""

from __future__ import annotations

import json

import pytest

from services.bootstrap import READ_GAMES
from services.projections import default_views
from services.projections.projector import Projector

from .conftest import play, sqlite_env


@pytest.mark.parametrize("batch", [1, 2, 7, 97, 5000])
def test_every_row_names_its_actor_whatever_the_batches(tmp_path: object, batch: int) -> None:
    game = play(sqlite_env(str(tmp_path)))
    app = game.ledger.app
    reference = Projector(app, default_views(games=READ_GAMES))
    reference.rebuild()
    expected = reference.digests()
    with reference.store.transaction() as tx:
        for v in reference.views:
            v.drop(tx)
            tx.execute("DELETE FROM {s}rm_tracking WHERE view = ?", (v.name,))
    # a new process every few batches (the rows left waiting for their request are forgotten)
    while Projector(app, default_views(games=READ_GAMES)).catch_up(batch_size=batch,
                                                                   max_events=3 * batch):
        pass
    final = Projector(app, default_views(games=READ_GAMES))
    final.catch_up(batch_size=batch)
    assert final.digests() == expected
    with final.store.read() as tx:
        for table, names in (("rm_coup_step", "rm_recall_actor"),
                             ("rm_statement", "rm_bankroll_actor")):
            actors = [r[0] for r in tx.query(
                f"SELECT n.actor FROM {{s}}{table} t LEFT JOIN {{s}}{names} n "
                "ON n.actor_id = t.actor")]
            assert actors and None not in actors, table
            assert {json.loads(a)["principal"] for a in actors} == {"system"}, table
    game.close()

