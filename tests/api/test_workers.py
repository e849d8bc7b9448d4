"""``services.api.workers.Workers``, the gRPC server's RPC threads: every call runs once, its
done callback is called once whether it is added before or after the call ends, never more
threads than the limit, a call beyond the limit waits for a free thread (never lost), and a
server built on it serves and stops."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from hypothesis import given, settings
from hypothesis import strategies as st

from services.api.workers import Workers


def _prefixed(prefix: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(prefix + "_")]


@settings(max_examples=40, deadline=None)
@given(limit=st.integers(1, 6), calls=st.integers(1, 60), late=st.lists(st.booleans(),
                                                                        min_size=60,
                                                                        max_size=60))
def test_every_call_runs_once_and_its_callback_once(limit: int, calls: int,
                                                    late: list[bool]) -> None:
    prefix = f"wtest-{limit}-{calls}-{sum(late)}-{time.monotonic_ns()}"
    pool = Workers(limit, thread_name_prefix=prefix)
    ran: list[int] = []
    called: list[int] = []
    lock = threading.Lock()

    def work(i: int) -> None:
        with lock:
            ran.append(i)

    def done(i: int) -> object:
        def callback(future: Future[None]) -> None:
            assert future.done()
            with lock:
                called.append(i)
        return callback

    tickets = [pool.submit(work, i) for i in range(calls)]
    for i, ticket in enumerate(tickets):
        if late[i]:  # the callback added once the call surely ended, or at once
            deadline = time.monotonic() + 5
            while not ticket.done() and time.monotonic() < deadline:
                time.sleep(0.0005)
        ticket.add_done_callback(done(i))
    deadline = time.monotonic() + 10
    while len(called) < calls and time.monotonic() < deadline:
        time.sleep(0.001)
    assert sorted(ran) == list(range(calls))
    assert sorted(called) == list(range(calls))  # once each, none twice
    assert len(_prefixed(prefix)) <= limit
    pool.shutdown(wait=True)
    assert _prefixed(prefix) == []


def test_a_call_beyond_the_limit_waits_for_a_free_thread() -> None:
    pool = Workers(2, thread_name_prefix="wtest-limit")
    release = threading.Event()
    started: list[int] = []

    def hold(i: int) -> None:
        started.append(i)
        release.wait(10)

    for i in range(3):
        pool.submit(hold, i)
    time.sleep(0.2)
    assert sorted(started) == [0, 1]  # two threads, both held: the third call waits
    assert len(_prefixed("wtest-limit")) == 2
    release.set()
    deadline = time.monotonic() + 5
    while len(started) < 3 and time.monotonic() < deadline:
        time.sleep(0.005)
    assert sorted(started) == [0, 1, 2]
    pool.shutdown(wait=True)
    with pytest.raises(RuntimeError):
        pool.submit(hold, 4)


def test_threads_are_reused_not_started_per_call() -> None:
    pool = Workers(8, thread_name_prefix="wtest-reuse")
    for i in range(200):
        done = threading.Event()
        pool.submit(done.set)
        assert done.wait(5), i
    assert len(_prefixed("wtest-reuse")) == 1  # one call at a time: one thread
    pool.shutdown(wait=True)


def test_a_failing_call_still_ends_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    pool = Workers(1, thread_name_prefix="wtest-fail")
    ended = threading.Event()

    def fail() -> None:
        raise ValueError("boom")

    pool.submit(fail).add_done_callback(lambda _: ended.set())
    assert ended.wait(5)
    after = threading.Event()
    pool.submit(after.set)
    assert after.wait(5)  # the thread survived it
    pool.shutdown(wait=True)
    assert any("boom" in (r.exc_text or "") or r.exc_info for r in caplog.records)


def test_a_grpc_server_on_workers_serves_and_counts_its_calls() -> None:
    server = grpc.server(Workers(4, thread_name_prefix="wtest-grpc"),
                         maximum_concurrent_rpcs=4)
    health_pb2_grpc.add_HealthServicer_to_server(health.HealthServicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            for _ in range(50):  # more calls than maximum_concurrent_rpcs: each one counted
                # out again (the done callback), else grpc would answer RESOURCE_EXHAUSTED
                answer = stub.Check(health_pb2.HealthCheckRequest(), timeout=5)
                assert answer.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        server.stop(None).wait(5)
