"""Stakes per second through ``sabot serve`` on the Patroni cluster (``make ha-up``: three
PostgreSQL 15 nodes, synchronous replication with ``synchronous_mode_strict``, the server
reaching the primary through HAProxy on 127.0.0.1:5480) beside the same run's figure on a single
PostgreSQL (``SABOT_PG_PORT``, as ``bench.load``'s) and the no-op server (the floor), as a ratio.

The load is ``bench.load``'s (32 players of their own tokens staking on 16 open coups, closed
loop, the ledger in a process of its own). The runs alternate so that the machine's drift is
shared: floor, single, cluster, floor, cluster, single, floor (``--rounds`` pairs, default 2);
each figure is the mean of its runs, each store's ``floor_ratio`` is its stakes/s to the mean
floor, and ``ha.patroni_to_single`` is the cluster's stakes/s to the single PostgreSQL's.

What the cluster adds to a commit: the standby's acknowledgement (a round trip to it and its
WAL flush: ``synchronous_commit = on``) and the proxy's hop. ``make bench-ha`` brings a fresh
cluster up, runs this and takes it down; without a cluster (``python -m bench`` with none up)
``run()`` has no rows. ``python -m bench.ha [--seconds S] [--rounds N]`` prints the rows.
"""

from __future__ import annotations

import os
import sys
from contextlib import suppress
from pathlib import Path

import psycopg

from bench._support import Row, drop_pg_database, fresh_pg_database
from bench.load import _rate, measure, measure_noop

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ops" / "patroni"))
import cluster

DB = f"sabot_bench_ha_{os.getpid()}"
ADMIN = f"host=127.0.0.1 port={cluster.PROXY} user=postgres dbname=postgres connect_timeout=3"


def _cluster_db() -> str | None:
    """A fresh database on the cluster's primary (through HAProxy); None: no cluster up."""
    try:
        with psycopg.connect(ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{DB}"')
    except psycopg.OperationalError:
        return None
    return f"postgresql://postgres@127.0.0.1:{cluster.PROXY}/{DB}"


def _drop_cluster_db() -> None:
    with suppress(psycopg.OperationalError), psycopg.connect(ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def compare(seconds: float = 10.0, rounds: int = 2, clients: int = 32) -> list[Row]:
    floors: list[float] = []
    rates: dict[str, list[float]] = {"patroni": [], "single": []}
    cpu: dict[str, list[float]] = {"patroni": [], "single": []}
    p99: dict[str, list[float]] = {"patroni": [], "single": []}
    errors = 0.0

    def floor() -> None:
        floors.append(_rate(measure_noop(clients, seconds / 2)))

    def store(which: str) -> None:
        nonlocal errors
        url = _cluster_db() if which == "patroni" else fresh_pg_database(DB)
        if url is None:
            raise RuntimeError(f"{which}: PostgreSQL unreachable")
        try:
            rows = dict(measure(which, url, clients, seconds))
        finally:
            (_drop_cluster_db if which == "patroni" else lambda: drop_pg_database(DB))()
        prefix = f"load.{which}.c{clients}"
        rates[which].append(rows[f"{prefix}.stakes_per_s"])
        cpu[which].append(rows[f"{prefix}.server_cpu_ms_per_stake"])
        p99[which].append(rows[f"{prefix}.stake_p99_ms"])
        errors += rows[f"{prefix}.errors"]

    floor()
    for n in range(rounds):
        for which in (("single", "patroni") if n % 2 == 0 else ("patroni", "single")):
            store(which)
        floor()
    base = _mean(floors)
    out: list[Row] = [(f"ha.noop_server.c{clients}.stakes_per_s", round(base, 1))]
    for which in ("single", "patroni"):
        rate = _mean(rates[which])
        out += [(f"ha.{which}.c{clients}.stakes_per_s", round(rate, 1)),
                (f"ha.{which}.c{clients}.stake_p99_ms", round(_mean(p99[which]), 2)),
                (f"ha.{which}.c{clients}.server_cpu_ms_per_stake", round(_mean(cpu[which]), 3)),
                (f"ha.{which}.c{clients}.floor_ratio", round(rate / base, 3))]
    out += [(f"ha.c{clients}.patroni_to_single",
             round(_mean(rates["patroni"]) / _mean(rates["single"]), 3)),
            (f"ha.c{clients}.runs_each", float(rounds)), (f"ha.c{clients}.errors", errors)]
    return out


def run() -> list[Row]:
    if _cluster_db() is None:
        print(f"bench.ha: no Patroni cluster on 127.0.0.1:{cluster.PROXY} (make bench-ha "
              "brings one up)", file=sys.stderr)
        return []
    _drop_cluster_db()
    seconds = 5.0 if os.environ.get("SABOT_BENCH_QUICK") == "1" else 10.0
    return compare(seconds, clients=int(os.environ.get("SABOT_BENCH_CLIENTS", "32")))


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--clients", type=int,
                        default=int(os.environ.get("SABOT_BENCH_CLIENTS", "32")))
    args = parser.parse_args()
    if _cluster_db() is None:
        raise SystemExit(f"bench.ha: no Patroni cluster on 127.0.0.1:{cluster.PROXY}: "
                         "make bench-ha (or make ha-up first)")
    _drop_cluster_db()
    for name, value in compare(args.seconds, args.rounds, args.clients):
        print(f"{name:<48} {value}")
