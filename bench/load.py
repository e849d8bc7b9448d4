"""Load on the gRPC API: N concurrent clients placing stakes on open coups (closed loop), with a
health check measured in the same run. The server runs in its own process (``sabot serve``).

``run()`` returns rows of (name, value): stakes/s and p50/p99 latency per store, the health
check's p50/p99 under that load, and the server's processor time per stake
(``server_cpu_ms_per_stake``, from /proc, the ledger process included: the figure that depends
least on what else the machine runs), split: ``server_process_`` (the gRPC server's),
``ledger_`` (the ledger process's), ``read_models_`` (the read models' process's, a child of
the ledger process; with one process they are the server's) and ``all_`` (the three); and
the waits of the server's threads and of the ledger process's per stake
(``server_process_switches_per_stake``, ``ledger_switches_per_stake``: their voluntary
context switches, from /proc; the no-op server's ``server_switches_per_stake`` beside); each
measurement starts once the server and its processes are idle after the set-up; each store
with the ledger in its own process (the default) and in one process (``.single_process``),
and SQLite over TLS (``.tls``). The callers are named principals of a credentials file
(hashed tokens), as ``sabot serve`` is deployed.
``load.floor``: the trivial health check alone from as many callers, what gRPC itself costs
here (client and server are Python); ``load.noop_server``: the same stake load against a
server whose PlaceStake does nothing (``bench/_noop_server.py``), the floor under every stake
figure (``load.noop_server.tls``: the same over TLS).
The coups' sizes are stated (``.coups``, ``.stakes_per_coup_at_end``: the coups are open for
the whole run and grow from 0 stakes to that). ``SABOT_BENCH_QUICK=1``: 5 s per store instead
of 10; ``SABOT_BENCH_CLIENTS`` (default 32); PostgreSQL is measured when reachable.
``python -m bench.load`` prints the rows.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from bench._support import drop_pg_database, fresh_pg_database, percentile
from services.api import credentials
from services.api.client import Client
from services.api.gen.sabot.v1 import (
    betting_pb2,
    betting_pb2_grpc,
    cashier_pb2,
    common_pb2,
    table_pb2,
)
from services.api.roles import Role

Row = tuple[str, float]
TABLES = 16
PG_DB = f"sabot_bench_api_{os.getpid()}"  # per run: parallel runs must not drop it
ROOT = Path(__file__).resolve().parents[1]


def _pg_url() -> str | None:
    return fresh_pg_database(PG_DB)


def _drop_pg() -> None:
    drop_pg_database(PG_DB)


class Tls:
    """A CA and a server certificate for 127.0.0.1 (``cryptography``), in a folder."""

    def __init__(self, folder: Path) -> None:
        import datetime
        import ipaddress

        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        now = datetime.datetime.now(datetime.UTC)
        pem = serialization.Encoding.PEM

        def build(name: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Name,
                  signer: ec.EllipticCurvePrivateKey, ca: bool) -> x509.Certificate:
            builder = (x509.CertificateBuilder()
                       .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
                       .issuer_name(issuer).public_key(key.public_key())
                       .serial_number(x509.random_serial_number())
                       .not_valid_before(now - datetime.timedelta(minutes=5))
                       .not_valid_after(now + datetime.timedelta(days=1))
                       .add_extension(x509.BasicConstraints(ca=ca, path_length=None), True))
            if not ca:
                builder = builder.add_extension(x509.SubjectAlternativeName(
                    [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            return builder.sign(signer, hashes.SHA256())

        ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(
            ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "bench ca")])
        self.ca, self.cert, self.key = folder / "ca.pem", folder / "cert.pem", folder / "key.pem"
        self.ca.write_bytes(build("bench ca", ca_key, ca_name, ca_key, True).public_bytes(pem))
        self.cert.write_bytes(build("bench", key, ca_name, ca_key, False).public_bytes(pem))
        self.key.write_bytes(key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))

    def channel(self, target: str) -> grpc.aio.Channel:
        return grpc.aio.secure_channel(target, grpc.ssl_channel_credentials(
            self.ca.read_bytes()))


def _channel(target: str, tls: Tls | None) -> grpc.aio.Channel:
    return grpc.aio.insecure_channel(target) if tls is None else tls.channel(target)


class Server:
    """``sabot serve`` in a subprocess, on a free port, its callers in a credentials file."""

    def __init__(self, store: str, keys: Path, workdir: Path, single: bool = False,
                 tls: Tls | None = None, extra_env: dict[str, str] | None = None) -> None:
        env = {**os.environ, "SABOT_CREDENTIALS": str(keys),
               "SABOT_SEAL_KEY": os.urandom(32).hex(), "SABOT_CHAIN_KEY": os.urandom(32).hex(),
               "PYTHONUNBUFFERED": "1", **(extra_env or {})}
        env.pop("SABOT_TOKENS", None)
        self.log = (workdir / "server.log").open("w")
        secure = [] if tls is None else ["--tls-cert", str(tls.cert), "--tls-key", str(tls.key)]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "services.cli.server", "serve", "--listen", "127.0.0.1:0",
             "--store", store, *(["--single-process"] if single else []), *secure,
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
        """User + system time so far of the server process and every process under it (the
        ledger process and the read models', with ``--ledger-process``); NaN where /proc is
        missing."""
        return sum(_cpu_of(pid) for pid in (self.proc.pid, *_descendants(self.proc.pid)))

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


def _switches_of(pid: int) -> float:
    """The voluntary context switches so far of every thread of ``pid`` (its ``/proc`` tasks;
    a thread that ended meanwhile is not counted); NaN where /proc is missing. A thread
    switches once each time it waits (for a lock, the interpreter lock, a queue, a socket):
    under load this counts the hand-overs between threads, the kernel's share of the
    process's processor time."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return float("nan")
    total = 0
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/status") as status:
                for line in status:
                    if line.startswith("voluntary_ctxt_switches:"):
                        total += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return float(total)


def _descendants(pid: int) -> list[int]:
    """Every process under ``pid`` (its children, theirs, ...)."""
    found = []
    for child in _children(pid):
        found += [child, *_descendants(child)]
    return found


def _is_read_models(pid: int) -> bool:
    """Whether ``pid`` is the read models' process (``--read-models``)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return b"--read-models" in cmdline.read().split(b"\0")
    except OSError:
        return False


def _settle(pid: int, timeout: float = 60.0) -> None:
    """Wait until ``pid`` and every process under it are idle (under 5 % of a processor over
    0.5 s) and the read models' process, if any comes within 10 s, has started: so that a
    measurement counts the load, not a start (that process's imports, its catch-up of the
    set-up's events)."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        pids = [pid, *_descendants(pid)]
        before = sum(_cpu_of(p) for p in pids)
        time.sleep(0.5)
        idle = sum(_cpu_of(p) for p in pids) - before < 0.025
        if idle and (any(map(_is_read_models, pids)) or time.monotonic() - started > 10):
            return


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


def _setup(target: str, admin: str, clients: int, tls: Tls | None = None) -> list[str]:
    """Tables with an open coup each, and one funded account per client: the coups' names."""
    api = Client(target, admin, tls_ca=None if tls is None else tls.ca)
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


async def _load(target: str, tokens: list[str], coups: list[str], seconds: float,
                tls: Tls | None = None) -> tuple[list[float], list[float], int, int]:
    stake_ms: list[float] = []
    health_ms: list[float] = []
    errors = 0
    async with _channel(target, tls) as channel:
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


def measure_noop(clients: int, seconds: float, tls: Tls | None = None) -> list[Row]:
    """The same stake load against a server whose PlaceStake does nothing (``_noop_server``)."""
    secure = [] if tls is None else [str(tls.cert), str(tls.key)]
    proc = subprocess.Popen([sys.executable, "-m", "bench._noop_server", "0", *secure],
                            cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        target = proc.stdout.readline().split()[1]
        cpu, switches = _cpu_of(proc.pid), _switches_of(proc.pid)
        own = time.process_time()
        started = time.perf_counter()
        stake_ms, _, errors, done = asyncio.run(
            _load(target, ["none"] * clients, ["tables/t/shoes/s/coups/c"], seconds, tls))
        elapsed = time.perf_counter() - started
        cpu = _cpu_of(proc.pid) - cpu
        switches = _switches_of(proc.pid) - switches
        own = time.process_time() - own
    finally:
        proc.terminate()
        proc.wait()
    prefix = f"load.noop_server{'' if tls is None else '.tls'}.c{clients}"
    return [
        (f"{prefix}.stakes_per_s", round(done / elapsed, 1)),
        (f"{prefix}.stake_p50_ms", round(percentile(stake_ms, 0.50), 2)),
        (f"{prefix}.stake_p99_ms", round(percentile(stake_ms, 0.99), 2)),
        (f"{prefix}.errors", float(errors)),
        (f"{prefix}.server_cpu_ms_per_stake", round(1000 * cpu / max(done, 1), 3)),
        (f"{prefix}.server_switches_per_stake", round(switches / max(done, 1), 2)),
        (f"{prefix}.client_cpu_ms_per_stake", round(1000 * own / max(done, 1), 3)),
    ]


def measure(store_name: str, url: str, clients: int, seconds: float, *, single: bool = False,
            floor: bool = False, secure: bool = False) -> list[Row]:
    """Stakes from ``clients`` players for ``seconds`` against ``sabot serve`` (the ledger in a
    process of its own, or with ``single`` in the server's; ``secure``: over TLS). ``floor``:
    first the trivial health check alone from as many callers (what gRPC itself costs here)."""
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        keys = Path(tmp) / "credentials.toml"
        admin = credentials.issue(keys, "bench-admin", Role.ADMIN)[1] or ""
        players = [credentials.issue(keys, f"p{i}", Role.PLAYER)[1] or ""
                   for i in range(clients)]
        tls = Tls(Path(tmp)) if secure else None
        store = url.replace("{tmp}", tmp)
        server = Server(store, keys, Path(tmp), single=single, tls=tls)
        try:
            coups = _setup(server.target, admin, clients, tls)
            _settle(server.proc.pid)
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
            pid = server.proc.pid
            under = _descendants(pid)  # the ledger process, and its child the read models'
            readers = [c for c in under if _is_read_models(c)]
            ledgers = [c for c in under if c not in readers]
            mine, ledger = _cpu_of(pid), sum(_cpu_of(c) for c in ledgers)
            switches = _switches_of(pid), sum(_switches_of(c) for c in ledgers)
            reading = sum(_cpu_of(c) for c in readers)
            own = time.process_time()  # the load generator's (this process's) processor time
            started = time.perf_counter()
            stake_ms, health_ms, errors, done = asyncio.run(
                _load(server.target, players, coups, seconds, tls))
            elapsed = time.perf_counter() - started
            mine = _cpu_of(pid) - mine
            ledger = sum(_cpu_of(c) for c in ledgers) - ledger
            reading = sum(_cpu_of(c) for c in readers) - reading
            switches = (_switches_of(pid) - switches[0],
                        sum(_switches_of(c) for c in ledgers) - switches[1])
            cpu = mine + ledger
            own = time.process_time() - own
        finally:
            server.stop()
    mode = (".single_process" if single else "") + (".tls" if secure else "")
    prefix = f"load.{store_name}{mode}.c{clients}"
    return [
        *rows,
        (f"{prefix}.stakes_per_s", round(done / elapsed, 1)),
        (f"{prefix}.stake_p50_ms", round(percentile(stake_ms, 0.50), 2)),
        (f"{prefix}.stake_p99_ms", round(percentile(stake_ms, 0.99), 2)),
        (f"{prefix}.health_p50_ms", round(percentile(health_ms, 0.50), 2)),
        (f"{prefix}.health_p99_ms", round(percentile(health_ms, 0.99), 2)),
        (f"{prefix}.errors", float(errors)),
        (f"{prefix}.server_cpu_ms_per_stake", round(1000 * cpu / max(done, 1), 3)),
        (f"{prefix}.server_process_cpu_ms_per_stake", round(1000 * mine / max(done, 1), 3)),
        (f"{prefix}.ledger_cpu_ms_per_stake", round(1000 * ledger / max(done, 1), 3)),
        # the threads' waits (voluntary context switches) per stake, each process's own
        (f"{prefix}.server_process_switches_per_stake", round(switches[0] / max(done, 1), 2)),
        (f"{prefix}.ledger_switches_per_stake", round(switches[1] / max(done, 1), 2)),
        # the read models' process (a child of the ledger process; none with one process)
        (f"{prefix}.read_models_cpu_ms_per_stake", round(1000 * reading / max(done, 1), 3)),
        (f"{prefix}.all_cpu_ms_per_stake", round(1000 * (cpu + reading) / max(done, 1), 3)),
        (f"{prefix}.client_cpu_ms_per_stake", round(1000 * own / max(done, 1), 3)),
        # the coups' sizes: every stake lands on one of the open coups (player i on coup
        # i mod coups), none is settled during the run: each coup grows from 0 to this
        (f"{prefix}.coups", float(len(coups))),
        (f"{prefix}.stakes_per_coup_at_end", round(done / max(len(coups), 1), 1)),
    ]


def _rate(rows: list[Row], suffix: str = ".stakes_per_s") -> float:
    return next(v for k, v in rows if k.endswith(suffix))


def _with_ratio(measured: list[Row], floors: tuple[float, float]) -> list[Row]:
    """``measured`` with its ``floor_ratio``: its stakes/s to the no-op server's, measured just
    before and just after it (their mean)."""
    name = next(k for k, _ in measured if k.endswith(".stakes_per_s") and "floor" not in k)
    floor = sum(floors) / 2
    return [*measured, (name.removesuffix(".stakes_per_s") + ".floor_ratio",
                        round(_rate(measured) / floor, 3) if floor else float("nan"))]


def _postgres(measure_on: Callable[[str], list[Row]]) -> list[Row]:
    """``measure_on(url)`` on a fresh PostgreSQL database (none: PostgreSQL unreachable)."""
    url = _pg_url()
    if url is None:
        if os.environ.get("SABOT_REQUIRE_POSTGRES") == "1":
            raise RuntimeError("PostgreSQL unreachable and SABOT_REQUIRE_POSTGRES=1")
        return []
    try:
        return measure_on(url)
    finally:
        _drop_pg()


def run(quick: bool | None = None) -> list[Row]:
    """Every row; each store's ``floor_ratio``: its stakes/s to the no-op server's measured on
    either side of that store's runs."""
    if quick is None:
        quick = os.environ.get("SABOT_BENCH_QUICK") == "1"
    seconds = 5.0 if quick else 10.0
    clients = int(os.environ.get("SABOT_BENCH_CLIENTS", "32"))
    rows = measure_noop(clients, seconds / 2)
    first = _rate(rows)
    with tempfile.TemporaryDirectory() as tmp:
        rows += measure_noop(clients, seconds / 2, Tls(Path(tmp)))
    sqlite = [measure("sqlite", "sqlite:///{tmp}/load.db", clients, seconds, floor=True),
              measure("sqlite", "sqlite:///{tmp}/load.db", clients, seconds, secure=True),
              measure("sqlite", "sqlite:///{tmp}/load.db", clients, seconds, single=True)]
    between = _rate(measure_noop(clients, seconds / 2))
    for measured in sqlite:
        rows += _with_ratio(measured, (first, between))
    postgres = _postgres(lambda url: measure("postgres", url, clients, seconds))
    postgres_single = _postgres(lambda url: measure("postgres", url, clients, seconds,
                                                     single=True))
    if postgres:
        last = _rate(measure_noop(clients, seconds / 2))
        rows += _with_ratio(postgres, (between, last))
        rows += _with_ratio(postgres_single, (between, last))
    return rows


def compare(stores: list[str], seconds: float, clients: int) -> list[Row]:
    """The stake load on each of ``stores`` (the ledger in its own process), the no-op server
    measured before and after each: ``python -m bench.load --stores sqlite,postgres``."""
    rows: list[Row] = []
    noop = f"load.noop_server.c{clients}"
    before = measure_noop(clients, seconds / 2)
    for store in stores:
        if store == "sqlite":
            measured = measure("sqlite", "sqlite:///{tmp}/load.db", clients, seconds)
        else:
            measured = _postgres(lambda url: measure("postgres", url, clients, seconds))
        after = measure_noop(clients, seconds / 2)
        floor = (_rate(before), _rate(after))
        if measured:
            switches = (_rate(before, ".server_switches_per_stake")
                        + _rate(after, ".server_switches_per_stake")) / 2
            rows += [(f"{noop}.stakes_per_s", round(sum(floor) / 2, 1)),
                     (f"{noop}.server_switches_per_stake", round(switches, 2)),
                     *_with_ratio(measured, floor)]
        before = after
    return rows


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", help="only these stores (sqlite,postgres), the ledger in "
                        "its own process, each between two no-op floors")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int,
                        default=int(os.environ.get("SABOT_BENCH_CLIENTS", "32")))
    args = parser.parse_args()
    chosen = (compare(args.stores.split(","), args.seconds, args.clients) if args.stores
              else run())
    for name, value in chosen:
        print(f"{name:<48} {value}")
