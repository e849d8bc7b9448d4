"""Issue 21's acceptance for the notary: a site that plays only Treinta y Una and Cuarenta (no
Trente et Quarante coup at all) gets a signed checkpoint after every round and every match, from
the notary a server runs (``server.start`` with the notary ``sabot serve`` gives it:
``services.bootstrap.notary`` from the settings' checkpoint key), on SQLite and PostgreSQL.

Each checkpoint names its round (``coup``), is signed by the key, and ends exactly at the last
event its round's aggregate stored with its end: a round's ``Settled`` (or ``Cancelled``), a
match's pot movements after its ``Won``."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from services import bootstrap
from services.api import server
from services.api.config import Config
from services.bootstrap import SERVED
from services.ledger.api import Ledger
from services.regulator.checkpoint import public_key_bytes, verify_checkpoint
from services.regulator.notary import Notary
from services.regulator.source import Database, EventTable
from services.settings import Settings
from tests.cuarenta.support import Game, Referee, fund
from tests.treinta_y_una.support import CROUPIER, Croupier, fund_players, game, open_table

from .conftest import PG_ADMIN, fresh_pg_database, postgres_or_skip

SEAL = "5a" * 32
CHECKPOINT = bytes([21]) * 32
ROUNDS = 3  # settled Treinta y Una rounds (and one cancelled)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
        return
    postgres_or_skip()
    name = f"sabot_test_rounds_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    yield fresh_pg_database(name)
    import psycopg

    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _play(ledger: Ledger) -> list[str]:
    """Treinta y Una rounds (settled, and one cancelled) and two Cuarenta matches (one played
    out, one forfeited): the ids of the rounds and matches, in the order they ended."""
    ended: list[str] = []
    open_table(ledger, "tyu-1", commission="5%")
    fund_players(ledger)
    croupier = Croupier(ledger, game(ledger))
    for _ in range(ROUNDS):
        view = croupier.play()
        assert view.phase == "settled"
        ended.append(view.round_id)
    opened = croupier.stakes(croupier.open())
    view = croupier.tyu.cancel_round(croupier.rid(), opened.round_id, actor=CROUPIER)
    ended.append(view.round_id)
    ledger.open_table("ct", "mesa", "seed", {"commission_rate": "5%"}, game="cuarenta")
    fund(ledger, ["eva", "fede"], 10_000)
    cuarenta = Game(ledger)
    match = cuarenta.open_match("o1", "mesa", "eva fede", 500).match
    assert Referee(cuarenta, match).finish().phase == "over"
    ended.append(match.match_id)
    quitter = cuarenta.open_match("o2", "mesa", "eva fede", 300).match
    assert cuarenta.forfeit("f2", quitter.match_id, 0, "abandoned").match.phase == "over"
    ended.append(quitter.match_id)
    return ended


def test_every_round_and_match_ends_under_a_signed_checkpoint(store_url: str) -> None:
    settings = Settings.load(env={"SABOT_STORE": store_url, "SABOT_SEAL_KEY": SEAL,
                                  "SABOT_CHECKPOINT_KEY": CHECKPOINT.hex()}, env_file=None)
    ledger = bootstrap.open_ledger(settings)
    notary = bootstrap.notary(settings)
    assert notary is not None
    running = server.start(Config(listen="127.0.0.1:0", store=store_url,
                                  seal_key=bytes.fromhex(SEAL), projections=False),
                           ledger, notary=notary, games=SERVED)
    try:
        ended = _play(ledger)
        assert notary.sync_now(timeout=60)
    finally:
        running.stop(grace=1)
        ledger.close()
    db = Database(store_url)
    try:
        events = list(EventTable(db).iterate())
        cps = Notary(db, EventTable(db), None, create=False).checkpoints()
    finally:
        db.close()
    public = public_key_bytes(Ed25519PrivateKey.from_private_bytes(CHECKPOINT).public_key())
    by_round = [c for c in cps if c.coup is not None]
    assert [c.coup for c in by_round] == ended  # one each, in the order they ended
    last_of = {e.originator_id: e.position for e in events}  # the aggregate's last event
    index_of = {e.position: i for i, e in enumerate(events)}
    for cp in by_round:
        verify_checkpoint(cp, public)
        assert cp.coup is not None and cp.position == last_of[cp.coup]
        assert cp.size == index_of[cp.position] + 1
