"""How a call over the ledger socket waits for its answer (``RemoteLedger``'s ``_Answer``): a host
that does not answer in time gives StoreUnavailable (a query: ``ask``, TimeoutError) and the call
is forgotten; an answer that comes after is dropped, never given to another call; answers that
come together, in any order, each reach their own caller; answers given while the connection
is lost reach nobody twice."""

from __future__ import annotations

import contextlib
import random
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from domain.errors import NotFound
from services.bootstrap import LEDGER_GAMES
from services.ledger import wire
from services.ledger.errors import StoreUnavailable
from services.ledger.remote import HostGone, RemoteLedger
from services.ledger.writer import call_deadline

SECRET = bytes(range(32))


class FakeHost:
    """A ledger host that proves the secret, then answers ``get_table`` calls as told:
    ``silent`` never (until ``late`` is called), ``held:N`` once N calls are held (all of them
    then, in one frame, last first), any other table NOT_FOUND naming it at once."""

    def __init__(self, path: str) -> None:
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(1)
        self.silent: list[int] = []
        self.held: list[tuple[int, str]] = []
        self.conn: socket.socket | None = None
        self.lock = threading.Lock()
        threading.Thread(target=self._serve, daemon=True).start()

    def _send(self, answers: list[list[Any]]) -> None:
        assert self.conn is not None
        with self.lock:
            wire.send(self.conn, {"saved": 0, "answers": answers})

    @staticmethod
    def _not_found(call_id: int, table: str) -> list[Any]:
        return [call_id, False, wire.error_message(NotFound("table_id", "NOT_FOUND", table))]

    def late(self) -> None:
        """Answer the silent calls now (too late)."""
        self._send([self._not_found(call_id, "late") for call_id in self.silent])

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        self.conn = conn
        nonce = secrets.token_hex(32)
        wire.send(conn, wire.challenge(nonce))
        assert wire.check_reply(SECRET, nonce, wire.receive(conn, wire.MAX_HELLO)) is None
        wire.send(conn, wire.acceptance(SECRET, nonce))
        frames = wire.Reader(conn)
        while (frame := frames.receive(wire.MAX_CALL)) is not None:
            call_id, method, values = frame[:3]
            self.on_call(call_id, method, values.get("table_id", ""))

    def on_call(self, call_id: int, method: str, table: str) -> None:
        """Answer (or hold, or never answer) one call, as the class says."""
        if method != "get_table" or table == "silent":
            self.silent.append(call_id)
        elif table.startswith("held:"):
            self.held.append((call_id, table))
            if len(self.held) == int(table.split(":")[1]):
                self._send([self._not_found(c, t) for c, t in reversed(self.held)])
        else:
            self._send([self._not_found(call_id, table)])

    def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(OSError):
                self.conn.shutdown(socket.SHUT_RDWR)  # (a close alone leaves the reader blocked)
            self.conn.close()
        self.listener.close()


class ShuffledHost(FakeHost):
    """A ``FakeHost`` whose answers (but the silent calls') leave every millisecond, those
    that came meanwhile shuffled and cut into one to three frames: many callers' answers
    together, in any order."""

    def __init__(self, path: str, seed: int) -> None:
        self.pending: list[tuple[int, str]] = []
        self.random = random.Random(seed)
        self.frames = 0
        self.stop = threading.Event()
        super().__init__(path)
        threading.Thread(target=self._flush, daemon=True).start()

    def on_call(self, call_id: int, method: str, table: str) -> None:
        if method != "get_table" or table == "silent":
            self.silent.append(call_id)
            return
        with self.lock:
            self.pending.append((call_id, table))

    def _flush(self) -> None:
        while not self.stop.wait(0.001):
            with self.lock:
                ready, self.pending = self.pending, []
            self.random.shuffle(ready)
            cuts = sorted(self.random.sample(range(1, len(ready)), min(2, len(ready) - 1))
                          ) if len(ready) > 1 else []
            for start, end in zip([0, *cuts], [*cuts, len(ready)], strict=True):
                if start < end:
                    self._send([self._not_found(c, t) for c, t in ready[start:end]])
                    self.frames += 1

    def close(self) -> None:
        self.stop.set()
        super().close()


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[tuple[FakeHost, RemoteLedger]]:
    host = FakeHost(str(tmp_path / "ledger.sock"))
    client = RemoteLedger(str(tmp_path / "ledger.sock"), f"sqlite:///{tmp_path / 'own.db'}",
                          secret=SECRET, games=LEDGER_GAMES)
    yield host, client
    client.close()
    host.close()


def _within(seconds: float) -> Any:
    return call_deadline.set(time.monotonic() + seconds)


def test_no_answer_in_time_is_store_unavailable_and_a_late_answer_is_dropped(
    remote: tuple[FakeHost, RemoteLedger],
) -> None:
    host, client = remote
    token = _within(0.4)
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="did not answer within"):
            client.get_table("silent")
        assert time.monotonic() - started < 3
    finally:
        call_deadline.reset(token)
    assert client._waiting == {}  # forgotten
    host.late()  # its answer comes now: nobody takes it
    with pytest.raises(NotFound) as found:
        client.get_table("mine")
    assert found.value.message == "mine"  # this call's own answer, not the late one
    assert client.gone is None


def test_ask_gives_up_after_its_timeout(remote: tuple[FakeHost, RemoteLedger]) -> None:
    _, client = remote
    with pytest.raises(TimeoutError):
        client.ask("writer_state", 0.2)
    assert client._waiting == {}


def test_answers_that_come_together_reach_their_own_callers(
    remote: tuple[FakeHost, RemoteLedger],
) -> None:
    _, client = remote
    n = 12
    got: dict[int, str] = {}

    def call(i: int) -> None:
        try:
            client.get_table(f"held:{n}:{i}")
        except NotFound as exc:
            got[i] = exc.message

    threads = [threading.Thread(target=call, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert got == {i: f"held:{n}:{i}" for i in range(n)}  # one frame, last first: each its own
    assert client._waiting == {}


def test_calls_waiting_when_the_host_goes_each_fail_once(
    remote: tuple[FakeHost, RemoteLedger],
) -> None:
    host, client = remote
    errors: list[BaseException] = []

    def call() -> None:
        try:
            client.get_table("silent")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=call) for _ in range(6)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 5
    while len(host.silent) < 6 and time.monotonic() < deadline:
        time.sleep(0.01)
    host.close()  # the host goes with six calls in flight
    for thread in threads:
        thread.join(10)
    assert len(errors) == 6
    assert all(isinstance(e, HostGone) and e.reason == "NOT_STORED" for e in errors), errors
    with pytest.raises(HostGone):  # and a call after it is not sent
        client.get_table("t")


def test_many_callers_with_timeouts_each_get_their_own_answer(tmp_path: Path) -> None:
    """32 threads calling at once, their answers coming together in any order, some calls never
    answered (they time out: StoreUnavailable, and their late answers reach nobody): every
    other call gets its own answer, and nothing is left waiting."""
    host = ShuffledHost(str(tmp_path / "ledger.sock"), seed=25)
    client = RemoteLedger(str(tmp_path / "ledger.sock"), f"sqlite:///{tmp_path / 'own.db'}",
                          secret=SECRET, games=LEDGER_GAMES)
    threads_n, calls = 32, 40
    wrong: list[str] = []
    timed_out: list[int] = []

    def caller(i: int) -> None:
        for j in range(calls):
            silent = i % 4 == 0 and j % 10 == 9  # 4 of every 40 calls of 8 threads
            token = _within(0.05 if silent else 10.0)
            try:
                client.get_table("silent" if silent else f"t{i}-{j}")
            except NotFound as exc:
                if silent or exc.message != f"t{i}-{j}":
                    wrong.append(f"{i}-{j}: {exc.message}")
            except StoreUnavailable:
                if silent:
                    timed_out.append(i)
                else:
                    wrong.append(f"{i}-{j}: timed out")
            except Exception as exc:  # anything else is a wrong answer too
                wrong.append(f"{i}-{j}: {exc!r}")
            finally:
                call_deadline.reset(token)

    try:
        threads = [threading.Thread(target=caller, args=(i,)) for i in range(threads_n)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert not any(thread.is_alive() for thread in threads)
        assert wrong == []
        assert len(timed_out) == (threads_n // 4) * (calls // 10)
        assert host.frames < threads_n * calls  # answers did come together
        assert client._waiting == {}
        host.late()  # the timed-out calls' answers, too late: dropped
        with pytest.raises(NotFound) as found:
            client.get_table("last")
        assert found.value.message == "last"
        assert client._waiting == {}
        assert client.gone is None
    finally:
        client.close()
        host.close()
