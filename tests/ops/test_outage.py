"""PostgreSQL stopped and started again under ``sabot serve``, through a proxy the test controls
(``proxy.py``: what a stopped server does to its clients; the machine's shared cluster is never
touched): the health says NOT_SERVING within a few seconds and SERVING again by itself, writes
are answered UNAVAILABLE (RetryInfo, "retry with the same request id") within their deadline,
80 clients writing through a 10 s outage leave the health check answering, and afterwards every
acknowledged write is stored once and the read models reconcile.

The figures (time to NOT_SERVING, back to SERVING, the UNAVAILABLE answers' latency) are printed
(``pytest -s``) for the issue's report."""

from __future__ import annotations

import statistics
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
from google.rpc import error_details_pb2  # type: ignore[import-untyped]
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from services.api.gen.sabot.v1 import cashier_pb2, cashier_pb2_grpc, common_pb2
from tests.conftest import PG_HOST, PG_PORT

from .proxy import Proxy
from .support import ADMIN_TOKEN, Keys, Served, create_store, drop_database, sabot, url

pytestmark = pytest.mark.postgres
AUTH = (("authorization", f"Bearer {ADMIN_TOKEN}"),)
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


@dataclass
class Site:
    served: Served
    proxy: Proxy
    database: str
    channel: grpc.Channel = field(init=False)

    def __post_init__(self) -> None:
        self.channel = grpc.insecure_channel(self.served.target)
        self.cashier = cashier_pb2_grpc.CashierServiceStub(self.channel)
        self.health = health_pb2_grpc.HealthStub(self.channel)

    def status(self, service: str = "", timeout: float = 1.0) -> int:
        reply = self.health.Check(health_pb2.HealthCheckRequest(service=service),
                                  timeout=timeout)
        return int(reply.status)

    def wait_status(self, status: int, service: str = "", timeout: float = 20.0) -> float:
        """Seconds until ``service`` says ``status`` (polled every 0.1 s)."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if self.status(service) == status:
                return time.monotonic() - started
            time.sleep(0.1)
        raise AssertionError(f"{service or '(server)'} never said {status} in {timeout} s")

    def deposit(self, request_id: str, account: str, amount: int = 1,
                timeout: float = 2.0) -> cashier_pb2.Account:
        return self.cashier.Deposit(cashier_pb2.DepositRequest(
            request_id=request_id, name=f"accounts/{account}",
            amount=common_pb2.Money(currency_code="EUR", amount_minor=amount)),
            metadata=AUTH, timeout=timeout)

    def open_account(self, account: str) -> None:
        self.cashier.OpenAccount(cashier_pb2.OpenAccountRequest(
            request_id=f"open-{account}", account_id=account, currency_code="EUR"),
            metadata=AUTH, timeout=10)

    def balance(self, account: str) -> tuple[int, int]:
        found = self.cashier.GetAccount(cashier_pb2.GetAccountRequest(
            name=f"accounts/{account}"), metadata=AUTH, timeout=10)
        return int(found.balance.amount_minor), int(found.entries)

    def metrics(self) -> str:
        port = self.served.metrics_port()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
            return str(reply.read().decode())


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    keys = Keys(tmp_path)
    database = create_store()
    proxy = Proxy((PG_HOST, PG_PORT))
    served = Served(url(database, port=proxy.port), keys, tmp_path,
                    "--metrics-listen", "127.0.0.1:0")
    try:
        served.wait_listening()
        here = Site(served, proxy, database)
        try:
            yield here
        finally:
            here.channel.close()
    finally:
        served.stop()
        proxy.close()
        drop_database(database)


def unavailable_details(error: grpc.RpcError) -> tuple[str, float]:
    """The reason of an UNAVAILABLE answer and its RetryInfo's delay (s)."""
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None, "no google.rpc.Status details"
    reason, delay = "", -1.0
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            reason = info.reason
        if detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            retry = error_details_pb2.RetryInfo()
            detail.Unpack(retry)
            delay = retry.retry_delay.ToNanoseconds() / 1e9
    return reason, delay


def sample(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no {name}")


def test_health_and_writes_follow_the_store_down_and_up_again(site: Site) -> None:
    site.open_account("p-1")
    assert site.status() == SERVING and site.status("sabot.writer") == SERVING
    assert site.deposit("before-1", "p-1").balance.amount_minor == 1

    site.proxy.cut()
    cut_at = time.monotonic()
    to_not_serving = site.wait_status(NOT_SERVING, timeout=10)
    assert site.status("sabot.writer") == NOT_SERVING and site.status("sabot.store") == \
        NOT_SERVING
    latencies = []
    for i in range(10):
        started = time.monotonic()
        with pytest.raises(grpc.RpcError) as refused:
            site.deposit(f"during-{i}", "p-1", timeout=2.0)
        latencies.append(time.monotonic() - started)
        assert refused.value.code() is grpc.StatusCode.UNAVAILABLE, refused.value.details()
        assert "retry with the same request id" in (refused.value.details() or "")
        reason, delay = unavailable_details(refused.value)
        assert reason == "STORE_UNAVAILABLE", reason
        assert delay > 0
    assert max(latencies) < 2.0  # within the deadline, every one
    page = site.metrics()
    assert sample(page, "sabot_store_up") == 0
    assert sample(page, 'sabot_health_serving{service=""}') == 0
    for _ in range(30):  # counted from the first look that found it down
        if sample(page, "sabot_store_down_seconds") > 0:
            break
        time.sleep(0.2)
        page = site.metrics()
    assert sample(page, "sabot_store_down_seconds") > 0
    assert sample(page, 'sabot_writer_commands_total{outcome="unavailable"}') >= 1
    with pytest.raises(urllib.error.HTTPError) as probed:  # the HTTP probe says so too
        urllib.request.urlopen(f"http://127.0.0.1:{site.served.metrics_port()}/health",
                               timeout=5)
    assert probed.value.code == 503
    site.proxy.mend()
    mended_at = time.monotonic()
    to_serving = site.wait_status(SERVING, timeout=30)
    site.wait_status(SERVING, "sabot.writer", timeout=30)
    to_writer = time.monotonic() - mended_at
    # Every write retried with its request id: stored once (the refused ones now, or found),
    # at once: sabot.writer says SERVING when the writer decides again.
    for i in range(10):
        site.deposit(f"during-{i}", "p-1", timeout=10)
    assert site.deposit("before-1", "p-1", timeout=10).balance.amount_minor == 1  # its first
    assert site.balance("p-1") == (11, 11)
    page = site.metrics()
    assert sample(page, "sabot_store_up") == 1
    assert sample(page, "sabot_writer_store_outages_total") >= 1
    print(f"\nOUTAGE FIGURES: NOT_SERVING {to_not_serving:.2f} s after the cut; "
          f"UNAVAILABLE answers (deadline 2 s): median {statistics.median(latencies)*1000:.0f} "
          f"ms, max {max(latencies)*1000:.0f} ms; SERVING {to_serving:.2f} s after the store "
          f"came back, sabot.writer {to_writer:.2f} s; outage {mended_at - cut_at:.1f} s")


def test_80_writers_through_a_10_s_outage_leave_the_health_answering_and_lose_nothing(
        site: Site) -> None:
    accounts = [f"p-{n}" for n in range(8)]
    for account in accounts:
        site.open_account(account)
    stop = threading.Event()
    lock = threading.Lock()
    acked: dict[str, tuple[str, int]] = {}  # request id -> (account, balance answered)
    unavailable: list[float] = []  # seconds each UNAVAILABLE answer took (deadline 3 s)
    other: list[str] = []
    checks: list[tuple[float, int | str]] = []  # (time, status or the error)

    def writer(n: int) -> None:
        account = accounts[n % len(accounts)]
        i = 0
        while not stop.is_set():
            request_id = f"w{n}-{i}"
            while time.monotonic() < give_up:  # as the runbook says: retry the same request id
                started = time.monotonic()
                try:
                    reply = site.deposit(request_id, account, timeout=3.0)
                except grpc.RpcError as exc:
                    took = time.monotonic() - started
                    with lock:
                        if exc.code() is grpc.StatusCode.UNAVAILABLE:
                            unavailable.append(took)
                        else:
                            other.append(f"{exc.code().name}: {exc.details()}")
                    _, delay = unavailable_details(exc) if exc.code() is \
                        grpc.StatusCode.UNAVAILABLE else ("", 0.5)
                    time.sleep(max(0.1, delay))
                    continue
                with lock:
                    acked[request_id] = (account, int(reply.balance.amount_minor))
                break
            i += 1

    def checker() -> None:
        while not stop.is_set():
            try:
                checks.append((time.monotonic(), site.status(timeout=1.0)))
            except grpc.RpcError as exc:
                checks.append((time.monotonic(), exc.code().name))
            time.sleep(0.2)

    give_up = time.monotonic() + 90  # a write still refused by then fails the test below
    threads = [threading.Thread(target=writer, args=(n,)) for n in range(80)]
    threads.append(threading.Thread(target=checker))
    for t in threads:
        t.start()
    try:
        time.sleep(2)
        site.proxy.cut()
        cut_at = time.monotonic()
        time.sleep(10)
        site.proxy.mend()
        mended_at = time.monotonic()
        back = site.wait_status(SERVING, "sabot.writer", timeout=30)
        time.sleep(3)  # writes flow again
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert not other, other[:5]
    assert time.monotonic() < give_up, "writes were still refused long after the outage"
    # the health check answered every probe, said NOT_SERVING during the outage, SERVING after
    assert checks and all(isinstance(s, int) for _, s in checks), [
        s for _, s in checks if not isinstance(s, int)][:5]
    during = [s for at, s in checks if cut_at + 3 < at < mended_at]
    assert during and all(s == NOT_SERVING for s in during)
    assert checks[-1][1] == SERVING
    first_down = min(at for at, s in checks if at > cut_at and s == NOT_SERVING)
    # every UNAVAILABLE within its deadline
    assert unavailable and max(unavailable) < 3.0
    # every acknowledged write stored once: each account's balance is its acknowledged count
    for account in accounts:
        mine = sum(1 for a, _ in acked.values() if a == account)
        assert site.balance(account) == (mine, mine), account
    # a retry of an acknowledged write answers as the first time (stored once, not again)
    some = sorted(acked)[:20]
    for request_id in some:
        account, _ = acked[request_id]
        site.deposit(request_id, account, timeout=10)
    for account in accounts:
        mine = sum(1 for a, _ in acked.values() if a == account)
        assert site.balance(account) == (mine, mine)
    reconcile = sabot("reconcile", "--store", url(site.database))
    assert reconcile.returncode == 0, reconcile.stdout + reconcile.stderr
    ordered = sorted(unavailable)
    print(f"\nOUTAGE FIGURES (80 writers, 10 s outage): {len(acked)} writes acknowledged, "
          f"{len(unavailable)} UNAVAILABLE answers: median {statistics.median(ordered)*1000:.0f}"
          f" ms, p99 {ordered[int(len(ordered)*0.99) - 1]*1000:.0f} ms, max "
          f"{ordered[-1]*1000:.0f} ms (deadline 3 s); {len(checks)} health checks, all "
          f"answered; NOT_SERVING {first_down - cut_at:.2f} s after the cut; sabot.writer "
          f"SERVING {back:.2f} s after the store came back")


def test_a_store_that_hangs_is_answered_within_the_deadline_and_the_bound(
        tmp_path: Path) -> None:
    """The network drops everything (connections open, nothing answers: no reset to notice):
    a write is answered UNAVAILABLE within its deadline, one without a deadline within the
    server's bound (``--store-timeout``), the health says NOT_SERVING within a few seconds, and
    when the network comes back everything is as before, nothing lost."""
    keys = Keys(tmp_path)
    database = create_store()
    proxy = Proxy((PG_HOST, PG_PORT))
    served = Served(url(database, port=proxy.port), keys, tmp_path, "--store-timeout", "1.5")
    try:
        served.wait_listening()
        site = Site(served, proxy, database)
        site.open_account("h-1")
        assert site.deposit("h-before", "h-1").balance.amount_minor == 1
        proxy.hang()
        hung_at = time.monotonic()
        took = []
        for i, deadline in enumerate((1.0, None, 1.0, None)):
            started = time.monotonic()
            with pytest.raises(grpc.RpcError) as refused:
                site.deposit(f"h-{i}", "h-1", timeout=deadline)  # type: ignore[arg-type]
            took.append(time.monotonic() - started)
            assert refused.value.code() is grpc.StatusCode.UNAVAILABLE, refused.value.details()
            assert "retry with the same request id" in (refused.value.details() or "")
            assert took[-1] < (deadline or 1.5) + 0.5, took
        to_not_serving = site.wait_status(NOT_SERVING, timeout=15)
        not_serving_after = time.monotonic() - hung_at
        proxy.mend()
        site.wait_status(SERVING, "sabot.writer", timeout=60)
        for i in range(4):
            for _ in range(40):  # as a client: the same request id until it answers
                try:
                    site.deposit(f"h-{i}", "h-1", timeout=5)
                    break
                except grpc.RpcError as exc:
                    assert exc.code() is grpc.StatusCode.UNAVAILABLE
                    time.sleep(0.25)
            else:
                raise AssertionError(f"h-{i} never stored")
        assert site.balance("h-1") == (5, 5)
        print(f"\nHANG FIGURES: UNAVAILABLE after {[round(t, 2) for t in took]} s "
              f"(deadlines 1 s, none: the 1.5 s bound); NOT_SERVING {not_serving_after:.1f} s "
              f"after the hang began ({to_not_serving:.1f} s of polling)")
        site.channel.close()
    finally:
        served.stop()
        proxy.close()
        drop_database(database)
