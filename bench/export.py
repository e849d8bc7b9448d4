"""Exports and their verification (issue 25 items 3 and 6): one shoe at 10^3, 10^5 and 10^6
events of history, and the whole log of a five-table day beside a raw scan.

Histories are SQLite stores built once and kept outside the repository (``bench._support
.cached_store``: ``$SABOT_BENCH_CACHE``, default /var/tmp/sabot-bench):

- ``replay-history-v1-N`` (shared with ``bench.replay_sizes``, the same builder): filler events
  of another aggregate written straight into the event table, then a real Trente et Quarante
  shoe played through the ledger (4 players, to the cut card), notarised and checkpointed. The
  shoe's export (SABOT-EXPORT-2) is written in process (``write_export``, median of
  ``ROUNDS``), verified in process (``sabot_verify.__main__.run``) and by ``sabot-verify`` in
  its own interpreter, whose peak resident memory is read from the kernel (``wait4``).
  ``x_smallest``: this size's time over the 10^3 history's (1.0: flat in history).
- ``export-day-v1``: five tables playing coup for coup (``DAY_SHOES`` shoes each), so that a
  shoe's span holds the other tables' play. The whole log's export and its verification by
  ``sabot-verify`` (a stream: its memory must not grow with the log), per 10^5 events, beside
  the floor: a Python loop reading every stored row, hashing and parsing it (``raw_scan``).
  One shoe of that day: its events held in full, the other tables' as leaf records.

Rows: ``bytes``, ``ms`` (wall), ``cpu_ms`` (this process's processor time), ``rss_mb``
(sabot-verify's peak), and ratios (``_cpu_x_smallest`` on processor time: on the shared machine
wall time is mostly the load); ``load_1min`` before and after.
``SABOT_BENCH_EXPORT_SIZES`` (default ``1000,100000,1000000``) changes the sizes;
``SABOT_BENCH_EXPORT_DAYS=110`` adds the whole log of a day of 110 shoes a table (992,903
events, ``export-day-v1-5x110``: built once, ~18 min; rows ``export.day110.*``).
``python -m bench.export`` prints the rows.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sabot_verify.__main__ import run as verify_export

from bench._support import cached_store
from bench.replay import CHAIN_KEY, CHAIN_PUBLIC, _filler, _play_shoe
from services.bootstrap import LEDGER_GAMES, ROUND_END
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig
from services.regulator.checkpoint import public_key_bytes
from services.regulator.export import write_export
from services.regulator.notary import Notary
from services.regulator.source import Database, EventTable

Row = tuple[str, float]
ROUNDS = 3
NOTARY_KEY = Ed25519PrivateKey.from_private_bytes(bytes([0x51]) * 32)  # replay_sizes' key
NOTARY_PUBLIC = public_key_bytes(NOTARY_KEY.public_key())
SHOE_EVENTS = 1_700  # about what the played shoe adds to the filler (replay_sizes')
DAY_TABLES = 5
DAY_SHOES = 6  # per table (about 9,000 events a table)


def _history(size: int) -> Callable[[str], dict[str, Any]]:
    """``bench.replay_sizes``' history of ``size`` events (its builder, its cache)."""
    def build(url: str) -> dict[str, Any]:
        Ledger(LedgerConfig(store_url=url, seal_key=bytes(32)), games=LEDGER_GAMES).close()
        _filler(url.removeprefix("sqlite:///"), max(0, size - SHOE_EVENTS))
        shoe_id, coups = _play_shoe(url)
        return {"shoe_id": shoe_id, "coups": coups, "events": _notarise(url)}

    return build


def _notarise(url: str) -> int:
    db = Database(url)
    try:
        notary = Notary(db, EventTable(db), NOTARY_KEY, "bench", ROUND_END)
        notary.sync(batch=20_000)
        notary.checkpoint_now()
        return notary.size
    finally:
        db.close()


def _day(url: str) -> dict[str, Any]:
    """Five tables dealt coup for coup, ``DAY_SHOES`` shoes each, 4 players a table."""
    return _play_day(url, DAY_SHOES)


def _play_day(url: str, shoes_each: int) -> dict[str, Any]:
    """Five tables dealt coup for coup, ``shoes_each`` shoes each, 4 players a table."""
    rng = random.Random(5)
    clock = [datetime(2026, 1, 2, tzinfo=UTC)]

    def now() -> datetime:
        clock[0] += timedelta(seconds=1)
        return clock[0]

    ledger = Ledger(LedgerConfig(
        store_url=url, seal_key=bytes(32), clock=now,
        new_id=lambda: UUID(int=rng.getrandbits(128), version=4),
        new_seed=lambda: rng.randbytes(32), chain_key=CHAIN_KEY,
    ), games=LEDGER_GAMES)
    n = 0

    def rid() -> str:
        nonlocal n
        n += 1
        return f"d{n}"

    tables = [f"day-{t}" for t in range(DAY_TABLES)]
    players = {t: [f"{t}-p{i}" for i in range(4)] for t in tables}
    shoes: dict[str, list[str]] = {t: [] for t in tables}
    try:
        for t in tables:
            ledger.open_table(rid(), t, "francaise")
            for p in players[t]:
                ledger.open_account(rid(), p)
                ledger.deposit(rid(), p, 10**9)
        open_shoe: dict[str, str] = {}
        while any(len(shoes[t]) < shoes_each for t in tables):
            for t in tables:
                if len(shoes[t]) >= shoes_each:
                    continue
                if t not in open_shoe:
                    sid = ledger.open_shoe(rid(), t).shoe_id
                    ledger.cut(rid(), sid, rng.randint(100, 200), players[t][0])
                    open_shoe[t] = sid
                cid = ledger.open_coup(rid(), t).coup_id
                busy = {s.account_id for s in ledger.get_table(t).layout}
                for p in players[t]:
                    if p not in busy:
                        chance = rng.choice(["noir", "rouge"])
                        ledger.place_stake(rid(), cid, p, chance, 100 * rng.randint(1, 20))
                end = ledger.deal(rid(), cid).cut_card_reached
                ledger.settle(rid(), cid)
                if end:
                    ledger.close_shoe(rid(), open_shoe[t])
                    shoes[t].append(open_shoe.pop(t))
    finally:
        ledger.close()
    # the middle table's first shoe: the other tables' play all through its span
    return {"shoe_id": shoes[tables[DAY_TABLES // 2]][0], "events": _notarise(url)}


def _export(url: str, path: Path, shoe: str | None) -> tuple[float, float]:
    """Write the export (the shoe's, or the whole log's) to ``path``: wall and CPU ms."""
    db = Database(url)
    try:
        events = EventTable(db)
        notary = Notary(db, events, NOTARY_KEY, "bench", ROUND_END, create=False)
        w, c = time.perf_counter(), time.process_time()
        with path.open("w", encoding="utf-8") as out:
            write_export(out, events, notary, NOTARY_PUBLIC,
                         shoe_ids=[shoe] if shoe is not None else None)
        return 1000 * (time.perf_counter() - w), 1000 * (time.process_time() - c)
    finally:
        db.close()


def _verify_in_process(path: Path) -> tuple[float, float]:
    w, c = time.perf_counter(), time.process_time()
    with path.open(encoding="utf-8") as f:
        code = verify_export(f, checkpoint_key=NOTARY_PUBLIC, out=io.StringIO(),
                             chain_keys=[CHAIN_PUBLIC], verbose=False)
    assert code == 0, f"{path}: sabot-verify exit {code}"
    return 1000 * (time.perf_counter() - w), 1000 * (time.process_time() - c)


def _verify_alone(path: Path) -> tuple[float, float, float]:
    """``sabot-verify`` in its own interpreter: wall ms, CPU ms, peak RSS (MB)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).resolve().parent.parent / "ops"), os.environ.get("PYTHONPATH", "")])}
    w = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "sabot_verify", str(path), "--checkpoint-public-key",
         NOTARY_PUBLIC.hex(), "--chain-public-key", CHAIN_PUBLIC.hex()],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = 1000 * (time.perf_counter() - w)
    out = proc.stdout.read().decode() if proc.stdout else ""
    assert os.waitstatus_to_exitcode(status) == 0, out
    return wall, 1000 * (usage.ru_utime + usage.ru_stime), usage.ru_maxrss / 1024


def _median(values: list[tuple[float, ...]]) -> tuple[float, ...]:
    return tuple(statistics.median(v[i] for v in values) for i in range(len(values[0])))


def _raw_scan(url: str) -> tuple[float, int]:
    """The floor: every stored row read, its state hashed (SHA-256) and parsed (JSON), in a
    Python loop; CPU ms and the rows."""
    c = time.process_time()
    rows = 0
    with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
        for _oid, _version, _topic, state in conn.execute(
                "SELECT originator_id, originator_version, topic, state FROM stored_events "
                "ORDER BY rowid"):
            hashlib.sha256(state).digest()
            json.loads(state)
            rows += 1
    return 1000 * (time.process_time() - c), rows


def _shoe_rows(tmp: Path, size: int) -> tuple[str, dict[str, float]]:
    url, facts = cached_store(f"replay-history-v1-{size}", _history(size))
    path = tmp / f"shoe-{size}.jsonl"
    exported = _median([_export(url, path, str(facts["shoe_id"])) for _ in range(ROUNDS)])
    checked = _median([_verify_in_process(path) for _ in range(ROUNDS)])
    alone = _verify_alone(path)
    got = {
        "history_events": float(facts["events"]),
        "bytes": float(path.stat().st_size),
        "export_ms": exported[0], "export_cpu_ms": exported[1],
        "verify_ms": checked[0], "verify_cpu_ms": checked[1],
        "in_process_ms": exported[0] + checked[0],
        "in_process_cpu_ms": exported[1] + checked[1],
        "sabot_verify_ms": alone[0], "sabot_verify_rss_mb": alone[2],
    }
    return f"export.shoe.{size}", got


def _big_day_rows(tmp: Path, shoes_each: int) -> list[Row]:
    """The whole log of a day of ``shoes_each`` shoes a table (110: ~10^6 events), exported
    and verified by ``sabot-verify`` as a stream: per 10^5 events, its peak RSS, the raw scan."""
    url, facts = cached_store(f"export-day-v1-{DAY_TABLES}x{shoes_each}",
                              lambda u: _play_day(u, shoes_each))
    n = float(facts["events"])
    whole = tmp / f"day-{shoes_each}.jsonl"
    exported = _export(url, whole, None)
    alone = _verify_alone(whole)
    scan_cpu, rows = _raw_scan(url)
    whole.unlink()
    p = f"export.day{shoes_each}"
    return [(f"{p}.events", n), (f"{p}.export_cpu_ms_per_1e5", exported[1] * 1e5 / n),
            (f"{p}.sabot_verify_cpu_ms_per_1e5", alone[1] * 1e5 / n),
            (f"{p}.sabot_verify_rss_mb", alone[2]),
            (f"{p}.raw_scan_cpu_ms_per_1e5", scan_cpu * 1e5 / rows),
            (f"{p}.x_raw_scan", (exported[1] + alone[1]) / scan_cpu)]


def _day_rows(tmp: Path) -> list[Row]:
    url, facts = cached_store(f"export-day-v1-{DAY_TABLES}x{DAY_SHOES}", _day)
    n = float(facts["events"])
    per = 100_000 / n
    whole = tmp / "day.jsonl"
    exported = _export(url, whole, None)
    alone = _verify_alone(whole)
    scan_cpu, rows = _raw_scan(url)
    shoe = tmp / "day-shoe.jsonl"
    shoe_export = _export(url, shoe, str(facts["shoe_id"]))
    shoe_alone = _verify_alone(shoe)
    kinds: dict[str, int] = {}
    with shoe.open(encoding="utf-8") as f:
        for line in f:
            kind = json.loads(line)["kind"]
            kinds[kind] = kinds.get(kind, 0) + 1
    return [
        ("export.day.events", n),
        ("export.day.whole.bytes_per_event", whole.stat().st_size / n),
        ("export.day.whole.export_cpu_ms_per_1e5", exported[1] * per),
        ("export.day.whole.sabot_verify_cpu_ms_per_1e5", alone[1] * per),
        ("export.day.whole.sabot_verify_rss_mb", alone[2]),
        ("export.day.raw_scan_cpu_ms_per_1e5", scan_cpu * 100_000 / rows),
        ("export.day.whole.x_raw_scan", (exported[1] + alone[1]) / scan_cpu),
        ("export.day.shoe.events_in_full", float(kinds.get("event", 0))),
        ("export.day.shoe.leaf_records", float(kinds.get("leaf", 0))),
        ("export.day.shoe.bytes", float(shoe.stat().st_size)),
        ("export.day.shoe.export_ms", shoe_export[0]),
        ("export.day.shoe.sabot_verify_ms", shoe_alone[0]),
        ("export.day.shoe.sabot_verify_rss_mb", shoe_alone[2]),
    ]


def run() -> list[Row]:
    sizes = [int(s) for s in os.environ.get(
        "SABOT_BENCH_EXPORT_SIZES", "1000,100000,1000000").split(",")]
    rows: list[Row] = [("export.load_1min", os.getloadavg()[0])]
    with tempfile.TemporaryDirectory(prefix="sabot-bench-export-") as where:
        tmp = Path(where)
        measured = [_shoe_rows(tmp, size) for size in sizes]
        first = measured[0][1]
        for prefix, got in measured:
            rows += [(f"{prefix}.{k}", v) for k, v in got.items()]
            rows.append((f"{prefix}.bytes_x_smallest", got["bytes"] / first["bytes"]))
            rows.append((f"{prefix}.in_process_x_smallest",
                         got["in_process_ms"] / first["in_process_ms"]))
            rows.append((f"{prefix}.in_process_cpu_x_smallest",
                         got["in_process_cpu_ms"] / first["in_process_cpu_ms"]))
        rows += _day_rows(tmp)
        for shoes_each in (int(x) for x in os.environ.get("SABOT_BENCH_EXPORT_DAYS", "").split(",")
                           if x):
            rows += _big_day_rows(tmp, shoes_each)
    rows.append(("export.load_1min_after", os.getloadavg()[0]))
    return rows


if __name__ == "__main__":
    for name, value in run():
        print(f"{name:50s} {value:14.3f}")
