"""One active writer per store: the writer's lease.

Two ``sabot serve`` on one store would each decide commands against their own cached state; a
refusal is not stored, so the same request id could be refused by one server while the other
stored it. So only the holder of the store's lease decides and stores commands; any other ledger
on the store is a standby: it answers queries from the store, refuses commands with
``NotTheWriter`` (UNAVAILABLE, naming the active writer, with a retry delay), and takes the lease
over when the holder stops or dies. On taking over it forgets everything it cached (the other
writer changed the store meanwhile): aggregates and recent requests are loaded again.

PostgreSQL: a session-level advisory lock (``pg_try_advisory_lock``, key ``schema.lease_key``) on
a connection of the lease's own, whose ``application_name`` names the holder and whose
``idle_session_timeout`` (``TTL``) ends the session of a holder that stopped sending its
heartbeat (every ``HEARTBEAT`` s): a frozen or partitioned holder loses the lease after ``TTL``.
The lease fences every save: the save's table lock is taken through ``sabot_lock_events(pid)``,
which fails unless that backend still holds the lease (``ops/postgres/writer_lease.sql``), and a
new holder takes that same lock once before deciding anything, so every save of the previous one
has ended first. A refusal is answered only once the lease is confirmed after it was decided
(``confirm``; a batch whose save passed the fence needs nothing more).

SQLite: an exclusive ``flock`` on ``PATH.writer-lock`` (the holder's name is written inside),
released when its descriptor closes: a clean stop or a killed process alike. A live process
cannot lose it, so it needs no fence.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import socket
import threading
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql

from services.ledger.config import store_env
from services.ledger.schema import LOCK_FUNCTION, conninfo, lease_key

log = logging.getLogger(__name__)

POLL = 0.25  # seconds between a standby's attempts to take the lease
HEARTBEAT = 1.0  # seconds between the holder's checks of its lease
TTL = 15.0  # PostgreSQL: a lease connection idle this long is ended by the server
APPLICATION_PREFIX = "sabot-writer "


def default_name() -> str:
    return f"pid {os.getpid()} on {socket.gethostname()}"


class Lease:
    """A store's writer lease as one process holds or waits for it."""

    name: str

    @property
    def held(self) -> bool:
        raise NotImplementedError

    @property
    def pid(self) -> int | None:
        """PostgreSQL: the backend pid of the lease's connection (the save's fence)."""
        return None

    def try_acquire(self) -> bool:
        """Take the lease if it is free (True; True if held already), else False at once."""
        raise NotImplementedError

    def confirm(self) -> bool:
        """Whether the lease is still held, checked now (False: it was lost)."""
        return self.held

    def barrier(self) -> None:
        """Once taken: wait until every save of the previous holder has ended."""

    def holder(self) -> str:
        """Who holds the lease, as it calls itself ("" if unknown)."""
        return ""

    def release(self) -> None:
        raise NotImplementedError


class PrivateLease(Lease):
    """A store nobody else can open (SQLite in memory): always held."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._held = False

    @property
    def held(self) -> bool:
        return self._held

    def try_acquire(self) -> bool:
        self._held = True
        return True

    def release(self) -> None:
        self._held = False


class FileLease(Lease):
    """SQLite: an exclusive ``flock`` on ``path`` (``DB.writer-lock``); the holder's name inside."""

    def __init__(self, path: str, name: str) -> None:
        self.path = path
        self.name = name
        self._fd: int | None = None
        self._lock = threading.Lock()

    @property
    def held(self) -> bool:
        return self._fd is not None

    def try_acquire(self) -> bool:
        with self._lock:
            if self._fd is not None:
                return True
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return False
            except BaseException:
                os.close(fd)
                raise
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, (self.name + "\n").encode("utf-8"), 0)
            except OSError:  # the name is a courtesy; the lock is what counts
                log.warning("writer lease: could not write the holder's name in %s", self.path)
            self._fd = fd
            return True

    def holder(self) -> str:
        try:
            with open(self.path, encoding="utf-8", errors="replace") as f:
                return f.read(200).strip()
        except OSError:
            return ""

    def release(self) -> None:
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the descriptor drops the flock


class PostgresLease(Lease):
    """PostgreSQL: a session advisory lock held by a connection of its own (see the module)."""

    def __init__(self, env: dict[str, str], name: str, ttl: float = TTL) -> None:
        self.name = name
        self.schema = env.get("POSTGRES_SCHEMA") or "public"
        self.key = lease_key(self.schema)
        self._conninfo = conninfo(env)
        self._timeout = int(env.get("POSTGRES_CONNECT_TIMEOUT") or 10)
        self._ttl_ms = int(ttl * 1000)
        self._conn: psycopg.Connection[Any] | None = None
        self._held = False
        self._pid: int | None = None
        self._unreachable = False
        self._lock = threading.Lock()
        self._barrier = sql.SQL("SELECT {}.{}(%s)").format(
            sql.Identifier(self.schema), sql.Identifier(LOCK_FUNCTION))

    @property
    def held(self) -> bool:
        return self._held

    @property
    def pid(self) -> int | None:
        return self._pid if self._held else None

    def _connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(
            self._conninfo, autocommit=True, connect_timeout=self._timeout,
            application_name=(APPLICATION_PREFIX + self.name)[:63],
            keepalives=1, keepalives_idle=5, keepalives_interval=2, keepalives_count=3,
            options=f"-c idle_session_timeout={self._ttl_ms}",
        )

    def _drop(self) -> None:
        self._held, self._pid = False, None
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def try_acquire(self) -> bool:
        with self._lock:
            if self._held:
                return True
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = self._connect()
                # a standby (read-only, in recovery) grants advisory locks of its own: never
                # the lease there (its saves would all fail), so none is tried on one
                row = self._conn.execute("SELECT pg_try_advisory_lock(%s, %s) "
                                         "WHERE NOT pg_is_in_recovery()", self.key).fetchone()
            except psycopg.Error as exc:
                if not self._unreachable:  # once, not at every attempt
                    log.warning("writer lease: store unreachable (%s)", exc)
                self._unreachable = True
                self._drop()
                return False
            self._unreachable = False
            if row is None or not row[0]:
                return False
            self._held, self._pid = True, self._conn.info.backend_pid
            return True

    def confirm(self) -> bool:
        with self._lock:
            if not self._held or self._conn is None:
                return False
            try:
                self._conn.execute("SELECT 1")
            except psycopg.Error:
                self._drop()
                return False
            return True

    def barrier(self) -> None:
        with self._lock:
            conn = self._conn
            if not self._held or conn is None:
                raise RuntimeError("writer lease: not held")
            with conn.transaction():
                conn.execute(self._barrier, (self._pid,))

    def holder(self) -> str:
        with self._lock:
            a, b = self.key
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = self._connect()
                row = self._conn.execute(
                    "SELECT a.application_name, l.pid FROM pg_catalog.pg_locks l "
                    "LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid "
                    "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 "
                    "AND l.database = (SELECT oid FROM pg_catalog.pg_database "
                    "WHERE datname = current_database()) "
                    "AND l.classid::bigint = %s AND l.objid::bigint = %s",
                    (a & 0xFFFF_FFFF, b & 0xFFFF_FFFF)).fetchone()
            except psycopg.Error:
                if not self._held:  # a held lease is confirm's to judge
                    self._drop()
                return ""
        if row is None:
            return ""
        name = str(row[0] or "")
        if name.startswith(APPLICATION_PREFIX):
            return name[len(APPLICATION_PREFIX):]
        return f"database backend {row[1]}"

    def release(self) -> None:
        with self._lock:
            if self._held and self._conn is not None:
                with contextlib.suppress(Exception):
                    self._conn.execute("SELECT pg_advisory_unlock(%s, %s)", self.key)
            self._drop()


def lease_for(store_url: str, name: str = "", ttl: float = TTL) -> Lease:
    """The writer lease of a store (``name``: how the holder calls itself, e.g. the address its
    clients reach it at; default: its pid and host)."""
    return lease_from_env(store_env(store_url), name, ttl)


def lease_from_env(env: dict[str, str], name: str = "", ttl: float = TTL) -> Lease:
    """``lease_for`` from the library's environment of the store (``store_env``)."""
    name = name or default_name()
    if env["PERSISTENCE_MODULE"] == "eventsourcing.postgres":
        return PostgresLease(env, name, ttl)
    path = env["SQLITE_DBNAME"]
    if path == ":memory:" or path.startswith("file::memory:") or "mode=memory" in path:
        return PrivateLease(name)
    return FileLease(path + ".writer-lock", name)


class Keeper:
    """A thread that keeps a lease: while it is not held it tries every ``POLL`` s and calls
    ``on_taken`` once it is (which must be ready to decide before it returns); while held it
    confirms it every ``HEARTBEAT`` s and calls ``on_lost`` if it was lost."""

    def __init__(self, lease: Lease, on_taken: Callable[[], None],
                 on_lost: Callable[[], None], poll: float = POLL,
                 heartbeat: float = HEARTBEAT) -> None:
        self.lease = lease
        self.on_taken = on_taken
        self.on_lost = on_lost
        self.poll = poll
        self.heartbeat = heartbeat
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sabot-writer-lease", daemon=True)

    def start(self) -> Keeper:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)

    def _run(self) -> None:
        lease = self.lease
        active = lease.held
        while not self._stop.wait(self.heartbeat if active else self.poll):
            try:
                if active:
                    if not lease.confirm():
                        active = False
                        self.on_lost()
                elif lease.try_acquire():
                    try:
                        self.on_taken()
                    except BaseException:  # not ready to decide: let another writer have it
                        lease.release()
                        raise
                    active = True
                elif not lease.held:
                    active = False
            except Exception:  # never let the keeper die: the lease is what keeps writes safe
                log.exception("writer lease: keeper step failed")
                if active and not lease.confirm():
                    active = False
                    with contextlib.suppress(Exception):
                        self.on_lost()
