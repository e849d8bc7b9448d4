"""The gaming-day report (``GetGamingDayReport``) on an idle server, for a day of 30 shoes
(5 tables x 6 shoes, 8 players, one stake each per coup, some insured), beside the same run's
floor: one call of the no-op server (``bench/_noop_server.py``), from one caller.

``gamingday.first_ms``: the first report a fresh server gives (its caches empty);
``gamingday.p50_ms`` / ``p90_ms``: the next ``CALLS``; each also as a ratio to the floor's
median call. Target (issue 12): at most 100 ms. The day is a fixed date (the ledger's clock is
injected), so every run reports the same rows. ``python -m bench.gamingday`` prints the rows.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path

from bench._support import percentile
from services.api.client import Client
from services.api.gen.sabot.v1 import betting_pb2, reports_pb2
from services.bootstrap import LEDGER_GAMES
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig

Row = tuple[str, float]
KEY = bytes(range(32))
CHAIN_KEY = bytes([0x6D]) * 32  # the ledger's evidence key, the same for the fill and the server
TOKEN = "bench-gamingday-token-5e2c9a7f1b3d4068"
DAY = "2026-03-02"
TABLES = int(os.environ.get("SABOT_BENCH_DAY_TABLES", "5"))
SHOES = int(os.environ.get("SABOT_BENCH_DAY_SHOES", "6"))  # per table
PLAYERS = [f"p{i}" for i in range(8)]
CHANCES = ("noir", "rouge", "couleur", "inverse")
CALLS = 30
FLOOR_CALLS = 300
ROOT = Path(__file__).resolve().parents[1]


def _clock(step: timedelta) -> Iterator[datetime]:
    """From 06:30 UTC on ``DAY``, ``step`` per reading."""
    at = datetime.fromisoformat(f"{DAY}T06:30:00+00:00")
    while True:
        yield at
        at += step


def fill(url: str, tables: int = TABLES, shoes: int = SHOES) -> int:
    """Play ``shoes`` shoes at each of ``tables`` tables (presets in turn); the shoes played."""
    rng = random.Random(30)
    # about 350 clock readings a shoe: the shoes spread over 20 hours, the day's three shifts
    ticks = _clock(timedelta(hours=20) / (350 * tables * shoes))
    ledger = Ledger(LedgerConfig(store_url=url, seal_key=KEY, chain_key=CHAIN_KEY,
                                 clock=lambda: next(ticks)), batching=False, games=LEDGER_GAMES)
    n = 0

    def rid() -> str:
        nonlocal n
        n += 1
        return f"g{n}"

    presets = ("francaise", "italiana", "espanola")
    for p in PLAYERS:
        ledger.open_account(rid(), p)
        ledger.deposit(rid(), p, 10**9)

    def new_shoe(table: str) -> None:
        shoe = ledger.open_shoe(rid(), table)
        ledger.cut(rid(), shoe.shoe_id, rng.randint(60, 250), "p0")
        open_shoes[table] = shoe.shoe_id

    left = {f"day-{t}": shoes for t in range(tables)}  # the tables play side by side
    open_shoes: dict[str, str] = {}
    for t, table in enumerate(left):
        ledger.open_table(rid(), table, presets[t % len(presets)])
        new_shoe(table)
    played = 0
    while left:
        for table in list(left):  # one coup at each table in turn
            coup = ledger.open_coup(rid(), table)
            held = {s.account_id for s in ledger.get_coup(coup.coup_id).layout}
            for i, p in enumerate(PLAYERS):
                if p in held:
                    continue  # a stake of the coup before (a partage, a prisoner)
                chance = CHANCES[(i % 2) * 2 + rng.randint(0, 1)]
                r = ledger.place_stake(rid(), coup.coup_id, p, chance, rng.randint(1, 50) * 100)
                if r.stake is not None and chance in ("noir", "rouge") and \
                        rng.random() < 0.2:  # insurance is sold where a 31 takes half
                    ledger.insure(rid(), coup.coup_id, r.stake.stake_id)
            ledger.deal(rid(), coup.coup_id)
            if ledger.settle(rid(), coup.coup_id).cut_card_reached:
                ledger.close_shoe(rid(), open_shoes.pop(table))
                played += 1
                left[table] -= 1
                if left[table]:
                    new_shoe(table)
                else:
                    del left[table]
    ledger.close()
    return played


@contextmanager
def _server(url: str, tmp: Path) -> Iterator[str]:
    """``sabot serve`` on the store (its ledger in a process of its own): its target."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SABOT_")}
    env.update({"SABOT_SEAL_KEY": KEY.hex(), "SABOT_CHAIN_KEY": CHAIN_KEY.hex(),
                "SABOT_TOKENS": f"{TOKEN}:admin", "PYTHONUNBUFFERED": "1"})
    proc = subprocess.Popen(
        [sys.executable, "-m", "services.cli.server", "serve", "--listen", "127.0.0.1:0",
         "--store", url, "--env-file", str(tmp / "none.env")], cwd=ROOT, env=env,
        stdout=subprocess.PIPE, stderr=(tmp / "server.log").open("w"), text=True)
    try:
        assert proc.stdout is not None
        target = ""
        for line in proc.stdout:
            if "listening on" in line:
                target = line.split("listening on ")[1].split()[0]
                break
        if not target:
            raise RuntimeError(f"the server did not start: {(tmp / 'server.log').read_text()}")
        yield target
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _idle(client: Client) -> None:
    """Wait until the server's read models have applied the whole log (an idle server)."""
    for _ in range(600):
        lag = client.read_models.GetProjectionLag(reports_pb2.GetProjectionLagRequest())
        if lag.projections and all(p.events_behind == 0 for p in lag.projections):
            return
        time.sleep(0.1)
    raise RuntimeError("the read models did not catch up")


def floor_ms() -> float:
    """The median of ``FLOOR_CALLS`` PlaceStake calls, one after the other, on the no-op
    server: what one gRPC call costs here with no ledger at all."""
    proc = subprocess.Popen([sys.executable, "-m", "bench._noop_server", "0"], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        target = proc.stdout.readline().split()[1]
        client = Client(target, TOKEN)
        request = betting_pb2.PlaceStakeRequest(request_id="floor")
        for _ in range(20):
            client.betting.PlaceStake(request)
        times = []
        for _ in range(FLOOR_CALLS):
            t0 = time.perf_counter()
            client.betting.PlaceStake(request)
            times.append(1000 * (time.perf_counter() - t0))
        client.close()
        return percentile(times, 0.5)
    finally:
        proc.terminate()
        proc.wait(10)


def measure(url: str, tmp: Path) -> tuple[float, list[float], int]:
    """(the first report's ms, the next ones', the rows of the report)."""
    with _server(url, tmp) as target:
        client = Client(target, TOKEN)
        _idle(client)
        request = reports_pb2.GetGamingDayReportRequest(gaming_day=DAY)
        t0 = time.perf_counter()
        report = client.read_models.GetGamingDayReport(request, timeout=120)
        first = 1000 * (time.perf_counter() - t0)
        times = []
        for _ in range(CALLS):
            t0 = time.perf_counter()
            client.read_models.GetGamingDayReport(request, timeout=120)
            times.append(1000 * (time.perf_counter() - t0))
        client.close()
        return first, times, len(report.rows)


def run() -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="sabot-bench-day-") as name:
        tmp = Path(name)
        url = f"sqlite:///{tmp / 'day.db'}"
        t0 = time.perf_counter()
        shoes = fill(url)
        filled = time.perf_counter() - t0
        floor = floor_ms()
        first, times, rows = measure(url, tmp)
    p50, p90 = percentile(times, 0.5), percentile(times, 0.9)
    return [
        ("gamingday.shoes", float(shoes)),
        ("gamingday.report_rows", float(rows)),
        ("gamingday.fill_s", round(filled, 1)),
        ("gamingday.floor_noop_call_ms", round(floor, 3)),
        ("gamingday.first_ms", round(first, 1)),
        ("gamingday.first_x_floor", round(first / floor, 1)),
        ("gamingday.p50_ms", round(p50, 1)),
        ("gamingday.p50_x_floor", round(p50 / floor, 1)),
        ("gamingday.p90_ms", round(p90, 1)),
        ("gamingday.p90_x_floor", round(p90 / floor, 1)),
        ("gamingday.within_100ms", float(max(first, p90) <= 100)),
    ]


if __name__ == "__main__":
    for row_name, value in run():
        print(f"{row_name}\t{value:g}")
