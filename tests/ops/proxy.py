"""A TCP proxy a test controls, in front of PostgreSQL: ``cut()`` does to every client what a
stopped server does (open connections are reset, new ones refused), ``mend()`` lets them through
again; ``hang()`` swallows everything instead (a network that drops packets: connections open
and nothing answers). Faster and safer than stopping a cluster: the machine's shared PostgreSQL
is never touched."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading


class Proxy:
    """127.0.0.1:``port`` (a free one) forwarding to ``upstream``."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._hanging = False
        self.connections = 0  # accepted since the start
        self._listener = self._listen(0)
        self.port = int(self._listener.getsockname()[1])
        self._start()

    def _listen(self, port: int) -> socket.socket:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(128)
        return listener

    def _start(self) -> None:
        threading.Thread(target=self._accept, args=(self._listener,), daemon=True,
                         name="test-proxy").start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            self.connections += 1
            if self._hanging:
                with self._lock:
                    self._pairs.append((client, client))
                continue
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                _reset(client)
                continue
            server.settimeout(None)
            with self._lock:
                self._pairs.append((client, server))
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=_pump, args=(a, b), daemon=True).start()

    def cut(self) -> None:
        """As PostgreSQL stopping: every connection reset, new ones refused."""
        with self._lock:
            listener, pairs, self._pairs = self._listener, self._pairs, []
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread; stops listening
        with contextlib.suppress(OSError):
            listener.close()
        for a, b in pairs:
            _reset(a)
            _reset(b)

    def hang(self) -> None:
        """As a network that drops everything: connections accepted, nothing forwarded, and
        the open ones stop forwarding."""
        self._hanging = True
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for a, b in pairs:  # their pumps end; the client side stays open, unanswered
            _reset(b)
            with self._lock:
                self._pairs.append((a, a))

    def mend(self) -> None:
        """Let connections through again (on the same port)."""
        if self._hanging:
            self._hanging = False
            with self._lock:
                pairs, self._pairs = self._pairs, []
            for a, _ in pairs:
                _reset(a)
            return
        self._listener = self._listen(self.port)
        self._start()

    def close(self) -> None:
        self.cut()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def _reset(sock: socket.socket) -> None:
    """Close with a RST (as a crashed or stopped peer's kernel would answer). Shut down first:
    a pump blocked reading the socket holds it open in the kernel (close alone would wait for
    that read, and PostgreSQL would keep the session, and its locks, until a timeout)."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
