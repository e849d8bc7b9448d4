"""A coup's replay with its verdict at 10^3, 10^5 and 10^6 events of history (issue 25 item 5:
"replay at a click", <= 10 ms in process at 10^6).

Each history is a SQLite store built once and kept outside the repository (``bench._support
.cached_store``: ``$SABOT_BENCH_CACHE``, default /var/tmp/sabot-bench): filler events of another
aggregate written straight into the event table, then a real shoe played through the ledger
(``bench.replay``'s: 4 players, one table, to the cut card), notarised. The coup replayed is the
shoe's middle one: ``Replayer.coup`` (what ``sabot regulator replay-coup`` and ReplayCoup run)
and ``verdict``, in process:
- ``cold``: with nothing remembered from an earlier replay (the shoe's order, the links'
  signatures: as a regulator's first click);
- ``warm``: the same coup again (the shuffle and the links' signatures remembered; every event
  still read and hashed, the notary's leaves and the chain still compared);
- ``floor``: the coup's own events read by aggregate id and their Merkle leaves hashed (no
  check, no recomputation): what any verdict on the coup reads at least.
Wall time and processor time (ms), medians of ``ROUNDS``; ``x_floor``: warm over floor;
``x_smallest``: this size's warm over the smallest size's (1.0: flat in history).
``SABOT_BENCH_REPLAY_SIZES`` (default ``1000,100000,1000000``) changes the sizes.
``python -m bench.replay_sizes`` prints the rows.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from typing import Any
from uuid import UUID

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from bench._support import cached_store
from bench.replay import _filler, _play_shoe
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig
from services.regulator import chain, replay
from services.regulator.merkle import leaf_hash
from services.regulator.notary import Notary
from services.regulator.replay import Replayer, verdict
from services.regulator.source import Database, EventTable
from services.regulator.vocabulary import coup_end

Row = tuple[str, float]
ROUNDS = 9
NOTARY_KEY = Ed25519PrivateKey.from_private_bytes(bytes([0x51]) * 32)
SHOE_EVENTS = 1_700  # about what the played shoe adds to the filler


def _build(size: int) -> Callable[[str], dict[str, Any]]:
    def build(url: str) -> dict[str, Any]:
        Ledger(LedgerConfig(store_url=url, seal_key=bytes(32))).close()  # creates the table
        _filler(url.removeprefix("sqlite:///"), max(0, size - SHOE_EVENTS))
        shoe_id, coups = _play_shoe(url)
        db = Database(url)
        try:
            events = EventTable(db)
            notary = Notary(db, events, NOTARY_KEY, "bench", coup_end)
            notary.sync(batch=20_000)
            notary.checkpoint_now()
            return {"shoe_id": shoe_id, "coups": coups, "events": notary.size}
        finally:
            db.close()

    return build


def _timed(fn: Callable[[], Any], before: Callable[[], None] | None = None
           ) -> tuple[float, float]:
    """Median wall and processor milliseconds of ``ROUNDS`` calls (``before`` each, untimed)."""
    wall, cpu = [], []
    for _ in range(ROUNDS):
        if before is not None:
            before()
        w, c = time.perf_counter(), time.process_time()
        fn()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return 1000 * statistics.median(wall), 1000 * statistics.median(cpu)


def _forget() -> None:
    """What a replay remembers for the next: the shoes' orders, the links checked (a tree
    without them, measured with this module for comparison, has nothing to forget)."""
    sabot = getattr(replay, "_sabot", None)
    if sabot is not None:
        sabot.cache_clear()
    for memo in ("_CHECKED", "_PARSED"):
        getattr(chain, memo, {}).clear()


def _one(size: int) -> tuple[str, dict[str, float]]:
    url, facts = cached_store(f"replay-history-v1-{size}", _build(size))
    db = Database(url)
    try:
        events = EventTable(db)
        notary = Notary(db, events, NOTARY_KEY, "bench", coup_end, create=False)
        replayer = Replayer(events, notary)
        coup = str(facts["coups"][len(facts["coups"]) // 2])
        v = verdict(replayer.coup(coup))
        assert v.identical, str(v)

        def replay_coup() -> None:
            verdict(replayer.coup(coup))

        def floor() -> None:
            for ev in events.by_originator(UUID(coup)):
                leaf_hash(ev.leaf())

        got = {"events_stored": float(facts["events"]), "steps": float(v.steps)}
        for label, fn, before in (("cold", replay_coup, _forget), ("warm", replay_coup, None),
                                  ("floor", floor, None)):
            got[f"{label}_ms"], got[f"{label}_cpu_ms"] = _timed(fn, before)
        return f"replay_sizes.{size}", got
    finally:
        db.close()


def run() -> list[Row]:
    sizes = [int(s) for s in os.environ.get(
        "SABOT_BENCH_REPLAY_SIZES", "1000,100000,1000000").split(",")]
    measured = [_one(size) for size in sizes]
    smallest = measured[0][1]["warm_cpu_ms"]
    rows: list[Row] = []
    for prefix, got in measured:
        rows += [(f"{prefix}.{k}", v) for k, v in got.items()]
        rows.append((f"{prefix}.warm_x_floor", got["warm_cpu_ms"] / got["floor_cpu_ms"]))
        rows.append((f"{prefix}.warm_x_smallest", got["warm_cpu_ms"] / smallest))
    return rows


if __name__ == "__main__":
    for name, value in run():
        print(f"{name:50s} {value:12.3f}")
