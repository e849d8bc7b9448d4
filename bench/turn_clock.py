"""The turn clock's price on the stake path (issue 25, item 1): PlaceStake through gRPC against
``sabot serve`` with the turn clock on and off (``SABOT_TURN_CLOCK``), no Treinta y Una or
Cuarenta in play, beside the same run's no-op floor (``bench.load``'s no-op server, measured
before the first store and after each: a run's ratio is to the floor on either side of it).
Two rounds (one with ``SABOT_BENCH_QUICK=1``), on and off in turn first; each row is the mean
of the rounds.

Rows per store and clock (``turn_clock.<store>.clock_on|clock_off.c<clients>``): stakes/s, the
ratio to the floor's stakes/s (``floor_ratio``), the processor time per stake of the server's
process (``server_cpu_ms_per_stake``: the gRPC threads, the hub, the projections, the clock) and
of the ledger's process (``ledger_cpu_ms_per_stake``), and the busiest thread of the server's
process apart from the others (``thread<k>_cpu_ms_per_stake``, k = 1..3, busiest first, from
/proc/<pid>/task/<tid>/stat: the clock reading the log shows there as a thread of its own).
``SABOT_BENCH_QUICK=1``: 4 s per run instead of 8; ``SABOT_BENCH_CLIENTS`` (default 32);
PostgreSQL when reachable. ``python -m bench.turn_clock`` prints the rows.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path

from bench.load import (
    Server,
    _children,
    _cpu_of,
    _drop_pg,
    _load,
    _pg_url,
    _setup,
    measure_noop,
)
from services.api import credentials
from services.api.roles import Role

Row = tuple[str, float]
THREADS = 3  # the busiest threads of the server's process reported apart


def _threads(pid: int) -> dict[int, float]:
    """Processor seconds so far of each thread of ``pid`` (empty where /proc is missing)."""
    out: dict[int, float] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    tick = os.sysconf("SC_CLK_TCK")
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[int(tid)] = (int(fields[11]) + int(fields[12])) / tick
    return out


def measure(store_name: str, url: str, clients: int, seconds: float, clock: bool) -> list[Row]:
    """Stakes from ``clients`` players for ``seconds`` against ``sabot serve`` with the turn
    clock ``clock`` (on/off): stakes/s first, then the processor times."""
    with tempfile.TemporaryDirectory() as tmp:
        keys = Path(tmp) / "credentials.toml"
        admin = credentials.issue(keys, "bench-admin", Role.ADMIN)[1] or ""
        players = [credentials.issue(keys, f"p{i}", Role.PLAYER)[1] or ""
                   for i in range(clients)]
        server = Server(url.replace("{tmp}", tmp), keys, Path(tmp),
                        extra_env={"SABOT_TURN_CLOCK": "on" if clock else "off"})
        try:
            coups = _setup(server.target, admin, clients)
            pid = server.proc.pid
            children = _children(pid)
            own, ledger = _cpu_of(pid), sum(_cpu_of(c) for c in children)
            threads = _threads(pid)
            started = time.perf_counter()
            _, _, errors, done = asyncio.run(_load(server.target, players, coups, seconds))
            elapsed = time.perf_counter() - started
            own = _cpu_of(pid) - own
            ledger = sum(_cpu_of(c) for c in children) - ledger
            spent = sorted((t - threads.get(tid, 0.0) for tid, t in _threads(pid).items()),
                           reverse=True)
        finally:
            server.stop()
    rate = done / elapsed
    per = 1000 / max(done, 1)
    prefix = f"turn_clock.{store_name}.clock_{'on' if clock else 'off'}.c{clients}"
    rows = [
        (f"{prefix}.stakes_per_s", round(rate, 1)),
        (f"{prefix}.errors", float(errors)),
        (f"{prefix}.server_cpu_ms_per_stake", round(own * per, 3)),
        (f"{prefix}.ledger_cpu_ms_per_stake", round(ledger * per, 3)),
    ]
    rows += [(f"{prefix}.thread{k + 1}_cpu_ms_per_stake", round(s * per, 3))
             for k, s in enumerate(spent[:THREADS])]
    return rows


def _floor(clients: int, seconds: float) -> tuple[float, float]:
    """The no-op server's stakes/s and processor ms per stake, now."""
    rows = dict(measure_noop(clients, seconds))
    prefix = f"load.noop_server.c{clients}"
    return rows[f"{prefix}.stakes_per_s"], rows[f"{prefix}.server_cpu_ms_per_stake"]


def run(quick: bool | None = None) -> list[Row]:
    if quick is None:
        quick = os.environ.get("SABOT_BENCH_QUICK") == "1"
    seconds = 4.0 if quick else 8.0
    rounds = 1 if quick else 2
    clients = int(os.environ.get("SABOT_BENCH_CLIENTS", "32"))
    floors = [_floor(clients, seconds / 2)]
    runs: list[tuple[list[Row], float]] = []  # a run's rows, its floor (stakes/s)
    for r in range(rounds):
        order = (True, False) if r % 2 == 0 else (False, True)  # (either first, in turn)
        for store in ("sqlite", "postgres"):
            done: list[list[Row]] = []
            for clock in order:
                if store == "sqlite":
                    done.append(measure(store, "sqlite:///{tmp}/load.db", clients, seconds,
                                        clock))
                    continue
                url = _pg_url()
                if url is None:
                    if os.environ.get("SABOT_REQUIRE_POSTGRES") == "1":
                        raise RuntimeError("PostgreSQL unreachable and SABOT_REQUIRE_POSTGRES=1")
                    break
                try:
                    done.append(measure(store, url, clients, seconds, clock))
                finally:
                    _drop_pg()
            floors.append(_floor(clients, seconds / 2))
            here = (floors[-2][0] + floors[-1][0]) / 2  # the floor on either side of the runs
            runs += [(measured, here) for measured in done]
    rate = sum(f[0] for f in floors) / len(floors)
    rows: list[Row] = [
        (f"turn_clock.floor.c{clients}.stakes_per_s", round(rate, 1)),
        (f"turn_clock.floor.c{clients}.stakes_per_s_min", min(f[0] for f in floors)),
        (f"turn_clock.floor.c{clients}.stakes_per_s_max", max(f[0] for f in floors)),
        (f"turn_clock.floor.c{clients}.server_cpu_ms_per_stake",
         round(sum(f[1] for f in floors) / len(floors), 3)),
    ]
    names = list(dict.fromkeys(measured[0][0] for measured, _ in runs))
    for name in names:  # each store and clock: the mean of its rounds
        mine = [(dict(measured), floor) for measured, floor in runs if measured[0][0] == name]
        prefix = name.removesuffix(".stakes_per_s")
        rows.append((f"{prefix}.floor_ratio",
                     round(sum(m[name] / f for m, f in mine) / len(mine), 3)))
        for key in mine[0][0]:
            rows.append((key, round(sum(m.get(key, 0.0) for m, _ in mine) / len(mine), 3)))
    return rows


if __name__ == "__main__":
    for name, value in run():
        print(f"{name:<56} {value}")
