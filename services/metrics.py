"""The server's metrics, for Prometheus (``sabot serve --metrics-listen HOST:PORT``,
``SABOT_METRICS_LISTEN``): every series ``sabot serve`` exposes, in registries of our own, and the
small HTTP server that serves them at ``/metrics`` (and the health at ``/health``).

Two processes make the figures: the gRPC server (RPCs, streams, the store's round trip, the
read models' and the notary's lag, the health) and, in ``sabot serve``'s default mode, the
ledger process (the writer: queue depth, batch sizes, commit time, commands by outcome). The
ledger process keeps its series in a registry of its own (``WriterMetrics``); the server asks
it for them at each scrape (``RemoteSeries``: the ledger's ``writer_metrics`` query, the text
exposition format) and serves both as one page. Nothing here reads the store: every value is
set by the thread that knows it (the health monitor's probes, the writer, the interceptor) or
read from memory when scraped, so a scrape never waits for a store that is down.

Names (``SERIES``) are part of the operations contract: ``ops/prometheus/alerts.yml`` and
``docs/operations.md`` name them, and ``tests/ops`` checks that every name used there exists.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

import grpc
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST, ThreadingWSGIServer
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)

# Seconds: an RPC or a commit takes from well under a millisecond to the store's timeout.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                   5.0, 10.0, 30.0)
ROUND_TRIP_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                      0.25, 0.5, 1.0, 2.5, 5.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096)

# Every series, with its type and what it means (docs/operations.md shows this table).
SERIES: Mapping[str, tuple[str, str]] = {
    # the gRPC server
    "sabot_rpc_duration_seconds": (
        "histogram", "RPCs by full method name and status code: _count is the number of calls, "
                     "_sum their time"),
    "sabot_rpc_in_flight": ("gauge", "RPCs being served now (a worker thread each)"),
    "sabot_streams_open": ("gauge", "server streams open now (WatchTable, the feed, replays, "
                                    "exports, health Watch)"),
    "sabot_stream_slots": ("gauge", "server streams the server may hold at once"),
    "sabot_health_serving": (
        "gauge", "1 when the health service answers SERVING for the service (label service: "
                 "\"\" is the whole server, sabot.writer, sabot.read_models, sabot.notary, "
                 "sabot.store and each gRPC service), else 0"),
    "sabot_store_up": ("gauge", "1 when the store answered the last probe (every 0.5 s)"),
    "sabot_store_round_trip_seconds": ("histogram", "time of the probe's SELECT 1 on a "
                                                    "connection of its own"),
    "sabot_store_down_seconds": ("gauge", "seconds since the store stopped answering (0: up)"),
    "sabot_writer_active": ("gauge", "1 while this server's ledger holds the store's writer "
                                     "lease (decides commands), 0 while it stands by"),
    "sabot_ledger_process_up": ("gauge", "1 while the ledger process answers (1 in "
                                         "--single-process mode)"),
    "sabot_ledger_process_start_time_seconds": (
        "gauge", "when the ledger process started (Unix time); changes() counts restarts"),
    "sabot_ledger_process_restarts_total": (
        "counter", "ledger processes this server started after the first (the server stops "
                   "when its ledger process dies: restarts are its supervisor's, seen as "
                   "changes of the start time)"),
    "sabot_projection_lag_events": ("gauge", "events stored and not yet applied to the read "
                                             "model (label view)"),
    "sabot_projection_lag_seconds": ("gauge", "age of the oldest event not yet applied to the "
                                              "read model (label view; 0: caught up)"),
    "sabot_read_store_lag_events": ("gauge", "events the store holds and the read store "
                                             "(SABOT_READ_STORE) does not yet"),
    "sabot_read_store_lag_seconds": ("gauge", "age of the oldest event the read store does not "
                                              "hold yet (0: caught up)"),
    "sabot_notary_lag_events": ("gauge", "events stored and not yet notarised"),
    "sabot_notary_lag_seconds": ("gauge", "age of the oldest event not yet notarised"),
    "sabot_notary_active": ("gauge", "1 while this server's notary writes the store's Merkle "
                                     "log, 0 while it stands by (another server's does)"),
    "sabot_notary_last_checkpoint_timestamp_seconds": (
        "gauge", "when the latest signed checkpoint was signed (Unix time; 0: none yet)"),
    "sabot_notary_last_checkpoint_age_seconds": (
        "gauge", "seconds since the latest signed checkpoint (absent while none is signed)"),
    # the writer (the ledger process, or the server in --single-process mode)
    "sabot_writer_queue_depth": ("gauge", "commands queued for the writer, not yet decided"),
    "sabot_writer_batch_commands": ("histogram", "commands per stored batch (one transaction)"),
    "sabot_writer_batch_events": ("histogram", "events per stored batch"),
    "sabot_writer_commit_seconds": ("histogram", "time to store one batch (its transaction)"),
    "sabot_writer_commands_total": (
        "counter", "commands by outcome: stored, refused (a rule said no), unavailable (the "
                   "store could not be reached: retry with the same request id), failed"),
    "sabot_writer_store_outages_total": ("counter", "times the writer found the store "
                                                    "unreachable and failed fast until it "
                                                    "answered again"),
    "sabot_writer_evidence_broken": (
        "gauge", "1 once the writer found the store's evidence chain broken (an event it loaded "
                 "not covered by a link it trusts, or the store lost a link it signed): it "
                 "writes nothing more"),
}


def _h(name: str) -> str:
    return SERIES[name][1]


# --- the writer's series (in whichever process the writer runs) ------------------------------


class WriterMetrics:
    """The writer's series in ``registry`` (the ledger process's own). The writer calls
    ``stored``/``outcome``; ``queue`` is read when scraped."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.queue_depth = Gauge("sabot_writer_queue_depth", _h("sabot_writer_queue_depth"),
                                 registry=r)
        self.batch_commands = Histogram("sabot_writer_batch_commands",
                                        _h("sabot_writer_batch_commands"),
                                        buckets=BATCH_BUCKETS, registry=r)
        self.batch_events = Histogram("sabot_writer_batch_events",
                                      _h("sabot_writer_batch_events"), buckets=BATCH_BUCKETS,
                                      registry=r)
        self.commit_seconds = Histogram("sabot_writer_commit_seconds",
                                        _h("sabot_writer_commit_seconds"),
                                        buckets=LATENCY_BUCKETS, registry=r)
        self.commands = Counter("sabot_writer_commands", _h("sabot_writer_commands_total"),
                                ["outcome"], registry=r)
        self.outages = Counter("sabot_writer_store_outages",
                               _h("sabot_writer_store_outages_total"), registry=r)
        self.evidence_broken = Gauge("sabot_writer_evidence_broken",
                                     _h("sabot_writer_evidence_broken"), registry=r)
        self._outcomes = {o: self.commands.labels(o)
                          for o in ("stored", "refused", "unavailable", "failed")}

    def queue(self, depth: Callable[[], float]) -> None:
        """Read the queue's depth with ``depth`` at each scrape."""
        self.queue_depth.set_function(depth)

    def stored(self, commands: int, events: int, seconds: float) -> None:
        """A batch was stored."""
        self.batch_commands.observe(commands)
        self.batch_events.observe(events)
        self.commit_seconds.observe(seconds)

    def outcome(self, outcome: str, n: int = 1) -> None:
        if n:
            self._outcomes[outcome].inc(n)

    def outage(self) -> None:
        self.outages.inc()

    def text(self) -> str:
        """The series in the text exposition format (what ``writer_metrics`` answers)."""
        return generate_latest(self.registry).decode("utf-8")


class RemoteSeries(Collector):
    """The series of another process, read when scraped with ``fetch`` (text exposition
    format; e.g. the ledger process's ``writer_metrics``). Nothing while it does not answer."""

    def __init__(self, fetch: Callable[[], str]) -> None:
        self.fetch = fetch

    def collect(self) -> Iterable[Metric]:
        try:
            text = self.fetch()
        except Exception as exc:  # the ledger process is busy or gone: the page goes on
            log.debug("metrics: the ledger process's series could not be read: %r", exc)
            return []
        return list(text_string_to_metric_families(text))

    def describe(self) -> Iterable[Metric]:
        return []  # not known before the first scrape


# --- the server's series ---------------------------------------------------------------------


class ServerMetrics:
    """The gRPC server's series (``registry``: this server's; a fresh one by default, so that
    two servers in one test process count apart)."""

    def __init__(self, registry: CollectorRegistry | None = None, process: bool = True) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        if process:
            ProcessCollector(registry=r)
        self.rpc = Histogram("sabot_rpc_duration_seconds", _h("sabot_rpc_duration_seconds"),
                             ["method", "code"], buckets=LATENCY_BUCKETS, registry=r)
        self.in_flight = Gauge("sabot_rpc_in_flight", _h("sabot_rpc_in_flight"), registry=r)
        self.streams = Gauge("sabot_streams_open", _h("sabot_streams_open"), registry=r)
        self.stream_slots = Gauge("sabot_stream_slots", _h("sabot_stream_slots"), registry=r)
        self.serving = Gauge("sabot_health_serving", _h("sabot_health_serving"), ["service"],
                             registry=r)
        self.store_up = Gauge("sabot_store_up", _h("sabot_store_up"), registry=r)
        self.store_round_trip = Histogram("sabot_store_round_trip_seconds",
                                          _h("sabot_store_round_trip_seconds"),
                                          buckets=ROUND_TRIP_BUCKETS, registry=r)
        self.store_down = Gauge("sabot_store_down_seconds", _h("sabot_store_down_seconds"),
                                registry=r)
        self.writer_active = Gauge("sabot_writer_active", _h("sabot_writer_active"), registry=r)
        self.ledger_up = Gauge("sabot_ledger_process_up", _h("sabot_ledger_process_up"),
                               registry=r)
        self.ledger_started = Gauge("sabot_ledger_process_start_time_seconds",
                                    _h("sabot_ledger_process_start_time_seconds"), registry=r)
        self.ledger_restarts = Counter("sabot_ledger_process_restarts",
                                       _h("sabot_ledger_process_restarts_total"), registry=r)
        self.projection_lag = Gauge("sabot_projection_lag_events",
                                    _h("sabot_projection_lag_events"), ["view"], registry=r)
        self.projection_lag_seconds = Gauge("sabot_projection_lag_seconds",
                                            _h("sabot_projection_lag_seconds"), ["view"],
                                            registry=r)
        self.read_store_lag = Gauge("sabot_read_store_lag_events",
                                    _h("sabot_read_store_lag_events"), registry=r)
        self.read_store_lag_seconds = Gauge("sabot_read_store_lag_seconds",
                                            _h("sabot_read_store_lag_seconds"), registry=r)
        self.notary_lag = Gauge("sabot_notary_lag_events", _h("sabot_notary_lag_events"),
                                registry=r)
        self.notary_lag_seconds = Gauge("sabot_notary_lag_seconds",
                                        _h("sabot_notary_lag_seconds"), registry=r)
        self.notary_active = Gauge("sabot_notary_active", _h("sabot_notary_active"), registry=r)
        self.checkpoint_time = Gauge("sabot_notary_last_checkpoint_timestamp_seconds",
                                     _h("sabot_notary_last_checkpoint_timestamp_seconds"),
                                     registry=r)
        self._checkpoint_at = 0.0
        self._children: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()
        r.register(_CheckpointAge(self))
        self.ledger_up.set(1)
        self.ledger_started.set(time.time())

    # --- RPCs: the interceptor's hooks (cheap: a dictionary look-up and an observe) ----------

    def started(self) -> float:
        """An RPC starts: its start time (``ended`` takes it)."""
        self.in_flight.inc()
        return time.perf_counter()

    def ended(self, method: str, code: str, started: float) -> None:
        self.in_flight.dec()
        self.observe(method, code, time.perf_counter() - started)

    def observe(self, method: str, code: str, seconds: float) -> None:
        child = self._children.get((method, code))
        if child is None:
            with self._lock:
                child = self._children.setdefault((method, code), self.rpc.labels(method, code))
        child.observe(seconds)

    def stream_opened(self) -> None:
        self.streams.inc()

    def stream_closed(self) -> None:
        self.streams.dec()

    # --- what the health monitor finds ------------------------------------------------------

    def checkpoint_signed(self, at: float) -> None:
        """The latest checkpoint was signed at ``at`` (Unix time)."""
        self._checkpoint_at = at
        self.checkpoint_time.set(at)

    def ledger_process_started(self, restart: bool) -> None:
        self.ledger_started.set(time.time())
        if restart:
            self.ledger_restarts.inc()

    def text(self) -> bytes:
        return generate_latest(self.registry)


class _CheckpointAge(Collector):
    """``sabot_notary_last_checkpoint_age_seconds``, computed when scraped (absent while no
    checkpoint is signed)."""

    def __init__(self, metrics: ServerMetrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterable[Metric]:
        from prometheus_client.core import GaugeMetricFamily

        at = self.metrics._checkpoint_at
        family = GaugeMetricFamily("sabot_notary_last_checkpoint_age_seconds",
                                   _h("sabot_notary_last_checkpoint_age_seconds"))
        if at:
            family.add_metric([], max(0.0, time.time() - at))
        return [family]


# --- the RPCs: an interceptor ------------------------------------------------------------------

NO_DEADLINE = 1e8  # seconds: gRPC's time_remaining() without a deadline is about forever
HANDLER_CACHE_LIMIT = 4096


class MetricsInterceptor(grpc.ServerInterceptor):  # type: ignore[type-arg]
    """The outermost interceptor: each RPC counted and timed by method and status code
    (``sabot_rpc_duration_seconds``), the RPCs in flight and the streams open; the call's
    deadline (a ``time.monotonic()`` instant, None without one) put in ``deadline`` for the
    ledger to bound its waits by; and ``pools``: methods answered on a thread pool of their own
    (grpc's ``experimental_thread_pool``, e.g. the health service's ``Check``), set on the
    handler the server finally runs (inner interceptors wrap it anew)."""

    def __init__(self, metrics: ServerMetrics, deadline: ContextVar[float | None] | None = None,
                 pools: Mapping[str, ThreadPoolExecutor] | None = None) -> None:
        self.metrics = metrics
        self.deadline = deadline
        self.pools = dict(pools or {})
        self._wrapped: dict[tuple[str, int], tuple[Any, Any]] = {}

    def intercept_service(self, continuation: Callable[[grpc.HandlerCallDetails], Any],
                          details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(details)
        if handler is None:
            return None
        method: str = details.method
        key = (method, id(handler))
        known = self._wrapped.get(key)
        if known is not None and known[0] is handler:
            return known[1]
        wrapped = self._wrap(method, handler)
        if len(self._wrapped) >= HANDLER_CACHE_LIMIT:
            self._wrapped.clear()
        self._wrapped[key] = (handler, wrapped)
        return wrapped

    def _wrap(self, method: str, handler: Any) -> Any:
        m = self.metrics
        deadline = self.deadline
        perf_counter, monotonic = time.perf_counter, time.monotonic
        in_flight, observe = m.in_flight, m.observe

        def begin(context: grpc.ServicerContext) -> None:
            if deadline is not None:
                left = context.time_remaining()
                deadline.set(None if left is None or left > NO_DEADLINE else monotonic() + left)

        if handler.unary_unary is not None:
            behavior = handler.unary_unary

            def unary(request: Any, context: grpc.ServicerContext) -> Any:
                started = perf_counter()
                in_flight.inc()
                begin(context)
                code = "OK"
                try:
                    return behavior(request, context)
                except BaseException:
                    code = _code(context, "UNKNOWN")
                    raise
                finally:
                    in_flight.dec()
                    observe(method, code, perf_counter() - started)

            pool = self.pools.get(method)
            if pool is not None:
                unary.experimental_thread_pool = pool  # type: ignore[attr-defined]
            return grpc.unary_unary_rpc_method_handler(
                unary, request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer)
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                self._streamed(method, handler.unary_stream, begin),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer)
        if handler.stream_stream is not None:
            return grpc.stream_stream_rpc_method_handler(
                self._streamed(method, handler.stream_stream, begin),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer)
        return handler

    def _streamed(self, method: str, behavior: Callable[..., Iterator[Any]],
                  begin: Callable[[grpc.ServicerContext], None]
                  ) -> Callable[[Any, grpc.ServicerContext], Iterator[Any]]:
        m = self.metrics

        def stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            started = time.perf_counter()
            m.in_flight.inc()
            m.streams.inc()
            begin(context)
            code = "OK"
            try:
                yield from behavior(request, context)
                if not context.is_active():
                    code = "CANCELLED"
            except GeneratorExit:
                code = "CANCELLED"
                raise
            except BaseException:
                code = _code(context, "UNKNOWN")
                raise
            finally:
                m.streams.dec()
                m.in_flight.dec()
                m.observe(method, code, time.perf_counter() - started)

        return stream


def _code(context: grpc.ServicerContext, default: str) -> str:
    """The status code an aborted call leaves with (its name)."""
    try:
        code = context.code()  # type: ignore[attr-defined]
    except Exception:
        return default
    return code.name if isinstance(code, grpc.StatusCode) else default


# --- the HTTP endpoint -----------------------------------------------------------------------


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@dataclass
class Endpoint:
    """The metrics (and health) HTTP server: ``GET /metrics`` (Prometheus text format),
    ``GET /health`` and ``GET /health/SERVICE`` (200 when SERVING, else 503, with the facts as
    JSON: what a load balancer's HTTP probe reads). Its own threads: it answers when every gRPC
    worker is busy."""

    listen: str
    registry: CollectorRegistry
    health: Callable[[str], tuple[bool, Mapping[str, Any]] | None] | None = None
    port: int = 0
    _server: Any = field(default=None, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    def start(self) -> Endpoint:
        host, port = split_address(self.listen)

        class Server(ThreadingWSGIServer):
            pass

        if ":" in host:
            import socket

            Server.address_family = socket.AF_INET6
        self._server = make_server(host, port, self._app, Server, handler_class=_Quiet)
        self.port = int(self._server.server_port)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="sabot-metrics", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def _app(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterator[bytes]:
        path = str(environ.get("PATH_INFO") or "/")
        if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            start_response("405 Method Not Allowed", [("Content-Type", "text/plain")])
            return iter([b"GET only\n"])
        if path in ("/metrics", "/metrics/"):
            body = generate_latest(self.registry)
            start_response("200 OK", [("Content-Type", CONTENT_TYPE_LATEST),
                                      ("Content-Length", str(len(body)))])
            return iter([body])
        if (path == "/health" or path.startswith("/health/")) and self.health is not None:
            service = path[len("/health/"):] if path.startswith("/health/") else ""
            found = self.health(service)
            if found is None:
                start_response("404 Not Found", [("Content-Type", "application/json")])
                return iter([json.dumps({"service": service, "status": "SERVICE_UNKNOWN"}
                                        ).encode() + b"\n"])
            serving, facts = found
            body = json.dumps(dict(facts), sort_keys=True, default=str).encode() + b"\n"
            start_response("200 OK" if serving else "503 Service Unavailable",
                           [("Content-Type", "application/json"),
                            ("Content-Length", str(len(body)))])
            return iter([body])
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return iter([b"/metrics, /health, /health/SERVICE\n"])


def split_address(listen: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:9464`` for IPv6) as a host and a port; ValueError otherwise."""
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"HOST:PORT, got {listen[:60]!r}")
    host = host.strip("[]") or "0.0.0.0"
    return host, int(port)


__all__ = ["SERIES", "Endpoint", "MetricsInterceptor", "RemoteSeries", "ServerMetrics",
           "WriterMetrics", "split_address"]
