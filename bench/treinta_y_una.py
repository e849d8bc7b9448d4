"""Treinta y Una on the ledger: whole rounds with four players (open by lot or the last round's
banker, three stakes, the deal by position, each turn after reading the player's own hand,
the showdown) on each store, in rounds per second and commands per second, beside the same
run's no-op floor: as many commands through the same single writer, each deciding nothing
(a request stored, no game event), so the ratio is what the game itself costs.

``run()`` returns rows of (name, value); ``python -m bench.treinta_y_una`` prints them.
"""

from __future__ import annotations

import os
import time

from bench._support import RequestIds, Row, noop_floor, on_each_store
from bench._support import player as _player
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig

KEY = bytes(range(32))
PLAYERS = ["ana", "bea", "carl", "dani"]
ROUNDS = 60
PG_DB = f"sabot_bench_tyu_{os.getpid()}"


def rounds(url: str, store: str, n: int = ROUNDS) -> list[Row]:
    ledger = Ledger(LedgerConfig(store_url=url, seal_key=KEY))
    rid = RequestIds()
    try:
        ledger.open_table(rid(), "tyu", "clasica", {"max_stake": "100000"}, "treinta-y-una")
        for p in PLAYERS:
            ledger.open_account(rid(), p)
            ledger.deposit(rid(), p, 10**10)
        commands = 0
        t0 = time.perf_counter()
        for _ in range(n):
            r = ledger.tyu_open_round(rid(), "tyu", ",".join(PLAYERS), 100_000)
            commands += 1
            for p in PLAYERS:
                if p != r.banker:
                    r = ledger.tyu_place_stake(rid(), r.round_id, p, 1_000, actor=_player(p))
                    commands += 1
            r = ledger.tyu_deal(rid(), r.round_id)
            commands += 1
            while r.phase == "playing":
                who = r.whose_turn
                hand = ledger.tyu_my_hand(r.round_id, who, _player(who))
                if (hand.total or 0) < (25 if who == r.banker else 21):
                    r = ledger.tyu_carta(rid(), r.round_id, who, actor=_player(who))
                else:
                    r = ledger.tyu_me_planto(rid(), r.round_id, who, actor=_player(who))
                commands += 1
            ledger.tyu_settle(rid(), r.round_id)
            commands += 1
        elapsed = time.perf_counter() - t0
        floor = noop_floor(ledger, commands, rid)
    finally:
        ledger.close()
    prefix = f"treinta_y_una.{store}.rounds_4_players"
    per_round = commands / n
    floor_rounds = commands / floor / per_round
    return [
        (f"{prefix}.rounds", float(n)),
        (f"{prefix}.commands_per_round", per_round),
        (f"{prefix}.rounds_per_s", n / elapsed),
        (f"{prefix}.commands_per_s", commands / elapsed),
        (f"{prefix}.noop_floor.rounds_per_s", floor_rounds),
        (f"{prefix}.noop_floor.commands_per_s", commands / floor),
        (f"{prefix}.ratio_to_floor", (n / elapsed) / floor_rounds),
    ]


def run() -> list[Row]:
    return on_each_store("rounds", PG_DB, rounds)


if __name__ == "__main__":
    for name, value in run():
        print(f"{name:60s} {value:12.2f}")
