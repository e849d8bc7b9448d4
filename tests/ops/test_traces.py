"""Traces (``services/traces.py``): a PlaceStake through a real server, its ledger behind the
ledger socket (``LedgerHost``/``RemoteLedger``, the protocol of the ledger process), yields the
RPC's span, the ledger call's and the ledger host's command span in one trace, each the child of
the one before; no attribute holds a token or a key. With tracing off, nothing is recorded and
the server has no trace interceptor. The frame's trace context is optional: a call without it
is still served (SABOT-LEDGER-WIRE-1)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from services import traces
from services.api import server
from services.api.client import new_request_id
from services.api.config import Config
from services.api.gen.sabot.v1 import betting_pb2, cashier_pb2, common_pb2
from services.bootstrap import LEDGER_GAMES, SERVED
from services.ledger import wire
from services.ledger.api import Ledger, LedgerConfig
from services.ledger.remote import LedgerHost, RemoteLedger
from services.settings import SettingError, Settings
from tests.api.conftest import KEY, PRINCIPALS, SEED, issue_principals
from tests.api.support import PLAYERS, Api, money, open_coup, open_shoe, open_table

from .support import url as pg_url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/traces.db"
        return
    from .support import create_store, drop_database

    name = create_store()
    try:
        yield pg_url(name)
    finally:
        drop_database(name)


def _serve(store: str, tmp_path: Path) -> tuple[Api, Any]:
    keys = tmp_path / "credentials.toml"
    roles, players = issue_principals(keys)
    ledger = Ledger(LedgerConfig(store_url=store, seal_key=KEY, new_seed=lambda: SEED),
                    batching=True, games=LEDGER_GAMES)
    path = str(Path(tempfile.mkdtemp(prefix="sabot-test-")) / "ledger.sock")
    host = LedgerHost(ledger, path).start()
    remote = RemoteLedger(path, store, secret=host.secret, games=LEDGER_GAMES)
    running = server.start(Config(listen="127.0.0.1:0", store=store, credentials_file=keys,
                                  seal_key=KEY, workers=8), cast(Ledger, remote), games=SERVED)
    api = Api(f"127.0.0.1:{running.port}", "traces", {**roles, "player": players["anne"]},
              players, None, running, credentials=keys,
              principals={**PRINCIPALS, "player": "anne", **{p: p for p in PLAYERS}})

    def stop() -> None:
        for client in api._clients.values():
            client.close()
        running.stop(grace=1)
        remote.close()
        host.close()
        ledger.close()

    return api, stop


def _stake(api: Api) -> None:
    api.as_("cashier").cashier.OpenAccount(cashier_pb2.OpenAccountRequest(
        request_id=new_request_id(), account_id="anne", currency_code="EUR"))
    api.as_("cashier").cashier.Deposit(cashier_pb2.DepositRequest(
        request_id=new_request_id(), name="accounts/anne", amount=money(10_000)))
    coup = open_coup(api, open_shoe(api, open_table(api).name).name)
    api.as_("anne").betting.PlaceStake(betting_pb2.PlaceStakeRequest(
        request_id=new_request_id(), coup=coup.name, account="accounts/anne",
        chance=common_pb2.CHANCE_NOIR, amount=money(500)))


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    found = InMemorySpanExporter()
    traces.configure(exporter=found)
    try:
        yield found
    finally:
        traces.shutdown()


def test_a_stake_is_one_trace_across_the_ledger_socket(
        store: str, tmp_path: Path, exporter: InMemorySpanExporter) -> None:
    api, stop = _serve(store, tmp_path)
    try:
        _stake(api)
    finally:
        stop()
    spans = exporter.get_finished_spans()
    (rpc,) = [s for s in spans if s.name == "/sabot.v1.BettingService/PlaceStake"]
    assert rpc.kind is SpanKind.SERVER
    assert rpc.attributes is not None
    assert rpc.attributes["rpc.method"] == "PlaceStake"
    assert rpc.attributes["rpc.grpc.status_code"] == "OK"
    assert rpc.attributes["sabot.principal"] == "anne"
    assert rpc.attributes["sabot.role"] == "player"
    trace_id = rpc.context.trace_id
    (call,) = [s for s in spans if s.name == "ledger place_stake"]
    assert call.context.trace_id == trace_id
    assert call.parent is not None and call.parent.span_id == rpc.context.span_id
    (command,) = [s for s in spans if s.name == "ledger.host place_stake"]
    assert command.context.trace_id == trace_id
    assert command.parent is not None and command.parent.span_id == call.context.span_id
    assert command.attributes is not None
    assert int(str(command.attributes["sabot.saved_position"])) > 0
    # the other RPCs are traces of their own, a refused one says its code
    assert {s.name for s in spans if s.kind is SpanKind.SERVER and s.parent is None} >= {
        "/sabot.v1.CashierService/OpenAccount", "/sabot.v1.CashierService/Deposit"}
    secrets_ = [*api.tokens.values(), *api.player_tokens.values(), KEY.hex(), SEED.hex()]
    for span in spans:
        for value in (span.attributes or {}).values():
            assert not any(s and s in str(value) for s in secrets_), (span.name, value)


def test_a_refused_call_is_a_span_with_its_code(
        tmp_path: Path, exporter: InMemorySpanExporter) -> None:
    api, stop = _serve(f"sqlite:///{tmp_path}/refused.db", tmp_path)
    try:
        with pytest.raises(Exception, match="UNAUTHENTICATED"):
            api.anonymous("not-a-token").cashier.OpenAccount(cashier_pb2.OpenAccountRequest(
                request_id=new_request_id(), account_id="zed", currency_code="EUR"))
    finally:
        stop()
    (rpc,) = [s for s in exporter.get_finished_spans()
              if s.name == "/sabot.v1.CashierService/OpenAccount"]
    assert rpc.attributes is not None
    assert rpc.attributes["rpc.grpc.status_code"] == "UNAUTHENTICATED"
    assert "sabot.principal" not in rpc.attributes
    assert not any("not-a-token" in str(v) for v in rpc.attributes.values())


def test_tracing_off_records_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert not traces.enabled()
    made: list[str] = []

    def spy(name: str) -> Any:
        def record(*args: Any, **kwargs: Any) -> Any:
            made.append(name)
            raise AssertionError(f"tracing is off, yet {name} was called")

        return record

    for name in ("TraceInterceptor", "ledger_call", "host_span", "inject"):
        monkeypatch.setattr(traces, name, spy(name))
    sent: list[list[Any]] = []
    frame_of = wire.Schema.call_frame
    monkeypatch.setattr(wire.Schema, "call_frame",
                        lambda self, *a, **k: sent.append(frame_of(self, *a, **k)) or sent[-1])
    api, stop = _serve(f"sqlite:///{tmp_path}/off.db", tmp_path)
    try:
        _stake(api)
    finally:
        stop()
    assert made == []  # no interceptor, no span, no context
    assert sent and all(len(frame) == 3 for frame in sent)  # the frames of before
    assert traces.tracer is None


def test_the_trace_context_is_an_optional_fourth_element() -> None:
    schema = wire.schema_of(LEDGER_GAMES)
    actor = {"principal": "anne", "role": "player"}
    plain = schema.call_frame(1, "place_stake", (), {"actor": actor, "request_id": "r"})
    assert len(plain) == 3 and wire.trace_context(plain) is None
    schema.read_call(plain)
    traced = schema.call_frame(2, "place_stake", (), {"actor": actor, "request_id": "r"},
                               {"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"})
    assert len(traced) == 4
    schema.read_call(traced)
    assert wire.trace_context(traced) == traced[3]
    for bad in ({"cookie": "x"}, {"traceparent": 7}, {"traceparent": "x" * 600}, ["x"]):
        with pytest.raises(wire.ProtocolError):
            schema.read_call([3, "place_stake", {"request_id": "r"}, bad])


def test_the_otlp_endpoint_setting() -> None:
    off = Settings.load({}, env={}, env_file=None, only=("otlp_endpoint",))
    assert off.otlp_endpoint is None
    got = Settings.load({"otlp_endpoint": "http://127.0.0.1:4317"}, env={}, env_file=None,
                        only=("otlp_endpoint",))
    assert got.otlp_endpoint == "http://127.0.0.1:4317"
    with pytest.raises(SettingError):
        Settings.load({"otlp_endpoint": "127.0.0.1"}, env={}, env_file=None,
                      only=("otlp_endpoint",))


class _Receiver:
    """An OTLP/gRPC trace receiver on 127.0.0.1 (a free port): the spans it was sent, with
    their service's name."""

    def __init__(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        import grpc
        from opentelemetry.proto.collector.trace.v1 import (
            trace_service_pb2,
            trace_service_pb2_grpc,
        )

        self.spans: list[tuple[str, Any]] = []
        receiver = self

        class Service(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
            def Export(self, request: Any, context: Any) -> Any:
                for resource in request.resource_spans:
                    service = next((a.value.string_value for a in resource.resource.attributes
                                    if a.key == "service.name"), "")
                    for scope in resource.scope_spans:
                        receiver.spans.extend((service, s) for s in scope.spans)
                return trace_service_pb2.ExportTraceServiceResponse()

        self.server = grpc.server(ThreadPoolExecutor(4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()


def test_sabot_serve_exports_both_processes_spans_by_otlp(tmp_path: Path) -> None:
    from .support import Served

    receiver = _Receiver()
    try:
        served = Served.dev(f"sqlite:///{tmp_path}/otlp.db", tmp_path, "--demo",
                            "--otlp-endpoint", f"http://127.0.0.1:{receiver.port}")
        try:
            served.wait_listening()  # after the demo: a shoe, its stakes, rounds, a match
        finally:
            served.stop()  # the buffered spans of both processes are exported as they end
    finally:
        receiver.server.stop(grace=1)
    stakes = [s for service, s in receiver.spans
              if service == "sabot" and s.name == "/sabot.v1.BettingService/PlaceStake"]
    assert stakes, sorted({s.name for _, s in receiver.spans})[:40]
    hosts = [s for service, s in receiver.spans
             if service == "sabot-ledger" and s.name == "ledger.host place_stake"]
    calls = {s.span_id: s for service, s in receiver.spans
             if service == "sabot" and s.name == "ledger place_stake"}
    rpcs = {s.span_id: s for s in stakes}
    linked = [h for h in hosts if h.parent_span_id in calls
              and calls[h.parent_span_id].parent_span_id in rpcs
              and h.trace_id == calls[h.parent_span_id].trace_id]
    assert linked, (len(hosts), len(calls), len(rpcs))
    for _, span in receiver.spans:  # the dev tokens, keys and seeds are in no attribute
        for attribute in span.attributes:
            text = str(attribute.value)
            assert "Bearer" not in text and len(text) < 64, (span.name, attribute.key)
