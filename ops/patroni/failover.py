"""``make ha-test``: Sabot on the Patroni cluster (``ops/patroni/cluster.py``) through a failover,
a planned switchover and the failover the configuration rules out, under load, with the
figures (docs/operations.md, "Failover of PostgreSQL").

The load (``Load``): through one ``sabot serve`` on the cluster's HAProxy address, at once,
- two Trente et Quarante tables (three players of their own tokens staking on each coup, the
  croupier closing, dealing and settling it, a new shoe at the cut card),
- a Treinta y Una table (three players: stakes, "carta" / "me planto" after reading their own
  hands, the showdown; round after round),
- a Cuarenta table (two players, match after match, every play after reading the own hand),
- two cashiers' deposits and withdrawals on accounts of their own.
Every mutating call has its own request id and is retried with it until it is acknowledged
(UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED, UNKNOWN: retried; anything else fails the test).

The events: after 6 s of load the primary's Patroni and PostgreSQL are killed (SIGKILL); once
writes flow again, the killed node is started again (it rejoins as a standby, ``pg_rewind``);
then a planned switchover (``patronictl switchover``). Each event's figures: acknowledgements
before and after, the longest time without one, the time from the event to the first write
acknowledged after that gap, how long ``sabot.writer`` was NOT_SERVING (the metrics port's
``/health/sabot.writer``, looked at every 0.1 s) and that it came back SERVING by itself.

Then the checks (each fails the test):
- the log (read from the new primary): every acknowledged request is recorded exactly once,
  every event it says it caused is in the log, and no event is claimed by two requests (0 lost,
  0 applied twice); each cashier account's balance is the sum of its acknowledged movements;
  the balance sheet sums to 0;
- every signed checkpoint the notary published during the run (polled every 0.3 s, its
  signature checked with the pinned public key: before the kill, between, after the switchover)
  is a prefix of the new primary's log: a consistency proof (RFC 9162, from the server) to the
  latest checkpoint, verified here (``services/regulator/merkle.py``), and again by
  ``sabot-verify --known-checkpoint`` over the export;
- a server whose store URL names a standby does not start (read-only), and one on the primary
  node's own address (no proxy) takes no write once a switchover made that node a standby
  (``sabot.writer`` NOT_SERVING, every command UNAVAILABLE);
- ``sabot store export`` of the whole log, then ``sabot-verify`` with the operator's public keys
  pinned (checkpoint and chain) and the writer's head file: VERIFIED (the chain unbroken, every
  shoe, round and match replayed, the money balanced).

Last, the case the configuration rules out (``ruled_out``): the cluster made asynchronous
(``synchronous_mode`` off, ``maximum_lag_on_failover`` 1 GiB), one standby stopped, the other's
WAL receiver stopped (SIGSTOP) while cash still moves, the primary killed: Patroni promotes the
standby that missed commits. The running server must stop writing (FAILED_PRECONDITION
``EVIDENCE_BROKEN``, ``sabot.writer`` NOT_SERVING and staying so) rather than fork the chain:
the new primary holds no event written after the promotion.

Exit 0 only when every check holds. ``--skip-ruled-out``: the first part only.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import itertools
import json
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from grpc_status import rpc_status

from services.api.client import Client
from services.api.gen.sabot.v1 import (
    betting_pb2,
    cashier_pb2,
    common_pb2,
    regulator_pb2,
    table_pb2,
)
from services.regulator.checkpoint import Checkpoint, CheckpointError, verify_checkpoint
from services.regulator.merkle import ProofError, verify_consistency

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import cluster  # noqa: E402

PROXY = f"127.0.0.1:{cluster.PROXY}"
OWNER = f"postgresql://sabot_owner@{PROXY}/sabot"
SERVER = f"postgresql://sabot_server@{PROXY}/sabot"


def _free() -> str:
    """A loopback address with a port free now (other lanes' servers run on this machine)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


LISTEN, METRICS = _free(), _free()
RETRIED = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
                     grpc.StatusCode.ABORTED, grpc.StatusCode.UNKNOWN})
TEQ_TABLES, TEQ_PLAYERS, TYU_PLAYERS, CASHIERS = 2, 3, 3, 2
SABOT = [sys.executable, "-m", "services.cli.server"]


class Failed(SystemExit):
    def __init__(self, what: str) -> None:
        super().__init__(f"ha-test: FAILED {what}")


def say(text: str) -> None:
    print(f"ha-test: {text}", flush=True)


def money(minor: int) -> common_pb2.Money:
    return common_pb2.Money(currency_code="EUR", amount_minor=minor)


def reason(exc: grpc.RpcError) -> str:
    """The ``google.rpc.ErrorInfo`` reason of a refusal ("" when it carries none)."""
    from google.rpc import error_details_pb2  # type: ignore[import-untyped]

    status = rpc_status.from_call(exc)  # type: ignore[arg-type]
    for detail in status.details if status is not None else ():
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return str(info.reason)
    return ""


# --- the load -------------------------------------------------------------------------------


@dataclass
class Tally:
    """What the clients saw: every acknowledged request id (with its kind and when), the
    retries by status, the cashiers' acknowledged net per account."""

    acked: dict[str, str] = field(default_factory=dict)  # request id -> kind
    times: list[float] = field(default_factory=list)  # monotonic time of each acknowledgement
    log: list[tuple[float, str]] = field(default_factory=list)  # (time, request id)
    retries: collections.Counter[str] = field(default_factory=collections.Counter)
    cash: dict[str, int] = field(default_factory=dict)
    unacknowledged: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self) -> int:
        with self.lock:
            return len(self.times)


class Load:
    """The clients' threads (see the module); ``call`` retries a request until acknowledged."""

    def __init__(self, target: str, tokens: dict[str, str]) -> None:
        self.target = target
        self.tokens = tokens  # account or "admin" -> token
        self.tally = Tally()
        self.stop = threading.Event()
        self.give_up = float("inf")  # once stopped: a call still retried after this fails
        self.threads: list[threading.Thread] = []

    def client(self, who: str) -> Client:
        return Client(self.target, self.tokens[who], timeout=5)

    def call(self, kind: str, fn: Callable[[Any], Any], request: Any) -> Any:
        """``fn(request)`` until acknowledged, the same request id every time."""
        while True:
            try:
                answer = fn(request)
            except grpc.RpcError as exc:
                code = exc.code()  # type: ignore[attr-defined]
                if code not in RETRIED:
                    raise
                with self.tally.lock:
                    self.tally.retries[f"{code.name} {reason(exc)}".strip()] += 1
                if time.monotonic() > self.give_up:
                    with self.tally.lock:
                        self.tally.unacknowledged.append(request.request_id)
                    raise
                time.sleep(0.2)
                continue
            with self.tally.lock:
                self.tally.acked[request.request_id] = kind
                now = time.monotonic()
                self.tally.times.append(now)
                self.tally.log.append((now, request.request_id))
            return answer

    def start(self) -> None:
        work: list[Callable[[], None]] = [
            *(lambda t=t: self.trente_et_quarante(t) for t in range(TEQ_TABLES)),
            self.treinta_y_una, self.cuarenta,
            *(lambda c=c: self.cashier(c) for c in range(CASHIERS))]
        for job in work:
            thread = threading.Thread(target=self._guard, args=(job,), daemon=True)
            thread.start()
            self.threads.append(thread)

    def _guard(self, job: Callable[[], None]) -> None:
        try:
            job()
        except Exception as exc:
            with self.tally.lock:
                self.tally.errors.append(f"{type(exc).__name__}: {str(exc)[:300]}")
            self.stop.set()

    def finish(self) -> None:
        self.give_up = time.monotonic() + 60
        self.stop.set()
        for thread in self.threads:
            thread.join(90)
        if self.tally.errors:
            raise Failed(f"a client stopped: {self.tally.errors[0]}")
        if self.tally.unacknowledged:
            raise Failed(f"{len(self.tally.unacknowledged)} requests never acknowledged")

    def fund(self, admin: Client, account: str, amount: int) -> None:
        self.call("open", admin.cashier.OpenAccount, cashier_pb2.OpenAccountRequest(
            request_id=f"open-{account}", account_id=account, currency_code="EUR"))
        self.call("deposit", admin.cashier.Deposit, cashier_pb2.DepositRequest(
            request_id=f"fund-{account}", name=f"accounts/{account}", amount=money(amount)))

    # each game's loop: one thread, its calls in order, until stopped (a unit of play is
    # finished first: a coup, a round, a match's next move)

    def trente_et_quarante(self, t: int) -> None:
        admin = self.client("admin")
        players = [f"teq{t}-p{j}" for j in range(TEQ_PLAYERS)]
        own = {p: self.client(p) for p in players}
        for p in players:
            self.fund(admin, p, 10**8)
        table = self.call("open_table", admin.tables.OpenTable, table_pb2.OpenTableRequest(
            request_id=f"teq{t}-table", table_id=f"teq{t}")).name

        def new_shoe(n: int) -> str:
            shoe = self.call("open_shoe", admin.tables.OpenShoe, table_pb2.OpenShoeRequest(
                request_id=f"teq{t}-shoe{n}", parent=table)).name
            self.call("cut_shoe", admin.tables.CutShoe, table_pb2.CutShoeRequest(
                request_id=f"teq{t}-cut{n}", name=shoe, cut_position=100, cut_by="ha-test"))
            return str(shoe)

        shoes = itertools.count(1)
        shoe = new_shoe(next(shoes))
        rng = random.Random(t)
        while not self.stop.is_set():
            coup = self.call("open_coup", admin.tables.OpenCoup, table_pb2.OpenCoupRequest(
                request_id=str(uuid.uuid4()), parent=shoe)).name
            for j, p in enumerate(players):  # one chance each: a refait's stakes in prison
                chance = (common_pb2.CHANCE_NOIR, common_pb2.CHANCE_ROUGE)[j % 2]  # stay
                self.call("stake", own[p].betting.PlaceStake, betting_pb2.PlaceStakeRequest(
                    request_id=str(uuid.uuid4()), coup=coup, account=f"accounts/{p}",
                    chance=chance, amount=money(100 * rng.randint(1, 5))))
            for method, request in (("close_betting", table_pb2.CloseBettingRequest),
                                    ("deal_coup", table_pb2.DealCoupRequest)):
                self.call(method, getattr(admin.tables, "".join(
                    w.title() for w in method.split("_"))), request(
                    request_id=str(uuid.uuid4()), name=coup))
            settled = self.call("settle_coup", admin.tables.SettleCoup,
                                table_pb2.SettleCoupRequest(request_id=str(uuid.uuid4()),
                                                            name=coup))
            if settled.cut_card_reached:
                self.call("close_shoe", admin.tables.CloseShoe, table_pb2.CloseShoeRequest(
                    request_id=str(uuid.uuid4()), name=shoe))
                shoe = new_shoe(next(shoes))
        # the shoe closed at the end: the export's verifier replays every coup of it
        self.call("close_shoe", admin.tables.CloseShoe, table_pb2.CloseShoeRequest(
            request_id=str(uuid.uuid4()), name=shoe))

    def treinta_y_una(self) -> None:
        admin = self.client("admin")
        players = [f"tyu-p{j}" for j in range(TYU_PLAYERS)]
        own = {p: self.client(p) for p in players}
        for p in players:
            self.fund(admin, p, 10**8)
        self.call("open_table", lambda r: admin.rounds.open_table("tyu", request_id=r.request_id),
                  _Rid("tyu-table"))
        while not self.stop.is_set():
            r = self.call("open_round", lambda q: admin.rounds.open_round(
                "tyu", players, 20_000, "EUR", request_id=q.request_id), _Rid())
            for p in players:
                if p != r.banker:
                    r = self.call("tyu_stake", lambda q, p=p, name=r.name: own[p].rounds
                                  .place_stake(name, p, 1_000, "EUR", request_id=q.request_id),
                                  _Rid())
            r = self.call("tyu_deal", lambda q, name=r.name: admin.rounds.deal(
                name, request_id=q.request_id), _Rid())
            while r.phase == "playing":
                who = r.whose_turn.removeprefix("accounts/")
                hand = _read(lambda who=who, name=r.name: own[who].rounds.my_hand(name, who))
                move = own[who].rounds.carta if hand.total < (
                    25 if who == r.banker.removeprefix("accounts/") else 21) \
                    else own[who].rounds.me_planto
                r = self.call("tyu_turn", lambda q, m=move, who=who, name=r.name: m(
                    name, who, request_id=q.request_id), _Rid())
            self.call("tyu_settle", lambda q, name=r.name: admin.rounds.settle(
                name, request_id=q.request_id), _Rid())

    def cuarenta(self) -> None:
        admin = self.client("admin")
        players = ["cu-p0", "cu-p1"]
        own = {p: self.client(p) for p in players}
        for p in players:
            self.fund(admin, p, 10**8)
        self.call("open_table", lambda q: admin.matches.open_table(
            "cuarenta", overrides={"commission_rate": "5%"}, request_id=q.request_id),
            _Rid("cu-table"))
        while not self.stop.is_set():
            m = self.call("open_match", lambda q: admin.matches.open(
                "cuarenta", players, 5_000, "EUR", request_id=q.request_id), _Rid()).match
            while m.phase != "over":
                if m.phase == "awaiting_deal":
                    m = self.call("cu_deal", lambda q, name=m.name: admin.matches.deal(
                        name, request_id=q.request_id), _Rid()).match
                    continue
                who, seat, name = m.seats[m.to_act].removeprefix("accounts/"), m.to_act, m.name
                legal = _read(lambda who=who, name=name, seat=seat: own[who].matches.hand(
                    name, seat)).legal
                best = max(legal, key=lambda p: (p.points, len(p.capture)))
                if not best.capture:
                    best = min(legal, key=lambda p: (len(p.capture) > 0, p.card))
                m = self.call("play", lambda q, who=who, seat=seat, name=name, b=best: own[who]
                              .matches.play(name, seat, b.card, list(b.capture),
                                            not b.capture, request_id=q.request_id),
                              _Rid()).match

    def cashier(self, c: int) -> None:
        admin = self.client("admin")
        account = f"cash-{c}"
        self.call("open", admin.cashier.OpenAccount, cashier_pb2.OpenAccountRequest(
            request_id=f"open-{account}", account_id=account, currency_code="EUR"))
        n = 0
        while not self.stop.is_set():
            n += 1
            amount = 100 + n % 7
            if n % 5 == 0:  # a withdrawal of what was deposited before
                self.call("withdraw", admin.cashier.Withdraw, cashier_pb2.WithdrawRequest(
                    request_id=str(uuid.uuid4()), name=f"accounts/{account}",
                    amount=money(amount)))
                delta = -amount
            else:
                self.call("deposit", admin.cashier.Deposit, cashier_pb2.DepositRequest(
                    request_id=str(uuid.uuid4()), name=f"accounts/{account}",
                    amount=money(amount)))
                delta = amount
            with self.tally.lock:
                self.tally.cash[account] = self.tally.cash.get(account, 0) + delta
            time.sleep(0.02)


@dataclass(frozen=True)
class _Rid:
    """A request id carried to a typed call (``client.rounds``/``client.matches``)."""

    request_id: str = field(default_factory=lambda: str(uuid.uuid4()))


def _read(fn: Callable[[], Any]) -> Any:
    """A query (no request id), asked again while the store is away."""
    deadline = time.monotonic() + 90
    while True:
        try:
            return fn()
        except grpc.RpcError as exc:
            if exc.code() not in RETRIED or time.monotonic() > deadline:  # type: ignore[attr-defined]
                raise
            time.sleep(0.2)


# --- what is watched while it runs -----------------------------------------------------------


class Watch:
    """``sabot.writer``'s health every 0.1 s and every checkpoint the notary publishes."""

    def __init__(self, admin: Client, checkpoint_public: bytes) -> None:
        self.admin = admin
        self.public = checkpoint_public
        self.health: list[tuple[float, bool]] = []
        self.checkpoints: dict[int, tuple[float, Checkpoint]] = {}
        self.bad: list[str] = []
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._health, daemon=True),
                        threading.Thread(target=self._checkpoints, daemon=True)]
        for thread in self.threads:
            thread.start()

    def _health(self) -> None:
        while not self.stop.wait(0.1):
            self.health.append((time.monotonic(), writer_serving()))

    def _checkpoints(self) -> None:
        while not self.stop.wait(0.3):
            try:
                got = self.admin.regulator.GetLatestCheckpoint(
                    regulator_pb2.GetLatestCheckpointRequest(), timeout=2)
            except grpc.RpcError:
                continue
            if got.tree_size and got.tree_size not in self.checkpoints:
                cp = from_proto(got)
                try:
                    verify_checkpoint(cp, self.public)
                except CheckpointError as exc:
                    self.bad.append(str(exc))
                self.checkpoints[got.tree_size] = (time.monotonic(), cp)

    def close(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(5)


def from_proto(got: regulator_pb2.Checkpoint) -> Checkpoint:
    return Checkpoint(origin=got.origin, size=got.tree_size, root=got.root_hash,
                      position=got.position if got.HasField("position") else None,
                      coup=got.coup_id or None, key_id=got.key_id, signature=got.signature)


def writer_serving(metrics: str = METRICS, service: str = "sabot.writer") -> bool:
    try:
        with urllib.request.urlopen(f"http://{metrics}/health"
                                    + (f"/{service}" if service else ""), timeout=1):
            return True
    except OSError:
        return False


def metric(name: str) -> float | None:
    """A series' value on the metrics port (the first sample of ``name``)."""
    try:
        with urllib.request.urlopen(f"http://{METRICS}/metrics", timeout=2) as r:
            text = r.read().decode()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(name) and line[len(name):len(name) + 1] in (" ", "{"):
            return float(line.rsplit(None, 1)[1])
    return None


def writer_facts() -> dict[str, Any]:
    try:
        with urllib.request.urlopen(f"http://{METRICS}/health/sabot.writer", timeout=2) as r:
            return dict(json.loads(r.read()))
    except urllib.error.HTTPError as exc:
        return dict(json.loads(exc.read() or b"{}"))
    except (OSError, ValueError):
        return {}


# --- the cluster's events ---------------------------------------------------------------------


def primary() -> str:
    for _ in range(100):
        for name, (_, rest) in cluster.NODES.items():
            if cluster._role(rest) in cluster.PRIMARY:
                return name
        time.sleep(0.3)
    raise Failed("no primary in the cluster")


def postmaster(name: str) -> int | None:
    pidfile = cluster.BASE / name / "data" / "postmaster.pid"
    try:
        return int(pidfile.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def kill(name: str) -> None:
    """SIGKILL of ``name``'s Patroni and its PostgreSQL (a machine lost)."""
    pids = cluster._load()
    os.killpg(pids[name], signal.SIGKILL)
    pm = postmaster(name)
    if pm is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pm, signal.SIGKILL)


def kill_primary() -> str:
    name = primary()
    kill(name)
    return name


def switchover() -> str:
    old = primary()
    done = patronictl("switchover", "--force", "--leader", old)
    if done.returncode != 0:
        raise Failed(f"patronictl switchover: {done.stdout}{done.stderr}")
    return old


def patronictl(*argv: str) -> subprocess.CompletedProcess[str]:
    config = cluster.BASE / "node1" / "patroni.yml"
    return subprocess.run(["runuser", "-u", cluster.USER, "--", "patronictl", "-c",
                           str(config), *argv], capture_output=True, text=True, check=False)


@dataclass
class Event:
    what: str
    at: float
    acked_before: int
    figures: dict[str, Any] = field(default_factory=dict)


def event(what: str, act: Callable[[], str], load: Load, watch: Watch) -> Event:
    """``act()`` under the load, then wait until writes flow again and ``sabot.writer`` is
    SERVING (at most 90 s), then 4 s more; the figures."""
    before = load.tally.count()
    at = time.monotonic()
    who = act()
    happened = Event(f"{what} of {who}", at, before)
    deadline = at + 90
    while time.monotonic() < deadline:
        time.sleep(0.2)
        now = time.monotonic()
        health = [(t, ok) for t, ok in watch.health if t > at]
        down = [t for t, ok in health if not ok]
        back = [t for t, ok in health if ok and down and t > down[0]]
        acked = [t for t in load.tally.times if t > at]
        if now - at > 5 and len(acked) > 20 and acked[-1] > now - 1 and (not down or back) \
                and len([t for t in acked if t > (back or down or [at])[0]]) > 20:
            break
        if load.tally.errors:
            raise Failed(f"{happened.what}: a client stopped: {load.tally.errors[0]}")
    else:
        raise Failed(f"{happened.what}: writes did not come back within 90 s")
    time.sleep(4)
    times = sorted(t for t in load.tally.times if t >= at - 1)
    gaps = [(b - a, b) for a, b in itertools.pairwise(times) if b > at]
    gap, resumed = max(gaps, default=(float("nan"), float("nan")))
    health = [(t, ok) for t, ok in watch.health if t > at]
    down = [t for t, ok in health if not ok]
    back = [t for t, ok in health if ok and down and t > down[0]]
    if down and not back:
        raise Failed(f"{happened.what}: sabot.writer did not come back SERVING by itself")
    happened.figures = {
        "acknowledged_before": before, "acknowledged_after": load.tally.count() - before,
        "longest_without_ack_s": round(gap, 2),
        "to_first_write_s": round(resumed - at, 2),
        "writer_not_serving_s": round(back[0] - down[0], 2) if down else 0.0,
        "writer_not_serving_from_s": round(down[0] - at, 2) if down else None,
        "serving_again": bool(not down or back)}
    say(f"{happened.what}: {json.dumps(happened.figures)}")
    return happened


# --- the checks -------------------------------------------------------------------------------


def events_of(store: str, env: dict[str, str]) -> Iterator[dict[str, Any]]:
    """The whole log, from ``sabot store events`` (JSON lines)."""
    proc = subprocess.Popen([*SABOT, "store", "events", "--store", store], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        yield json.loads(line)
    if proc.wait() != 0:
        raise Failed(f"sabot store events: {proc.stderr.read() if proc.stderr else ''}")


def check_log(tally: Tally, env: dict[str, str]) -> dict[str, int]:
    """Every acknowledged request recorded once, its effects in the log, none claimed twice."""
    recorded: collections.Counter[str] = collections.Counter()
    effects: dict[str, list[tuple[str, int]]] = {}
    stored: set[tuple[str, int]] = set()
    topics: collections.Counter[str] = collections.Counter()
    for e in events_of(OWNER, env):
        stored.add((e["originator_id"], int(e["version"])))
        topics[e["topic"]] += 1
        if e["topic"] == "sabot.ledger:Request.Recorded":
            rid = e["state"]["request_id"]
            recorded[rid] += 1
            effects[rid] = [(str(a), int(v)) for a, v in e["state"].get("effects") or []]
    lost = [rid for rid in tally.acked if recorded[rid] == 0]
    twice = [rid for rid in tally.acked if recorded[rid] > 1]
    missing = [(rid, eff) for rid in tally.acked for eff in effects.get(rid, [])
               if eff not in stored]
    claims = collections.Counter(eff for rid in tally.acked for eff in effects.get(rid, []))
    doubled = [eff for eff, n in claims.items() if n > 1]
    if lost or twice or missing or doubled:
        raise Failed(f"the log: {len(lost)} acknowledged requests not recorded (e.g. "
                     f"{lost[:3]}), {len(twice)} recorded twice, {len(missing)} effects "
                     f"missing, {len(doubled)} effects claimed twice")
    kinds = collections.Counter(tally.acked.values())
    say(f"the log: {len(tally.acked)} acknowledged requests, each recorded once with its "
        f"{sum(claims.values())} events (0 lost, 0 applied twice); by kind: "
        f"{json.dumps(dict(sorted(kinds.items())))}")
    return {"acknowledged": len(tally.acked), "events": len(stored)}


def check_money(admin: Client, tally: Tally) -> None:
    for account, net in tally.cash.items():
        got = admin.cashier.GetAccount(cashier_pb2.GetAccountRequest(
            name=f"accounts/{account}")).balance.amount_minor
        if got != net:
            raise Failed(f"{account}: the ledger holds {got}, the acknowledged movements {net}")
    sheet = admin.reports.GetBalanceSheet(cashier_pb2.GetBalanceSheetRequest())
    if any(t.amount_minor for t in sheet.totals):
        raise Failed(f"the balances do not sum to zero: {sheet.totals}")
    say(f"money: each cashier account holds its acknowledged movements "
        f"({json.dumps(tally.cash)}); the balance sheet sums to 0")


def check_checkpoints(admin: Client, watch: Watch, events: list[Event]) -> Checkpoint:
    """Every checkpoint seen: signed by the pinned key, and consistent with the latest one."""
    if watch.bad:
        raise Failed(f"a checkpoint's signature: {watch.bad[0]}")
    latest = from_proto(_read(lambda: admin.regulator.GetLatestCheckpoint(
        regulator_pb2.GetLatestCheckpointRequest(), timeout=10)))
    verify_checkpoint(latest, watch.public)
    seen = sorted(watch.checkpoints.items())
    for size, (_, cp) in seen:
        if size > latest.size:
            raise Failed(f"checkpoint {size} is beyond the latest ({latest.size})")
        if size == latest.size:
            if cp.root != latest.root:
                raise Failed(f"checkpoint {size}: another root than the latest's")
            continue
        proof = _read(lambda size=size: admin.regulator.GetConsistencyProof(
            regulator_pb2.GetConsistencyProofRequest(first_size=size,
                                                     second_size=latest.size), timeout=30))
        try:
            verify_consistency(size, latest.size, cp.root, latest.root, list(proof.hashes))
        except ProofError as exc:
            raise Failed(f"checkpoint {size} is not a prefix of the log: {exc}") from None
    when = [t for t, _ in watch.checkpoints.values()]
    around = [sum(1 for t in when if t < e.at) for e in events]
    counts = ", ".join(f"{n} before the {e.what.split()[0]}"
                       for n, e in zip(around, events, strict=True))
    say(f"checkpoints: {len(seen)} signed checkpoints seen ({counts}, "
        f"{len(when) - (around[-1] if around else 0)} after), each a prefix of the new "
        f"primary's log (consistency proof to checkpoint {latest.size}, verified)")
    return latest


def export_and_verify(work: Path, env: dict[str, str], watch: Watch) -> dict[str, Any]:
    export = work / "export.jsonl"
    done = subprocess.run([*SABOT, "store", "export", "--store", SERVER,
                           "--checkpoint-public-key", str(work / "checkpoint.pub"),
                           "--chain-public-key", str(work / "chain.pub"), "-o", str(export)],
                          env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise Failed(f"sabot store export: {done.stderr.strip()}")
    known = []
    for size, (_, cp) in sorted(watch.checkpoints.items()):
        path = work / f"checkpoint-{size}.json"
        path.write_text(json.dumps(cp.to_json()))
        known += ["--known-checkpoint", str(path)]
    verify = [str(Path(sys.executable).parent / "sabot-verify"), str(export),
              "--checkpoint-public-key", str(work / "checkpoint.pub"),
              "--chain-public-key", str(work / "chain.pub"),
              "--chain-head", str(work / "head.json"), "--format", "json", *known]
    done = subprocess.run(verify, env=env, capture_output=True, text=True, check=False)
    try:
        verdict = json.loads(done.stdout)
    except ValueError:
        raise Failed(f"sabot-verify: {done.stdout[-500:]}{done.stderr[-500:]}") from None
    if done.returncode != 0 or verdict.get("verdict") != "VERIFIED":
        raise Failed(f"sabot-verify: {verdict.get('verdict')} (exit {done.returncode}): "
                     f"{json.dumps(verdict.get('failures'))[:800]}")
    against = verdict.get("known_checkpoints") or {}
    proven = against.get("proven")
    proven = len(proven) if isinstance(proven, list) else proven
    unchecked = against.get("unchecked")
    unchecked = len(unchecked) if isinstance(unchecked, list) else unchecked
    if proven != len(known) // 2 or unchecked:
        raise Failed(f"sabot-verify: of {len(known) // 2} known checkpoints {proven} proven, "
                     f"{unchecked} unchecked")
    line = (verdict.get("report") or [""])[-1]
    say(f"export: {export.stat().st_size} bytes, {verdict.get('events')} events, "
        f"{verdict.get('links')} chain links; sabot-verify (checkpoint and chain keys pinned, "
        f"the writer's head file, {len(known) // 2} known checkpoints, each proven a prefix of "
        f"the export's tree): {line[:300]}")
    return verdict


# --- the run ----------------------------------------------------------------------------------


class Server:
    """``sabot serve`` on the cluster (its ledger in a process of its own, the notary on)."""

    def __init__(self, work: Path, env: dict[str, str], name: str, *, store: str = SERVER,
                 listen: str = LISTEN, metrics: str = METRICS,
                 ready: str = "sabot.writer") -> None:
        self.out = work / f"{name}.out"
        self.proc = subprocess.Popen(
            [*SABOT, "serve", "--listen", listen, "--store", store,
             "--metrics-listen", metrics], env=env, cwd=work,
            stdout=self.out.open("w"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 90
        while not writer_serving(metrics, ready):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.stop()
                raise Failed(f"the server did not start ({self.out})")
            time.sleep(0.3)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def setup(work: Path) -> tuple[dict[str, str], dict[str, str]]:
    """The server's environment (keys made with ``sabot keys``, tokens) and the tokens."""
    env = {**os.environ, "SABOT_ENV_FILE": str(work / "none"), "PYTHONUNBUFFERED": "1"}
    for kind in ("checkpoint", "chain"):
        subprocess.run([*SABOT, "keys", kind, "--out", str(work / kind)], check=True, env=env,
                       stdout=subprocess.DEVNULL)
    accounts = [*(f"teq{t}-p{j}" for t in range(TEQ_TABLES) for j in range(TEQ_PLAYERS)),
                *(f"tyu-p{j}" for j in range(TYU_PLAYERS)), "cu-p0", "cu-p1"]
    tokens = {who: secrets.token_hex(24) for who in ("admin", *accounts)}
    env.update({
        "SABOT_TOKENS": ",".join([f"{tokens['admin']}:admin",
                                  *(f"{tokens[a]}:player:{a}" for a in accounts)]),
        "SABOT_SEAL_KEY": secrets.token_hex(32),
        "SABOT_CHAIN_KEY": str(work / "chain.key"),
        "SABOT_CHECKPOINT_KEY": str(work / "checkpoint.key"),
        "SABOT_CHAIN_HEAD": str(work / "head.json")})
    return env, tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-ruled-out", action="store_true")
    args = parser.parse_args()
    if not (cluster.BASE / "pids.json").exists():
        raise SystemExit("ha-test: no cluster: make ha-up first")
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="sabot-ha-test-"))
    env, tokens = setup(work)
    subprocess.run([*SABOT, "store", "init", "--store", OWNER, "--server-role", "sabot_server"],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    server = Server(work, env, "serve")
    admin = Client(LISTEN, tokens["admin"], timeout=30)
    public = bytes.fromhex((work / "checkpoint.pub").read_text().strip())
    watch = Watch(admin, public)
    load = Load(LISTEN, tokens)
    events: list[Event] = []
    try:
        load.start()
        time.sleep(6)
        killed: list[str] = []
        events.append(event("failover (SIGKILL)", lambda: killed.append(kill_primary())
                            or killed[0], load, watch))
        start_again(killed[0])
        events.append(event("switchover", switchover, load, watch))
        load.finish()
        watch.close()
        say(f"load: {len(load.tally.acked)} acknowledged in "
            f"{load.tally.times[-1] - load.tally.times[0]:.0f} s; retried: "
            f"{json.dumps(dict(load.tally.retries))}")
        check_log(load.tally, env)
        check_money(admin, load.tally)
        latest = check_checkpoints(admin, watch, events)
        on_standby = standby_server(work, env, tokens)
        if not writer_serving():
            raise Failed(f"sabot.writer not SERVING at the end: {writer_facts()}")
    finally:
        load.stop.set()
        watch.close()
        admin.close()
        server.stop()
    demoted = demoted_server(work, env, tokens)
    verdict = export_and_verify(work, env, watch)
    summary = {"events": {e.what: e.figures for e in events},
               "acknowledged": len(load.tally.acked), "checkpoints": len(watch.checkpoints),
               "latest_checkpoint": latest.size, "export": verdict.get("verdict"),
               "server_on_a_standby": on_standby, "node_demoted_under_a_server": demoted}
    if not args.skip_ruled_out:
        summary["ruled_out"] = ruled_out(work, env, tokens)
    say(f"passed in {time.monotonic() - started:.0f} s: {json.dumps(summary)}")
    shutil.rmtree(work, ignore_errors=True)  # kept when a check failed: the servers' logs


def standby_server(work: Path, env: dict[str, str], tokens: dict[str, str]) -> dict[str, Any]:
    """A second server whose store URL names a standby itself (no proxy, no
    ``target_session_attrs``): it serves reads, but is no writer (``sabot.writer``
    NOT_SERVING) and answers a command UNAVAILABLE, never deciding one it cannot store."""
    node = next(n for n, (_, rest) in cluster.NODES.items()
                if cluster._role(rest) in ("replica", "sync_standby"))
    store = f"postgresql://sabot_server@127.0.0.1:{cluster.NODES[node][0]}/sabot"
    listen, metrics = _free(), _free()
    try:
        server = Server(work, {**env, "SABOT_CHAIN_HEAD": str(work / "standby-head.json")},
                        "serve-standby", store=store, listen=listen, metrics=metrics, ready="")
    except Failed:
        out = (work / "serve-standby.out").read_text().strip().splitlines()
        figures = {"node": node, "started": False, "why": (out or [""])[-1][:300]}
        say(f"a server on a standby ({store}) does not start: {json.dumps(figures)}")
        if "read-only" not in figures["why"]:
            raise Failed(f"a server on a standby: {figures['why']}") from None
        return figures
    client = Client(listen, tokens["admin"], timeout=10)
    try:
        looks = []
        for _ in range(20):
            looks.append(writer_serving(metrics))
            time.sleep(0.25)
        try:
            client.cashier.Deposit(cashier_pb2.DepositRequest(
                request_id=str(uuid.uuid4()), name="accounts/cash-0", amount=money(1)))
            answer = "OK"
        except grpc.RpcError as exc:
            answer = f"{exc.code().name} {reason(exc)}".strip()  # type: ignore[attr-defined]
        balance = client.cashier.GetAccount(cashier_pb2.GetAccountRequest(
            name="accounts/cash-0")).balance.amount_minor
    finally:
        client.close()
        server.stop()
    figures = {"node": node, "writer_serving_looks": sum(looks), "of": len(looks),
               "deposit": answer, "reads": balance is not None}
    say(f"a server on a standby ({store}): {json.dumps(figures)}")
    if any(looks) or not answer.startswith("UNAVAILABLE"):
        raise Failed("a server on a standby took writes or said sabot.writer SERVING")
    return figures


def demoted_server(work: Path, env: dict[str, str], tokens: dict[str, str]) -> dict[str, Any]:
    """A server whose store URL names the primary node itself (no proxy, no
    ``target_session_attrs``), the node demoted under it by a switchover: once the node is a
    standby the server takes no write (``sabot.writer`` NOT_SERVING, commands UNAVAILABLE),
    where before the writer's lease and probe took a standby for a store (``SELECT 1`` and an
    advisory lock both work on one)."""
    node = primary()
    store = f"postgresql://sabot_server@127.0.0.1:{cluster.NODES[node][0]}/sabot"
    listen, metrics = _free(), _free()
    server = Server(work, env, "serve-node", store=store, listen=listen, metrics=metrics)
    client = Client(listen, tokens["admin"], timeout=10)
    answers: collections.Counter[str] = collections.Counter()
    looks: list[bool] = []
    wrote: list[str] = []
    try:
        first = cashier_pb2.DepositRequest(request_id=str(uuid.uuid4()),
                                           name="accounts/cash-0", amount=money(1))
        _read(lambda: client.cashier.Deposit(first))  # written there (retried with its id)
        switchover()
        cluster._wait(lambda: cluster._role(cluster.NODES[node][1]) in ("replica",
                                                                         "sync_standby"),
                      120, f"{node} a standby")
        end = time.monotonic() + 10
        while time.monotonic() < end:
            looks.append(writer_serving(metrics))
            rid = str(uuid.uuid4())
            try:
                client.cashier.Deposit(cashier_pb2.DepositRequest(
                    request_id=rid, name="accounts/cash-0", amount=money(1)))
                wrote.append(rid)
            except grpc.RpcError as exc:
                answers[f"{exc.code().name} {reason(exc)}".strip()] += 1  # type: ignore[attr-defined]
            time.sleep(0.4)
    finally:
        client.close()
        server.stop()
    figures = {"node": node, "writer_serving_looks": sum(looks), "of": len(looks),
               "acknowledged_on_the_standby": len(wrote), "answers": dict(answers)}
    say(f"a server on a node demoted under it ({store}): {json.dumps(figures)}")
    if wrote or any(looks) or any(not a.startswith("UNAVAILABLE") for a in answers):
        raise Failed("a server on a demoted node said SERVING or answered a command otherwise "
                     "than UNAVAILABLE")
    return figures


def start_again(name: str) -> None:
    """The killed node's Patroni started again: it rejoins as a standby (``pg_rewind``)."""
    pids = cluster._load()
    home = cluster.BASE / name
    pids[name] = cluster.as_postgres(["patroni", str(home / "patroni.yml")],
                                     home / "patroni.out").pid
    cluster._save(pids)
    cluster._wait(cluster._synchronous, 120, f"{name} back as a standby")
    cluster._wait(lambda: sum(cluster._role(r) in ("replica", "sync_standby")
                              for _, r in cluster.NODES.values()) == 2, 120, "two standbys")


# --- the case the configuration rules out ----------------------------------------------------


def walreceiver(name: str) -> int:
    pm = postmaster(name)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pm and "walreceiver" in cmd:
            return int(entry)
    raise Failed(f"no WAL receiver on {name}")


def _make_asynchronous() -> None:
    """The cluster made asynchronous: what the supported configuration forbids."""
    done = patronictl("edit-config", "--force", "-s", "synchronous_mode=false",
                      "-s", "synchronous_mode_strict=false",
                      "-s", "maximum_lag_on_failover=1073741824")
    if done.returncode != 0:
        raise Failed(f"patronictl edit-config: {done.stdout}{done.stderr}")
    cluster._wait(lambda: cluster._psql(cluster.PROXY, "SELECT count(*) FROM pg_stat_replication"
                                        " WHERE sync_state = 'sync'") == "0", 60, "async")


def _asked_to_write(admin: Client, deadline: float, answers: collections.Counter[str]
                    ) -> tuple[str, str]:
    """Deposits asked of the server until one is refused FAILED_PRECONDITION (its status and
    reason) or one is written (its request id), or ``deadline``; each answer counted."""
    refusal = wrote = ""
    while time.monotonic() < deadline and not refusal and not wrote:
        rid = str(uuid.uuid4())
        try:
            admin.cashier.Deposit(cashier_pb2.DepositRequest(
                request_id=rid, name="accounts/cash-0", amount=money(1)))
            wrote = rid
        except grpc.RpcError as exc:
            code = exc.code()  # type: ignore[attr-defined]
            answers[f"{code.name} {reason(exc)}".strip()] += 1
            if code is grpc.StatusCode.FAILED_PRECONDITION:
                refusal = f"{code.name} {reason(exc)}"
            time.sleep(0.3)
    return refusal, wrote


def ruled_out(work: Path, env: dict[str, str], tokens: dict[str, str]) -> dict[str, Any]:
    """A standby that missed commits promoted under a running server: the server stops.

    The cluster made asynchronous (what the supported configuration forbids), the other standby
    stopped, the stale one's WAL receiver stopped (SIGSTOP) while cash moves for 3 s, the
    primary killed, then the stopped receiver killed too (the WAL it had not read from its
    socket is gone with it: the standby restarts its recovery from what it wrote, without the
    last commits). Patroni promotes it after ``ttl``; the server is asked to write on it."""
    _make_asynchronous()
    old = primary()
    stale, gone = (n for n in cluster.NODES if n != old)
    cluster._stop(cluster._load()[gone])  # one standby stopped: the stale one is the only one
    server = Server(work, env, "serve-async")
    admin = Client(LISTEN, tokens["admin"], timeout=5)
    load = Load(LISTEN, tokens)
    t = threading.Thread(target=load._guard, args=(lambda: load.cashier(0),), daemon=True)
    load.threads.append(t)
    answers: collections.Counter[str] = collections.Counter()
    refusal = wrote = ""
    try:
        t.start()
        time.sleep(3)
        receiver = walreceiver(stale)
        os.kill(receiver, signal.SIGSTOP)  # it reads nothing more from the primary
        stopped_at = time.monotonic()
        time.sleep(3)
        kill(old)
        killed_at = time.monotonic()
        with load.tally.lock:
            missed = {rid for tm, rid in load.tally.log if stopped_at < tm < killed_at}
        os.kill(receiver, signal.SIGKILL)
        cluster._wait(lambda: cluster._role(cluster.NODES[stale][1]) in cluster.PRIMARY, 120,
                      f"{stale} promoted")
        promoted_at = time.monotonic()
        # the server goes on being asked to write: it must refuse, and stay refusing
        refusal, wrote = _asked_to_write(admin, promoted_at + 60, answers)
        refused_at = time.monotonic()
        load.stop.set()
        load.give_up = time.monotonic()
        t.join(30)
        time.sleep(3)
        gauge = metric("sabot_writer_evidence_broken")
        serving = writer_serving()
        # still refusing a while later
        try:
            admin.cashier.Deposit(cashier_pb2.DepositRequest(
                request_id=str(uuid.uuid4()), name="accounts/cash-0", amount=money(1)))
            wrote = wrote or "the later deposit"
        except grpc.RpcError as exc:
            answers[f"{exc.code().name} {reason(exc)}".strip()] += 1  # type: ignore[attr-defined]
    finally:
        load.stop.set()
        admin.close()
        server.stop()
    recorded = {e["state"]["request_id"] for e in events_of(OWNER, env)
                if e["topic"] == "sabot.ledger:Request.Recorded"}
    lost = sorted(rid for rid in missed if rid not in recorded)
    after = [rid for tm, rid in load.tally.log if tm > killed_at and rid in recorded]
    figures = {"acknowledged_while_receiver_stopped": len(missed),
               "lost_by_promoting_it": len(lost),
               "written_after_promotion": len(after) + (1 if wrote in recorded else 0),
               "refusal": refusal, "answers_after_promotion": dict(answers),
               "refused_after_promotion_s": round(refused_at - promoted_at, 2),
               "writer_serving": serving,
               "sabot_writer_evidence_broken": gauge}
    say(f"ruled out (asynchronous, a standby behind promoted): {json.dumps(figures)}")
    if not lost:
        raise Failed("the stale standby missed no commit: the case was not made")
    if wrote or after:
        raise Failed("the server wrote on a primary that lost acknowledged commits: the "
                     "chain forked")
    if refusal != "FAILED_PRECONDITION EVIDENCE_BROKEN" or serving or gauge != 1:
        raise Failed(f"the server's answer on the stale primary: {refusal or 'none'}, "
                     f"sabot.writer {'SERVING' if serving else 'NOT_SERVING'}")
    return figures


if __name__ == "__main__":
    main()
