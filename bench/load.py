"""Load on the gRPC API: N concurrent clients placing stakes on open coups (closed loop), with a
health check measured in the same run. The server runs in its own process (``sabot serve``).

``run()`` returns rows of (name, value): stakes/s and p50/p99 latency per store, the health
check's p50/p99 under that load, and the server's processor time per stake
(``server_cpu_ms_per_stake``, from /proc, the ledger process included: the figure that depends
least on what else the machine runs); each store with the ledger in its own process (the
default) and in one process (``.single_process``). ``load.floor``: the trivial health check alone
from as many callers, what gRPC itself costs here (client and server are Python);
``load.noop_server``: the same stake load against a server whose PlaceStake does nothing
(``bench/_noop_server.py``), the floor under every stake figure.
``SABOT_BENCH_QUICK=1``: 5 s per store instead of 10; ``SABOT_BENCH_CLIENTS`` (default
32); PostgreSQL is measured when reachable. ``python -m bench.load`` prints the rows.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from bench._support import drop_pg_database, fresh_pg_database, percentile
from services.api.client import Client
from services.api.gen.sabot.v1 import (
    betting_pb2,
    betting_pb2_grpc,
    cashier_pb2,
    common_pb2,
    table_pb2,
)

Row = tuple[str, float]
TABLES = 16
PG_DB = f"sabot_bench_api_{os.getpid()}"  # per run: parallel runs must not drop it
ROOT = Path(__file__).resolve().parents[1]


def _pg_url() -> str | None:
    return fresh_pg_database(PG_DB)


def _drop_pg() -> None:
    drop_pg_database(PG_DB)


class Server:
    """``sabot serve`` in a subprocess, on a free port."""

    def __init__(self, store: str, tokens: str, workdir: Path, single: bool = False) -> None:
        env = {**os.environ, "SABOT_TOKENS": tokens, "SABOT_SEAL_KEY": os.urandom(32).hex(),
               "PYTHONUNBUFFERED": "1"}
        self.log = (workdir / "server.log").open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "services.cli.server", "serve", "--listen", "127.0.0.1:0",
             "--store", store, *(["--single-process"] if single else []),
             "--env-file", str(workdir / "none.env")],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=self.log, text=True)
        # (the ledger process, a child, is counted in ``cpu_seconds``)
        assert self.proc.stdout is not None
        self.target = ""
        for line in self.proc.stdout:
            if "listening on" in line:
                self.target = line.split("listening on ")[1].split()[0]
                break
        if not self.target:
            raise RuntimeError("the server did not start; see " + str(workdir / "server.log"))

    def cpu_seconds(self) -> float:
        """User + system time so far of the server process and its children (the ledger
        process, with ``--ledger-process``); NaN where /proc is missing."""
        return sum(_cpu_of(pid) for pid in (self.proc.pid, *_children(self.proc.pid)))

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def _cpu_of(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    """The direct children of ``pid`` (from /proc)."""
    found = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    if int(stat.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    return found


def _setup(target: str, admin: str, clients: int) -> list[str]:
    """Tables with an open coup each, and one funded account per client: the coups' names."""
    api = Client(target, admin)
    coups = []
    try:
        for t in range(TABLES):
            table = api.tables.OpenTable(table_pb2.OpenTableRequest(
                request_id=f"bench-t{t}", table_id=f"bench-{t}"))
            shoe = api.tables.OpenShoe(table_pb2.OpenShoeRequest(
                request_id=f"bench-s{t}", parent=table.name))
            api.tables.CutShoe(table_pb2.CutShoeRequest(
                request_id=f"bench-c{t}", name=shoe.name, cut_position=100, cut_by="bench"))
            coups.append(api.tables.OpenCoup(table_pb2.OpenCoupRequest(
                request_id=f"bench-o{t}", parent=shoe.name)).name)
        for i in range(clients):
            api.cashier.OpenAccount(cashier_pb2.OpenAccountRequest(
                request_id=f"bench-a{i}", account_id=f"p{i}"))
            api.cashier.Deposit(cashier_pb2.DepositRequest(
                request_id=f"bench-d{i}", name=f"accounts/p{i}",
                amount=common_pb2.Money(amount_minor=10**11)))
    finally:
        api.close()
    return coups


async def _load(target: str, tokens: list[str], coups: list[str], seconds: float
                ) -> tuple[list[float], list[float], int, int]:
    stake_ms: list[float] = []
    health_ms: list[float] = []
    errors = 0
    async with grpc.aio.insecure_channel(target) as channel:
        betting = betting_pb2_grpc.BettingServiceStub(channel)
        health = health_pb2_grpc.HealthStub(channel)
        deadline = time.perf_counter() + seconds

        async def player(i: int) -> None:
            nonlocal errors
            metadata = (("authorization", f"Bearer {tokens[i]}"),)
            coup = coups[i % len(coups)]
            while time.perf_counter() < deadline:
                request = betting_pb2.PlaceStakeRequest(
                    request_id=uuid.uuid4().hex, coup=coup, account=f"accounts/p{i}",
                    chance=common_pb2.CHANCE_NOIR, amount=common_pb2.Money(amount_minor=100))
                started = time.perf_counter()
                try:
                    await betting.PlaceStake(request, metadata=metadata, timeout=10)
                except grpc.aio.AioRpcError:
                    errors += 1
                    continue
                stake_ms.append((time.perf_counter() - started) * 1000)

        async def prober() -> None:
            request = health_pb2.HealthCheckRequest(service="")
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                await health.Check(request, timeout=10)
                health_ms.append((time.perf_counter() - started) * 1000)
                await asyncio.sleep(0.005)

        await asyncio.gather(*(player(i) for i in range(len(tokens))), prober())
    return stake_ms, health_ms, errors, len(stake_ms)


async def _health_only(target: str, clients: int, seconds: float) -> list[float]:
    """The floor: ``clients`` callers of the trivial health check, back to back, no stakes."""
    latencies: list[float] = []
    async with grpc.aio.insecure_channel(target) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        deadline = time.perf_counter() + seconds

        async def caller() -> None:
            request = health_pb2.HealthCheckRequest(service="")
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                await health.Check(request, timeout=10)
                latencies.append((time.perf_counter() - started) * 1000)

        await asyncio.gather(*(caller() for _ in range(clients)))
    return latencies


def measure_noop(clients: int, seconds: float) -> list[Row]:
    """The same stake load against a server whose PlaceStake does nothing (``_noop_server``)."""
    proc = subprocess.Popen([sys.executable, "-m", "bench._noop_server", "0"], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        target = proc.stdout.readline().split()[1]
        cpu = _cpu_of(proc.pid)
        own = time.process_time()
        started = time.perf_counter()
        stake_ms, _, errors, done = asyncio.run(
            _load(target, ["none"] * clients, ["tables/t/shoes/s/coups/c"], seconds))
        elapsed = time.perf_counter() - started
        cpu = _cpu_of(proc.pid) - cpu
        own = time.process_time() - own
    finally:
        proc.terminate()
        proc.wait()
    prefix = f"load.noop_server.c{clients}"
    return [
        (f"{prefix}.stakes_per_s", round(done / elapsed, 1)),
        (f"{prefix}.stake_p50_ms", round(percentile(stake_ms, 0.50), 2)),
        (f"{prefix}.stake_p99_ms", round(percentile(stake_ms, 0.99), 2)),
        (f"{prefix}.errors", float(errors)),
        (f"{prefix}.server_cpu_ms_per_stake", round(1000 * cpu / max(done, 1), 3)),
        (f"{prefix}.client_cpu_ms_per_stake", round(1000 * own / max(done, 1), 3)),
    ]


def measure(store_name: str, url: str, clients: int, seconds: float, *, single: bool = False,
            floor: bool = False) -> list[Row]:
    """Stakes from ``clients`` players for ``seconds`` against ``sabot serve`` (the ledger in a
    process of its own, or with ``single`` in the server's). ``floor``: first the trivial
    health check alone from as many callers (what gRPC itself costs here)."""
    players = [f"bench-player-{i}-{uuid.uuid4().hex[:8]}" for i in range(clients)]
    admin = f"bench-admin-{uuid.uuid4().hex}"
    spec = ",".join([f"{admin}:admin", *(f"{t}:player:p{i}" for i, t in enumerate(players))])
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = url.replace("{tmp}", tmp)
        server = Server(store, spec, Path(tmp), single=single)
        try:
            coups = _setup(server.target, admin, clients)
            if floor:
                cpu = server.cpu_seconds()
                own = time.process_time()
                started = time.perf_counter()
                health_only = asyncio.run(_health_only(server.target, clients, seconds / 2))
                elapsed = time.perf_counter() - started
                cpu = server.cpu_seconds() - cpu
                own = time.process_time() - own
                rows += [
                    (f"load.floor.c{clients}.health_per_s", round(len(health_only) / elapsed, 1)),
                    (f"load.floor.c{clients}.health_p50_ms",
                     round(percentile(health_only, 0.5), 2)),
                    (f"load.floor.c{clients}.health_p99_ms",
                     round(percentile(health_only, 0.99), 2)),
                    (f"load.floor.c{clients}.server_cpu_ms_per_call",
                     round(1000 * cpu / max(len(health_only), 1), 3)),
                    (f"load.floor.c{clients}.client_cpu_ms_per_call",
                     round(1000 * own / max(len(health_only), 1), 3)),
                ]
            cpu = server.cpu_seconds()
            own = time.process_time()  # the load generator's (this process's) processor time
            started = time.perf_counter()
            stake_ms, health_ms, errors, done = asyncio.run(
                _load(server.target, players, coups, seconds))
            elapsed = time.perf_counter() - started
            cpu = server.cpu_seconds() - cpu
            own = time.process_time() - own
        finally:
            server.stop()
    prefix = f"load.{store_name}{'.single_process' if single else ''}.c{clients}"
    return [
        *rows,
        (f"{prefix}.stakes_per_s", round(done / elapsed, 1)),
        (f"{prefix}.stake_p50_ms", round(percentile(stake_ms, 0.50), 2)),
        (f"{prefix}.stake_p99_ms", round(percentile(stake_ms, 0.99), 2)),
        (f"{prefix}.health_p50_ms", round(percentile(health_ms, 0.50), 2)),
        (f"{prefix}.health_p99_ms", round(percentile(health_ms, 0.99), 2)),
        (f"{prefix}.errors", float(errors)),
        (f"{prefix}.server_cpu_ms_per_stake", round(1000 * cpu / max(done, 1), 3)),
        (f"{prefix}.client_cpu_ms_per_stake", round(1000 * own / max(done, 1), 3)),
    ]


def run(quick: bool | None = None) -> list[Row]:
    if quick is None:
        quick = os.environ.get("SABOT_BENCH_QUICK") == "1"
    seconds = 5.0 if quick else 10.0
    clients = int(os.environ.get("SABOT_BENCH_CLIENTS", "32"))
    rows = measure_noop(clients, seconds / 2)
    rows += measure("sqlite", "sqlite:///{tmp}/load.db", clients, seconds, floor=True)
    rows += measure("sqlite", "sqlite:///{tmp}/load.db", clients, seconds, single=True)
    url = _pg_url()
    if url is not None:
        try:
            rows += measure("postgres", url, clients, seconds)
        finally:
            _drop_pg()
        url = _pg_url()
        assert url is not None
        try:
            rows += measure("postgres", url, clients, seconds, single=True)
        finally:
            _drop_pg()
    elif os.environ.get("SABOT_REQUIRE_POSTGRES") == "1":
        raise RuntimeError("PostgreSQL unreachable and SABOT_REQUIRE_POSTGRES=1")
    return rows


if __name__ == "__main__":
    for name, value in run():
        print(f"{name:<44} {value}")
