"""Close the application mid-shoe, open a new one on the same store: the shoe continues with the
same cards, open stakes and prison intact; re-running a shoe's commands gives identical events."""

from __future__ import annotations

import random

from services.bootstrap import LEDGER_GAMES
from services.ledger.api import Ledger

from .play import Croupier, FixedInputs

PLAYERS = ["ana", "bruno", "carla"]


Event = tuple[str, str, int, dict[str, object]]


def events_of(ledger: Ledger) -> list[Event]:
    out: list[Event] = []
    position = 0
    while batch := ledger.read_events(position, 1000):
        out += [(e.topic, e.originator_id, e.version, e.state) for e in batch]
        position = batch[-1].position
    return out


def play(url: str, restart_after: int | None) -> tuple[list[object], list[Event]]:
    """A shoe of the italiana preset (prisons); optionally restart after some coups."""
    inputs = FixedInputs(seed=bytes([6]) * 32)  # refaits at 31 in coups 5, 15 and 16
    ledger = Ledger(inputs.config(url), games=LEDGER_GAMES)
    croupier = Croupier(ledger, "t1", PLAYERS, random.Random(7))
    croupier.setup("italiana")
    shoe = ledger.open_shoe(croupier.rid(), "t1")
    ledger.cut(croupier.rid(), shoe.shoe_id, 200, "ana")
    played = 0
    while True:
        if restart_after is not None and played == restart_after:
            before = (ledger.get_table("t1"), ledger.get_shoe(shoe.shoe_id))
            assert any(s.status != "free" for s in before[0].layout)  # a prisoner
            ledger.close()
            ledger = Ledger(inputs.config(url),
                            games=LEDGER_GAMES)  # a new application on the same store
            croupier.ledger = ledger
            assert (ledger.get_table("t1"), ledger.get_shoe(shoe.shoe_id)) == before
        if croupier.play_coup() is None:
            break
        played += 1
    ledger.close_shoe(croupier.rid(), shoe.shoe_id)
    cards: list[object] = [
        (c.coup_id, [(x.code, x.position) for x in c.cards], c.result) for c in croupier.coups
    ]
    events = events_of(ledger)
    ledger.close()
    return cards, events


def test_restart_mid_shoe_continues_the_shoe(store_url: str, tmp_path: object) -> None:
    straight_cards, straight_events = play(f"sqlite:///{tmp_path}/straight.db", None)
    restarted_cards, restarted_events = play(store_url, 5)
    assert restarted_cards == straight_cards
    assert restarted_events == straight_events
    prisons = [e for e in straight_events if e[0].endswith("StakeImprisoned")]
    assert prisons, "the shoe should have had a prison to carry over the restart"


def test_same_seed_and_commands_give_identical_events(tmp_path: object) -> None:
    first = play(f"sqlite:///{tmp_path}/one.db", None)
    second = play(f"sqlite:///{tmp_path}/two.db", None)
    assert first == second
    topics = {e[0].rsplit(".", 1)[-1] for e in first[1]}
    assert {"Shuffled", "Cut", "CardDealt", "Resolved", "MoneyMoved", "Closed"} <= topics
