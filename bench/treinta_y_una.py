"""Treinta y Una on the ledger: whole rounds with four players (open by lot or the last round's
banker, three stakes, the deal by position, each turn after reading the player's own hand,
the showdown) on each store, in rounds per second and commands per second, beside the same
run's no-op floor: a command through the same single writer deciding nothing (a request
stored, no game event) right after each of the round's commands (``bench._support.Floor``), so
the ratio is what the game itself costs. The floor is interleaved, not measured in a phase of
its own after the rounds: on the shared machine the store's speed moved 2x between phases, and
the phase floor made the ratio say 0.37 to 0.74 on SQLite and 0.79 to 1.43 on PostgreSQL (the
game above its own floor) over three runs; interleaved it says 0.46 to 0.49 (SQLite, while its
rate moved from 61 to 82 rounds per second) and 0.64 to 0.65 (PostgreSQL, 32 to 33 rounds per
second) over three runs. The rounds' time holds each turn's read of the player's own hand
(a query, not a command), so the ratio is below Cuarenta's, which times the plays alone.

``run()`` returns rows of (name, value); ``python -m bench.treinta_y_una`` prints them.
"""

from __future__ import annotations

import os
import time

from bench._support import Floor, Row, funded_ledger, on_each_store
from bench._support import player as _player

KEY = bytes(range(32))
PLAYERS = ["ana", "bea", "carl", "dani"]
ROUNDS = 60
PG_DB = f"sabot_bench_tyu_{os.getpid()}"


def rounds(url: str, store: str, n: int = ROUNDS) -> list[Row]:
    table = ("tyu", "clasica", {"max_stake": "100000"}, "treinta-y-una")
    ledger, rid = funded_ledger(url, KEY, table, PLAYERS)
    try:
        floor = Floor(ledger, rid)  # one no-op after each command: the floor at its moment
        t0 = time.perf_counter()
        for _ in range(n):
            r = ledger.tyu_open_round(rid(), "tyu", ",".join(PLAYERS), 100_000)
            floor.after()
            for p in PLAYERS:
                if p != r.banker:
                    r = ledger.tyu_place_stake(rid(), r.round_id, p, 1_000, actor=_player(p))
                    floor.after()
            r = ledger.tyu_deal(rid(), r.round_id)
            floor.after()
            while r.phase == "playing":
                who = r.whose_turn
                hand = ledger.tyu_my_hand(r.round_id, who, _player(who))
                if (hand.total or 0) < (25 if who == r.banker else 21):
                    r = ledger.tyu_carta(rid(), r.round_id, who, actor=_player(who))
                else:
                    r = ledger.tyu_me_planto(rid(), r.round_id, who, actor=_player(who))
                floor.after()
            ledger.tyu_settle(rid(), r.round_id)
            floor.after()
        elapsed = time.perf_counter() - t0 - floor.seconds
    finally:
        ledger.close()
    prefix = f"treinta_y_una.{store}.rounds_4_players"
    commands = floor.commands
    per_round = commands / n
    floor_rounds = floor.rate / per_round
    return [
        (f"{prefix}.rounds", float(n)),
        (f"{prefix}.commands_per_round", per_round),
        (f"{prefix}.rounds_per_s", n / elapsed),
        (f"{prefix}.commands_per_s", commands / elapsed),
        (f"{prefix}.noop_floor.rounds_per_s", floor_rounds),
        (f"{prefix}.noop_floor.commands_per_s", floor.rate),
        (f"{prefix}.ratio_to_floor", (n / elapsed) / floor_rounds),
    ]


def run() -> list[Row]:
    return on_each_store("rounds", PG_DB, rounds)


if __name__ == "__main__":
    for name, value in run():
        print(f"{name:60s} {value:12.2f}")
