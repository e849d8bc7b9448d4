"""The read models' actors (``rm_coup_step.actor``, ``rm_statement.actor``): every row gets the
actor of its command, whatever batch boundary or restart falls between an event and its
command's ``Request.Recorded``."""

from __future__ import annotations

import json

import pytest

from services.projections import default_views
from services.projections.projector import Projector

from .conftest import play, sqlite_env


@pytest.mark.parametrize("batch", [1, 2, 7, 97, 5000])
def test_every_row_names_its_actor_whatever_the_batches(tmp_path: object, batch: int) -> None:
    game = play(sqlite_env(str(tmp_path)))
    app = game.ledger.app
    reference = Projector(app, default_views())
    reference.rebuild()
    expected = reference.digests()
    with reference.store.transaction() as tx:
        for v in reference.views:
            v.drop(tx)
            tx.execute("DELETE FROM {s}rm_tracking WHERE view = ?", (v.name,))
    # a new process every few batches (the rows left waiting for their request are forgotten)
    while Projector(app, default_views()).catch_up(batch_size=batch, max_events=3 * batch):
        pass
    final = Projector(app, default_views())
    final.catch_up(batch_size=batch)
    assert final.digests() == expected
    with final.store.read() as tx:
        for table in ("rm_coup_step", "rm_statement"):
            actors = [r[0] for r in tx.query(f"SELECT actor FROM {{s}}{table}")]
            assert actors and None not in actors, table
            assert {json.loads(a)["principal"] for a in actors} == {"system"}, table
    game.close()


def test_the_short_reading_of_a_request_equals_the_whole_one(tmp_path: object) -> None:
    """The projector reads only a ``Request.Recorded``'s time, actor and effects (its tail):
    the same values as the application's own mapper gives."""
    from services.ledger.actor import Actor
    from services.projections.decode import REQUEST_RECORDED, decoders

    game = play(sqlite_env(str(tmp_path)))
    app = game.ledger.app
    who = Actor("c-0173", "croupier", 'ipv4:127.0.0.1:5000 "x", {"actor": 1}')
    game.ledger.open_account("odd-actor", "zoe", actor=who)  # quotes and braces in the peer
    decode, _ = decoders(app)
    seen = 0
    for n in app.recorder.select_notifications(1, 1_000_000):
        if n.topic != REQUEST_RECORDED:
            continue
        fast = decode(n)
        whole = app.mapper.to_domain_event(n)
        assert fast.event.actor == whole.actor
        assert [list(e) for e in fast.event.effects] == [list(e) for e in whole.effects]
        assert fast.time == whole.timestamp and fast.at == whole.timestamp.isoformat()
        assert fast.oid == str(whole.originator_id)
        seen += 1
    assert seen > 100
    assert fast.event.actor == who.to_dict()
    game.close()
