"""The ledger in a process of its own: ``LedgerHost`` serves a ``Ledger`` on a Unix socket,
``RemoteLedger`` is the same API in the gRPC server's process.

Why: the single writer is the serial part of every write. In the server's process it shares one
interpreter lock with the gRPC threads, and it waits for that lock after every store round trip;
in its own process it has a processor of its own (``sabot serve``'s default;
``--single-process`` or ``SABOT_LEDGER_PROCESS=off`` keeps one process).

The protocol is private to one machine (a socket in a 0700 directory): frames of a 4-byte length
and a pickle. A call is ``(call_id, method, args, kwargs)``; an answer frame carries the host's
saved log position and a list of ``(call_id, ok, value)``: the result, or the exception (the
rule book's errors keep their class, field, reason and message). Commands are queued to the
writer at once (``Ledger.submit``) and answered when their batch is stored, so many calls are in
flight on one connection; queries run on a small pool of threads. Answers that are ready
together leave in one frame.

If the host goes away, calls in flight fail with ``Conflict`` (NOT_STORED: retry with the same
request id, which returns the first answer if it was stored after all)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pickle
import queue
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from services.ledger.api import COMMANDS, Ledger, read_log
from services.ledger.application import LedgerApplication
from services.ledger.config import LedgerConfig, regulator_public_key, store_env
from services.ledger.errors import Conflict
from services.ledger.views import StoredEvent

QUERIES = frozenset({
    "get_table", "get_shoe", "get_coup", "stake_account", "list_tables", "list_coups",
    "get_account", "statement", "last_coups", "read_events", "balances", "audit_balances",
})
_HEADER = struct.Struct("!I")
MAX_FRAME = 1 << 30
QUERY_THREADS = 8
HOST_SWITCH_INTERVAL = 0.0005  # seconds (CPython's default: 0.005)


class HostGone(Conflict):
    """The ledger process cannot be reached; nothing is known of the call (retry it)."""


class RemoteFailure(Exception):
    """An error of the host that could not be sent as itself (its class and text)."""


def _send(sock: socket.socket, payload: Any) -> None:
    data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_HEADER.pack(len(data)) + data)


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _recv(sock: socket.socket) -> Any:
    """The next frame's object, or None at the end of the stream."""
    header = _recv_exact(sock, _HEADER.size)
    if header is None:
        return None
    (size,) = _HEADER.unpack(header)
    if size > MAX_FRAME:
        raise ValueError(f"frame of {size} bytes")
    data = _recv_exact(sock, size)
    return None if data is None else pickle.loads(data)  # our own peer, on a 0700 socket


def _portable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling, else a RemoteFailure naming it."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return RemoteFailure(f"{type(exc).__name__}: {exc}")


class LedgerHost:
    """Serves ``ledger`` on the Unix socket ``path`` (one thread pair per connection)."""

    def __init__(self, ledger: Ledger, path: str) -> None:
        self.ledger = ledger
        self.path = path
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
            _Connection(self, conn).start()


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
        try:
            while True:
                call = _recv(self.sock)
                if call is None:
                    break
                call_id, method, args, kwargs = call
                if method in COMMANDS:
                    try:
                        future = ledger.submit(method, *args, **kwargs)
                    except Exception as exc:
                        self.answers.put((call_id, False, _portable(exc)))
                        continue
                    future.add_done_callback(self._done(call_id))
                elif method in QUERIES:
                    self.host._queries.submit(self._query, call_id, method, args, kwargs)
                else:
                    self.answers.put((call_id, False, RemoteFailure(f"unknown call {method!r}")))
        except (OSError, ValueError, EOFError, pickle.UnpicklingError):
            pass
        finally:
            self.answers.put(None)

    def _done(self, call_id: int) -> Callable[[Future[Any]], None]:
        def done(future: Future[Any]) -> None:
            exc = future.exception()
            if exc is None:
                self.answers.put((call_id, True, future.result()))
            else:
                self.answers.put((call_id, False, _portable(exc)))

        return done

    def _query(self, call_id: int, method: str, args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> None:
        try:
            value = getattr(self.host.ledger, method)(*args, **kwargs)
        except Exception as exc:
            self.answers.put((call_id, False, _portable(exc)))
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
                _send(self.sock, (self.host.ledger.saved_position(), batch))
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                self.sock.close()


class RemoteLedger:
    """The ``Ledger`` API over a host's socket, for the gRPC server's process. Reads of the log
    that need no aggregate (``read_events`` for the streams, the projections, the hub's end of
    log) use ``app``, a store connection of this process's own."""

    def __init__(self, path: str, store_url: str, pool_size: int = 5) -> None:
        self.path = path
        self.app = LedgerApplication(env=store_env(store_url, pool_size))
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.connect(path)
        self._send_lock = threading.Lock()
        self._lock = threading.Lock()
        self._waiting: dict[int, Future[Any]] = {}
        self._next = 0
        self._saved = 0
        self._gone: str | None = None
        self._reader = threading.Thread(target=self._read, name="sabot-ledger-client",
                                        daemon=True)
        self._reader.start()

    def saved_position(self) -> int:
        """The host's last saved log position, as of its latest answer."""
        return self._saved

    def read_events(self, after_position: int = 0, limit: int = 100) -> list[StoredEvent]:
        """Read here, on this process's own connection: the feed and the watch streams do not
        load the ledger process (the log needs no aggregate)."""
        return read_log(self.app, after_position, limit)

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        future: Future[Any] = Future()
        with self._lock:
            if self._gone is not None:
                raise HostGone("request_id", "NOT_STORED", self._gone)
            self._next += 1
            call_id = self._next
            self._waiting[call_id] = future
        try:
            with self._send_lock:
                _send(self._sock, (call_id, method, args, kwargs))
        except OSError as exc:
            self._lost(f"the ledger process cannot be reached ({exc}); retry the command")
        except Exception:  # not sent (arguments that do not pickle): forget the call
            with self._lock:
                self._waiting.pop(call_id, None)
            raise
        return future.result()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        self._reader.join(timeout=5)
        self.app.close()

    def _read(self) -> None:
        try:
            while True:
                frame = _recv(self._sock)
                if frame is None:
                    break
                saved, answers = frame
                if saved > self._saved:
                    self._saved = saved
                for call_id, ok, value in answers:
                    with self._lock:
                        future = self._waiting.pop(call_id, None)
                    if future is None:
                        continue
                    if ok:
                        future.set_result(value)
                    else:
                        future.set_exception(value)
        except (OSError, ValueError, EOFError, pickle.UnpicklingError):
            pass
        self._lost("the ledger process went away; nothing is known of the command: retry it "
                   "with the same request id")

    def _lost(self, why: str) -> None:
        with self._lock:
            self._gone = self._gone or why
            waiting, self._waiting = self._waiting, {}
        for future in waiting.values():
            if not future.done():
                future.set_exception(HostGone("request_id", "NOT_STORED", why))

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name in COMMANDS or name in QUERIES:
            def forward(*args: Any, **kwargs: Any) -> Any:
                return self.call(name, *args, **kwargs)

            forward.__name__ = name
            return forward
        raise AttributeError(name)


class LedgerProcess(RemoteLedger):
    """A ledger host started as a child process, and the ``RemoteLedger`` connected to it.
    ``close`` ends the child after this side's calls are over (its writer drains first)."""

    def __init__(self, store_url: str, seal_key: bytes, regulator_key: bytes | None = None,
                 pool_size: int = 5, start_timeout: float = 60.0,
                 on_lost: Callable[[int], None] | None = None) -> None:
        self._dir = tempfile.mkdtemp(prefix="sabot-ledger-")  # 0700: this user only
        path = os.path.join(self._dir, "ledger.sock")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "services.ledger.remote", "--socket", path],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            start_new_session=True,  # Ctrl-C reaches the server, which stops the child after
            env={k: v for k, v in os.environ.items() if not k.startswith("SABOT_")},
        )
        # The settings go through the pipe: a key or a store password never appears in the
        # child's command line or environment (both readable in /proc).
        settings = {"store": store_url, "seal_key": seal_key.hex(),
                    "regulator_key": regulator_key.hex() if regulator_key else "",
                    "pool_size": pool_size}
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
        try:
            super().__init__(path, store_url, pool_size)
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


def _readline(stream: Any, timeout: float) -> str:
    """A line from ``stream``, or "" when none comes within ``timeout`` seconds."""
    lines: queue.SimpleQueue[str] = queue.SimpleQueue()
    threading.Thread(target=lambda: lines.put(stream.readline()), daemon=True).start()
    try:
        return lines.get(timeout=timeout)
    except queue.Empty:
        return ""


def host_main(argv: list[str] | None = None) -> int:
    """``python -m services.ledger.remote --socket PATH``: the ledger process that ``sabot
    serve`` starts. Its settings come as one JSON line on standard input (store, seal_key,
    regulator_key, pool_size), never on the command line or in the environment, where other
    processes could read a key. Prints ``ready`` when it serves; stops (the writer drained, the
    store closed) when its standard input ends, that is when the server stops or dies."""
    parser = argparse.ArgumentParser(prog="services.ledger.remote")
    parser.add_argument("--socket", required=True)
    args = parser.parse_args(argv)
    # The writer, the commit thread and the socket's reader and sender hand work to one another
    # many times per batch; each waits for the interpreter lock after every store round trip.
    # Switching every 0.5 ms instead of 5 ms: 528 -> 648 stakes/s (bench.load, 32 clients).
    sys.setswitchinterval(HOST_SWITCH_INTERVAL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server stops us, once it has drained
    settings = json.loads(sys.stdin.readline() or "null")
    if not isinstance(settings, dict):
        print("services.ledger.remote: no settings on standard input", file=sys.stderr)
        return 2
    config = LedgerConfig(
        store_url=str(settings["store"]), seal_key=bytes.fromhex(str(settings["seal_key"])),
        pool_size=int(settings.get("pool_size", 5)),
        regulator_key=regulator_public_key(str(settings.get("regulator_key", ""))),
    )
    ledger = Ledger(config, batching=True)
    host = LedgerHost(ledger, args.socket).start()
    print("ready", flush=True)
    sys.stdout = sys.stderr  # nobody reads our standard output after this line
    try:
        while sys.stdin.read(4096):
            pass
    finally:
        host.close()
        ledger.close()
    return 0


if __name__ == "__main__":
    sys.exit(host_main())
