"""Re-running a stored shoe's commands with its seed gives identical events."""

from __future__ import annotations

import dataclasses
import random

from services.bootstrap import LEDGER_GAMES
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig
from services.ledger.replay import event_log, replay, stored_commands

from .play import KEY, Croupier


def test_replay_of_stored_commands_gives_identical_events(store_url: str, tmp_path: object
                                                          ) -> None:
    # real inputs: wall clock, uuid4 ids, seeds from secrets
    source = Ledger(LedgerConfig(store_url=f"sqlite:///{tmp_path}/source.db", seal_key=KEY),
                    games=LEDGER_GAMES)
    croupier = Croupier(source, "t1", ["ana", "bruno", "carla"], random.Random(3))
    croupier.setup("italiana")
    croupier.play_shoe()
    shoe = source.open_shoe("second-shoe", "t1")  # one still open, its seed still sealed
    source.cut("second-cut", shoe.shoe_id, 40, "bruno")
    coup = source.open_coup("second-coup", "t1")
    # by a player who did not play the shoe: a player's prisoner carried from the shoe's last
    # coup (its cards come from real seeds) could refuse a stake on the other chance
    source.open_account("dora-account", "dora")
    source.deposit("dora-deposit", "dora", 10_000)
    source.place_stake("second-stake", coup.coup_id, "dora", "rouge", 500)
    commands = list(stored_commands(source))
    assert len(commands) > 100
    assert {c.command for c in commands} >= {"open_table", "open_shoe", "cut", "place_stake",
                                              "deal", "settle", "close_shoe", "deposit"}

    target = replay(source, store_url)
    assert event_log(target) == event_log(source)
    assert target.balances() == source.balances()
    # the replayed ledger carries on like the source (the deal happens now, at two wall-clock
    # times: those two times are the only fields that may differ)
    dealt = [
        dataclasses.replace(led.deal("second-deal", coup.coup_id), betting_close_time=None,
                            deal_time=None)
        for led in (target, source)
    ]
    assert dealt[0] == dealt[1]
    source.close()
    target.close()
