"""A long load (issue 25, item 4): whether the cost of a stake and the memory of the server and
of the ledger process stay flat over time.

``sabot serve`` (the ledger in its own process) on a fresh store; 32 players (``--clients``)
place stakes through gRPC on 8 tables (``bench.load``'s closed loop; four players at a table)
while a croupier per table plays the coups through: once its coup holds ``--stakes-per-coup``
stakes (40) it closes
betting, deals, settles and opens the next coup, and at the cut card closes the shoe and opens
and cuts a new one. So the coups keep one size (the figures do not grow with a coup, as they
would on one coup that never closes) and the log, the settled coups, the requests and the
caches grow as at a real table.

Each minute: stakes placed, the processor time per stake (from /proc) of the server, of the
ledger process and of the read models' process (the ledger process's child), each apart, and
their resident memory (VmRSS). The rows: the first and the last minute's CPU per stake of the
server and its ledger process together and their ratio (``cpu_last_to_first``: the issue asks
≤ 1.2), the same per process (``server_``, ``ledger_``, ``readers_cpu_last_to_first``, and
``all_``: the three together), the ledger process's memory after the first minute, at the end
and at its largest, and the largest to the first (``ledger_rss_max_to_first``: ≤ 1.5); the same
for the server and the read models' process; every minute's figures as ``soak.<store>.m<k>.*``.

Not in ``make bench`` (it runs for minutes: ``bench.__main__.BY_NAME_ONLY``): ``python -m
bench.soak --minutes 30 [--store sqlite|postgres] [--clients 32] [--stakes-per-coup 40]
[--heap DIR]`` (``--heap``: the ledger process's heap growth by file:line each minute,
``bench/_heap.py``);
``python -m bench soak`` runs it for ``SABOT_BENCH_SOAK_MINUTES`` (default 2) on SQLite.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from bench import _heap
from bench.load import Server, _cpu_of, _descendants, _drop_pg, _is_read_models, _pg_url, _setup
from services.api import credentials
from services.api.gen.sabot.v1 import (
    betting_pb2,
    betting_pb2_grpc,
    common_pb2,
    table_pb2,
    table_pb2_grpc,
)
from services.api.roles import Role

Row = tuple[str, float]
MINUTE = 60.0
TABLES = 8  # of bench.load's 16: four players at each


def _rss_kib(pid: int) -> float:
    """The resident memory of ``pid`` in KiB (NaN where /proc is missing)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return float(line.split()[1])
    except OSError:
        pass
    return float("nan")


def _processes(pid: int) -> dict[str, float]:
    """The processor time (s) and resident memory (KiB) so far of the server ``pid``, of its
    ledger process, and of the read models' process (the ledger process's child), each
    apart; looked for again at each sample (the read models' process starts after the
    ledger's)."""
    under = _descendants(pid)
    readers = [c for c in under if _is_read_models(c)]
    ledgers = [c for c in under if c not in readers]
    return {"server_cpu": _cpu_of(pid), "ledger_cpu": sum(_cpu_of(c) for c in ledgers),
            "readers_cpu": sum(_cpu_of(c) for c in readers),
            "server_rss": _rss_kib(pid), "ledger_rss": sum(_rss_kib(c) for c in ledgers),
            "readers_rss": sum(_rss_kib(c) for c in readers)}


@dataclass
class Table:
    """One table's current coup and how many stakes it took (the croupier reads it)."""

    coup: str
    stakes: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class Tally:
    stakes: int = 0
    refused: int = 0
    errors: int = 0
    coups: int = 0
    shoes: int = 0


async def _player(i: int, token: str, tables: list[Table], tally: Tally, deadline: float,
                  betting: betting_pb2_grpc.BettingServiceStub) -> None:
    metadata = (("authorization", f"Bearer {token}"),)
    table = tables[i % len(tables)]
    while time.monotonic() < deadline:
        coup = table.coup
        request = betting_pb2.PlaceStakeRequest(
            request_id=uuid.uuid4().hex, coup=coup, account=f"accounts/p{i}",
            chance=common_pb2.CHANCE_NOIR, amount=common_pb2.Money(amount_minor=100))
        try:
            await betting.PlaceStake(request, metadata=metadata, timeout=10)
        except grpc.aio.AioRpcError as exc:
            if exc.code() is grpc.StatusCode.FAILED_PRECONDITION:  # betting closed meanwhile
                tally.refused += 1
                if table.coup == coup:
                    table.changed.clear()
                    await asyncio.wait({asyncio.ensure_future(table.changed.wait())},
                                       timeout=1.0)
            else:
                tally.errors += 1
            continue
        if table.coup == coup:
            table.stakes += 1
        tally.stakes += 1


async def _croupier(t: int, table: Table, per_coup: int, tally: Tally, deadline: float,
                    tables: table_pb2_grpc.TableServiceStub, metadata: tuple[tuple[str, str]]
                    ) -> None:
    n = 0

    def rid(kind: str) -> str:
        nonlocal n
        n += 1
        return f"soak-{kind}-{t}-{n}"

    while time.monotonic() < deadline:
        if table.stakes < per_coup:
            await asyncio.sleep(0.02)
            continue
        name = table.coup
        await tables.CloseBetting(table_pb2.CloseBettingRequest(
            request_id=rid("b"), name=name), metadata=metadata, timeout=30)
        await tables.DealCoup(table_pb2.DealCoupRequest(
            request_id=rid("d"), name=name), metadata=metadata, timeout=30)
        coup = await tables.SettleCoup(table_pb2.SettleCoupRequest(
            request_id=rid("s"), name=name), metadata=metadata, timeout=30)
        tally.coups += 1
        shoe = name.rsplit("/coups/", 1)[0]
        if coup.cut_card_reached:
            await tables.CloseShoe(table_pb2.CloseShoeRequest(
                request_id=rid("x"), name=shoe), metadata=metadata, timeout=30)
            shoe = (await tables.OpenShoe(table_pb2.OpenShoeRequest(
                request_id=rid("o"), parent=shoe.split("/shoes/")[0]), metadata=metadata,
                timeout=30)).name
            await tables.CutShoe(table_pb2.CutShoeRequest(
                request_id=rid("c"), name=shoe, cut_position=100, cut_by="soak"),
                metadata=metadata, timeout=30)
            tally.shoes += 1
        opened = await tables.OpenCoup(table_pb2.OpenCoupRequest(
            request_id=rid("n"), parent=shoe), metadata=metadata, timeout=30)
        table.coup, table.stakes = opened.name, 0
        table.changed.set()


async def _soak(server: Server, admin: str, players: list[str], coups: list[str],
                minutes: float, per_coup: int) -> list[dict[str, float]]:
    tables = [Table(c) for c in coups[:TABLES]]
    tally = Tally()
    pid = server.proc.pid
    deadline = time.monotonic() + minutes * MINUTE
    samples: list[dict[str, float]] = []
    async with grpc.aio.insecure_channel(server.target) as channel:
        betting = betting_pb2_grpc.BettingServiceStub(channel)
        table_stub = table_pb2_grpc.TableServiceStub(channel)
        metadata = (("authorization", f"Bearer {admin}"),)
        work = [asyncio.ensure_future(_player(i, tok, tables, tally, deadline, betting))
                for i, tok in enumerate(players)]
        work += [asyncio.ensure_future(_croupier(t, table, per_coup, tally, deadline,
                                                 table_stub, metadata))
                 for t, table in enumerate(tables)]

        def sample() -> dict[str, float]:
            return {"t": time.monotonic(), "stakes": tally.stakes, "coups": tally.coups,
                    "shoes": tally.shoes, "errors": tally.errors, "refused": tally.refused,
                    **_processes(pid)}

        samples.append(sample())
        started = samples[0]["t"]
        while time.monotonic() < deadline - 1.0:
            due = min(started + len(samples) * MINUTE, deadline)
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            samples.append(sample())
            last, prev = samples[-1], samples[-2]
            done = last["stakes"] - prev["stakes"]
            cpu = (last["server_cpu"] + last["ledger_cpu"] - prev["server_cpu"]
                   - prev["ledger_cpu"])
            print(f"soak minute {len(samples) - 1}: {done / (last['t'] - prev['t']):.0f} "
                  f"stakes/s, {1000 * cpu / max(done, 1):.3f} ms CPU/stake, ledger "
                  f"{last['ledger_rss'] / 1024:.0f} MiB, server {last['server_rss'] / 1024:.0f}"
                  f" MiB, read models {last['readers_rss'] / 1024:.0f} MiB, "
                  f"{last['coups']:.0f} coups", flush=True)
        results = await asyncio.gather(*work, return_exceptions=True)
        failed = [r for r in results if isinstance(r, BaseException)]
        if failed:
            raise RuntimeError(f"{len(failed)} soak tasks failed: {failed[0]!r}")
    return samples


def _minute(prev: dict[str, float], last: dict[str, float]) -> dict[str, float]:
    """One minute's figures: stakes/s, CPU per stake (the server and its ledger process
    together, as this bench always counted it, then each process apart, the read models'
    too), each process's resident memory at the minute's end."""
    done = last["stakes"] - prev["stakes"]
    per = 1000 / max(done, 1)

    def cpu(*procs: str) -> float:
        return round(per * sum(last[f"{p}_cpu"] - prev[f"{p}_cpu"] for p in procs), 3)

    return {
        "stakes_per_s": round(done / (last["t"] - prev["t"]), 1),
        "cpu_ms_per_stake": cpu("server", "ledger"),
        "server_cpu_ms_per_stake": cpu("server"),
        "ledger_cpu_ms_per_stake": cpu("ledger"),
        "readers_cpu_ms_per_stake": cpu("readers"),
        "all_cpu_ms_per_stake": cpu("server", "ledger", "readers"),
        "ledger_rss_mib": round(last["ledger_rss"] / 1024, 1),
        "server_rss_mib": round(last["server_rss"] / 1024, 1),
        "readers_rss_mib": round(last["readers_rss"] / 1024, 1),
    }


def _ratio(last: float, first: float) -> float:
    return round(last / first, 3) if first else float("nan")


def _rows(store: str, samples: list[dict[str, float]], per_coup: int) -> list[Row]:
    prefix = f"soak.{store}"
    minutes = [_minute(prev, last) for prev, last in itertools.pairwise(samples)]
    first, end = minutes[0], minutes[-1]
    end_sample = samples[-1]
    rows: list[Row] = [
        (f"{prefix}.minutes", float(len(minutes))),
        (f"{prefix}.stakes_per_coup", float(per_coup)),
        (f"{prefix}.stakes", end_sample["stakes"]),
        (f"{prefix}.coups", end_sample["coups"]),
        (f"{prefix}.shoes", end_sample["shoes"]),
        (f"{prefix}.errors", end_sample["errors"]),
        (f"{prefix}.refused_betting_closed", end_sample["refused"]),
        (f"{prefix}.first.cpu_ms_per_stake", first["cpu_ms_per_stake"]),
        (f"{prefix}.last.cpu_ms_per_stake", end["cpu_ms_per_stake"]),
        (f"{prefix}.cpu_last_to_first",
         _ratio(end["cpu_ms_per_stake"], first["cpu_ms_per_stake"])),
        (f"{prefix}.first.stakes_per_s", first["stakes_per_s"]),
        (f"{prefix}.last.stakes_per_s", end["stakes_per_s"]),
    ]
    for proc in ("server", "ledger", "readers", "all"):
        key = f"{proc}_cpu_ms_per_stake"
        rows += [(f"{prefix}.first.{key}", first[key]), (f"{prefix}.last.{key}", end[key]),
                 (f"{prefix}.{proc}_cpu_last_to_first", _ratio(end[key], first[key]))]
    for proc in ("ledger", "server", "readers"):
        sizes = [m[f"{proc}_rss_mib"] for m in minutes]
        rows += [(f"{prefix}.{proc}_rss_mib_after_first_minute", sizes[0]),
                 (f"{prefix}.{proc}_rss_mib_end", sizes[-1]),
                 (f"{prefix}.{proc}_rss_mib_max", max(sizes)),
                 (f"{prefix}.{proc}_rss_max_to_first", _ratio(max(sizes), sizes[0]))]
    for k, m in enumerate(minutes, 1):
        rows += [(f"{prefix}.m{k}.{key}", value) for key, value in m.items()]
    return rows


def measure(store: str, minutes: float, clients: int, per_coup: int,
            heap: Path | None = None) -> list[Row]:
    """The soak's rows; with ``heap``, the ledger process's heap snapshots each minute are
    written there (``bench._heap``: tracing costs that process time)."""
    with tempfile.TemporaryDirectory() as tmp:
        keys = Path(tmp) / "credentials.toml"
        admin = credentials.issue(keys, "bench-admin", Role.ADMIN)[1] or ""
        players = [credentials.issue(keys, f"p{i}", Role.PLAYER)[1] or ""
                   for i in range(clients)]
        url = f"sqlite:///{tmp}/soak.db" if store == "sqlite" else _pg_url()
        if url is None:
            raise RuntimeError("PostgreSQL unreachable (SABOT_PG_HOST/PORT/USER)")
        try:
            server = Server(url, keys, Path(tmp),
                            extra_env=None if heap is None else _heap.environment(heap))
            try:
                coups = _setup(server.target, admin, clients)
                samples = asyncio.run(_soak(server, admin, players, coups, minutes, per_coup))
            finally:
                server.stop()
        finally:
            if store != "sqlite":
                _drop_pg()
    return _rows(store, samples, per_coup)


def run() -> list[Row]:
    """For ``python -m bench soak``: a short soak (``SABOT_BENCH_SOAK_MINUTES``, default 2)."""
    return measure("sqlite", float(os.environ.get("SABOT_BENCH_SOAK_MINUTES", "2")), 32, 40)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--stakes-per-coup", type=int, default=40)
    parser.add_argument("--heap", type=Path, default=None, metavar="DIR",
                        help="write the ledger process's heap growth (tracemalloc, each "
                             "minute, by file:line) into DIR; its CPU figures then include "
                             "the tracing")
    args = parser.parse_args()
    for name, value in measure(args.store, args.minutes, args.clients, args.stakes_per_coup,
                               args.heap):
        print(f"{name:<48} {value}")
