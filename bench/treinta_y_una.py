"""Treinta y Una on the ledger: whole rounds with four players (open by lot or the last round's
banker, three stakes, the deal by position, each turn after reading the player's own hand,
the showdown) on each store, in rounds per second and commands per second, beside the same
run's no-op floor: as many commands through the same single writer, each deciding nothing
(a request stored, no game event), so the ratio is what the game itself costs.

``run()`` returns rows of (name, value); ``python -m bench.treinta_y_una`` prints them.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import time
from collections.abc import Callable

from bench._support import drop_pg_database, fresh_pg_database
from services.ledger.actor import Actor
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig
from services.ledger.writer import UnitOfWork

KEY = bytes(range(32))
PLAYERS = ["ana", "bea", "carl", "dani"]
ROUNDS = 60
PG_DB = f"sabot_bench_tyu_{os.getpid()}"

Row = tuple[str, float]


@dataclasses.dataclass(frozen=True)
class Nothing:
    done: bool


def _player(name: str) -> Actor:
    return Actor(name, "player", "bench", account=name)


def rounds(url: str, store: str, n: int = ROUNDS) -> list[Row]:
    ledger = Ledger(LedgerConfig(store_url=url, seal_key=KEY))
    k = 0

    def rid() -> str:
        nonlocal k
        k += 1
        return f"b{k}"

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

        def nothing(unit: UnitOfWork) -> Nothing:
            return Nothing(True)

        t1 = time.perf_counter()
        for _ in range(commands):
            ledger._run("noop", rid(), {}, nothing, Nothing)
        floor = time.perf_counter() - t1
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
    rows: list[Row] = []
    tmp = tempfile.mkdtemp(prefix="sabot-bench-tyu-")
    try:
        stores: list[tuple[str, Callable[[str], str]]] = [
            ("sqlite", lambda name: f"sqlite:///{tmp}/{name}.db")
        ]
        pg = fresh_pg_database(PG_DB)
        if pg is not None:
            stores.append(("postgres", lambda name: f"{pg}?schema=public"))
        elif os.environ.get("SABOT_REQUIRE_POSTGRES") == "1":
            raise RuntimeError("PostgreSQL unreachable and SABOT_REQUIRE_POSTGRES=1")
        for store, url in stores:
            rows += rounds(url("rounds"), store)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        drop_pg_database(PG_DB)
    return rows


if __name__ == "__main__":
    for name, value in run():
        print(f"{name:60s} {value:12.2f}")
