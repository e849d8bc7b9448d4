"""Health that tells the truth: ``grpc.health.v1`` statuses made from what the server finds, not
set once at start.

A monitor thread looks every ``INTERVAL`` seconds at what the server depends on:

- **the store**: a ``SELECT 1`` on a connection of the probe's own, with short connect and
  statement timeouts (``StoreProbe``), so a store that is down or cut off is seen within about a
  second, and its round trip is measured;
- **the ledger**: whether the ledger process answers (it is gone when it died: the server then
  stops for its supervisor to restart it) and whether this server's ledger holds the store's
  writer lease (``writer_status``) or stands by;
- **the read models**: how far each view is behind the log, in events and in the age of the
  oldest event it has not applied (``LagClock``);
- **the notary** (with a checkpoint key): whether it writes the Merkle log or stands by, how far
  it is behind, when it signed its latest checkpoint;
- **the read store** (with ``SABOT_READ_STORE``): the last position the standby holds, and how
  far behind the log it is, in events and seconds (facts and metrics; its effect on the read
  models shows in their lag).

From those facts (``Facts``) it decides the statuses (``decide``, a pure function):

- ``""`` (the whole server): the store answers and the ledger answers (reads are served);
- ``sabot.store``: the store answers;
- ``sabot.writer``, and the services that take commands (``TableService``, ``BettingService``,
  ``CashierService``): as ``""``, and this server's ledger holds the writer lease (and its
  last save did not find the store's disk full: ``store_full``, until a save succeeds);
- ``sabot.read_models`` and ``sabot.v1.ReadModelService``: as ``""``, and no view is more than
  ``max_lag`` seconds behind;
- ``sabot.notary`` (only with a notary): as ``""``, the notary writes (does not stand by) and is
  at most ``max_lag`` seconds behind;
- every other service: as ``""``.

So a standby server is SERVING on ``""`` (it answers queries) and NOT_SERVING on
``sabot.writer`` and the command services: a load balancer that sends writes probes
``sabot.writer``; one that sends reports may probe ``""``. Every status comes back to SERVING by
itself when its cause is gone. The health service is answered on threads of its own
(``serve_checks``), so it answers when every worker is busy; the metrics endpoint serves the
same statuses over HTTP (``/health/SERVICE``: 200 or 503, with the facts as JSON).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from grpc_health.v1 import health, health_pb2

from services.api.workers import Workers
from services.metrics import ServerMetrics
from services.version import version

log = logging.getLogger(__name__)

INTERVAL = 0.5  # seconds between looks
STORE_TIMEOUT = 2.0  # seconds the probe waits for the store (connect, then statement)
LEDGER_TIMEOUT = 2.0  # seconds the ledger's status may take before it counts as not answering
MAX_LAG = 60.0  # seconds: a read model or the notary further behind is NOT_SERVING
CHECK_THREADS = 2  # the health service's own threads (Check), apart from the workers

OVERALL = ""
STORE = "sabot.store"
WRITER = "sabot.writer"
READ_MODELS = "sabot.read_models"
NOTARY = "sabot.notary"
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING

# The sabot.v1 services that take commands (the others only read).
COMMAND_SERVICES = ("sabot.v1.TableService", "sabot.v1.BettingService",
                    "sabot.v1.CashierService")
READ_MODEL_SERVICES = ("sabot.v1.ReadModelService",)


# --- facts ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LedgerState:
    """What the ledger says: it answers (``alive``), it holds the writer lease (``active``),
    who does (``holder``)."""

    alive: bool
    active: bool = False
    holder: str = ""
    why: str = ""


@dataclass(frozen=True)
class NotaryState:
    """The notary of this server: writing (``active``) or standing by, the log position it has
    notarised, and when it signed its latest checkpoint (Unix time; 0: none yet)."""

    active: bool
    position: int
    checkpoint_at: float = 0.0


@dataclass(frozen=True)
class Facts:
    """What one look found."""

    at: float  # Unix time
    store_up: bool
    store_why: str = ""
    store_round_trip: float | None = None  # seconds
    store_down_for: float = 0.0  # seconds since the store stopped answering
    ledger: LedgerState = field(default_factory=lambda: LedgerState(alive=True, active=True))
    head: int = 0  # the log's last position seen
    views: Mapping[str, tuple[int, float]] = field(default_factory=dict)  # events, seconds
    notary: NotaryState | None = None
    notary_lag: tuple[int, float] = (0, 0.0)  # events, seconds
    stopping: bool = False
    read_store: tuple[int, int, float] | None = None  # position held, events, seconds behind

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["views"] = {v: {"events_behind": e, "seconds_behind": round(s, 3)}
                         for v, (e, s) in self.views.items()}
        data["notary_lag"] = {"events_behind": self.notary_lag[0],
                              "seconds_behind": round(self.notary_lag[1], 3)}
        if self.read_store is not None:
            held, events, seconds = self.read_store
            data["read_store"] = {"position": held, "events_behind": events,
                                  "seconds_behind": round(seconds, 3)}
        return data


@dataclass(frozen=True)
class Limits:
    max_lag: float = MAX_LAG  # seconds


def decide(facts: Facts, services: Iterable[str], limits: Limits = Limits(),
           commands: Sequence[str] = COMMAND_SERVICES,
           read_models: Sequence[str] = READ_MODEL_SERVICES) -> dict[str, bool]:
    """Whether each service is SERVING, from what was found (the module's table).
    ``services``: the gRPC services served, besides the synthetic ones."""
    reads = facts.store_up and facts.ledger.alive and not facts.stopping
    writes = reads and facts.ledger.active
    models = reads and all(seconds <= limits.max_lag for _, seconds in facts.views.values())
    out = {OVERALL: reads, STORE: facts.store_up and not facts.stopping, WRITER: writes,
           READ_MODELS: models}
    if facts.notary is not None:
        out[NOTARY] = reads and facts.notary.active and facts.notary_lag[1] <= limits.max_lag
    for name in services:
        if name in commands:
            out[name] = writes
        elif name in read_models:
            out[name] = models
        else:
            out[name] = reads
    return out


class LagClock:
    """How long ago the log reached a position: samples of (time, head), so a follower at
    ``position`` has been behind since the first sample whose head passed it. Measures the age
    of the oldest event not yet applied without reading an event's time from the store."""

    def __init__(self, keep: float = 3600.0) -> None:
        self.keep = keep
        self._samples: deque[tuple[float, int]] = deque()

    def sample(self, now: float, head: int) -> None:
        samples = self._samples
        if not samples or head > samples[-1][1]:
            samples.append((now, head))
        while len(samples) > 1 and samples[1][0] < now - self.keep:
            samples.popleft()  # the oldest kept one stands for everything before it

    def behind(self, now: float, position: int) -> float:
        """Seconds since the log first went past ``position`` (0 when it has not)."""
        for at, head in self._samples:
            if head > position:
                return max(0.0, now - at)
        return 0.0


# --- probes ---------------------------------------------------------------------------------


class StoreProbe:
    """``SELECT 1`` on a connection of its own (PostgreSQL), or a read of the SQLite file:
    ``check()`` returns the round trip in seconds or raises."""

    def __init__(self, store_url: str, timeout: float = STORE_TIMEOUT) -> None:
        from services.ledger.config import store_env

        self.env = store_env(store_url)
        self.timeout = timeout
        self.postgres = self.env["PERSISTENCE_MODULE"] == "eventsourcing.postgres"
        self._conn: Any = None
        self._checkpoint: tuple[int, float] | None = None  # the latest one's size, signed at

    def check(self) -> float:
        if not self.postgres:
            return self._sqlite()
        import psycopg

        started = time.perf_counter()
        try:
            if self._conn is None or self._conn.closed:
                self._conn = self._connect()
                started = time.perf_counter()  # the round trip, not the connection
            self._conn.execute("SELECT 1").fetchone()
        except (psycopg.Error, OSError):
            self.close()
            raise
        return time.perf_counter() - started

    def _connect(self) -> Any:
        import psycopg

        from services.ledger.schema import conninfo

        ms = int(self.timeout * 1000)
        schema = self.env.get("POSTGRES_SCHEMA") or "public"
        return psycopg.connect(
            conninfo(self.env), autocommit=True,
            connect_timeout=max(2, int(self.timeout + 0.999)),  # libpq: whole seconds, >= 2
            application_name="sabot-health", keepalives=1, keepalives_idle=1,
            keepalives_interval=1, keepalives_count=2, tcp_user_timeout=ms,
            options=f"-c statement_timeout={ms} -c idle_session_timeout=0 "
                    f"-c search_path={schema}")

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows of a query on the probe's connection (SQLite: a read-only one of its own)."""
        if self.postgres:
            import psycopg

            try:
                if self._conn is None or self._conn.closed:
                    self._conn = self._connect()
                return list(self._conn.execute(sql.replace("?", "%s"), params).fetchall())
            except psycopg.errors.UndefinedTable:
                return []
            except (psycopg.Error, OSError):
                self.close()
                raise
        import sqlite3

        path = self.env["SQLITE_DBNAME"]
        if path == ":memory:" or "mode=memory" in path:
            return []
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=self.timeout)
        try:
            return list(conn.execute(sql, params).fetchall())
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return []
            raise
        finally:
            conn.close()

    def notary(self, active: bool) -> NotaryState:
        """The notary's state from the store: the last position it notarised and when its
        latest checkpoint was signed (seen changing by this probe; at its first look, the time
        of the event the checkpoint ends at)."""
        leaves = self._rows("SELECT max(position) FROM regulator_leaves")
        position = int(leaves[0][0] or 0) if leaves else 0
        latest = self._rows("SELECT size, position FROM regulator_checkpoints "
                            "ORDER BY size DESC LIMIT 1")
        at = 0.0
        if latest:
            size, where = int(latest[0][0]), latest[0][1]
            known = self._checkpoint
            if known is not None and known[0] == size:
                at = known[1]
            elif known is None and where is not None:
                at = self._event_time(int(where)) or time.time()
            else:
                at = time.time()
            self._checkpoint = (size, at)
        return NotaryState(active=active, position=position, checkpoint_at=at)

    def _event_time(self, position: int) -> float:
        import json
        from datetime import datetime

        rows = self._rows("SELECT state FROM sabot_events WHERE notification_id = ?",
                          (position,))
        if not rows:
            return 0.0
        state = rows[0][0]
        try:
            data = json.loads(bytes(state).decode("utf-8") if not isinstance(state, str)
                              else state)
            stamp = data.get("timestamp")
            if isinstance(stamp, dict):  # the transcoder's {"_type_", "_data_"}
                stamp = stamp.get("_data_")
            return datetime.fromisoformat(str(stamp)).timestamp() if stamp else 0.0
        except (ValueError, TypeError, AttributeError):
            return 0.0

    def _sqlite(self) -> float:
        import sqlite3

        started = time.perf_counter()
        path = self.env["SQLITE_DBNAME"]
        if path == ":memory:" or "mode=memory" in path:
            return 0.0
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=self.timeout)
        try:
            conn.execute("SELECT 1").fetchone()
        finally:
            conn.close()
        return time.perf_counter() - started

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()


def within(executor: ThreadPoolExecutor, fn: Callable[[], Any], timeout: float) -> Any:
    """``fn()`` on ``executor``, waited for at most ``timeout`` seconds (TimeoutError)."""
    future: Future[Any] = executor.submit(fn)
    return future.result(timeout=timeout)


# --- the monitor ----------------------------------------------------------------------------


@dataclass
class Sources:
    """Where the monitor looks (None: not in this server)."""

    store: Callable[[], float] | None = None  # the round trip, or raises
    ledger: Callable[[], LedgerState] | None = None
    head: Callable[[], int] | None = None  # the log's last position seen
    views: Callable[[], Mapping[str, int]] | None = None  # each read model's position
    notary: Callable[[], NotaryState | None] | None = None
    close: Callable[[], None] | None = None  # when the monitor stops (the probe's connection)
    read_store: Callable[[], int] | None = None  # the last position the read store holds


class HealthMonitor:
    """Looks every ``interval`` s (``Sources``), sets the statuses on the health ``servicer``
    when they change, and the metrics. ``services``: the gRPC services the server serves."""

    def __init__(self, servicer: health.HealthServicer, services: Sequence[str],
                 sources: Sources, metrics: ServerMetrics | None = None,
                 limits: Limits = Limits(), interval: float = INTERVAL,
                 commands: Sequence[str] = COMMAND_SERVICES,
                 read_models: Sequence[str] = READ_MODEL_SERVICES) -> None:
        self.servicer = servicer
        self.services = tuple(services)
        self.sources = sources
        self.metrics = metrics
        self.limits = limits
        self.interval = interval
        self.commands, self.read_models = tuple(commands), tuple(read_models)
        self.statuses: dict[str, bool] = {}
        self.facts: Facts | None = None
        self.looks = 0
        self._head_clock = LagClock()
        self._down_since: float | None = None
        self._notary: NotaryState | None = None
        self._stopping = False
        self._stop = threading.Event()
        self._changed = threading.Condition()
        self._pool = ThreadPoolExecutor(2, thread_name_prefix="sabot-health-probe")
        # the ledger asked apart: a store that hangs holds the store's threads, not these
        self._ledger_pool = ThreadPoolExecutor(1, thread_name_prefix="sabot-health-ledger")
        self._thread = threading.Thread(target=self._run, name="sabot-health", daemon=True)

    def start(self) -> HealthMonitor:
        self.look()
        self._thread.start()
        return self

    def stop(self) -> None:
        """NOT_SERVING everywhere (the server is stopping), and no more looks."""
        self._stopping = True
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._ledger_pool.shutdown(wait=False, cancel_futures=True)
        if self.sources.close is not None:
            with contextlib.suppress(Exception):
                self.sources.close()

    def check(self, service: str) -> tuple[bool, dict[str, Any]] | None:
        """The status of ``service`` and the facts behind it (None: not a service here)."""
        serving = self.statuses.get(service)
        if serving is None:
            return None
        facts = self.facts.as_json() if self.facts is not None else {}
        return serving, {"service": service, "status": "SERVING" if serving else "NOT_SERVING",
                         "version": version(),
                         "statuses": {k or "(server)": ("SERVING" if v else "NOT_SERVING")
                                      for k, v in sorted(self.statuses.items())},
                         "facts": facts}

    def wait_for(self, service: str, serving: bool, timeout: float) -> bool:
        """Wait until ``service`` has that status (tests and the CLI's ``--wait``)."""
        with self._changed:
            return self._changed.wait_for(lambda: self.statuses.get(service) is serving,
                                          timeout)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.look()
            except Exception:  # the monitor must outlive anything a probe does
                log.exception("health: a look failed")

    def look(self) -> Facts:
        """Look once: gather the facts, decide, publish."""
        facts = self._gather()
        statuses = decide(facts, self.services, self.limits, self.commands, self.read_models)
        self._publish(facts, statuses)
        return facts

    def _gather(self) -> Facts:
        now = time.time()
        src = self.sources
        store_up, why, round_trip = True, "", None
        if src.store is not None:
            try:
                round_trip = within(self._pool, src.store, STORE_TIMEOUT + 1.0)
            except Exception as exc:
                store_up, why = False, _why(exc)
        if store_up:
            self._down_since = None
        elif self._down_since is None:
            self._down_since = now
        ledger = LedgerState(alive=True, active=True)
        if src.ledger is not None:
            try:
                ledger = within(self._ledger_pool, src.ledger, LEDGER_TIMEOUT)
            except Exception as exc:
                ledger = LedgerState(alive=False, why=_why(exc))
        head = 0
        if src.head is not None:
            with contextlib.suppress(Exception):
                head = int(src.head())  # from memory
        clock = self._head_clock
        clock.sample(now, head)
        views: dict[str, tuple[int, float]] = {}
        if src.views is not None:
            with contextlib.suppress(Exception):
                for view, position in src.views().items():
                    views[view] = (max(0, head - position), clock.behind(now, position))
        notary: NotaryState | None = None
        notary_lag = (0, 0.0)
        if src.notary is not None:
            notary = self._notary  # as last seen, unless seen again now
            if store_up:  # it reads the store: on the probe's threads
                with contextlib.suppress(Exception):
                    notary = self._notary = within(self._pool, src.notary,
                                                   STORE_TIMEOUT + 1.0)
            if notary is not None:
                notary_lag = (max(0, head - notary.position), clock.behind(now, notary.position))
        read_store = None
        if src.read_store is not None:
            with contextlib.suppress(Exception):  # its own store: on the probe's threads
                held = int(within(self._pool, src.read_store, STORE_TIMEOUT + 1.0))
                read_store = (held, max(0, head - held), clock.behind(now, held))
        return Facts(at=now, store_up=store_up, store_why=why, store_round_trip=round_trip,
                     store_down_for=0.0 if self._down_since is None else now - self._down_since,
                     ledger=ledger, head=head, views=views, notary=notary,
                     notary_lag=notary_lag, stopping=self._stopping, read_store=read_store)

    def _publish(self, facts: Facts, statuses: dict[str, bool]) -> None:
        changed = {k: v for k, v in statuses.items() if self.statuses.get(k) is not v}
        for name, serving in changed.items():
            self.servicer.set(name, SERVING if serving else NOT_SERVING)
        if changed and self.statuses:
            down = sorted(k or "(server)" for k, v in statuses.items() if not v)
            log.warning("health: %s", "NOT_SERVING: " + ", ".join(down) if down
                        else "SERVING again")
        with self._changed:
            self.facts = facts
            self.statuses = statuses
            self.looks += 1
            self._changed.notify_all()
        m = self.metrics
        if m is None:
            return
        for name, serving in statuses.items():
            m.serving.labels(name).set(1 if serving else 0)
        m.store_up.set(1 if facts.store_up else 0)
        m.store_down.set(facts.store_down_for)
        if facts.store_round_trip is not None:
            m.store_round_trip.observe(facts.store_round_trip)
        m.writer_active.set(1 if facts.ledger.alive and facts.ledger.active else 0)
        m.ledger_up.set(1 if facts.ledger.alive else 0)
        for view, (events, seconds) in facts.views.items():
            m.projection_lag.labels(view).set(events)
            m.projection_lag_seconds.labels(view).set(seconds)
        if facts.notary is not None:
            m.notary_active.set(1 if facts.notary.active else 0)
            m.notary_lag.set(facts.notary_lag[0])
            m.notary_lag_seconds.set(facts.notary_lag[1])
            if facts.notary.checkpoint_at:
                m.checkpoint_signed(facts.notary.checkpoint_at)
        if facts.read_store is not None:
            m.read_store_lag.set(facts.read_store[1])
            m.read_store_lag_seconds.set(facts.read_store[2])


def _why(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__


# --- the health service on threads of its own ------------------------------------------------


def serve_checks(servicer: health.HealthServicer, threads: int = CHECK_THREADS
                 ) -> tuple[Any, ThreadPoolExecutor]:
    """The generic handler of ``grpc.health.v1.Health`` whose ``Check`` runs on a pool of its
    own (grpc's ``experimental_thread_pool``): a probe is answered when every worker thread of
    the server is busy. ``Watch`` (a stream) stays on the workers. Returns the handler (for
    ``server.add_generic_rpc_handlers``) and the pool (to shut down with the server)."""
    import grpc
    from grpc_health.v1 import health_pb2_grpc  # noqa: F401  (the messages' module)

    pool = Workers(threads, thread_name_prefix="sabot-health-check")  # (cheaper per call)

    def check(request: Any, context: grpc.ServicerContext) -> Any:
        return servicer.Check(request, context)

    def watch(request: Any, context: grpc.ServicerContext) -> Any:
        return servicer.Watch(request, context)

    check.experimental_thread_pool = pool  # type: ignore[attr-defined]
    handler = grpc.method_handlers_generic_handler(health.SERVICE_NAME, {
        "Check": grpc.unary_unary_rpc_method_handler(
            check, request_deserializer=health_pb2.HealthCheckRequest.FromString,
            response_serializer=health_pb2.HealthCheckResponse.SerializeToString),
        "Watch": grpc.unary_stream_rpc_method_handler(
            watch, request_deserializer=health_pb2.HealthCheckRequest.FromString,
            response_serializer=health_pb2.HealthCheckResponse.SerializeToString),
    })
    return handler, pool


__all__ = ["COMMAND_SERVICES", "NOTARY", "OVERALL", "READ_MODELS", "STORE", "WRITER", "Facts",
           "HealthMonitor", "LagClock", "LedgerState", "Limits", "NotaryState", "Sources",
           "StoreProbe", "decide", "serve_checks"]
