"""Seeds: committed before the cut, stored sealed, never in clear before the shoe closes."""

from __future__ import annotations

from uuid import UUID, uuid4

import pytest

from domain.errors import FailedPrecondition
from domain.shuffle import commitment
from services.bootstrap import LEDGER_GAMES
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig
from services.ledger.seal import seal, unseal

from .play import KEY


def test_seal_round_trip_and_wrong_key() -> None:
    shoe = uuid4()
    seed = bytes(range(32))
    sealed = seal(KEY, seed, shoe)
    assert seed.hex() not in sealed
    assert unseal(KEY, sealed, shoe) == seed
    with pytest.raises(FailedPrecondition):
        unseal(bytes(32), sealed, shoe)
    with pytest.raises(FailedPrecondition):
        unseal(KEY, sealed, uuid4())  # the shoe id is the associated data


def test_no_seed_in_clear_before_close(sqlite_store_url: str) -> None:
    ledger = Ledger(LedgerConfig(store_url=sqlite_store_url, seal_key=KEY),
                    games=LEDGER_GAMES)  # real secrets
    ledger.open_table("t", "t1", "espanola")
    opened = ledger.open_shoe("s", "t1")
    ledger.cut("c", opened.shoe_id, 77, "croupier")
    coup = ledger.open_coup("o", "t1")
    ledger.deal("d", coup.coup_id)
    ledger.settle("st", coup.coup_id)
    events = ledger.read_events(0, 10_000)
    shoe = ledger.get_shoe(opened.shoe_id)
    assert shoe.seed is None
    closed = ledger.close_shoe("cs", opened.shoe_id)
    assert commitment(bytes.fromhex(closed.seed), UUID(opened.shoe_id)) == opened.commitment
    assert all(closed.seed not in repr(e.state) for e in events)
    later = ledger.read_events(events[-1].position, 10_000)
    assert any(closed.seed in repr(e.state) for e in later)
    # the commitment was stored before the cut
    topics = [e.topic for e in events]
    assert topics.index("sabot.ledger:Shoe.Shuffled") < topics.index("sabot.ledger:Shoe.Cut")
    ledger.close()
    other_key = LedgerConfig(store_url=sqlite_store_url, seal_key=bytes(32))
    stranger = Ledger(other_key,
                      games=LEDGER_GAMES)  # another key still reads the store; it cannot deal
    assert stranger.get_shoe(opened.shoe_id).closed
    stranger.close()
