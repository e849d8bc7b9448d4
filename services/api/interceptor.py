"""The server interceptor: authenticates the bearer token, checks the role against the table in
``roles``, maps errors to rich statuses and writes one JSON log line per RPC."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import grpc

from domain.errors import RuleViolation
from services.api import errors, roles
from services.api.logs import get_logger
from services.api.names import ids_of_request
from services.api.roles import Principal


def _abort(context: grpc.ServicerContext, exc: BaseException) -> None:
    context.abort_with_status(errors.to_status(exc))


def authenticate(tokens: Mapping[str, Principal], metadata: Any) -> Principal | errors.ApiError:
    """The holder of the call's bearer token, or the UNAUTHENTICATED error to answer."""
    header = None
    for key, value in metadata or ():
        if key == "authorization":
            header = value
            break
    if header is None:
        return errors.unauthenticated("missing authorization metadata (Bearer token)")
    scheme, _, token = str(header).partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return errors.unauthenticated("authorization must be 'Bearer <token>'")
    principal = tokens.get(token.strip())
    if principal is None:
        return errors.unauthenticated("unknown token")
    return principal


class ApiInterceptor(grpc.ServerInterceptor):  # type: ignore[type-arg]
    """Authentication, authorization, error mapping and the per-RPC log line."""

    def __init__(self, tokens: Mapping[str, Principal]) -> None:
        self._tokens = dict(tokens)
        self._log = get_logger()

    def _authenticate(self, method: str, metadata: Any) -> Principal | errors.ApiError:
        principal = authenticate(self._tokens, metadata)
        if isinstance(principal, errors.ApiError):
            return principal
        if not roles.allowed(method, principal.role):
            return errors.permission_denied(
                "authorization", f"role {principal.role.value} may not call {method}"
            )
        return principal

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler[Any, Any] | None],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = continuation(details)
        if handler is None:
            return None
        method: str = details.method
        if roles.is_public(method):
            return handler
        who = self._authenticate(method, details.invocation_metadata)
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
        fields: dict[str, Any] = {
            "method": method,
            "status": code.name,
            "duration_ms": round((time.perf_counter() - started) * 1000, 3),
            "role": who.role.value if isinstance(who, Principal) else None,
            "caller": who.label if isinstance(who, Principal) else None,
        }
        fields.update(ids_of_request(request))
        if isinstance(exc, errors.ApiError | RuleViolation):
            fields["error"] = f"{exc.field}: {exc.message}" if exc.field else exc.message
            fields["reason"] = exc.reason
        elif exc is not None:
            fields["error"] = type(exc).__name__
        fields.update(extra)
        if code is grpc.StatusCode.INTERNAL:
            self._log.error("rpc", exc_info=exc, **fields)
        else:
            self._log.info("rpc", **fields)

    def _unary(
        self, method: str, who: Principal | errors.ApiError, behavior: Callable[..., Any]
    ) -> Callable[[Any, grpc.ServicerContext], Any]:
        def run(request: Any, context: grpc.ServicerContext) -> Any:
            started = time.perf_counter()
            if isinstance(who, errors.ApiError):
                self._line(method, who, request, who.code, started, who)
                _abort(context, who)
            try:
                response = behavior(request, context)
            except Exception as exc:  # every error leaves as a status, never a traceback
                self._line(method, who, request, errors.code_of(exc), started, exc)
                _abort(context, exc)
            self._line(method, who, request, grpc.StatusCode.OK, started, None)
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
