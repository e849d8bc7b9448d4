"""``make ha-test``: Sabot on the Patroni cluster (``make ha-up``) through a failover and a
switchover under load, with the figures (docs/operations.md, "Failover").

Cash moves (the cashier's deposits and withdrawals, each with its own request id) flow from
several client threads through ``sabot serve`` on the cluster's HAProxy address while the
primary is killed (SIGKILL of its Patroni and PostgreSQL), then while a planned switchover
runs (``patronictl switchover``). Each client retries a call with the same request id until it
is acknowledged. Then it checks: every acknowledged movement is in the ledger exactly once
(each account's balance is the sum of its acknowledged movements), the balances sum to zero,
and says the write gap (from the kill to the first acknowledged write) and how long the
server's writer health was NOT_SERVING. Exit 0 only when nothing was lost or doubled.
"""

from __future__ import annotations

import itertools
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from services.api.client import Client
from services.api.gen.sabot.v1 import cashier_pb2, common_pb2

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import cluster  # noqa: E402

PROXY = f"127.0.0.1:{cluster.PROXY}"
OWNER = f"postgresql://sabot_owner@{PROXY}/sabot"
SERVER = f"postgresql://sabot_server@{PROXY}/sabot"
CLIENTS = 6
ACCOUNTS = [f"ha-{i}" for i in range(CLIENTS)]


@dataclass
class Tally:
    acked: dict[str, int] = field(default_factory=dict)  # account -> net acknowledged
    count: int = 0
    retries: int = 0
    last_ack: float = 0.0
    acks: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def money(minor: int) -> common_pb2.Money:
    return common_pb2.Money(currency_code="EUR", amount_minor=minor)


def call(fn: object, request: object, tally: Tally, stop: threading.Event) -> object:
    """``fn(request)`` until it is acknowledged (the same request id every time)."""
    while True:
        try:
            return fn(request)  # type: ignore[operator]
        except grpc.RpcError as exc:
            if exc.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
                                  grpc.StatusCode.ABORTED, grpc.StatusCode.INTERNAL,
                                  grpc.StatusCode.UNKNOWN):
                raise
            with tally.lock:
                tally.retries += 1
            if stop.is_set() and time.monotonic() > stop_deadline[0]:
                raise
            time.sleep(0.2)


stop_deadline = [float("inf")]


def worker(target: str, token: str, account: str, tally: Tally, stop: threading.Event) -> None:
    client = Client(target, token, timeout=5)
    try:
        call(client.cashier.OpenAccount, cashier_pb2.OpenAccountRequest(
            request_id=f"open-{account}", account_id=account, currency_code="EUR"), tally, stop)
        n = 0
        while not stop.is_set():
            n += 1
            amount = 100 + n % 7
            if n % 5 == 0:  # a withdrawal of what was deposited before
                req: object = cashier_pb2.WithdrawRequest(
                    request_id=str(uuid.uuid4()), name=f"accounts/{account}",
                    amount=money(amount))
                call(client.cashier.Withdraw, req, tally, stop)
                delta = -amount
            else:
                req = cashier_pb2.DepositRequest(request_id=str(uuid.uuid4()),
                                                 name=f"accounts/{account}", amount=money(amount))
                call(client.cashier.Deposit, req, tally, stop)
                delta = amount
            now = time.monotonic()
            with tally.lock:
                tally.acked[account] = tally.acked.get(account, 0) + delta
                tally.count += 1
                tally.last_ack = now
                tally.acks.append(now)
    finally:
        client.close()


def primary() -> str:
    for name, (_, rest) in cluster.NODES.items():
        if cluster._role(rest) in cluster.PRIMARY:
            return name
    raise SystemExit("ha-test: no primary")


def kill_primary() -> str:
    name = primary()
    pids = cluster._load()
    os.killpg(pids[name], signal.SIGKILL)  # Patroni
    pidfile = cluster.BASE / name / "data" / "postmaster.pid"
    if pidfile.exists():
        os.kill(int(pidfile.read_text().split()[0]), signal.SIGKILL)  # its PostgreSQL
    return name


def switchover() -> str:
    old = primary()
    config = cluster.BASE / old / "patroni.yml"
    done = subprocess.run(["runuser", "-u", cluster.USER, "--", "patronictl", "-c",
                           str(config), "switchover", "--force", "--leader", old],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"ha-test: patronictl switchover failed: {done.stdout}{done.stderr}")
    return old


def writer_serving(metrics: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://{metrics}/health/sabot.writer", timeout=1):
            return True
    except OSError:
        return False


def phase(what: str, act: object, target: str, token: str, metrics: str) -> dict[str, float]:
    tally = Tally()
    stop = threading.Event()
    threads = [threading.Thread(target=worker, args=(target, token, a, tally, stop))
               for a in ACCOUNTS]
    for t in threads:
        t.start()
    time.sleep(5)
    before = tally.count
    acted = time.monotonic()
    who = act()  # type: ignore[operator]
    down_from = down_to = None
    while time.monotonic() - acted < 60:
        serving = writer_serving(metrics)
        now = time.monotonic()
        if not serving and down_from is None:
            down_from = now
        if serving and down_from is not None and down_to is None:
            down_to = now
        with tally.lock:
            resumed = [t for t in tally.acks if t > acted + 0.05]
        if resumed and (down_from is None or down_to is not None) and now - acted > 5:
            break
        time.sleep(0.1)
    time.sleep(3)
    stop_deadline[0] = time.monotonic() + 30
    stop.set()
    for t in threads:
        t.join(60)
    with tally.lock:  # the write gap: the longest time without an acknowledgement after it
        times = sorted(t for t in tally.acks if t >= acted - 1)
    gap = max((b - a for a, b in itertools.pairwise(times)), default=float("nan"))
    figures = {"acknowledged": tally.count, "before": before, "retries": tally.retries,
               "write_gap_s": round(gap, 2),
               "not_serving_s": round((down_to or acted) - (down_from or acted), 2)}
    print(f"ha-test: {what} of {who}: {json.dumps(figures)}", flush=True)
    check(target, token, tally)
    return figures


totals: dict[str, int] = {}


def check(target: str, token: str, tally: Tally) -> None:
    client = Client(target, token, timeout=30)
    try:
        for account, net in tally.acked.items():
            totals[account] = totals.get(account, 0) + net
        for account in ACCOUNTS:
            got = client.cashier.GetAccount(cashier_pb2.GetAccountRequest(
                name=f"accounts/{account}")).balance.amount_minor
            if got != totals.get(account, 0):
                raise SystemExit(f"ha-test: FAILED {account}: the ledger holds {got}, the "
                                 f"acknowledged movements {totals.get(account, 0)}")
        sheet = client.reports.GetBalanceSheet(cashier_pb2.GetBalanceSheetRequest())
        if any(t.amount_minor for t in sheet.totals):
            raise SystemExit("ha-test: FAILED the balances do not sum to zero")
    finally:
        client.close()
    print("ha-test: every acknowledged movement is in the ledger once; the balances sum to 0",
          flush=True)


def main() -> None:
    if not (cluster.BASE / "pids.json").exists():
        raise SystemExit("ha-test: no cluster: make ha-up first")
    sabot = [sys.executable, "-m", "services.cli.server"]
    work = Path(tempfile.mkdtemp(prefix="sabot-ha-test-"))
    token = secrets.token_hex(24)
    env = {**os.environ, "SABOT_TOKENS": f"{token}:admin", "SABOT_SEAL_KEY": secrets.token_hex(32),
           "SABOT_CHAIN_KEY": secrets.token_hex(32), "SABOT_CHECKPOINT_KEY": secrets.token_hex(32),
           "SABOT_CHAIN_HEAD": str(work / "head.json"), "SABOT_ENV_FILE": str(work / "none")}
    subprocess.run([*sabot, "store", "init", "--store", OWNER, "--server-role", "sabot_server"],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    port, metrics = 50861, "127.0.0.1:50862"
    server = subprocess.Popen([*sabot, "serve", "--listen", f"127.0.0.1:{port}", "--store",
                               SERVER, "--metrics-listen", metrics], env=env, cwd=work,
                              stdout=(work / "serve.out").open("w"), stderr=subprocess.STDOUT)
    target = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while not writer_serving(metrics):
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit(f"ha-test: the server did not start ({work / 'serve.out'})")
            time.sleep(0.5)
        started = time.monotonic()
        phase("failover (SIGKILL)", kill_primary, target, token, metrics)
        # the switchover's candidate: a synchronous standby again (the killed node stays down)
        cluster._wait(cluster._synchronous, 90, "a synchronous standby again")
        phase("switchover", switchover, target, token, metrics)
        print(f"ha-test: passed in {time.monotonic() - started:.0f} s", flush=True)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    main()
