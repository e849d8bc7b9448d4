"""The ledger in its own process: the socket protocol (``LedgerHost``/``RemoteLedger``) keeps the
ledger's answers, errors and request-id guarantees, and ``sabot serve --ledger-process`` starts
and stops its child cleanly."""

from __future__ import annotations

import json
import logging
import os
import pickle
import signal
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from domain.errors import FailedPrecondition, InvalidArgument, NotFound, RuleViolation
from services.bootstrap import LEDGER_GAMES
from services.ledger import wire
from services.ledger.api import Ledger, LedgerConfig
from services.ledger.errors import (
    AlreadyExists,
    Conflict,
    PermissionDenied,
    RequestIdReused,
    StoreFull,
)
from services.ledger.remote import HostGone, LedgerHost, RemoteLedger

CORE = wire.schema_of(())  # the socket's table of the core's methods alone
COMMANDS, QUERIES = CORE.commands, CORE.queries

KEY = bytes(range(32))
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Ledger, LedgerHost, RemoteLedger]]:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    ledger = Ledger(LedgerConfig(store_url=url, seal_key=KEY), batching=True, games=LEDGER_GAMES)
    host = LedgerHost(ledger, str(tmp_path / "ledger.sock")).start()
    remote = RemoteLedger(str(tmp_path / "ledger.sock"), url, secret=host.secret,
                          games=LEDGER_GAMES)
    yield ledger, host, remote
    remote.close()
    host.close()
    ledger.close()


def test_every_public_method_is_a_command_or_a_query() -> None:
    public = {n for n, v in vars(Ledger).items() if callable(v) and not n.startswith("_")}
    assert public - COMMANDS - QUERIES == {"close", "saved_position", "submit",
                                           "game_of_method", "game", "bind"}
    assert not COMMANDS & QUERIES


@pytest.mark.parametrize("error", [
    RuleViolation("f", "R", "m"), InvalidArgument("amount", "OUT_OF_RANGE", "too big"),
    FailedPrecondition("coup_id", "BETTING_CLOSED", "closed"), NotFound("x", "UNKNOWN", "none"),
    AlreadyExists("table_id", "TABLE_EXISTS", "exists"), Conflict("request_id", "C", "again"),
    RequestIdReused("used before"), HostGone("request_id", "NOT_STORED", "gone"),
])
def test_errors_cross_the_socket_whole(error: RuleViolation) -> None:
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert (copy.field, copy.reason, copy.message, str(copy)) == (
        error.field, error.reason, error.message, str(error))


def test_commands_and_queries_answer_as_the_ledger_does(
    pair: tuple[Ledger, LedgerHost, RemoteLedger],
) -> None:
    ledger, _, remote = pair
    table = remote.open_table("t-1", "t1", "francaise")
    assert table == ledger.get_table("t1") == remote.get_table("t1")
    shoe = remote.open_shoe("s-1", "t1")
    remote.cut("c-1", shoe.shoe_id, 100, "croupier")
    coup = remote.open_coup("o-1", "t1")
    remote.open_account("a-1", "anne")
    remote.deposit("d-1", "anne", 10_000)
    placed = remote.place_stake("p-1", coup.coup_id, "anne", "noir", 500)
    assert placed.balance == 9_500
    assert remote.get_account("anne") == ledger.get_account("anne")
    assert remote.saved_position() == ledger.saved_position() > 0
    assert remote.read_events(0, 10000) == ledger.read_events(0, 10000)
    # a retry answers the first answer; the same id for other arguments is refused
    assert remote.place_stake("p-1", coup.coup_id, "anne", "noir", 500) == placed
    with pytest.raises(RequestIdReused) as reused:
        remote.place_stake("p-1", coup.coup_id, "anne", "noir", 700)
    assert reused.value.field == "request_id"
    with pytest.raises(FailedPrecondition) as poor:
        remote.place_stake("p-2", coup.coup_id, "anne", "noir", 9_600)
    assert poor.value.field == "amount"
    with pytest.raises(NotFound) as unknown:
        remote.get_table("nowhere")
    assert unknown.value.field == "table_id"
    with pytest.raises(InvalidArgument):
        remote.read_events(0, 0)
    assert remote.get_account("anne").balance == 9_500  # the refusals stored nothing


def test_concurrent_calls_each_get_their_own_answer(
    pair: tuple[Ledger, LedgerHost, RemoteLedger],
) -> None:
    _, _, remote = pair
    remote.open_table("t-1", "t1", "francaise", {"allow_opposed_stakes": "true"})
    shoe = remote.open_shoe("s-1", "t1")
    remote.cut("c-1", shoe.shoe_id, 100, "croupier")
    coup = remote.open_coup("o-1", "t1")
    for i in range(8):
        remote.open_account(f"a-{i}", f"p{i}")
        remote.deposit(f"d-{i}", f"p{i}", 100_000)
    answers: dict[tuple[int, int], int] = {}

    def player(i: int) -> None:
        for k in range(20):
            answers[(i, k)] = remote.place_stake(
                f"p{i}-{k}", coup.coup_id, f"p{i}", "noir", 100 + k).balance

    threads = [threading.Thread(target=player, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(8):  # each player's answers are its own balances, in its own order
        assert [answers[(i, k)] for k in range(20)] == [
            100_000 - sum(100 + j for j in range(k + 1)) for k in range(20)]
    assert len(remote.get_coup(coup.coup_id).layout) == 160


def test_a_host_gone_fails_calls_with_a_retryable_error(
    pair: tuple[Ledger, LedgerHost, RemoteLedger], tmp_path: Path,
) -> None:
    _, host, _ = pair
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    remote = RemoteLedger(host.path, url, secret=host.secret, games=LEDGER_GAMES)
    remote.open_account("a-1", "anne")
    remote._sock.shutdown(2)  # the connection is cut (as when the ledger process dies)
    with pytest.raises(HostGone) as gone:
        remote.open_account("a-2", "bruno")
    assert isinstance(gone.value, Conflict)  # ABORTED over gRPC: retry with the same id
    # not sent, but an earlier attempt with its request id may have been stored (issue 20)
    assert gone.value.reason == "OUTCOME_UNKNOWN"
    remote.close()


ADMIN_TOKEN = "adm-token-5c1f0e9a7b3d42e68a0c4f1b9d2e7a36"  # 128 bits at least (else refused)
ENV = {"SABOT_SEAL_KEY": KEY.hex(), "SABOT_CHAIN_KEY": "c7" * 32, "SABOT_LEDGER_PROCESS": "on",
       "SABOT_TOKENS": f"{ADMIN_TOKEN}:admin", "PYTHONUNBUFFERED": "1"}


def _serve(tmp_path: Path, store: str = "") -> tuple[subprocess.Popen[str], str]:
    """``sabot serve`` on a free port (its ledger in a process of its own): it and its target."""
    server = subprocess.Popen(
        [sys.executable, "-m", "services.cli.server", "serve", "--listen", "127.0.0.1:0",
         "--store", store or f"sqlite:///{tmp_path / 'sabot.db'}",
         "--env-file", str(tmp_path / "none")],
        cwd=ROOT, env={**os.environ, **ENV}, stdout=subprocess.PIPE,
        stderr=(tmp_path / "server.log").open("w"), text=True)  # a file: nobody must read it
    assert server.stdout is not None
    target = ""
    for line in server.stdout:
        if "listening on" in line:
            target = line.split("listening on ")[1].split()[0]
            break
    assert target, "the server did not start"
    return server, target


@pytest.mark.parametrize("store", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_sabot_serve_with_a_ledger_process_plays_the_demo_and_stops(
    tmp_path: Path, store: str, request: pytest.FixtureRequest,
) -> None:
    server, target = _serve(tmp_path, request.getfixturevalue(f"{store}_store_url"))
    env = {**os.environ, **ENV}
    try:
        children = _children(server.pid)
        assert len(children) == 1  # the ledger process
        for secret in (KEY.hex(), ADMIN_TOKEN):  # no key nor token where others could read it
            assert secret not in Path(f"/proc/{children[0]}/environ").read_bytes().decode()
            assert secret not in Path(f"/proc/{children[0]}/cmdline").read_bytes().decode()
        demo = subprocess.run(
            [sys.executable, "-m", "services.cli.server", "demo", "--target", target,
             "--token", ADMIN_TOKEN], cwd=ROOT, env=env, capture_output=True, text=True,
            timeout=300)
        assert demo.returncode == 0, demo.stderr
        assert "seed" in demo.stdout.lower()
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 0
        for pid in children:  # the ledger process ended with the server
            assert not Path(f"/proc/{pid}").exists() or _zombie(pid)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_sabot_serve_stops_with_an_error_when_its_ledger_process_dies(tmp_path: Path) -> None:
    server, _ = _serve(tmp_path)
    try:
        (child,) = _children(server.pid)
        os.kill(child, signal.SIGKILL)
        assert server.wait(timeout=60) == 2
        assert "the ledger process ended by itself" in (tmp_path / "server.log").read_text()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def test_arguments_that_cannot_cross_fail_that_call_only(
    pair: tuple[Ledger, LedgerHost, RemoteLedger],
) -> None:
    _, _, remote = pair
    with pytest.raises((pickle.PicklingError, TypeError, AttributeError)):
        remote.open_account("a-1", lambda: "anne")  # a function does not pickle
    assert not remote._waiting
    assert remote.open_account("a-2", "bruno").account_id == "bruno"  # the socket still works


# --- the closed socket: SABOT-LEDGER-WIRE-1 -------------------------------------------------


class _Touch:
    """A pickle that, unpickled, creates a file: what a crafted frame ran before."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (Path.touch, (str(self.path),))  # type: ignore[return-value]


def _frame(payload: bytes) -> bytes:
    return struct.pack("!I", len(payload)) + payload


def _refused(path: str, payload: bytes, *, hello: bool = True) -> bytes:
    """Connect as any process of this user would, send one frame, read until the host hangs
    up: what it sent back (the challenge at most)."""
    raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    raw.settimeout(10)
    raw.connect(path)
    got = b""
    if hello:
        got = raw.recv(4096)  # the host's challenge
    raw.sendall(_frame(payload))
    while chunk := raw.recv(4096):
        got += chunk
    raw.close()
    return got


def _attacks(tmp_path: Path) -> list[tuple[str, bytes]]:
    deposit_call = (1, "deposit", ("x-1", "anne", 123_456_789), {})
    return [
        ("raw call", json.dumps([1, "deposit", {"request_id": "x-1", "account_id": "anne",
                                                "amount": 123_456_789}]).encode()),
        ("pickled call", pickle.dumps(deposit_call)),
        ("pickled code", pickle.dumps(_Touch(tmp_path / "pwned"))),
        ("a forged handshake", json.dumps({"protocol": "sabot-ledger", "version": 1,
                                           "proof": "00" * 32}).encode()),
        ("another version", json.dumps({"protocol": "sabot-ledger", "version": 0,
                                        "proof": "00" * 32}).encode()),
    ]


def test_a_raw_or_pickled_frame_is_refused_logged_and_runs_nothing(
    pair: tuple[Ledger, LedgerHost, RemoteLedger], tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    ledger, host, remote = pair
    remote.open_account("a-1", "anne")
    end = ledger.app.recorder.max_notification_id()
    for n, (what, payload) in enumerate(_attacks(tmp_path), start=1):
        with caplog.at_level(logging.WARNING, logger="sabot.ledger.remote"):
            answer = _refused(host.path, payload)
        assert b"accepted" not in answer and b"answers" not in answer, what
        assert host.refused == n, what
        assert "connection refused before any call" in caplog.text, what
        assert f"'pid': {os.getpid()}" in caplog.text  # who tried
        caplog.clear()
    for _what, payload in _attacks(tmp_path):  # without waiting for the challenge
        _refused(host.path, payload, hello=False)
    assert not (tmp_path / "pwned").exists()  # nothing ran
    assert ledger.app.recorder.max_notification_id() == end  # nothing stored
    assert remote.get_account("anne").balance == 0
    assert remote.deposit("d-1", "anne", 5).balance == 5  # the server's own connection works


def test_a_peer_with_the_secret_still_cannot_send_a_pickle_or_an_undeclared_call(
    pair: tuple[Ledger, LedgerHost, RemoteLedger], tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from services.ledger import wire

    ledger, host, _ = pair
    end = ledger.app.recorder.max_notification_id()
    for payload in (pickle.dumps(_Touch(tmp_path / "pwned")),
                    json.dumps([1, "_run", {}]).encode(),
                    json.dumps([1, "deposit", {"request_id": "x", "account_id": "anne",
                                               "amount": "1e9"}]).encode(),
                    json.dumps([1, "deposit", {"request_id": "x", "account_id": "anne",
                                               "amount": 5, "decide": "os.system"}]).encode()):
        raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        raw.settimeout(10)
        raw.connect(host.path)
        hello = wire.receive(raw, wire.MAX_HELLO)
        wire.send(raw, wire.client_reply(host.secret, hello))
        wire.check_acceptance(host.secret, hello["nonce"], wire.receive(raw, wire.MAX_HELLO))
        with caplog.at_level(logging.WARNING, logger="sabot.ledger.remote"):
            raw.sendall(_frame(payload))
            assert raw.recv(4096) == b""  # the host hung up, answering nothing
        raw.close()
        assert "a malformed frame; connection closed" in caplog.text
        caplog.clear()
    assert not (tmp_path / "pwned").exists()
    assert ledger.app.recorder.max_notification_id() == end


def test_a_client_without_the_secret_is_refused(
    pair: tuple[Ledger, LedgerHost, RemoteLedger], tmp_path: Path,
) -> None:
    _, host, _ = pair
    with pytest.raises(OSError, match="refused"):
        RemoteLedger(host.path, f"sqlite:///{tmp_path / 'ledger.db'}", secret=b"x" * 32,
                     games=LEDGER_GAMES)
    assert host.refused == 1


def test_the_method_table_is_the_ledgers() -> None:
    import inspect

    from tests.contracts.test_frozen_names import ledger_method

    schema = wire.schema_of(LEDGER_GAMES)
    assert schema.commands | schema.queries == set(schema.methods)
    assert not schema.commands & schema.queries
    for name, method in schema.methods.items():
        params = list(inspect.signature(ledger_method(name)).parameters)[1:]
        assert tuple(params) == method.names, name


@pytest.mark.parametrize("error", [
    RuleViolation("f", "R", "m"), InvalidArgument("amount", "OUT_OF_RANGE", "too big"),
    FailedPrecondition("coup_id", "BETTING_CLOSED", "closed"), NotFound("x", "UNKNOWN", "none"),
    AlreadyExists("table_id", "TABLE_EXISTS", "exists"), Conflict("request_id", "C", "again"),
    RequestIdReused("used before"), HostGone("request_id", "NOT_STORED", "gone"),
    PermissionDenied("stake_id", "NOT_YOUR_STAKE", "another player's"),
    HostGone("request_id", "OUTCOME_UNKNOWN", "gone"), StoreFull("the store is full"),
])
def test_errors_cross_the_wire_whole(error: RuleViolation) -> None:
    from services.ledger import wire

    copy = wire.read_error(json.loads(json.dumps(wire.error_message(error))))
    assert type(copy) is type(error)
    assert (copy.field, copy.reason, copy.message, str(copy)) == (  # type: ignore[attr-defined]
        error.field, error.reason, error.message, str(error))


def test_store_errors_cross_the_wire_as_their_status() -> None:
    import sqlite3

    import grpc
    from eventsourcing import persistence

    from services.api.errors import code_of
    from services.ledger import wire

    for error, code in ((persistence.OperationalError("down"), grpc.StatusCode.UNAVAILABLE),
                        (sqlite3.OperationalError("locked"), grpc.StatusCode.UNAVAILABLE),
                        (persistence.IntegrityError("dup"), grpc.StatusCode.ABORTED),
                        (KeyError("x"), grpc.StatusCode.INTERNAL)):
        assert code_of(wire.read_error(wire.error_message(error))) is code, error


def test_a_frame_on_the_ledger_process_socket_of_sabot_serve_is_refused_and_logged(
    tmp_path: Path,
) -> None:
    import sqlite3

    server, _ = _serve(tmp_path)
    try:
        (child,) = _children(server.pid)
        args = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        path = args[args.index(b"--socket") + 1].decode()
        db = tmp_path / "sabot.db"

        def stored() -> int:
            with sqlite3.connect(db) as conn:
                return int(conn.execute("SELECT count(*) FROM stored_events").fetchone()[0])

        before = stored()
        for _what, payload in _attacks(tmp_path):
            _refused(path, payload)
        assert not (tmp_path / "pwned").exists()
        assert stored() == before
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 0
        text = (tmp_path / "server.log").read_text()
        assert text.count("connection refused before any call") == len(_attacks(tmp_path))
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def test_a_list_of_words_crosses_as_a_json_array() -> None:
    """Cuarenta's seats and capture are JSON arrays of texts in the frame (``WORDS``); the one
    text of words sent before arrays is still a valid frame (SABOT-LEDGER-WIRE-1)."""
    from services.ledger.wire import ProtocolError

    schema = wire.schema_of(LEDGER_GAMES)
    call_frame, read_call = schema.call_frame, schema.read_call
    frame = call_frame(1, "cuarenta_play", ("p", "m", 0, "7C", ["2C", "5D"]), {})
    assert frame[2]["capture"] == ["2C", "5D"]
    assert read_call(json.loads(json.dumps(frame)))[2]["capture"] == ["2C", "5D"]
    opened = call_frame(2, "cuarenta_open_match", ("o", "t", ["ana", "beto"]), {})
    assert read_call(json.loads(json.dumps(opened)))[2]["seats"] == ["ana", "beto"]
    old = [3, "cuarenta_open_match", {"request_id": "o", "table_id": "t", "seats": "ana beto"}]
    assert read_call(old)[2]["seats"] == "ana beto"
    assert read_call([4, "cuarenta_play", {"request_id": "p", "match_id": "m", "seat": 0,
                                           "card": "7C", "capture": None}])[2]["capture"] is None
    with pytest.raises(TypeError):
        call_frame(5, "cuarenta_play", ("p", "m", 0, "7C", ["2C", 5]), {})
    with pytest.raises(ProtocolError):
        read_call([6, "cuarenta_open_match", {"request_id": "o", "table_id": "t",
                                              "seats": [["ana"], "beto"]}])


def test_a_full_disk_is_told_from_an_unreachable_store() -> None:
    """SQLite's SQLITE_FULL and PostgreSQL's disk_full (53100), as the library wraps them, are
    a full store (STORE_FULL, its RetryInfo 5 s); a refused connection or a lock is not."""
    import sqlite3

    import grpc
    import psycopg
    from eventsourcing import persistence

    from services.api.errors import code_of, to_status
    from services.ledger.writer import store_full

    def wrapped(cause: BaseException) -> BaseException:
        try:
            raise persistence.OperationalError(str(cause)) from cause
        except persistence.OperationalError as exc:
            return exc

    full = sqlite3.OperationalError("database or disk is full")
    assert store_full(wrapped(full))
    assert store_full(wrapped(psycopg.errors.DiskFull("could not extend file")))
    assert not store_full(wrapped(sqlite3.OperationalError("database is locked")))
    assert not store_full(wrapped(psycopg.OperationalError("connection refused")))
    error = StoreFull()
    assert code_of(error) is grpc.StatusCode.UNAVAILABLE and error.reason == "STORE_FULL"
    assert error.retry_after == 5.0
    from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]

    status = to_status(wrapped(full))  # a store error that reached the edge unwrapped
    assert status.code is grpc.StatusCode.UNAVAILABLE
    rich = status_pb2.Status.FromString(dict(status.trailing_metadata)["grpc-status-details-bin"])
    info = error_details_pb2.ErrorInfo()
    assert rich.details[0].Unpack(info) and info.reason == "STORE_FULL"
