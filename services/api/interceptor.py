"""The server interceptor: authenticates the bearer token, checks the role against the table in
``roles``, maps errors to rich statuses and writes one JSON log line per RPC.

The wrapped handler of a (method, authorization header) that authenticated is built once and
kept: a call costs a dictionary look-up, not a new handler and closures. The principal reaches
the servicers through ``current_principal`` (grpc runs each RPC in its own ``contextvars``
context), so the token is authenticated once per call."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import grpc

from domain.errors import RuleViolation
from services.api import errors, logs, roles
from services.api.logs import get_logger
from services.api.names import ids_of_request
from services.api.roles import Principal

# The caller of the RPC being served, set by the interceptor before the servicer runs.
current_principal: ContextVar[Principal | None] = ContextVar("sabot_principal", default=None)

HANDLER_CACHE_LIMIT = 4096  # (method, header) pairs; emptied when full
_OK = grpc.StatusCode.OK
_INTERNAL = grpc.StatusCode.INTERNAL
if TYPE_CHECKING:
    _MessageHandler = grpc.RpcMethodHandler[Any, Any]


def _abort(context: grpc.ServicerContext, exc: BaseException) -> None:
    context.abort_with_status(errors.to_status(exc))


def authorization(metadata: Any) -> str | None:
    """The first ``authorization`` value of the call's metadata."""
    for key, value in metadata or ():
        if key == "authorization":
            return str(value)
    return None


def authenticate_header(
    tokens: Mapping[str, Principal], header: str | None
) -> Principal | errors.ApiError:
    """The holder of the bearer token in ``header``, or the UNAUTHENTICATED error to answer."""
    if header is None:
        return errors.unauthenticated("missing authorization metadata (Bearer token)")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return errors.unauthenticated("authorization must be 'Bearer <token>'")
    principal = tokens.get(token.strip())
    if principal is None:
        return errors.unauthenticated("unknown token")
    return principal


def authenticate(tokens: Mapping[str, Principal], metadata: Any) -> Principal | errors.ApiError:
    """The holder of the call's bearer token, or the UNAUTHENTICATED error to answer."""
    return authenticate_header(tokens, authorization(metadata))


class ApiInterceptor(grpc.ServerInterceptor):  # type: ignore[type-arg]
    """Authentication, authorization, error mapping and the per-RPC log line."""

    def __init__(self, tokens: Mapping[str, Principal]) -> None:
        self._tokens = dict(tokens)
        self._log = get_logger()
        # (method, header) -> (the servicer's handler, the wrapped one); only authorized callers
        self._handlers: dict[tuple[str, str | None], tuple[Any, Any]] = {}

    def _authenticate(self, method: str, header: str | None) -> Principal | errors.ApiError:
        principal = authenticate_header(self._tokens, header)
        if isinstance(principal, errors.ApiError):
            return principal
        if not roles.allowed(method, principal.role):
            return errors.permission_denied(
                "authorization", f"role {principal.role.value} may not call {method}"
            )
        return principal

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], _MessageHandler | None],
        details: grpc.HandlerCallDetails,
    ) -> _MessageHandler | None:
        handler = continuation(details)
        if handler is None:
            return None
        method: str = details.method
        header = authorization(details.invocation_metadata)
        key = (method, header)
        known = self._handlers.get(key)
        if known is not None and known[0] is handler:
            return known[1]  # type: ignore[no-any-return]
        if roles.is_public(method):
            return handler
        who = self._authenticate(method, header)
        wrapped = self._wrap(method, who, handler)
        if isinstance(who, Principal) and wrapped is not handler:
            if len(self._handlers) >= HANDLER_CACHE_LIMIT:
                self._handlers.clear()
            self._handlers[key] = (handler, wrapped)
        return wrapped

    def _wrap(
        self, method: str, who: Principal | errors.ApiError, handler: _MessageHandler
    ) -> _MessageHandler:
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                self._unary(method, who, handler.unary_unary),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                self._stream(method, who, handler.unary_stream),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler  # no client-streaming RPCs in sabot.v1

    def _line(
        self,
        method: str,
        who: Principal | errors.ApiError,
        request: Any,
        code: grpc.StatusCode,
        started: float,
        exc: BaseException | None,
        **extra: Any,
    ) -> None:
        role: str | None = None
        caller: str | None = None
        if isinstance(who, Principal):
            role, caller = who.role.value, who.label
        fields: dict[str, Any] = {
            "method": method,
            "status": code.name,
            "duration_ms": round((time.perf_counter() - started) * 1000, 3),
            "role": role,
            "caller": caller,
        }
        fields.update(ids_of_request(request))
        if exc is None:
            pass
        elif isinstance(exc, errors.ApiError | RuleViolation):
            fields["error"] = f"{exc.field}: {exc.message}" if exc.field else exc.message
            fields["reason"] = exc.reason
        else:
            fields["error"] = type(exc).__name__
        if extra:
            fields.update(extra)
        if code is _INTERNAL:
            self._log.error("rpc", exc_info=exc, **fields)
        else:
            logs.info("rpc", fields)

    def _unary(
        self, method: str, who: Principal | errors.ApiError, behavior: Callable[..., Any]
    ) -> Callable[[Any, grpc.ServicerContext], Any]:
        line = self._line
        if isinstance(who, errors.ApiError):
            refused = who

            def refuse(request: Any, context: grpc.ServicerContext) -> Any:
                line(method, refused, request, refused.code, time.perf_counter(), refused)
                _abort(context, refused)

            return refuse

        principal = who
        perf_counter = time.perf_counter
        set_principal = current_principal.set

        def run(request: Any, context: grpc.ServicerContext) -> Any:
            started = perf_counter()
            set_principal(principal)
            try:
                response = behavior(request, context)
            except Exception as exc:  # every error leaves as a status, never a traceback
                line(method, principal, request, errors.code_of(exc), started, exc)
                _abort(context, exc)
            line(method, principal, request, _OK, started, None)
            return response

        return run

    def _stream(
        self, method: str, who: Principal | errors.ApiError, behavior: Callable[..., Any]
    ) -> Callable[[Any, grpc.ServicerContext], Iterator[Any]]:
        def run(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            started = time.perf_counter()
            if isinstance(who, errors.ApiError):
                self._line(method, who, request, who.code, started, who)
                _abort(context, who)
            if isinstance(who, Principal):
                current_principal.set(who)
            sent = 0
            code = grpc.StatusCode.OK
            try:
                for message in behavior(request, context):
                    sent += 1
                    yield message
            except GeneratorExit:
                code = grpc.StatusCode.CANCELLED
                raise
            except Exception as exc:
                self._line(method, who, request, errors.code_of(exc), started, exc, messages=sent)
                code = grpc.StatusCode.UNKNOWN  # logged already
                _abort(context, exc)
            finally:
                if code is not grpc.StatusCode.UNKNOWN:
                    if not context.is_active() and code is grpc.StatusCode.OK:
                        code = grpc.StatusCode.CANCELLED
                    self._line(method, who, request, code, started, None, messages=sent)

        return run
