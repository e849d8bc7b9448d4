"""Traces (optional, off by default): OpenTelemetry spans for each RPC and its ledger command,
across the ledger process, exported by OTLP/gRPC when configured (``SABOT_OTLP_ENDPOINT``,
``sabot serve --otlp-endpoint``).

Off (the default) nothing is imported of OpenTelemetry and no interceptor is added: a ledger
call costs one ``tracer is None`` test. On (``configure``), this process has a tracer provider
of its own (the global one is left alone) and:

- ``TraceInterceptor`` (the server's outermost interceptor) opens a SERVER span per RPC named
  by its method, with ``rpc.method``, ``rpc.grpc.status_code`` and the caller's principal id
  and role (``sabot.principal``, ``sabot.role``): never a token, a key or a request body;
- ``RemoteLedger.call`` opens a CLIENT span ``ledger <method>``, a child of the RPC's, and
  carries its W3C ``traceparent`` in the call frame (an optional fourth element, see
  ``services/ledger/wire.py``);
- the ledger process (configured through its settings pipe) opens a SERVER span ``ledger.host
  <method>`` in that trace, from receipt to the answer (the queue, the batch, the store save),
  with a ``sabot.saved_position`` attribute once stored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import grpc

tracer: Any = None  # the OpenTelemetry tracer when tracing is on; None: off
_provider: Any = None


def enabled() -> bool:
    return tracer is not None


def configure(endpoint: str | None = None, *, exporter: Any = None,
              service: str = "sabot") -> Any:
    """Tracing on in this process: spans exported to ``exporter`` (each at its end: tests), or
    in batches by OTLP/gRPC to ``endpoint`` (``http://HOST:PORT``; plaintext for http://).
    Returns the tracer provider."""
    global tracer, _provider
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    shutdown()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    else:
        if not endpoint:
            raise ValueError("an OTLP endpoint or an exporter is needed")
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(
            endpoint=endpoint, insecure=endpoint.startswith("http://"))))
    _provider = provider
    tracer = provider.get_tracer("sabot")
    return provider


def shutdown() -> None:
    """Tracing off; what is buffered is exported first."""
    global tracer, _provider
    provider, _provider, tracer = _provider, None, None
    if provider is not None:
        provider.shutdown()


def inject() -> dict[str, str]:
    """The current span's context as W3C trace-context headers (``traceparent``)."""
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier)
    return carrier


def extract(carrier: Mapping[str, str] | None) -> Any:
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    return TraceContextTextMapPropagator().extract(dict(carrier or {}))


def _principal_attributes(span: Any, principal: Any) -> None:
    """The caller's principal id and role (``Principal``), when there is one."""
    if principal is not None:
        span.set_attribute("sabot.principal", principal.principal_id)
        span.set_attribute("sabot.role", principal.role.value)


def _code(context: grpc.ServicerContext, failed: bool) -> str:
    code = None
    try:
        code = context.code()  # type: ignore[attr-defined]
    except Exception:  # a context without code() (tests)
        code = None
    if code is None:
        return "UNKNOWN" if failed else "OK"
    name = getattr(code, "name", None)
    return str(name) if name is not None else str(code)


class TraceInterceptor:
    """A SERVER span per RPC: its method, its status code, the caller's principal id
    (``principal()``: the RPC's authenticated principal, or None; the server hands its
    interceptor's)."""

    def __init__(self, principal: Callable[[], Any] = lambda: None) -> None:
        self.principal = principal

    def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        import grpc
        from opentelemetry.trace import SpanKind, Status, StatusCode

        handler = continuation(details)
        if handler is None or tracer is None:
            return handler
        method: str = details.method
        service, _, name = method.lstrip("/").rpartition("/")

        def finish(span: Any, context: grpc.ServicerContext, failed: bool) -> None:
            code = _code(context, failed)
            span.set_attribute("rpc.grpc.status_code", code)
            _principal_attributes(span, self.principal())
            if code != "OK":
                span.set_status(Status(StatusCode.ERROR, code))

        def start(context: grpc.ServicerContext) -> Any:
            span = tracer.start_as_current_span(
                method, kind=SpanKind.SERVER, record_exception=False,
                set_status_on_exception=False,
                attributes={"rpc.system": "grpc", "rpc.service": service, "rpc.method": name})
            return span

        if handler.unary_unary is not None:
            behavior = handler.unary_unary

            def unary(request: Any, context: grpc.ServicerContext) -> Any:
                with start(context) as span:
                    failed = True
                    try:
                        response = behavior(request, context)
                        failed = False
                        return response
                    finally:
                        finish(span, context, failed)

            return grpc.unary_unary_rpc_method_handler(
                unary, request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer)
        if handler.unary_stream is not None:
            streamer = handler.unary_stream

            def stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
                with start(context) as span:
                    failed = True
                    try:
                        yield from streamer(request, context)
                        failed = False
                    finally:
                        finish(span, context, failed)

            return grpc.unary_stream_rpc_method_handler(
                stream, request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer)
        return handler


def ledger_call(method: str) -> Any:
    """The CLIENT span of a ledger call (a context manager giving the span)."""
    from opentelemetry.trace import SpanKind

    return tracer.start_as_current_span(f"ledger {method}", kind=SpanKind.CLIENT,
                                        attributes={"sabot.ledger.method": method})


def host_span(method: str, carrier: Mapping[str, str] | None) -> Any:
    """The ledger process's span of a call (started, not current: ended by its answer)."""
    from opentelemetry.trace import SpanKind

    return tracer.start_span(f"ledger.host {method}", context=extract(carrier),
                             kind=SpanKind.SERVER, attributes={"sabot.ledger.method": method})


def end_host_span(span: Any, error: BaseException | None, saved: int | None = None) -> None:
    from opentelemetry.trace import Status, StatusCode

    if error is not None:
        span.set_attribute("sabot.error", type(error).__name__)
        span.set_status(Status(StatusCode.ERROR, type(error).__name__))
    if saved is not None:
        span.set_attribute("sabot.saved_position", saved)
    span.end()
