"""The batch call (issue 25 item 2): stakes/s through gRPC placed ``PER_CALL`` (50) per
``BettingService.BatchStakes`` call, against the unary ``PlaceStake`` rate on the same server
and coups, on each store (``sabot serve``, the ledger in its own process), beside the same run's
floor: the no-op server's unary calls/s (``bench/_noop_server.py``, as ``bench.load``).

Rows per store: ``batch.<store>.c<N>.unary.stakes_per_s`` (N players, closed loop, one
PlaceStake at a time; its ``.server_cpu_ms_per_stake``), ``batch.<store>.c<N>.n50.stakes_per_s``
and ``.calls_per_s`` (each player one BatchStakes of 50 places at a time, not atomic),
``.call_p50_ms`` / ``.call_p99_ms``, ``.errors`` (failed calls and refused items),
``.server_cpu_ms_per_stake`` (server + ledger process, from /proc; split
``.server_process_cpu_ms_per_stake`` / ``.ledger_cpu_ms_per_stake``: the figures that depend
least on the machine's load),
``.to_unary`` (the batch's stakes/s over the unary's) and ``.floor_ratio`` (the batch's
stakes/s over the no-op server's unary calls/s). The coups: 16, open for the whole run (the
unary stakes first, then the batches). ``SABOT_BENCH_QUICK=1``: 4 s per phase instead of 8;
``SABOT_BENCH_CLIENTS`` (default 8: fewer callers than ``bench.load``, each a terminal sending
whole layouts); PostgreSQL measured when reachable. ``python -m bench.batch`` prints the rows.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
import uuid
from pathlib import Path

import grpc

from bench._support import drop_pg_database, fresh_pg_database, percentile
from bench.load import Server, _children, _cpu_of, _load, _setup, measure_noop
from services.api import credentials
from services.api.gen.sabot.v1 import betting_pb2, betting_pb2_grpc, common_pb2
from services.api.roles import Role

Row = tuple[str, float]
PER_CALL = 50
PG_DB = f"sabot_bench_batch_{os.getpid()}"
_CHANCES = (common_pb2.CHANCE_NOIR, common_pb2.CHANCE_COULEUR)  # never opposed


async def _batches(target: str, tokens: list[str], coups: list[str], seconds: float
                   ) -> tuple[list[float], int, int]:
    """Each player sends one batch of ``PER_CALL`` places at a time: call latencies, stakes
    placed, errors (failed calls and refused items)."""
    call_ms: list[float] = []
    placed = errors = 0
    async with grpc.aio.insecure_channel(target) as channel:
        betting = betting_pb2_grpc.BettingServiceStub(channel)
        deadline = time.perf_counter() + seconds

        async def terminal(i: int) -> None:
            nonlocal placed, errors
            metadata = (("authorization", f"Bearer {tokens[i]}"),)
            coup = coups[i % len(coups)]
            items = [betting_pb2.StakeItem(
                action=betting_pb2.STAKE_ACTION_PLACE, account=f"accounts/p{i}",
                chance=_CHANCES[k % 2], amount=common_pb2.Money(amount_minor=100))
                for k in range(PER_CALL)]
            while time.perf_counter() < deadline:
                request = betting_pb2.BatchStakesRequest(request_id=uuid.uuid4().hex,
                                                         coup=coup, stakes=items)
                started = time.perf_counter()
                try:
                    answer = await betting.BatchStakes(request, metadata=metadata, timeout=30)
                except grpc.aio.AioRpcError:
                    errors += 1
                    continue
                call_ms.append((time.perf_counter() - started) * 1000)
                placed += answer.accepted
                errors += PER_CALL - answer.accepted

        await asyncio.gather(*(terminal(i) for i in range(len(tokens))))
    return call_ms, placed, errors


def measure(store_name: str, url: str, clients: int, seconds: float) -> list[Row]:
    """The unary rate, then the batch rate, on one server of the store ``url``."""
    with tempfile.TemporaryDirectory() as tmp:
        keys = Path(tmp) / "credentials.toml"
        admin = credentials.issue(keys, "bench-admin", Role.ADMIN)[1] or ""
        players = [credentials.issue(keys, f"p{i}", Role.PLAYER)[1] or ""
                   for i in range(clients)]
        server = Server(url.replace("{tmp}", tmp), keys, Path(tmp))
        try:
            coups = _setup(server.target, admin, clients)
            children = _children(server.proc.pid)
            unary_cpu = _cpu_of(server.proc.pid) + sum(_cpu_of(c) for c in children)
            started = time.perf_counter()
            _, _, unary_errors, unary = asyncio.run(
                _load(server.target, players, coups, seconds))
            unary_rate = unary / (time.perf_counter() - started)
            unary_cpu = _cpu_of(server.proc.pid) + sum(_cpu_of(c) for c in children) - unary_cpu
            own, ledger = _cpu_of(server.proc.pid), sum(_cpu_of(c) for c in children)
            started = time.perf_counter()
            call_ms, placed, errors = asyncio.run(
                _batches(server.target, players, coups, seconds))
            elapsed = time.perf_counter() - started
            own = _cpu_of(server.proc.pid) - own
            ledger = sum(_cpu_of(c) for c in children) - ledger
            cpu = own + ledger
        finally:
            server.stop()
    prefix = f"batch.{store_name}.c{clients}"
    rate = placed / elapsed
    return [
        (f"{prefix}.unary.stakes_per_s", round(unary_rate, 1)),
        (f"{prefix}.unary.errors", float(unary_errors)),
        (f"{prefix}.unary.server_cpu_ms_per_stake", round(1000 * unary_cpu / max(unary, 1), 4)),
        (f"{prefix}.n{PER_CALL}.stakes_per_s", round(rate, 1)),
        (f"{prefix}.n{PER_CALL}.calls_per_s", round(len(call_ms) / elapsed, 1)),
        (f"{prefix}.n{PER_CALL}.call_p50_ms", round(percentile(call_ms, 0.50), 2)),
        (f"{prefix}.n{PER_CALL}.call_p99_ms", round(percentile(call_ms, 0.99), 2)),
        (f"{prefix}.n{PER_CALL}.errors", float(errors)),
        (f"{prefix}.n{PER_CALL}.server_cpu_ms_per_stake", round(1000 * cpu / max(placed, 1), 4)),
        (f"{prefix}.n{PER_CALL}.server_process_cpu_ms_per_stake",
         round(1000 * own / max(placed, 1), 4)),
        (f"{prefix}.n{PER_CALL}.ledger_cpu_ms_per_stake",
         round(1000 * ledger / max(placed, 1), 4)),
        (f"{prefix}.n{PER_CALL}.to_unary", round(rate / unary_rate, 2) if unary_rate else
         float("nan")),
        (f"{prefix}.coups", float(len(coups))),
    ]


def _floor(rows: list[Row]) -> float:
    return next(v for k, v in rows if k.endswith(".stakes_per_s"))


def run(quick: bool | None = None) -> list[Row]:
    """Every row; the no-op floor measured before, between and after the stores."""
    if quick is None:
        quick = os.environ.get("SABOT_BENCH_QUICK") == "1"
    seconds = 4.0 if quick else 8.0
    clients = int(os.environ.get("SABOT_BENCH_CLIENTS", "8"))
    noop = measure_noop(clients, seconds / 2)
    floors = [_floor(noop)]
    measured = [measure("sqlite", "sqlite:///{tmp}/batch.db", clients, seconds)]
    floors.append(_floor(measure_noop(clients, seconds / 2)))
    url = fresh_pg_database(PG_DB)
    if url is None and os.environ.get("SABOT_REQUIRE_POSTGRES") == "1":
        raise RuntimeError("PostgreSQL unreachable and SABOT_REQUIRE_POSTGRES=1")
    if url is not None:
        try:
            measured.append(measure("postgres", url, clients, seconds))
        finally:
            drop_pg_database(PG_DB)
        floors.append(_floor(measure_noop(clients, seconds / 2)))
    floor = sum(floors) / len(floors)
    rows: list[Row] = [(f"batch.noop_server.c{clients}.calls_per_s", round(floor, 1))]
    for store in measured:
        rows += store
        rate = next(v for k, v in store if k.endswith(f".n{PER_CALL}.stakes_per_s"))
        name = next(k for k, _ in store if k.endswith(f".n{PER_CALL}.stakes_per_s"))
        rows.append((name.removesuffix(".stakes_per_s") + ".floor_ratio",
                     round(rate / floor, 2) if floor else float("nan")))
    return rows


if __name__ == "__main__":
    for row_name, value in run():
        print(f"{row_name:<52} {value}")
