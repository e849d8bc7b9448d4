"""The health monitor's decisions (``services.api.health``): each status from the facts, a
standby's, the lag clocks, and a monitor that comes back to SERVING by itself."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from services.api import health as h
from services.metrics import ServerMetrics

SERVICES = ("sabot.v1.TableService", "sabot.v1.WatchService", "sabot.v1.ReadModelService")


def facts(**kw: object) -> h.Facts:
    base: dict[str, object] = {"at": 0.0, "store_up": True}
    base.update(kw)
    return h.Facts(**base)  # type: ignore[arg-type]


def test_every_service_serves_when_all_is_well() -> None:
    got = h.decide(facts(), SERVICES)
    assert all(got.values()) and set(got) == {"", h.STORE, h.WRITER, h.READ_MODELS, *SERVICES}


def test_a_store_that_does_not_answer_stops_everything() -> None:
    got = h.decide(facts(store_up=False), SERVICES)
    assert not any(got.values())


def test_a_standby_serves_reads_and_not_writes() -> None:
    got = h.decide(facts(ledger=h.LedgerState(alive=True, active=False, holder="a:1")), SERVICES)
    assert got[""] and got[h.STORE] and got["sabot.v1.WatchService"]
    assert not got[h.WRITER] and not got["sabot.v1.TableService"]


def test_a_ledger_process_that_is_gone_stops_everything_but_the_store() -> None:
    got = h.decide(facts(ledger=h.LedgerState(alive=False)), SERVICES)
    assert got[h.STORE] and not got[""] and not got[h.WRITER]


def test_lagging_read_models_are_said_apart_from_writes() -> None:
    got = h.decide(facts(views={"recall": (500, 61.0), "shoes": (0, 0.0)}), SERVICES,
                   h.Limits(max_lag=60))
    assert got[""] and got[h.WRITER] and got["sabot.v1.TableService"]
    assert not got[h.READ_MODELS] and not got["sabot.v1.ReadModelService"]


def test_a_notary_standing_by_or_behind_is_not_serving() -> None:
    assert h.NOTARY not in h.decide(facts(), SERVICES)  # no notary here: no such service
    ok = facts(notary=h.NotaryState(active=True, position=10), notary_lag=(3, 1.0))
    assert h.decide(ok, SERVICES)[h.NOTARY]
    standby = facts(notary=h.NotaryState(active=False, position=10))
    assert not h.decide(standby, SERVICES)[h.NOTARY]
    behind = facts(notary=h.NotaryState(active=True, position=10), notary_lag=(9, 120.0))
    assert not h.decide(behind, SERVICES)[h.NOTARY]


def test_the_lag_clock_says_since_when_a_position_is_behind() -> None:
    clock = h.LagClock()
    clock.sample(100.0, 10)
    clock.sample(105.0, 10)  # no new event: no sample
    clock.sample(110.0, 20)
    assert clock.behind(112.0, 20) == 0.0
    assert clock.behind(112.0, 15) == 2.0  # events 16..20 arrived at 110
    assert clock.behind(112.0, 5) == 12.0  # events 6..10 were there at 100


def test_the_monitor_follows_the_store_down_and_up_again(tmp_path: Path) -> None:
    state = {"up": True}

    def store() -> float:
        if not state["up"]:
            raise OSError("connection refused")
        return 0.001

    servicer = health.HealthServicer()
    metrics = ServerMetrics(process=False)
    monitor = h.HealthMonitor(servicer, SERVICES, h.Sources(store=store, head=lambda: 7,
                                                            views=lambda: {"recall": 7}),
                              metrics, interval=0.05).start()
    try:
        assert monitor.wait_for("", True, 5)
        state["up"] = False
        assert monitor.wait_for("", False, 5)
        assert monitor.statuses[h.WRITER] is False
        assert metrics.store_up._value.get() == 0
        state["up"] = True
        assert monitor.wait_for("", True, 5) and monitor.wait_for(h.WRITER, True, 5)
        serving, shown = monitor.check(h.WRITER) or (False, {})
        assert serving and shown["status"] == "SERVING"
        assert shown["facts"]["views"]["recall"]["events_behind"] == 0
        assert monitor.check("no.such.Service") is None
    finally:
        monitor.stop()


def test_check_answers_on_its_own_threads_when_every_worker_is_busy() -> None:
    """Two workers, both held: Check is still answered (grpc's experimental_thread_pool)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    release = threading.Event()
    servicer = health.HealthServicer()
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    handler, pool = h.serve_checks(servicer)

    def hold(request: bytes, context: grpc.ServicerContext) -> bytes:
        release.wait(30)
        return b""

    busy = grpc.method_handlers_generic_handler("test.Busy", {
        "Hold": grpc.unary_unary_rpc_method_handler(hold)})
    server = grpc.server(ThreadPoolExecutor(2))
    server.add_generic_rpc_handlers((handler, busy))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        held = [channel.unary_unary("/test.Busy/Hold").future(b"", timeout=30)
                for _ in range(4)]
        stub = health_pb2_grpc.HealthStub(channel)
        reply = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=2)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        release.set()
        for call in held:
            call.result(timeout=30)
    finally:
        release.set()
        channel.close()
        server.stop(0)
        pool.shutdown(wait=False)


@pytest.mark.parametrize("url", ["sqlite:///{tmp}/s.db", "sqlite:///:memory:"])
def test_the_store_probe_reads_a_sqlite_store(tmp_path: Path, url: str) -> None:
    import sqlite3

    sqlite3.connect(tmp_path / "s.db").close()
    assert h.StoreProbe(url.format(tmp=tmp_path)).check() >= 0.0
