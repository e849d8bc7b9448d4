"""The gRPC server: servicers, health, reflection, the interceptor, graceful shutdown.

It serves the games it is handed (``start(..., games=Served(...))``: each game's API part, its
read models and its regulator's part, given by the composition root, ``services/bootstrap.py``):
their servicers, their RPCs of the frozen ``sabot.v1`` services, their read models, their
replays, the end of their rounds for the notary."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import grpc
from grpc_health.v1 import health
from grpc_reflection.v1alpha import reflection

from services import metrics as series
from services import traces
from services.api import credentials, logs, tls
from services.api import health as monitoring
from services.api import regulator as regulator_service
from services.api import tables as table_service
from services.api.base import Base
from services.api.cashier import CashierServicer, ReportServicer
from services.api.config import Config, ConfigError
from services.api.game import Played, Served
from services.api.gen.sabot.v1 import (
    cashier_pb2,
    cashier_pb2_grpc,
    events_pb2,
    events_pb2_grpc,
    regulator_pb2,
    regulator_pb2_grpc,
    reports_pb2,
    reports_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)
from services.api.hub import Hub
from services.api.interceptor import ApiInterceptor, current_principal
from services.api.logs import get_logger
from services.api.regulator import RegulatorServicer
from services.api.reports import GameReadModels, ProjectionKeeper, ReadModelServicer
from services.api.roles import Principal, RoleTable, role_table
from services.api.stream_quota import StreamQuota
from services.api.streams import FeedServicer, WatchServicer
from services.api.workers import Workers
from services.ledger.remote import AnyLedger, observer
from services.ledger.writer import call_deadline
from services.regulator.checkpoint import public_key_bytes
from services.regulator.notary import Follower, signing_follower
from services.regulator.vocabulary import RoundEnds
from services.version import version

# The game-neutral services (each game's are its own: ``ApiGame.services``).
SERVICES = (
    table_pb2.DESCRIPTOR.services_by_name["TableService"].full_name,
    cashier_pb2.DESCRIPTOR.services_by_name["CashierService"].full_name,
    cashier_pb2.DESCRIPTOR.services_by_name["ReportService"].full_name,
    events_pb2.DESCRIPTOR.services_by_name["WatchService"].full_name,
    events_pb2.DESCRIPTOR.services_by_name["FeedService"].full_name,
    regulator_pb2.DESCRIPTOR.services_by_name["RegulatorService"].full_name,
    reports_pb2.DESCRIPTOR.services_by_name["ReadModelService"].full_name,
)
MAX_MESSAGE = 1 << 20  # requests are small; refuse big ones before parsing them
GRACE_SECONDS = 5.0


@dataclass
class Running:
    """A started server and what it owns."""

    server: grpc.Server
    port: int
    health: health.HealthServicer
    hub: Hub
    ledger: AnyLedger
    stopped: threading.Event
    services: tuple[str, ...]  # every service it serves (the games' included)
    notary: Follower | None = None  # signs a checkpoint at every coup end (with a key)
    regulator: RegulatorServicer | None = None
    projections: ProjectionKeeper | None = None  # keeps the read models up to date
    servicers: tuple[Base, ...] = ()
    credentials: credentials.Keyring | None = None  # who may call; reload() re-reads the file
    streams: StreamQuota | None = None  # the streams each principal holds
    tls: bool = False
    monitor: monitoring.HealthMonitor | None = None  # keeps the health statuses true
    metrics: series.ServerMetrics | None = None
    endpoint: series.Endpoint | None = None  # /metrics and /health over HTTP (--metrics-listen)
    pools: tuple[ThreadPoolExecutor, ...] = ()  # the health checks' own threads
    turn_clock: Any = None  # services/turn_clock.TurnClock, started by ``sabot serve``

    @property
    def metrics_port(self) -> int:
        """The metrics endpoint's port (0: none)."""
        return self.endpoint.port if self.endpoint is not None else 0

    def reload(self) -> None:
        """SIGHUP: read the credentials file again (the TLS files are re-read at the next
        connection whenever they change)."""
        if self.credentials is not None:
            self.credentials.reload()

    def forget(self) -> None:
        """Empty the servicers' caches of immutable facts (as a restart does)."""
        for servicer in self.servicers:
            servicer.forget()

    def stop(self, grace: float = GRACE_SECONDS) -> None:
        """Graceful shutdown: NOT_SERVING, streams told to end, in-flight calls drained, the
        notary's last sync."""
        if self.stopped.is_set():
            return
        self.stopped.set()
        if self.monitor is not None:
            self.monitor.stop()
        self.health.enter_graceful_shutdown()
        if self.turn_clock is not None:
            self.turn_clock.stop()
        self.hub.close()
        self.server.stop(grace).wait()
        if self.endpoint is not None:
            self.endpoint.stop()
        for pool in self.pools:
            pool.shutdown(wait=False, cancel_futures=True)
        if self.credentials is not None:
            self.credentials.stop()
        if self.projections is not None:
            self.projections.stop()
        if self.notary is not None:
            self.notary.stop()
        if self.regulator is not None:
            self.regulator.close()
        self.ledger.close()
        get_logger().info("server stopped", port=self.port)
        logs.flush()


def _event(event: str, fields: dict[str, object]) -> None:
    level = str(fields.pop("level", "info"))
    getattr(get_logger(), level)(event, **fields)


def keyring_of(config: Config) -> credentials.Keyring:
    """The credentials of ``config``: its in-memory tokens (hashed here), its hashed
    SABOT_TOKENS entries and its credentials file (read now, and watched)."""
    fixed = [*credentials.from_tokens(config.tokens), *config.credentials]
    try:
        return credentials.Keyring(fixed, config.credentials_file, on_event=_event)
    except credentials.CredentialError as exc:
        raise ConfigError(str(exc)) from None


def _tls_files(config: Config) -> tls.ServerFiles | None:
    if config.tls_cert is None and config.tls_key is None:
        if config.tls_client_ca is not None:
            raise ConfigError("SABOT_TLS_CLIENT_CA (--tls-client-ca) needs --tls-cert and "
                              "--tls-private-key")
        return None
    if config.tls_cert is None or config.tls_key is None:
        raise ConfigError("--tls-cert and --tls-private-key go together (SABOT_TLS_CERT, "
                          "SABOT_TLS_KEY)")
    return tls.ServerFiles(config.tls_cert, config.tls_key, config.tls_client_ca)


class _FromConfig:
    """``start``'s ``notary`` when none is given: the one ``config.checkpoint_key`` makes."""


FROM_CONFIG = _FromConfig()


def _listening(config: Config, metrics_listen: str | None
               ) -> tuple[tls.ServerFiles | None, grpc.ServerCredentials | None]:
    """The TLS files and credentials the server listens with (None, None: plaintext, on
    loopback or with ``insecure`` only); ConfigError for settings that cannot serve."""
    files = _tls_files(config)
    if files is None and not config.insecure and not tls.is_loopback(config.listen):
        raise ConfigError(f"refusing plaintext on {config.listen} (not loopback): give "
                          "--tls-cert and --tls-private-key, or --insecure")
    try:
        server_tls = None if files is None else tls.server_credentials(files, _event)
    except tls.TlsError as exc:
        raise ConfigError(str(exc)) from None
    if metrics_listen is not None:
        try:
            series.split_address(metrics_listen)
        except ValueError as exc:
            raise ConfigError(f"SABOT_METRICS_LISTEN (--metrics-listen): {exc}") from None
    return files, server_tls


def start(config: Config, ledger: AnyLedger, metrics_listen: str | None = None,
          limits: monitoring.Limits | None = None,
          interval: float = monitoring.INTERVAL,
          notary: Follower | _FromConfig | None = FROM_CONFIG, *, games: Served,
          read_models_elsewhere: bool = False) -> Running:
    """Start serving ``ledger`` and ``games`` (each game's parts for the API, the read side and
    the regulator, and its commands' declarations: the role table's rows of their RPCs) on
    ``config.listen`` (port 0: a free port, see ``Running.port``),
    its health kept true by a monitor (``services/api/health.py``: every ``interval`` s, with
    ``limits``), and with ``metrics_listen`` (HOST:PORT) the Prometheus metrics and the health
    over HTTP (``services/metrics.py``). ``notary``: the notary the server starts and stops
    (``sabot serve``: ``services.bootstrap.notary``; None: none; not given: the one of
    ``config.checkpoint_key``). ``read_models_elsewhere``: a process of their own keeps the read
    models up to date (``sabot serve``: a child of the ledger process,
    ``services.bootstrap.open_ledger_process``); else a thread of this process.
    ConfigError for settings that cannot serve (a
    plaintext listener beyond loopback without ``insecure``, half a TLS pair, a credentials
    file that does not parse, a metrics address that is not HOST:PORT); ``roles.RoleError``
    for declarations the role table refuses (``roles.role_table``)."""
    files, server_tls = _listening(config, metrics_listen)
    table = role_table(games.commands)  # before anything starts
    keyring = keyring_of(config)
    stream_slots = max(1, config.workers // 2)  # unary calls keep the rest
    quota = StreamQuota(config.streams_per_principal, total=stream_slots)
    hub = _hub(ledger, stream_slots)
    metrics = series.ServerMetrics()
    metrics.stream_slots.set(stream_slots)
    health_servicer = health.HealthServicer()
    checks, check_pool = monitoring.serve_checks(health_servicer)
    server = _grpc_server(config, _interceptors(metrics, check_pool, keyring, quota, table))
    if isinstance(notary, _FromConfig):
        notary = _notary(config, games)
    added = _add_servicers(server, config, ledger, hub, games, notary, read_models_elsewhere)
    server.add_generic_rpc_handlers((checks,))  # Check on threads of its own
    serve_reflection(server, (*added.services, health.SERVICE_NAME))
    port = _bind(server, config, server_tls, (hub, check_pool))
    state, writer_series = observer(ledger)
    metrics.registry.register(series.RemoteSeries(writer_series))
    monitor = monitoring.HealthMonitor(
        health_servicer, added.services,
        _sources(config, ledger, hub, added.projections, notary, state),
        metrics, limits=limits or monitoring.Limits(), interval=interval,
        commands=(*monitoring.COMMAND_SERVICES,  # and every game's: they take commands
                  *added.played.services()))
    endpoint = _endpoint(metrics_listen, metrics, monitor, (hub, check_pool))
    keyring.watch()
    if notary is not None:
        notary.start()
    added.projections.start()
    server.start()
    monitor.start()  # its first look sets every status before it returns
    _log_started(config, files, port, metrics_listen, endpoint)
    return Running(server, port, health_servicer, hub, ledger, threading.Event(),
                   added.services, notary, added.regulator, added.projections,
                   tuple(s for s in added.servicers if isinstance(s, Base)), keyring, quota,
                   files is not None, monitor, metrics, endpoint, (check_pool,))


def _hub(ledger: AnyLedger, stream_slots: int) -> Hub:
    """The hub of the server's streams, started, from the log's end the ledger knows."""
    recorder = getattr(getattr(ledger, "app", None), "recorder", None)
    end = getattr(recorder, "max_notification_id", None)
    saved = getattr(ledger, "saved_position", None)
    hub = Hub(ledger, streams=stream_slots, end=end, saved=saved)
    hub.start()
    return hub


def _interceptors(metrics: series.ServerMetrics, check_pool: ThreadPoolExecutor,
                  keyring: credentials.Keyring, quota: StreamQuota, table: RoleTable
                  ) -> list[Any]:
    """The server's interceptors, outermost first: the traces' (when enabled), the metrics'
    (and deadlines'), then authentication and authorization against ``table``."""
    pools = {f"/{health.SERVICE_NAME}/Check": check_pool}
    interceptors: list[Any] = [series.MetricsInterceptor(metrics, call_deadline, pools),
                               ApiInterceptor(keyring, quota, table=table)]
    if traces.enabled():  # off by default: no interceptor at all
        interceptors.insert(0, traces.TraceInterceptor(current_principal.get))
    return interceptors


def _grpc_server(config: Config, interceptors: list[Any]) -> grpc.Server:
    return grpc.server(
        Workers(config.workers, thread_name_prefix="sabot-rpc"),
        interceptors=interceptors,
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE),
            ("grpc.so_reuseport", 0),
            # no channelz (nothing here serves or reads it): grpc's core otherwise keeps its
            # per-call counters and traces on every call (docs/performance.md, the stake path)
            ("grpc.enable_channelz", 0),
        ],
        maximum_concurrent_rpcs=config.workers * 8,
    )


@dataclass(frozen=True)
class _Added:
    """The servicers ``_add_servicers`` added, and what the server keeps of them."""

    played: Played  # the games served
    services: tuple[str, ...]  # every service served (the games' included)
    regulator: RegulatorServicer
    projections: ProjectionKeeper  # not started yet
    servicers: tuple[Any, ...]


def _add_servicers(server: grpc.Server, config: Config, ledger: AnyLedger, hub: Hub,
                   games: Served, notary: Follower | None, read_models_elsewhere: bool
                   ) -> _Added:
    """Every servicer, the game-neutral ones and each game's, added to ``server``."""
    no_tokens: dict[str, Principal] = {}  # the interceptor authenticates: servicers hold none
    served = Played(games.api)
    deps = (ledger, no_tokens, hub, served)
    tables = table_service.servicer(ledger, no_tokens, hub, games=served)  # each game's too
    cashier, report = CashierServicer(*deps), ReportServicer(*deps)
    watch, feed = WatchServicer(*deps), FeedServicer(*deps)
    table_pb2_grpc.add_TableServiceServicer_to_server(tables, server)
    played = tuple(servicer for game in served.games if game.servicers is not None
                   for servicer in game.servicers(server, *deps))  # each game's own
    cashier_pb2_grpc.add_CashierServiceServicer_to_server(cashier, server)
    cashier_pb2_grpc.add_ReportServiceServicer_to_server(report, server)
    events_pb2_grpc.add_WatchServiceServicer_to_server(watch, server)
    events_pb2_grpc.add_FeedServiceServicer_to_server(feed, server)
    regulator = regulator_service.servicer(  # its game-neutral RPCs and each game's; they
        ledger, no_tokens, hub, games=served,
        store=config.read_store or config.store,  # they read the read store, if any
        seal_key=config.seal_key, follower=notary, replays=games.regulator,
        checkpoint_public_key=None if notary is None else public_key_bytes(
            notary.key.public_key()))
    regulator_pb2_grpc.add_RegulatorServiceServicer_to_server(regulator, server)
    projections = ProjectionKeeper(ledger, hub, follow=config.projections,
                                   gaming_day=config.gaming_day, read_store=config.read_store,
                                   games=games.read)
    if read_models_elsewhere:
        projections.kept_elsewhere()
    read_model_servicer = ReadModelServicer(*deps, keeper=projections)
    for servicer in played:  # a game's servicer answering from the read models: the server's
        if isinstance(servicer, GameReadModels):
            servicer.use_read_models(projections)
    reports_pb2_grpc.add_ReadModelServiceServicer_to_server(read_model_servicer, server)
    return _Added(served, (*SERVICES, *served.services()), regulator, projections,
                  (tables, *played, cashier, report, watch, feed, regulator,
                   read_model_servicer))


def _given_up(started: tuple[Hub, ThreadPoolExecutor]) -> None:
    """What a server that cannot listen had started: its hub and its checks' threads."""
    hub, check_pool = started
    hub.close()
    check_pool.shutdown(wait=False)


def _bind(server: grpc.Server, config: Config, server_tls: grpc.ServerCredentials | None,
          started: tuple[Hub, ThreadPoolExecutor]) -> int:
    """The port ``server`` listens on at ``config.listen``; OSError (``started`` stopped) when
    it cannot."""
    try:
        if server_tls is None:
            port = server.add_insecure_port(config.listen)
        else:
            port = server.add_secure_port(config.listen, server_tls)
    except RuntimeError:  # grpcio >= 1.6x: "Failed to bind to address ..." (was: port 0)
        port = 0
    if port == 0:
        _given_up(started)
        raise OSError(f"cannot listen on {config.listen} (in use, or not an address here)")
    return port


def _endpoint(metrics_listen: str | None, metrics: series.ServerMetrics,
              monitor: monitoring.HealthMonitor, started: tuple[Hub, ThreadPoolExecutor]
              ) -> series.Endpoint | None:
    """The metrics and health over HTTP on ``metrics_listen``, started (None: not asked);
    OSError (``started`` stopped) when it cannot listen."""
    if metrics_listen is None:
        return None
    try:
        return series.Endpoint(metrics_listen, metrics.registry, monitor.check).start()
    except OSError as exc:
        _given_up(started)
        raise OSError(f"--metrics-listen {metrics_listen}: cannot listen: "
                      f"{exc.strerror or exc}") from None


def _log_started(config: Config, files: tls.ServerFiles | None, port: int,
                 metrics_listen: str | None, endpoint: series.Endpoint | None) -> None:
    get_logger().info("server started", version=version(), listen=config.listen, port=port,
                      store=_safe(config.store),
                      tls="off" if files is None else (
                          "mtls" if files.client_ca is not None else "on"),
                      credentials=str(config.credentials_file or ""))
    if endpoint is not None:
        get_logger().info("metrics served", listen=metrics_listen, port=endpoint.port)


def _sources(config: Config, ledger: AnyLedger, hub: Hub, projections: ProjectionKeeper,
             notary: Follower | None, state: Callable[[], dict[str, Any]]
             ) -> monitoring.Sources:
    """Where the health monitor looks: the store (a probe of its own), the ledger's writer
    (from its memory, in whichever process), the log's end as the hub saw it, the read models'
    positions (when this server keeps them) and the notary."""
    probe = monitoring.StoreProbe(config.store)

    def ledger_state() -> monitoring.LedgerState:
        found = state()  # a writer that found the store down decides nothing: not active
        full = bool(found.get("store_full", False))  # nor one whose last save found it full
        return monitoring.LedgerState(alive=True, active=bool(found.get("active", True))
                                      and not found.get("store_down", False) and not full,
                                      why="the store is full" if full else "")

    views = None
    if config.projections:
        def views() -> dict[str, int]:
            return projections.positions()

    notary_state = None
    if notary is not None:
        follower = notary

        def notary_state() -> monitoring.NotaryState | None:
            return probe.notary(follower.active.is_set())

    return monitoring.Sources(store=probe.check, ledger=ledger_state,
                              head=lambda: hub.position, views=views, notary=notary_state,
                              close=probe.close,
                              read_store=projections.head if config.read_store else None)


def notary_error(exc: BaseException) -> None:
    """What the server's notary does with a store error: it logs it and reconnects."""
    get_logger().error("notary: store error; reconnecting", error=repr(exc))


def _notary(config: Config, games: Served) -> Follower | None:
    """The notary of the store, when the config has a checkpoint key (not started yet), signing
    at the end of each of ``games``' rounds: for a server started without one (``sabot serve``
    gives ``services.bootstrap.notary``'s)."""
    if config.checkpoint_key is None:
        return None
    publics = []
    if config.chain_key is not None:  # the ledger's own evidence key: the notary checks by it
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        public = Ed25519PrivateKey.from_private_bytes(config.chain_key).public_key()
        publics.append(public.public_bytes_raw())
    ends = RoundEnds(topic for game in games.regulator for topic in game.round_ends)
    return signing_follower(config.store, config.checkpoint_key, publics, on_error=notary_error,
                            round_end=ends)


# gRPC server reflection under both of its names: grpc.reflection.v1 (what current grpcurl, buf
# curl and Postman ask first) and v1alpha (older clients). grpcio-reflection ships v1alpha only;
# v1's messages are the same fields with the same numbers, so v1alpha's servicer answers v1 too.
# The files it answers are those protoc wrote with their comments (setup.py: descriptors.binpb),
# so a client that describes a service shows the API's documentation.
REFLECTION_V1 = "grpc.reflection.v1.ServerReflection"
DESCRIPTORS = Path(__file__).parent / "gen" / "descriptors.binpb"


def serve_reflection(server: grpc.Server, services: Sequence[str]) -> None:
    """Reflection v1 and v1alpha on ``server``, listing ``services`` and both reflections."""
    from grpc_reflection.v1alpha import reflection_pb2

    servicer = reflection.ReflectionServicer(
        (*services, reflection.SERVICE_NAME, REFLECTION_V1))
    documented = _documented_files()
    # the library's stub says it returns None; it is a generator of responses
    info: Callable[[Any, grpc.ServicerContext], Any] = servicer.ServerReflectionInfo

    def answer(requests: Any, context: grpc.ServicerContext) -> Any:
        for response in info(requests, context):
            if response.HasField("file_descriptor_response") and documented:
                files = response.file_descriptor_response.file_descriptor_proto
                files[:] = [documented.get(_file_name(f), f) for f in files]
            yield response

    method = grpc.stream_stream_rpc_method_handler(
        answer,
        request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
        response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString)
    for name in (reflection.SERVICE_NAME, REFLECTION_V1):
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(name, {"ServerReflectionInfo": method}),))


def _documented_files() -> dict[str, bytes]:
    """Our proto files as protoc wrote them with their comments, by file name (none when the
    build left no descriptor set: reflection then answers the files without comments)."""
    from google.protobuf import descriptor_pb2

    try:
        found = descriptor_pb2.FileDescriptorSet.FromString(DESCRIPTORS.read_bytes())
    except OSError:
        return {}
    for file in found.file:  # as the generated modules have them: no json_name written out
        for message in _messages(file.message_type):
            for f in message.field:
                f.ClearField("json_name")
    return {f.name: f.SerializeToString() for f in found.file}


def _messages(messages: Any) -> Iterator[Any]:
    for message in messages:
        yield message
        yield from _messages(message.nested_type)


def _file_name(serialized: bytes) -> str:
    from google.protobuf import descriptor_pb2

    return descriptor_pb2.FileDescriptorProto.FromString(serialized).name


def _safe(url: str) -> str:
    """A store URL without its password."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        return f"{scheme}://{creds.split(':', 1)[0]}@{host}"
    return url


class Signals:
    """SIGTERM and SIGINT (stop gracefully) and SIGHUP (reload the credentials), caught from
    the moment this is made: make it before saying the server listens, so that a signal sent
    as soon as that is read is never the default action (death) instead of a graceful stop."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.hangup = threading.Event()
        self._previous = {s: signal.signal(s, self._on_stop)
                          for s in (signal.SIGTERM, signal.SIGINT)}
        self._previous[signal.SIGHUP] = signal.signal(signal.SIGHUP, self._on_hangup)

    def _on_stop(self, signum: int, frame: FrameType | None) -> None:
        get_logger().info("signal received, shutting down", signal=signal.Signals(signum).name)
        self.done.set()

    def _on_hangup(self, signum: int, frame: FrameType | None) -> None:
        self.hangup.set()

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def serve_until_signal(running: Running, signals: Signals | None = None) -> None:
    """Block until SIGTERM or SIGINT, then shut down gracefully; SIGHUP reloads the
    credentials. ``signals``: caught since earlier (else from now)."""
    caught = signals or Signals()
    try:
        while not caught.done.wait(0.2):
            if caught.hangup.is_set():
                caught.hangup.clear()
                get_logger().info("signal received, reloading the credentials", signal="SIGHUP")
                running.reload()
    finally:
        running.stop()
        caught.restore()
