"""A coup of 1,000 stakes against coups of 10 (issue 25 item 4): what a stake costs the ledger
whatever the coup already holds.

In process (no gRPC), one writer, on SQLite (and PostgreSQL when reachable): two tables, one
playing coups of 10 stakes, the other coups of 1,000 (50 players staking the four chances in
turn, opposed stakes allowed, the maximum out of the way); each round places ``STAKES`` stakes
at each table, the two tables taking turns (which goes first alternates), then deals and settles
their coups. Processor time of this process (``time.process_time``: the ledger, its encoding,
SQLite's own work; PostgreSQL's server processes are not counted), per stake:
- ``place``: the ``place_stake`` commands alone (decide, events, request, commit);
- ``settle``: the deal and the settlement, per stake on the layout at the deal;
- ``<1000>_over_<10>``: the ratio, the figure that does not depend on the machine's speed
  (the floor of each is the other: 1.0 is a stake costing the same in a coup of 1,000).
Medians over ``SABOT_BENCH_COUP_ROUNDS`` rounds (default 3). The stakes carried over by a void
coup, a partage or a prison stay on the layout, so a coup holds a little more than its size
(``coup_stakes_mean``). ``domain``: ``domain.trente_et_quarante.layout.place_stake`` alone, in
microseconds of processor time, best of 15 (no ledger).
``python -m bench.coup_size`` prints the rows.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable

from bench._support import RequestIds, on_each_store
from domain.trente_et_quarante.chances import Chance
from domain.trente_et_quarante.layout import Layout, place_stake
from domain.trente_et_quarante.rules import house_rules
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig

Row = tuple[str, float]
SIZES = (10, 1000)
STAKES = 1000  # per table and round
PLAYERS = [f"p{i}" for i in range(50)]
CHANCES = ("noir", "rouge", "couleur", "inverse")
RULES = {"allow_opposed_stakes": "true", "max_stake": "1000000000"}
PG_DB = f"sabot_bench_coup_size_{os.getpid()}"


class _Table:
    """One table playing coups of ``size`` stakes, and what they cost."""

    def __init__(self, ledger: Ledger, rid: RequestIds, size: int) -> None:
        self.ledger, self.rid, self.size = ledger, rid, size
        self.table = f"c{size}"
        ledger.open_table(rid(), self.table, "francaise", RULES)
        self.shoe = ""
        self._new_shoe()
        self.k = 0
        self.place: list[float] = []  # per round: CPU seconds per stake placed
        self.settle: list[float] = []  # per round: CPU seconds (deal + settle) per stake dealt
        self.held: list[int] = []  # stakes on each coup at its deal

    def _new_shoe(self) -> None:
        if self.shoe:
            self.ledger.close_shoe(self.rid(), self.shoe)
        self.shoe = self.ledger.open_shoe(self.rid(), self.table).shoe_id
        self.ledger.cut(self.rid(), self.shoe, 150, "croupier")

    def round(self, stakes: int) -> None:
        ledger, rid = self.ledger, self.rid
        placed = dealt = 0
        place_s = settle_s = 0.0
        while placed < stakes:
            coup = ledger.open_coup(rid(), self.table).coup_id
            t = time.process_time()
            for _ in range(self.size):
                self.k += 1
                ledger.place_stake(rid(), coup, PLAYERS[self.k % len(PLAYERS)],
                                   CHANCES[self.k % 4], 100)
            place_s += time.process_time() - t
            placed += self.size
            on_layout = len(ledger.get_coup(coup).layout)
            t = time.process_time()
            cut = ledger.deal(rid(), coup).cut_card_reached
            ledger.settle(rid(), coup)
            settle_s += time.process_time() - t
            dealt += on_layout
            self.held.append(on_layout)
            if cut:
                self._new_shoe()
        self.place.append(place_s / placed)
        self.settle.append(settle_s / dealt)


def _ledger_rows(url: str, store: str) -> list[Row]:
    rounds = int(os.environ.get("SABOT_BENCH_COUP_ROUNDS", "3"))
    ledger = Ledger(LedgerConfig(store_url=url, seal_key=bytes(32)))
    rid = RequestIds()
    try:
        for p in PLAYERS:
            ledger.open_account(rid(), p)
            ledger.deposit(rid(), p, 10**12)
        tables = [_Table(ledger, rid, size) for size in SIZES]
        for r in range(rounds):
            for table in tables if r % 2 == 0 else reversed(tables):
                table.round(STAKES)
    finally:
        ledger.close()
    rows: list[Row] = []
    small, large = tables
    for t in tables:
        prefix = f"coup_size.{store}.{t.size}"
        rows += [(f"{prefix}.place_cpu_ms_per_stake", 1000 * statistics.median(t.place)),
                 (f"{prefix}.settle_cpu_ms_per_stake", 1000 * statistics.median(t.settle)),
                 (f"{prefix}.coup_stakes_mean", statistics.mean(t.held))]
    ratio = f"coup_size.{store}.{large.size}_over_{small.size}"
    rows += [(f"{ratio}.place", statistics.median(large.place) / statistics.median(small.place)),
             (f"{ratio}.settle",
              statistics.median(large.settle) / statistics.median(small.settle))]
    return rows


def _best_us(fn: Callable[[], object], calls: int = 2000, rounds: int = 15) -> float:
    best = float("inf")
    for _ in range(rounds):
        t = time.process_time()
        for _ in range(calls):
            fn()
        best = min(best, (time.process_time() - t) / calls * 1e6)
    return best


def _domain_rows() -> list[Row]:
    rules = house_rules("francaise", RULES)
    chances = list(Chance)
    rows: list[Row] = []
    for size in SIZES:
        layout = Layout()
        for k in range(size):
            layout = place_stake(rules, layout, f"s{k}", PLAYERS[k % len(PLAYERS)],
                                 chances[k % 4], 100).layout
        def one(held: Layout = layout) -> object:
            return place_stake(rules, held, "new", "p1", Chance.NOIR, 100)

        rows.append((f"coup_size.domain.{size}.place_stake_us", _best_us(one)))
    rows.append((f"coup_size.domain.{SIZES[1]}_over_{SIZES[0]}", rows[1][1] / rows[0][1]))
    return rows


def run() -> list[Row]:
    return _domain_rows() + on_each_store("coup-size", PG_DB, _ledger_rows)


if __name__ == "__main__":
    for name, value in run():
        print(f"{name:60s} {value:12.4f}")
