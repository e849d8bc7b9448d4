"""Cuarenta on the ledger: whole two-player matches (open, each deal, every play after the
player read its own hand, the capture worth most) on each store, in plays per second and
commands per second, beside the same run's no-op floor: a command through the same single
writer deciding nothing (a request stored, no game event) right after each play, so the ratio
is what the game itself costs (the rule book rebuilt once per command from the cached match,
the capture, the events, the hidden cards' commitments and salts). The floor is measured
interleaved, one no-op per play, not in a phase of its own after the matches: on a shared
machine the store's speed drifts between phases (PostgreSQL's floor was seen from 100 to 730
commands per second between runs), and a floor taken at another moment made the ratio say
0.49 where interleaved it says 0.82 to 0.85 (SQLite 0.73 to 0.81), run after run, while the
rates themselves moved by a factor of two. Where a play's time goes on PostgreSQL (cProfile):
about nine tenths in the save (one pipelined transaction: the table lock, the array insert of
its 3.5 events on average, the commit; the no-op's is the same with one event), a tenth in the
decision (the rule book's play, the events, the hidden card's salt and commitment: 0.3 to 0.5
ms).

``run()`` returns rows of (name, value); ``python -m bench.cuarenta`` prints them.
"""

from __future__ import annotations

import os
import time

from bench._support import Floor, Row, funded_ledger, on_each_store
from bench._support import player as _player

KEY = bytes(range(32))
PLAYERS = ["ana", "beto"]
MATCHES = 4
PG_DB = f"sabot_bench_cuarenta_{os.getpid()}"


def matches(url: str, store: str, n: int = MATCHES) -> list[Row]:
    table = ("mesa", "seed", {"commission_rate": "5%"}, "cuarenta")
    ledger, rid = funded_ledger(url, KEY, table, PLAYERS)
    try:
        commands = plays = 0
        play_time = 0.0
        floor = Floor(ledger, rid)
        t0 = time.perf_counter()
        for _ in range(n):
            m = ledger.cuarenta_open_match(rid(), "mesa", PLAYERS, 1_000).match
            commands += 1
            while m.phase != "over":
                if m.phase == "awaiting_deal":
                    m = ledger.cuarenta_deal(rid(), m.match_id).match
                else:
                    who = m.seats[m.to_act]
                    legal = ledger.cuarenta_hand(m.match_id, m.to_act, _player(who)).legal
                    best = max(legal, key=lambda p: (p.points, len(p.capture)))
                    if not best.capture:
                        best = min(legal, key=lambda p: (len(p.capture) > 0, p.card))
                    t = time.perf_counter()
                    m = ledger.cuarenta_play(rid(), m.match_id, m.to_act, best.card,
                                             list(best.capture), actor=_player(who)).match
                    play_time += time.perf_counter() - t
                    plays += 1
                    floor.after()  # the floor at the same moment
                commands += 1
        elapsed = time.perf_counter() - t0 - floor.seconds
    finally:
        ledger.close()
    prefix = f"cuarenta.{store}.matches_2_players"
    floor_rate = floor.rate
    return [
        (f"{prefix}.matches", float(n)),
        (f"{prefix}.plays_per_match", plays / n),
        (f"{prefix}.plays_per_s", plays / play_time),
        (f"{prefix}.commands_per_s", commands / elapsed),
        (f"{prefix}.noop_floor.commands_per_s", floor_rate),
        (f"{prefix}.plays_ratio_to_floor", (plays / play_time) / floor_rate),
    ]


def run() -> list[Row]:
    return on_each_store("matches", PG_DB, matches)


if __name__ == "__main__":
    for name, value in run():
        print(f"{name:60s} {value:12.2f}")
