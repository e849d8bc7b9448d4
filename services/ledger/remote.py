"""The ledger in a process of its own: ``LedgerHost`` serves a ``Ledger`` on a Unix socket,
``RemoteLedger`` is the same API in the gRPC server's process.

Why: the single writer is the serial part of every write. In the server's process it shares one
interpreter lock with the gRPC threads, and it waits for that lock after every store round trip;
in its own process it has a processor of its own (``sabot serve``'s default;
``--single-process`` or ``SABOT_LEDGER_PROCESS=off`` keeps one process).

The protocol (``services/ledger/wire.py``, SABOT-LEDGER-WIRE-1) is private to one machine (a
socket in a 0700 directory) and closed: length-prefixed JSON frames, no pickle, an explicit
table of methods with typed parameters, a version, and a handshake proving the per-start
secret the ledger process got through its standard input; a connection that does not prove it
(a raw frame, a pickle, any other process) is refused and logged before anything runs.
Commands are queued to the writer at once (``Ledger.submit``) and answered when their batch is
stored, so many calls are in flight on one connection; queries run on a small pool of threads.
Answers that are ready together leave in one frame, with the host's saved log position; the rule
book's errors keep their class, field, reason and message. The calls made together leave in one
write (``RemoteLedger._send``), and both ends read the socket in chunks (``wire.Reader``): one
system call for every frame that came together, the frames themselves unchanged.

If the host goes away, a command fails with ``HostGone`` (a ``Conflict``, ABORTED over gRPC)
reason OUTCOME_UNKNOWN: one it had received and not answered may have been stored, and one sent
after it went (or whose frame was cut short) may repeat a request id an earlier attempt stored
before the host died (issue 20: answering that one NOT_STORED made a client place the stake
again under a new id). A retry with the same request id, once the server is back, gives the
first answer if it was stored, else runs it. A query fails with reason NOT_STORED (a query
stores nothing).

The ledger process ends with its server: when its standard input ends (the server stopped or
died) or its parent is gone (``getppid`` looked at every ``PARENT_POLL`` s), it drains and
closes, and exits anyway after ``exit_grace`` s (a writer waiting for a store that is down
would otherwise keep it alive, orphaned, holding the store: SQLite's file lock)."""

from __future__ import annotations

import argparse
import contextlib
import functools
import itertools
import json
import logging
import os
import queue
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import typing
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

from services import traces
from services.ledger import wire
from services.ledger.api import Ledger, read_log, transcodings_of
from services.ledger.application import BACKSTOP, LedgerApplication, store_timeout
from services.ledger.config import DEFAULT_MAX_OVERFLOW, LedgerConfig, store_env
from services.ledger.errors import StoreUnavailable
from services.ledger.evidence import ChainBroken
from services.ledger.game import LedgerGame
from services.ledger.methods import Declared, Face, command, query
from services.ledger.views import StoredEvent
from services.ledger.wire import HostGone, ProtocolError, RemoteFailure
from services.ledger.writer import Writer, call_deadline, wait_bound, writer_of

__all__ = [
    "AnyLedger",
    "HostGone",
    "LedgerHost",
    "LedgerProcess",
    "RemoteFailure",
    "RemoteLedger",
    "observer",
]

P = ParamSpec("P")
R = TypeVar("R")
F = TypeVar("F", bound=Face)

log = logging.getLogger("sabot.ledger.remote")
HOST = "services.ledger.remote"  # the ledger process of the core alone (``host_main``)
QUERY_THREADS = 8
HOST_SWITCH_INTERVAL = 0.0005  # seconds (CPython's default: 0.005)
HANDSHAKE_SECONDS = 5.0
PARENT_POLL = 0.5  # seconds between the ledger process's looks at its parent
# Queries the host answers from its writer's memory in the connection's reader thread: never
# queued behind queries waiting for the store (the health monitor asks them while it is down).
INSTANT = frozenset({"writer_state", "writer_metrics"})
_PEERCRED = struct.Struct("3i")  # pid, uid, gid


def _peer(sock: socket.socket) -> dict[str, int]:
    """The connecting process (Linux SO_PEERCRED), for the log."""
    try:
        pid, uid, gid = _PEERCRED.unpack(
            sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size))
    except (OSError, AttributeError, struct.error):
        return {}
    return {"pid": pid, "uid": uid, "gid": gid}


class LedgerHost:
    """Serves ``ledger`` on the Unix socket ``path`` (one thread pair per connection) to the
    peers that prove ``secret`` (random when not given: ``host.secret``)."""

    def __init__(self, ledger: Ledger, path: str, secret: bytes | None = None) -> None:
        self.ledger = ledger
        self.path = path
        self.secret = secret if secret is not None else secrets.token_bytes(32)
        if len(self.secret) < 16:
            raise ValueError("the ledger socket's secret must be 16 bytes or more")
        self.refused = 0  # connections refused at the handshake
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(path)
        os.chmod(path, 0o600)
        self._listener.listen(8)
        self._queries = ThreadPoolExecutor(QUERY_THREADS, thread_name_prefix="sabot-host-query")
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="sabot-host", daemon=True)

    def start(self) -> LedgerHost:
        self._thread.start()
        return self

    def instant(self, method: str) -> tuple[bool, Any]:
        """An ``INSTANT`` query's answer: (ok, value or error)."""
        writer = writer_of(self.ledger)
        if writer is None:
            return False, RemoteFailure(f"{method}: this ledger has no writer")
        return True, (writer.state() if method == "writer_state" else writer.metrics.text())

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._queries.shutdown(wait=True)
        with contextlib.suppress(OSError):
            os.unlink(self.path)

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._greet, args=(conn,), name="sabot-host-greet",
                             daemon=True).start()

    def _greet(self, conn: socket.socket) -> None:
        """The handshake; a peer that fails it is logged and cut off, nothing run."""
        nonce = secrets.token_hex(32)
        why: str | None
        try:
            conn.settimeout(HANDSHAKE_SECONDS)
            wire.send(conn, wire.challenge(nonce))
            why = wire.check_reply(self.secret, nonce, wire.receive(conn, wire.MAX_HELLO))
        except ProtocolError as exc:
            why = str(exc)
        except OSError as exc:
            why = f"the connection failed ({type(exc).__name__})"
        if why is None:
            try:
                wire.send(conn, wire.acceptance(self.secret, nonce))
                conn.settimeout(None)
            except OSError:
                conn.close()
                return
            _Connection(self, conn).start()
            return
        self.refused += 1
        log.warning("ledger socket: connection refused before any call: %s (peer %s)", why,
                    _peer(conn) or "unknown")
        with contextlib.suppress(OSError):
            conn.close()


class _Connection:
    """One frontend: a reader that starts calls, a sender that answers them in frames."""

    def __init__(self, host: LedgerHost, sock: socket.socket) -> None:
        self.host = host
        self.sock = sock
        self.answers: queue.SimpleQueue[tuple[int, bool, Any] | None] = queue.SimpleQueue()

    def start(self) -> None:
        threading.Thread(target=self._read, name="sabot-host-read", daemon=True).start()
        threading.Thread(target=self._answer, name="sabot-host-send", daemon=True).start()

    def _read(self) -> None:
        ledger = self.host.ledger
        schema = ledger.schema
        commands = schema.commands
        frames = wire.Reader(self.sock)  # the calls that came together: one read
        try:
            while True:
                frame = frames.receive(wire.MAX_CALL)
                if frame is None:
                    break
                call_id, method, kwargs = schema.read_call(frame)
                if method in INSTANT:
                    self.answers.put((call_id, *self.host.instant(method)))
                elif method in commands:
                    span = None
                    if traces.tracer is not None:
                        span = traces.host_span(method, wire.trace_context(frame))
                    try:
                        future = ledger.submit(method, **kwargs)
                    except Exception as exc:
                        if span is not None:
                            traces.end_host_span(span, exc)
                        self.answers.put((call_id, False, exc))
                        continue
                    future.add_done_callback(self._done(call_id, span))
                else:
                    self.host._queries.submit(self._query, call_id, method, kwargs)
        except ProtocolError as exc:
            log.warning("ledger socket: a malformed frame; connection closed: %s (peer %s)",
                        exc, _peer(self.sock) or "unknown")
        except OSError:
            pass
        finally:
            self.answers.put(None)

    def _done(self, call_id: int, span: Any = None) -> Callable[[Future[Any]], None]:
        def done(future: Future[Any]) -> None:
            exc = future.exception()
            if span is not None:  # stored (or refused): the command's span ends here
                traces.end_host_span(span, exc, None if exc is not None
                                     else self.host.ledger.saved_position())
            if exc is None:
                self.answers.put((call_id, True, future.result()))
            else:
                self.answers.put((call_id, False, exc))

        return done

    def _query(self, call_id: int, method: str, kwargs: dict[str, Any]) -> None:
        try:
            value = getattr(self.host.ledger, method)(**kwargs)
        except Exception as exc:
            self.answers.put((call_id, False, exc))
            return
        self.answers.put((call_id, True, value))

    def _answer(self) -> None:
        answers = self.answers
        try:
            while True:
                first = answers.get()
                if first is None:
                    break
                batch = [first]
                with contextlib.suppress(queue.Empty):
                    while len(batch) < 1024:
                        item = answers.get_nowait()
                        if item is None:
                            answers.put(None)
                            break
                        batch.append(item)
                out = [
                    [call_id, True, value] if ok else [call_id, False, wire.error_message(value)]
                    for call_id, ok, value in batch
                ]
                wire.send(self.sock, {"saved": self.host.ledger.saved_position(),
                                      "answers": out})
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                self.sock.close()


class _Answer:
    """A call waiting for its answer: a lock held from the start, released once the answer is
    given (one lock, no ``Future``: no condition, no reentrant lock, no callbacks: measured
    ``docs/performance.md``, the stake path). Given once: by whoever took the call out of
    ``RemoteLedger._waiting`` (the reader of the answers, ``_lost``)."""

    __slots__ = ("_ok", "_ready", "_value", "method")

    def __init__(self, method: str) -> None:
        self.method = method
        self._ok = False
        self._value: Any = None
        self._ready = threading.Lock()
        self._ready.acquire()

    def give(self, ok: bool, value: Any) -> None:
        """The answer (``ok``: a value, else the exception to raise)."""
        self._ok = ok
        self._value = value
        self._ready.release()

    def wait(self, timeout: float | None = None) -> bool:
        """Whether the answer came within ``timeout`` seconds (None: it comes, soon: the call
        was taken, its answer is being given)."""
        if timeout is None:
            return self._ready.acquire()
        return self._ready.acquire(timeout=max(timeout, 0.0))

    def result(self) -> Any:
        """The answer given (once ``wait`` said so): its value, or its exception raised."""
        if self._ok:
            return self._value
        raise self._value


class RemoteLedger:
    """The ``Ledger`` API over a host's socket, for the gRPC server's process. Reads of the log
    that need no aggregate (``read_events`` for the streams, the projections, the hub's end of
    log) use ``app``, a store connection of this process's own. ``secret``: the host's;
    ``games``: those the host's ledger plays (the socket's table of methods: the core's and
    theirs)."""

    def __init__(self, path: str, store_url: str, pool_size: int = 5, *,
                 secret: bytes, games: Sequence[LedgerGame], store_timeout: float | None = None,
                 max_overflow: int = DEFAULT_MAX_OVERFLOW) -> None:
        self.path = path
        self.games = {game.name: game for game in games}
        self.schema = wire.schema_of(games)
        for game in games:  # a game's methods under their stored names too (tests, tools)
            for stored in game.methods:
                if hasattr(type(self), stored):  # (``close``, ``call``: this class's own)
                    raise ValueError(f"{game.name}: the method name {stored!r} is taken")
                setattr(self, stored, functools.partial(self.call, stored))
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.connect(path)
        try:
            self._sock.settimeout(HANDSHAKE_SECONDS)
            hello = wire.receive(self._sock, wire.MAX_HELLO)
            wire.send(self._sock, wire.client_reply(secret, hello))
            wire.check_acceptance(secret, hello["nonce"], wire.receive(self._sock,
                                                                       wire.MAX_HELLO))
            self._sock.settimeout(None)
        except (ProtocolError, OSError) as exc:
            self._sock.close()
            raise OSError(f"the ledger socket refused this process: {exc}") from None
        env = store_env(store_url, pool_size, max_overflow)
        if store_timeout is not None:
            env["STORE_TIMEOUT"] = str(store_timeout)
        self.app = LedgerApplication(env=env, transcodings=transcodings_of(games))
        self.bound = self.app.store_timeout  # what a call waits for the ledger at most
        self._send_lock = threading.Lock()  # over the frames waiting to go, and who sends
        self._pending: list[bytes] = []
        self._sending = False
        self._lock = threading.Lock()
        self._waiting: dict[int, _Answer] = {}  # the calls sent, by id, until answered
        self._ids = itertools.count(1)
        self._saved = 0
        self._gone: str | None = None
        self._reader = threading.Thread(target=self._read, name="sabot-ledger-client",
                                        daemon=True)
        self._reader.start()

    def saved_position(self) -> int:
        """The host's last saved log position, as of its latest answer."""
        return self._saved

    def read_events(self, after_position: int = 0, limit: int = 100,
                    topics: Sequence[str] | None = None) -> list[StoredEvent]:
        """Read here, on this process's own connection: the feed and the watch streams do not
        load the ledger process (the log needs no aggregate)."""
        return read_log(self.app, after_position, limit, topics)

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if self._gone is not None:  # (looked at again, under the lock, as the call waits)
            raise self._not_sent(method)
        call_id = next(self._ids)  # atomic: no lock
        if traces.tracer is not None:
            with traces.ledger_call(method):
                return self._call(call_id, method, args, kwargs, traces.inject())
        return self._call(call_id, method, args, kwargs, None)

    def _not_sent(self, method: str) -> HostGone:
        if method in self.schema.commands:
            return _outcome_unknown(f"{self._gone}; this command was not sent")
        return HostGone("request_id", "NOT_STORED", f"{self._gone}; the query was not sent: "
                        "retry it")

    def _call(self, call_id: int, method: str, args: tuple[Any, ...], kwargs: dict[str, Any],
              trace: dict[str, str] | None) -> Any:
        data = wire.frame(self.schema.call_frame(call_id, method, args, kwargs, trace))
        # (TypeError: not sent)
        answer = _Answer(method)
        with self._lock:
            if self._gone is not None:
                raise self._not_sent(method)
            self._waiting[call_id] = answer
        try:
            self._send(data)
        except OSError as exc:  # the frame did not go whole: the host cannot have run it
            with self._lock:
                self._waiting.pop(call_id, None)
            why = f"the ledger process cannot be reached ({exc})"
            self._lost(why)
            if method in self.schema.commands:
                raise _outcome_unknown(f"{why}; this command was not sent") from None
            raise HostGone("request_id", "NOT_STORED",
                           f"{why}; the query was not sent: retry it") from None
        except Exception:  # not sent: forget the call
            with self._lock:
                self._waiting.pop(call_id, None)
            raise
        command = method in self.schema.commands  # a query may read long: the backstop, or its
        # deadline
        timeout = wait_bound(self.bound if command else BACKSTOP * self.bound,
                             call_deadline.get())
        if not answer.wait(timeout):
            if not self._taken(call_id):
                raise StoreUnavailable(
                    f"the ledger did not answer within {timeout:.1f} s (the store is slow or "
                    "cannot be reached)" + ("; the command may be stored later: retry with the "
                                            "same request id" if command else ": retry"))
            answer.wait()  # answered just now
        return answer.result()

    def _taken(self, call_id: int) -> bool:
        """After a wait that timed out: True when the answers' reader (or ``_lost``) took the
        call meanwhile (its answer is being given), else False and the call is forgotten."""
        with self._lock:
            return self._waiting.pop(call_id, None) is None

    def _send(self, data: bytes) -> None:
        """Send a call's frame, with those of the calls made meanwhile: the thread that finds
        nobody sending sends every frame waiting, in one write, until none is left; the others
        leave theirs to it (OSError: this call's frame did not go; a frame another thread
        failed to send fails its call as the host's loss does, ``_lost``)."""
        with self._send_lock:
            self._pending.append(data)
            if self._sending:
                return
            self._sending = True
        own = True  # the first write holds this call's frame
        while True:
            with self._send_lock:
                frames, self._pending = self._pending, []
                if not frames:
                    self._sending = False
                    return
            try:
                self._sock.sendall(frames[0] if len(frames) == 1 else b"".join(frames))
            except OSError:
                with self._send_lock:
                    self._sending = False
                    others = not own or len(frames) > 1 or bool(self._pending)
                    self._pending = []
                if others:  # their calls wait for answers that cannot come
                    self._lost("the ledger process cannot be reached")
                if own:
                    raise
                return
            own = False

    def ask(self, method: str, timeout: float) -> Any:
        """A query waited for at most ``timeout`` seconds (TimeoutError; the answer, if it comes
        later, is dropped)."""
        answer = _Answer(method)
        call_id = next(self._ids)
        with self._lock:
            if self._gone is not None:
                raise HostGone("request_id", "NOT_STORED", f"{self._gone}; the query did not "
                               "end: retry it")
            self._waiting[call_id] = answer
        try:
            self._send(wire.frame(self.schema.call_frame(call_id, method, (), {})))
        except BaseException:
            with self._lock:
                self._waiting.pop(call_id, None)
            raise
        if not answer.wait(timeout):
            if not self._taken(call_id):
                raise TimeoutError(f"{method}: no answer within {timeout:g} s")
            answer.wait()  # answered just now
        return answer.result()

    @property
    def gone(self) -> str | None:
        """Why the ledger process cannot be reached (None: it answers)."""
        return self._gone

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        self._reader.join(timeout=5)
        self.app.close()

    def _read(self) -> None:
        answers_of = self.schema.answer
        frames = wire.Reader(self._sock)
        waiting = self._waiting  # (the same dict until ``_lost``, which ends this loop's use)
        try:
            while True:
                frame = frames.receive(wire.MAX_ANSWER)
                if frame is None:
                    break
                saved = frame["saved"]
                if saved > self._saved:
                    self._saved = saved
                answers = frame["answers"]
                with self._lock:  # once per frame: every answer's call taken together
                    taken = [(waiting.pop(call_id, None), ok, value)
                             for call_id, ok, value in answers]
                for answer, ok, value in taken:
                    if answer is None:
                        continue
                    if not ok:
                        answer.give(False, wire.read_error(value))
                        continue
                    try:
                        decoded = answers_of(answer.method)(value)
                    except Exception as exc:  # an answer that does not read as its type
                        answer.give(False, RemoteFailure(f"{answer.method}: {exc!r}"))
                    else:
                        answer.give(True, decoded)
        except (OSError, ProtocolError, KeyError, TypeError, ValueError):
            pass
        self._lost("the ledger process went away")

    def _lost(self, why: str) -> None:
        """Fail the calls in flight: a command the host received may have been stored."""
        with self._lock:
            self._gone = self._gone or why
            waiting = list(self._waiting.values())
            self._waiting.clear()  # (in place: the reader holds this dict)
        for answer in waiting:
            if answer.method in self.schema.commands:
                answer.give(False, _outcome_unknown(f"{why} before it answered"))
            else:
                answer.give(False, HostGone("request_id", "NOT_STORED",
                                            f"{why}; the query did not end: retry it"))

    # --- the typed proxy --------------------------------------------------------------------

    def bind(self, declared: Declared[P, R]) -> Callable[P, R]:
        """A declared command or query (``services.ledger.methods.Face``), as a call over the
        socket: its answer read back into its declared type (``Schema.answer``)."""
        stored = declared.stored
        call = self.call

        def forward(*args: P.args, **kwargs: P.kwargs) -> R:
            answer: R = call(stored, *args, **kwargs)
            return answer

        return forward

    def game(self, face: type[F]) -> F:
        """The typed commands of a game the host plays (``Ledger.game``)."""
        if not any(g.face is face for g in self.games.values()):
            raise ValueError(f"this ledger plays no game of {face.__name__}")
        return face(self)

    # The core's methods, typed as ``Ledger``'s (their socket's table: ``CORE_METHODS``).
    open_table = command("open_table", Ledger.open_table)
    open_shoe = command("open_shoe", Ledger.open_shoe)
    cut = command("cut", Ledger.cut)
    close_shoe = command("close_shoe", Ledger.close_shoe)
    close_table = command("close_table", Ledger.close_table)
    open_account = command("open_account", Ledger.open_account)
    deposit = command("deposit", Ledger.deposit)
    withdraw = command("withdraw", Ledger.withdraw)
    cash_batch = command("cash_batch", Ledger.cash_batch)
    get_table = query("get_table", Ledger.get_table)
    get_shoe = query("get_shoe", Ledger.get_shoe)
    list_tables = query("list_tables", Ledger.list_tables)
    get_account = query("get_account", Ledger.get_account)
    statement = query("statement", Ledger.statement)
    balances = query("balances", Ledger.balances)
    audit_balances = query("audit_balances", Ledger.audit_balances)
    writer_status = query("writer_status", Ledger.writer_status)
    writer_state = query("writer_state", Ledger.writer_state)
    writer_metrics = query("writer_metrics", Ledger.writer_metrics)


AnyLedger = Ledger | RemoteLedger
"""The ledger a server's layers are handed: in this process, or the ledger process's."""


def _outcome_unknown(why: str) -> HostGone:
    """A command's answer once the ledger process is gone: it, or an earlier attempt with its
    request id, may have been stored; only a retry with the same request id can tell."""
    return HostGone("request_id", "OUTCOME_UNKNOWN",
                    f"{why}; the command may have been stored (by this or an earlier attempt "
                    "with its request id): retry with the same request id to learn the outcome")


class LedgerProcess(RemoteLedger):
    """A ledger host started as a child process, and the ``RemoteLedger`` connected to it.
    ``close`` ends the child after this side's calls are over (its writer drains first).

    The child is ``python -m HOST --socket PATH --own-dir``: ``host``, a module whose main
    serves ``host_main`` with the same ``games`` as this side's (``services.bootstrap``, the
    composition root, for ``sabot serve``); by default this module, whose ledger plays no game
    (the core alone)."""

    def __init__(self, store_url: str, seal_key: bytes, regulator_key: bytes | None = None,
                 pool_size: int = 5, start_timeout: float = 60.0,
                 on_lost: Callable[[int], None] | None = None, writer_name: str = "",
                 chain_key: bytes | None = None, chain_head: str | None = None,
                 store_timeout: float | None = None, otlp_endpoint: str | None = None) -> None:
        config = LedgerConfig(
            store_url=store_url, seal_key=seal_key, pool_size=pool_size,
            regulator_key=regulator_key, writer_name=writer_name, chain_key=chain_key,
            chain_head=chain_head,
            extra_env={"STORE_TIMEOUT": str(store_timeout)} if store_timeout else {})
        self._start(config, start_timeout, on_lost, otlp_endpoint, (), HOST)

    @classmethod
    def of(cls, config: LedgerConfig, *, games: Sequence[LedgerGame], host: str,
           start_timeout: float = 60.0, on_lost: Callable[[int], None] | None = None,
           otlp_endpoint: str | None = None,
           companion: Mapping[str, Any] | None = None) -> LedgerProcess:
        """The ledger process of ``config`` (``services.bootstrap.open_ledger_process``): the
        child (``python -m host``, serving ``games``) builds the same ``LedgerConfig`` from
        what the pipe carries (``LedgerConfig.to_pipe``/``from_pipe``); ``companion``: the
        settings of what the child starts beside its ledger once it is open (``host_main``'s
        ``companion``: the read models' process), carried by the same pipe."""
        process = cls.__new__(cls)
        process._start(config, start_timeout, on_lost, otlp_endpoint, games, host, companion)
        return process

    def _start(self, config: LedgerConfig, start_timeout: float,
               on_lost: Callable[[int], None] | None, otlp_endpoint: str | None,
               games: Sequence[LedgerGame], host: str,
               companion: Mapping[str, Any] | None = None) -> None:
        self._dir = tempfile.mkdtemp(prefix="sabot-ledger-")  # 0700: this user only
        path = os.path.join(self._dir, "ledger.sock")
        self.process = subprocess.Popen(  # --own-dir: the child removes _dir whenever it ends
            [sys.executable, "-m", host, "--socket", path, "--own-dir"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            start_new_session=True,  # Ctrl-C reaches the server, which stops the child after
            env={k: v for k, v in os.environ.items() if not k.startswith("SABOT_")},
        )
        # The settings go through the pipe: a key or a store password never appears in the
        # child's command line or environment (both readable in /proc).
        secret = secrets.token_bytes(32)  # this start's: only this process and the child know it
        settings = {**config.to_pipe(), "secret": secret.hex(),
                    "otlp_endpoint": otlp_endpoint or "", "parent": os.getpid()}
        if companion is not None:
            settings["companion"] = dict(companion)
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(settings) + "\n")
            self.process.stdin.flush()
        except OSError:
            pass  # the child died at once: it says why on stderr; "ready" never comes
        assert self.process.stdout is not None
        ready = _readline(self.process.stdout, start_timeout)
        if ready.strip() != "ready":
            self._end(0)
            raise OSError("the ledger process did not start (its error is above)")
        store_timeout = config.extra_env.get("STORE_TIMEOUT")
        try:
            super().__init__(path, config.store_url, config.pool_size, secret=secret,
                             games=games,
                             store_timeout=float(store_timeout) if store_timeout else None,
                             max_overflow=config.max_overflow)
        except BaseException:
            self._end(0)
            raise
        self.lost: int | None = None  # the exit code of a ledger process that ended by itself
        self._closing = False
        self._on_lost = on_lost
        threading.Thread(target=self._watch, name="sabot-ledger-watch", daemon=True).start()

    def close(self) -> None:
        self._closing = True
        super().close()
        self._end(30.0)

    def _watch(self) -> None:
        """If the ledger process ends while the server still needs it, say so (``on_lost``):
        every write would fail from now on, so the server should stop and be restarted."""
        code = self.process.wait()
        if not self._closing:
            self.lost = code
            if self._on_lost is not None:
                self._on_lost(code)

    def _end(self, timeout: float) -> None:
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()  # the host stops when its input ends
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self._dir, ignore_errors=True)


def observer(ledger: Any, timeout: float = 2.0
             ) -> tuple[Callable[[], dict[str, Any]], Callable[[], str]]:
    """What the health monitor and the metrics read of a ledger's writer, in this process or
    in the ledger process (asked with ``timeout``): its state (``Writer.state``: active, queue)
    and its series (the text exposition format). Either raises when the writer cannot say."""
    if isinstance(ledger, RemoteLedger):
        remote = ledger
        started_here = isinstance(ledger, LedgerProcess)

        def state() -> dict[str, Any]:
            lost = getattr(remote, "lost", None)
            if lost is not None:
                raise HostGone("request_id", "NOT_STORED",
                               f"the ledger process ended (exit code {lost})")
            if not started_here:  # a host this server did not start: its connection only
                if remote.gone is not None:
                    raise HostGone("request_id", "NOT_STORED", remote.gone)
                return {"active": True, "queue": 0, "store_down": False}
            found: dict[str, Any] = remote.ask("writer_state", timeout)
            return found

        def text() -> str:
            found: str = remote.ask("writer_metrics", timeout)
            return found

        return state, text
    writer = writer_of(ledger)
    if not isinstance(writer, Writer):
        return (lambda: {"active": True, "queue": 0}), (lambda: "")
    return writer.state, writer.metrics.text


def _readline(stream: Any, timeout: float) -> str:
    """A line from ``stream``, or "" when none comes within ``timeout`` seconds."""
    lines: queue.SimpleQueue[str] = queue.SimpleQueue()
    threading.Thread(target=lambda: lines.put(stream.readline()), daemon=True).start()
    try:
        return lines.get(timeout=timeout)
    except queue.Empty:
        return ""


class Companion(typing.Protocol):
    """What a ledger process runs beside its ledger (the read models' process): stopped
    before the ledger closes."""

    def close(self) -> None: ...


def host_main(argv: list[str] | None = None, games: Sequence[LedgerGame] = (),
              prog: str = "services.ledger.remote",
              companion: Callable[[Mapping[str, Any]], Companion] | None = None) -> int:
    """``python -m services.ledger.remote --socket PATH``: a ledger process, whose ledger plays
    ``games`` (``sabot serve`` starts ``python -m services.bootstrap``, which serves this with
    every game; this module's own main, the core alone). Its settings come as one JSON line on
    standard input (store, seal_key, regulator_key, pool_size, and the socket's secret for
    this start), never on the command line or in the environment, where other processes could
    read a key. Prints ``ready`` when it serves; stops (the writer drained, the store closed)
    when its standard input ends, that is when the server stops or dies. Its warnings (a
    refused connection) go to standard error, the server's log. With ``--own-dir`` the socket's
    directory is this process's: removed when it ends, however the server ended (even killed:
    its end closes our standard input). ``companion``: given the settings' ``companion``
    (``LedgerProcess.of``), what this process starts once its ledger is open and stops
    before closing it."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--socket", required=True)
    parser.add_argument("--own-dir", action="store_true",
                        help="remove the socket's directory (made for it alone) when done")
    args = parser.parse_args(argv)

    def tidy() -> None:
        if args.own_dir:
            with contextlib.suppress(OSError):
                os.unlink(args.socket)
            with contextlib.suppress(OSError):
                os.rmdir(os.path.dirname(os.path.abspath(args.socket)))  # only if empty

    try:
        return _host(args.socket, games, tidy, companion)
    finally:
        tidy()


class _Ending:
    """The ledger process's end once its server is gone: ``begin`` (its standard input ended,
    or its parent died) gives the orderly close ``grace`` seconds, then the process exits
    whatever its threads wait for (a store that is down). ``watch_parent`` begins it when the
    parent's pid is no longer our parent's (the server was killed: even while the main thread
    is not reading standard input, e.g. still opening a store that does not answer)."""

    def __init__(self, tidy: Callable[[], None], grace: float) -> None:
        self.tidy = tidy
        self.grace = grace
        self._begun = threading.Event()

    def watch_parent(self, parent: int) -> None:
        def watch() -> None:
            while not self._begun.wait(PARENT_POLL):
                if os.getppid() != parent:
                    self.begin(f"its server (pid {parent}) is gone")
                    return

        threading.Thread(target=watch, name="sabot-parent-watch", daemon=True).start()

    def begin(self, why: str) -> None:
        if self._begun.is_set():
            return
        self._begun.set()
        threading.Thread(target=self._exit_later, args=(why,), name="sabot-ending",
                         daemon=True).start()

    def _exit_later(self, why: str) -> None:
        time.sleep(self.grace)
        with contextlib.suppress(Exception):
            print(f"ledger process: {why}; not closed within {self.grace:g} s (the store does "
                  "not answer?): exiting", file=sys.__stderr__, flush=True)
        with contextlib.suppress(Exception):
            self.tidy()
        os._exit(3)


def exit_grace(config: LedgerConfig) -> float:
    """Seconds the ledger process may take to close once its server is gone: twice the store's
    bound (``STORE_TIMEOUT``: what a save or a query waits at most), 3 s at least."""
    return max(3.0, 2 * store_timeout(config.extra_env))


def _host(path: str, games: Sequence[LedgerGame], tidy: Callable[[], None] = lambda: None,
          companion: Callable[[Mapping[str, Any]], Companion] | None = None) -> int:
    # The writer, the commit thread and the socket's reader and sender hand work to one another
    # many times per batch; each waits for the interpreter lock after every store round trip.
    # Switching every 0.5 ms instead of 5 ms: 528 -> 648 stakes/s (bench.load, 32 clients).
    sys.setswitchinterval(HOST_SWITCH_INTERVAL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server stops us, once it has drained
    settings = json.loads(sys.stdin.readline() or "null")
    if not isinstance(settings, dict):
        print("services.ledger.remote: no settings on standard input", file=sys.stderr)
        return 2
    config = LedgerConfig.from_pipe(settings)  # the fields LedgerProcess sent (to_pipe)
    ending = _Ending(tidy, exit_grace(config))
    parent = settings.get("parent")
    if type(parent) is int:
        ending.watch_parent(parent)
    secret = bytes.fromhex(str(settings.get("secret", "")))
    if len(secret) < 16:
        print("services.ledger.remote: no socket secret in the settings", file=sys.stderr)
        return 2
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="ledger process %(levelname)s %(name)s: %(message)s")
    try:
        ledger = Ledger(config, games=games, batching=True)
    except ChainBroken as exc:  # the store lost what this writer signed: say so, in one line
        print(f"sabot: error: {exc}", file=sys.stderr)
        return 2
    if settings.get("otlp_endpoint"):
        traces.configure(str(settings["otlp_endpoint"]), service="sabot-ledger")
    host = LedgerHost(ledger, path, secret).start()
    beside = None
    wanted = settings.get("companion")
    if companion is not None and isinstance(wanted, dict):
        beside = companion(wanted)  # once the ledger is open: its tables are there
    print("ready", flush=True)
    sys.stdout = sys.stderr  # nobody reads our standard output after this line
    try:
        while sys.stdin.read(4096):
            pass
    finally:
        ending.begin("its standard input ended")
        if beside is not None:
            beside.close()
        host.close()
        ledger.close()
        traces.shutdown()  # what is buffered is exported
    return 0


if __name__ == "__main__":
    sys.exit(host_main())
