"""Two servers on one store, the same request sent to both at once: one answer per request id.

Only the holder of the store's writer lease decides (services/ledger/lease.py); the other server
answers UNAVAILABLE (reason NOT_THE_WRITER, the active writer named in the ErrorInfo, a
RetryInfo), and the client sends the same request there. 240 pairs of the same PlaceStake (same
request id, same arguments) on each store: 60 players with money for three stakes of four, so a
quarter of the requests are refused ("the balance ... is 0"). Halfway, the active server stops:
the standby takes over, a new server starts beside it as the standby, and the rest of the pairs
go to both. Never two different final answers; never a double effect (balances, stored events).
One of the two servers reaches its ledger over the ledger process's socket and protocol. On
PostgreSQL the servers connect as the restricted server role (tests/conftest.py).
"""

from __future__ import annotations

import json
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import grpc
import pytest
from google.rpc import error_details_pb2  # type: ignore[import-untyped]
from grpc_status import rpc_status

from services.api import server
from services.api.client import Client
from services.api.config import Config, parse_tokens
from services.api.gen.sabot.v1 import betting_pb2, cashier_pb2, common_pb2, table_pb2
from services.bootstrap import LEDGER_GAMES, SERVED
from services.ledger.api import Ledger, LedgerConfig
from services.ledger.remote import LedgerHost, RemoteLedger

from .support import money

KEY = bytes(range(32))
CHAIN_KEY = bytes([0x77]) * 32  # the servers of one store sign with the same evidence key
TOKEN = "tok-one-writer-admin"
PLAYERS = 60
CHANCES = (common_pb2.CHANCE_NOIR, common_pb2.CHANCE_COULEUR)  # not opposite: both allowed
STAKE = 1_000
DEPOSIT = 3 * STAKE  # three stakes of the four each player tries (two at each table)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """A server on the store: in this process, its ledger in this process or behind a socket."""

    target: str
    running: Any
    ledger: Ledger
    host: LedgerHost | None = None
    remote: Any = None

    @classmethod
    def start(cls, url: str, over_socket: bool = False) -> Server:
        port = free_port()
        target = f"127.0.0.1:{port}"
        ledger = Ledger(LedgerConfig(store_url=url, seal_key=KEY, pool_size=4,
                                     writer_name=target, chain_key=CHAIN_KEY), batching=True,
                                     games=LEDGER_GAMES)
        host = remote = None
        served = ledger
        if over_socket:
            path = str(Path(tempfile.mkdtemp(prefix="sabot-test-")) / "ledger.sock")
            host = LedgerHost(ledger, path).start()
            remote = RemoteLedger(path, url, pool_size=4, secret=host.secret, games=LEDGER_GAMES)
            served = cast(Ledger, remote)
        config = Config(listen=target, store=url, tokens=parse_tokens(f"{TOKEN}:admin"),
                        seal_key=KEY, workers=16, projections=False)
        return cls(target, server.start(config, served, games=SERVED), ledger, host, remote)

    def stop(self) -> None:
        self.running.stop(grace=1)  # closes the served ledger (the remote one, if any)
        if self.host is not None:
            self.host.close()
            self.ledger.close()

    def active(self) -> bool:
        return bool(self.ledger.writer_status()["active"])


@dataclass
class Copy:
    """One copy of a request: where it ended, its final answer, how it got there."""

    answer: tuple[Any, ...] = ()
    redirected: int = 0  # NOT_THE_WRITER answers followed to the active writer
    waited: int = 0  # other UNAVAILABLE / ABORTED answers retried after a delay


@dataclass
class Clients:
    channels: dict[str, Client] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def to(self, target: str) -> Client:
        with self.lock:
            if target not in self.channels:
                self.channels[target] = Client(target, TOKEN, timeout=20)
            return self.channels[target]

    def close(self) -> None:
        for c in self.channels.values():
            c.close()


def standby_details(exc: grpc.RpcError) -> tuple[str, float] | None:
    """(active writer, retry delay) of a NOT_THE_WRITER answer, else None."""
    status = rpc_status.from_call(exc)  # type: ignore[arg-type]
    if status is None:
        return None
    writer, delay, reason = "", 0.0, ""
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            reason, writer = info.reason, info.metadata.get("active_writer", "")
        elif detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            retry = error_details_pb2.RetryInfo()
            detail.Unpack(retry)
            delay = retry.retry_delay.ToTimedelta().total_seconds()
    return (writer, delay) if reason == "NOT_THE_WRITER" else None


def send(clients: Clients, target: str, request: Any, go: threading.Barrier) -> Copy:
    """Send the PlaceStake to ``target`` when its twin is ready too; follow NOT_THE_WRITER to
    the active writer, retry a server that is down or a conflict, until a final answer."""
    copy = Copy()
    go.wait(timeout=30)
    for _ in range(200):
        try:
            result = clients.to(target).betting.PlaceStake(request)
            copy.answer = ("OK", result.SerializeToString(deterministic=True))
            return copy
        except grpc.RpcError as exc:
            code = exc.code()
            standby = standby_details(exc) if code == grpc.StatusCode.UNAVAILABLE else None
            if standby is not None:
                writer, delay = standby
                assert delay > 0
                if writer:
                    copy.redirected += 1
                    target = writer
                else:
                    time.sleep(delay)
                continue
            if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.ABORTED):
                copy.waited += 1
                time.sleep(0.05)
                continue
            found = rpc_status.from_call(exc)  # type: ignore[arg-type]
            copy.answer = (code.name, exc.details(),
                           found.SerializeToString() if found is not None else b"")
            return copy
    raise AssertionError("no final answer")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'sabot.db'}"
    else:
        yield str(request.getfixturevalue("postgres_restricted").server_url)


def setup_coups(admin: Client) -> list[str]:
    """Two tables, a coup open for stakes at each; the players' accounts with their money."""
    coups = []
    for t in ("one-writer-1", "one-writer-2"):
        table = admin.tables.OpenTable(table_pb2.OpenTableRequest(
            request_id=f"table-{t}", table_id=t, preset="francaise"))
        shoe = admin.tables.OpenShoe(table_pb2.OpenShoeRequest(
            request_id=f"shoe-{t}", parent=table.name))
        admin.tables.CutShoe(table_pb2.CutShoeRequest(
            request_id=f"cut-{t}", name=shoe.name, cut_position=100, cut_by="anne"))
        coup = admin.tables.OpenCoup(table_pb2.OpenCoupRequest(
            request_id=f"coup-{t}", parent=shoe.name))
        coups.append(str(coup.name))
    for p in range(PLAYERS):
        admin.cashier.OpenAccount(cashier_pb2.OpenAccountRequest(
            request_id=f"open-{p}", account_id=f"p{p}", currency_code="EUR"))
        admin.cashier.Deposit(cashier_pb2.DepositRequest(
            request_id=f"deposit-{p}", name=f"accounts/p{p}", amount=money(DEPOSIT)))
    return coups


def stakes(coup: str, player_range: range = range(PLAYERS)) -> list[betting_pb2.PlaceStakeRequest]:
    """Each player's stake on each of CHANCES at one coup."""
    return [betting_pb2.PlaceStakeRequest(
        request_id=f"stake-{coup[-12:]}-{c}-{p}", coup=coup, account=f"accounts/p{p}",
        chance=chance, amount=money(STAKE))
        for c, chance in enumerate(CHANCES) for p in player_range]


def pairs(clients: Clients, targets: tuple[str, str], requests: list[Any]
          ) -> list[tuple[Copy, Copy]]:
    """Each request sent to both servers at once (its two copies released together)."""
    with ThreadPoolExecutor(32) as pool:
        futures = []
        for request in requests:
            go = threading.Barrier(2)
            futures.append((pool.submit(send, clients, targets[0], request, go),
                            pool.submit(send, clients, targets[1], request, go)))
        return [(a.result(timeout=120), b.result(timeout=120)) for a, b in futures]


def stored(led: Ledger, topic: str) -> int:
    total, position = 0, 0
    while batch := led.read_events(position, 10_000):
        total += sum(1 for e in batch if e.topic == topic)
        position = batch[-1].position
    return total


def test_one_answer_per_request_id_whichever_server_it_reaches(store: str) -> None:
    a = Server.start(store)
    b = Server.start(store, over_socket=True)
    clients = Clients()
    servers = [a, b]
    try:
        assert a.active() and not b.active()
        admin = clients.to(a.target)
        first_coup, second_coup = setup_coups(admin)
        standby = clients.to(b.target)
        # the standby answers queries (and caches nothing of them)
        for p in range(PLAYERS):
            account = standby.cashier.GetAccount(cashier_pb2.GetAccountRequest(
                name=f"accounts/p{p}"))
            assert account.balance.amount_minor == DEPOSIT
        placed_before = stored(a.ledger, "sabot.ledger:Coup.StakePlaced")
        requests_before = stored(a.ledger, "sabot.ledger:Request.Recorded")
        done = pairs(clients, (a.target, b.target), stakes(first_coup))
        # the active server stops; the standby takes over; a new server stands by beside it
        a.stop()
        servers.remove(a)
        deadline = time.monotonic() + 10
        while not b.active():
            assert time.monotonic() < deadline, "the standby did not take over"
            time.sleep(0.02)
        c = Server.start(store)
        servers.append(c)
        assert not c.active() and c.ledger.writer_status()["holder"] == b.target
        done += pairs(clients, (c.target, b.target), stakes(second_coup))

        assert len(done) == 240
        differ = [(x.answer[0], y.answer[0]) for x, y in done if x.answer != y.answer]
        assert not differ, f"{len(differ)} request ids got two answers: {differ[:5]}"
        oks = [x for x, _ in done if x.answer[0] == "OK"]
        refused = [x for x, _ in done if x.answer[0] != "OK"]
        assert {x.answer[0] for x in refused} == {"FAILED_PRECONDITION"}
        assert all("balance" in x.answer[1] for x in refused), refused[0].answer[1]
        assert len(oks) == 3 * PLAYERS and len(refused) == PLAYERS  # each player: 3 of 4
        redirected = sum(x.redirected + y.redirected for x, y in done)
        assert redirected >= 240  # one copy of each pair reached the standby first
        # no double effect: balances, and what is stored
        for p in range(PLAYERS):
            account = clients.to(b.target).cashier.GetAccount(cashier_pb2.GetAccountRequest(
                name=f"accounts/p{p}"))
            assert account.balance.amount_minor == 0, p
        assert stored(b.ledger, "sabot.ledger:Coup.StakePlaced") - placed_before == 3 * PLAYERS
        assert (stored(b.ledger, "sabot.ledger:Request.Recorded") - requests_before
                == 3 * PLAYERS)
        assert sum(b.ledger.balances().values()) == 0
        print(json.dumps({"store": store.split(":")[0], "pairs": len(done), "ok": len(oks),
                          "refused": len(refused), "redirected": redirected}))
    finally:
        clients.close()
        for s in servers:
            s.stop()


def test_sabot_serve_standby_takes_over_when_the_active_one_is_killed(
    store: str, tmp_path: Path,
) -> None:
    """Two ``sabot serve`` (each with its ledger in a process of its own) on one store: the
    second stands by and names the first; SIGKILL the first (its ledger process ends when its
    input closes, the lease with it): the second takes over, and knows what the first stored."""
    import os
    import secrets
    import signal
    import subprocess
    import sys

    token = secrets.token_hex(16)
    env = {**os.environ, "SABOT_TOKENS": f"{token}:admin", "SABOT_SEAL_KEY": KEY.hex(),
           "SABOT_CHAIN_KEY": secrets.token_hex(32),  # the same evidence key on both
           "SABOT_WORKERS": "4",  # a few store connections each
           "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}

    def serve() -> tuple[subprocess.Popen[str], str]:
        target = f"127.0.0.1:{free_port()}"
        errors = (tmp_path / f"serve-{target.rsplit(':', 1)[1]}.log").open("w")
        proc = subprocess.Popen(
            [sys.executable, "-m", "services.cli.server", "serve", "--listen", target,
             "--store", store, "--env-file", str(tmp_path / "none.env")],
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=errors, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            if "listening on" in line:
                return proc, target
        proc.wait(10)
        raise AssertionError("sabot serve did not start: "
                             + Path(errors.name).read_text()[-2000:])

    procs: list[subprocess.Popen[str]] = []
    clients: dict[str, Client] = {}
    try:
        first, a = serve()
        procs.append(first)
        second, b = serve()
        procs.append(second)
        clients = {t: Client(t, token, timeout=20) for t in (a, b)}
        opened = cashier_pb2.OpenAccountRequest(request_id="k-open", account_id="kim",
                                                currency_code="EUR")
        clients[a].cashier.OpenAccount(opened)
        deposit = cashier_pb2.DepositRequest(request_id="k-dep", name="accounts/kim",
                                             amount=money(500))
        assert clients[a].cashier.Deposit(deposit).balance.amount_minor == 500
        with pytest.raises(grpc.RpcError) as refused:
            clients[b].cashier.Deposit(deposit)
        assert standby_details(refused.value) == (a, pytest.approx(0.25))
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        deadline = time.monotonic() + 30
        while True:  # the same request id, now answered by the second: the stored answer
            try:
                answer = clients[b].cashier.Deposit(deposit)
                break
            except grpc.RpcError as exc:
                assert exc.code() == grpc.StatusCode.UNAVAILABLE, exc
                assert time.monotonic() < deadline, "the standby did not take over"
                time.sleep(0.1)
        assert answer.balance.amount_minor == 500
        withdraw = cashier_pb2.WithdrawRequest(request_id="k-out", name="accounts/kim",
                                               amount=money(500))
        assert clients[b].cashier.Withdraw(withdraw).balance.amount_minor == 0
        with pytest.raises(grpc.RpcError) as empty:
            clients[b].cashier.Withdraw(cashier_pb2.WithdrawRequest(
                request_id="k-out-2", name="accounts/kim", amount=money(1)))
        assert empty.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    finally:
        for c in clients.values():
            c.close()
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
