"""The server interceptor: authenticates the caller (a bearer token, or on the mTLS listener a
client certificate named in the credentials), checks the role against its role table
(``roles.RoleTable``: the server's, built from the games' commands' declarations),
limits each principal's streams, answers malformed requests INVALID_ARGUMENT, maps errors to
rich statuses and writes one JSON log line per RPC: ``info`` for answered calls, ``warning``
with the peer and the principal for security events (unauthenticated, refused, rate-limited or
malformed calls).

The wrapped handler of a (method, authorization header) that authenticated is built once and
kept: a call costs a dictionary look-up, not a new handler and closures; a reload of the
credentials (its ``generation``) or the credential's expiry makes the decision again. The
principal reaches the servicers through ``current_principal`` (grpc runs each RPC in its own
``contextvars`` context), so the token is authenticated once per call.

Every handler's request deserializer is wrapped (``tolerant``): bytes that do not parse as the
request message become a ``Malformed`` marker, answered INVALID_ARGUMENT (reason
MALFORMED_REQUEST) and logged, instead of gRPC's own INTERNAL "Exception deserializing
request!"."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import grpc

from domain.errors import RuleViolation
from services.api import errors, logs, roles, tls
from services.api.credentials import Credential, Keyring
from services.api.logs import get_logger
from services.api.names import ids_of_request
from services.api.roles import Principal, Role
from services.api.stream_quota import StreamQuota

# The caller of the RPC being served, set by the interceptor before the servicer runs.
current_principal: ContextVar[Principal | None] = ContextVar("sabot_principal", default=None)

HANDLER_CACHE_LIMIT = 4096  # (method, header) pairs; emptied when full
MALFORMED = "MALFORMED_REQUEST"
_OK = grpc.StatusCode.OK
_FOREVER = math.inf  # a credential that does not expire (compared by identity on the hot path)
_now = time.time
_INTERNAL = grpc.StatusCode.INTERNAL
# Answers logged at warning, with the peer: someone tried what they may not.
SECURITY_CODES = frozenset({grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED,
                            grpc.StatusCode.RESOURCE_EXHAUSTED})
if TYPE_CHECKING:
    _MessageHandler = grpc.RpcMethodHandler[Any, Any]


class Malformed:
    """What a request deserializer returns for bytes that are not the request message."""

    __slots__ = ("message", "size")

    def __init__(self, size: int, message: str) -> None:
        self.size = size
        self.message = message


def tolerant(deserializer: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    """``deserializer``, returning a ``Malformed`` marker where it would raise."""
    if deserializer is None:
        return None
    parse = deserializer

    def deserialize(data: bytes) -> Any:
        try:
            return parse(data)
        except Exception as exc:  # DecodeError, and whatever a parser may raise on garbage
            return Malformed(len(data), type(exc).__name__)

    return deserialize


def malformed_error(request: Malformed, method: str) -> errors.ApiError:
    name = method.rsplit("/", 1)[-1]
    return errors.invalid("request", f"the request body ({request.size} bytes) does not parse "
                                     f"as the message of {name}", reason=MALFORMED)


@dataclass(frozen=True, slots=True)
class Refused:
    """A call refused before the servicer: the error, and who it was when that is known."""

    error: errors.ApiError
    principal: Principal | None = None
    credential: str = ""


class _ByCertificate:
    """The caller is named by its client certificate (decided per call, from the TLS peer)."""


BY_CERTIFICATE = _ByCertificate()
Who = Principal | Refused


def _abort(context: grpc.ServicerContext, exc: BaseException, request: Any = None) -> None:
    context.abort_with_status(errors.to_status(exc, request=request))


def authorization(metadata: Any) -> str | None:
    """The first ``authorization`` value of the call's metadata."""
    for key, value in metadata or ():
        if key == "authorization":
            return str(value)
    return None


def _bearer(header: str | None) -> str | errors.ApiError:
    if header is None:
        return errors.unauthenticated("missing authorization metadata (Bearer token)")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return errors.unauthenticated("authorization must be 'Bearer <token>'")
    return token.strip()


def _check(credential: Credential | None, now: float) -> Principal | Refused:
    if credential is None:
        return Refused(errors.unauthenticated("unknown token"))
    principal = credential.principal
    if credential.revoked is not None:
        return Refused(errors.unauthenticated("this credential was revoked"), principal,
                       credential.id)
    if now >= credential.until:
        return Refused(errors.unauthenticated("this credential has expired"), principal,
                       credential.id)
    return principal


def authenticate_header(
    tokens: Mapping[str, Principal] | Keyring, header: str | None
) -> Principal | errors.ApiError:
    """The holder of the bearer token in ``header``, or the UNAUTHENTICATED error to answer."""
    token = _bearer(header)
    if isinstance(token, errors.ApiError):
        return token
    if isinstance(tokens, Keyring):
        found = _check(tokens.token(token), time.time())
        return found.error if isinstance(found, Refused) else found
    principal = tokens.get(token)
    if principal is None:
        return errors.unauthenticated("unknown token")
    return principal


def authenticate(tokens: Mapping[str, Principal] | Keyring, metadata: Any
                 ) -> Principal | errors.ApiError:
    """The holder of the call's bearer token, or the UNAUTHENTICATED error to answer."""
    return authenticate_header(tokens, authorization(metadata))


class ApiInterceptor(grpc.ServerInterceptor):  # type: ignore[type-arg]
    """Authentication, authorization, stream shares, error mapping and the per-RPC log line."""

    def __init__(self, credentials: Mapping[str, Principal] | Keyring,
                 streams: StreamQuota | None = None, *, table: roles.RoleTable) -> None:
        self.keyring = (credentials if isinstance(credentials, Keyring)
                        else Keyring.of_tokens(credentials))
        self.table = table  # who may call which RPC (``roles.role_table``)
        self.streams = streams or StreamQuota(per_principal=1 << 30)
        self._log = get_logger()
        # (method, header) -> (the servicer's handler, the wrapped one, keyring generation,
        # valid until); only authorized callers, and public methods
        self._handlers: dict[tuple[str, str | None], tuple[Any, Any, int, float]] = {}

    # --- who calls ------------------------------------------------------------------------

    def _authenticate(self, method: str, header: str | None
                      ) -> tuple[Principal | Refused | _ByCertificate, float]:
        """The caller and until when that answer holds (its credential's expiry)."""
        if header is None and self.keyring.has_certificates:
            return BY_CERTIFICATE, 0.0
        token = _bearer(header)
        if isinstance(token, errors.ApiError):
            return Refused(token), 0.0
        credential = self.keyring.token(token)
        who = _check(credential, time.time())
        if isinstance(who, Refused):
            return who, 0.0
        assert credential is not None
        until = credential.until
        return self._allowed(method, who, credential.id), _FOREVER if until == _FOREVER else until

    def _allowed(self, method: str, principal: Principal, credential: str
                 ) -> Principal | Refused:
        if not self.table.allowed(method, principal.role):
            return Refused(errors.permission_denied(
                "authorization", f"role {principal.role.value} may not call {method}"),
                principal, credential)
        return principal

    def _by_certificate(self, method: str, context: grpc.ServicerContext) -> Principal | Refused:
        names = tls.certificate_names(context.auth_context())
        if not names:
            return Refused(errors.unauthenticated(
                "missing authorization metadata (Bearer token) or client certificate"))
        credential = self.keyring.certificate(names)
        if credential is None:
            return Refused(errors.unauthenticated(
                f"the client certificate {names[0]!r} stands for no principal"))
        who = _check(credential, time.time())
        if isinstance(who, Refused):
            return who
        return self._allowed(method, who, credential.id)

    # --- handlers -------------------------------------------------------------------------

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
        generation = self.keyring.generation
        if known is not None and known[0] is handler and known[2] == generation:
            until = known[3]
            if until is _FOREVER or until > _now():
                return known[1]  # type: ignore[no-any-return]
        if roles.is_public(method):
            wrapped = self._public(method, handler)
            until = _FOREVER
        else:
            who, until = self._authenticate(method, header)
            wrapped = self._wrap(method, who, handler)
            if isinstance(who, Refused):
                return wrapped  # not kept: a refusal costs its caller the look-up again
            if who is BY_CERTIFICATE:
                until = _FOREVER  # decided per call, from the TLS peer
        if wrapped is not handler:
            if len(self._handlers) >= HANDLER_CACHE_LIMIT:
                self._handlers.clear()
            self._handlers[key] = (handler, wrapped, generation, until)
        return wrapped

    def _wrap(self, method: str, who: Principal | Refused | _ByCertificate,
              handler: _MessageHandler) -> _MessageHandler:
        deserialize = tolerant(handler.request_deserializer)
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                self._unary(method, who, handler.unary_unary),
                request_deserializer=deserialize,
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                self._stream(method, who, handler.unary_stream),
                request_deserializer=deserialize,
                response_serializer=handler.response_serializer,
            )
        return handler  # no client-streaming RPCs in sabot.v1

    def _public(self, method: str, handler: _MessageHandler) -> _MessageHandler:
        """Health and reflection: no token; malformed requests still answered as such."""
        deserialize = tolerant(handler.request_deserializer)
        refuse = self._refuse_malformed
        share = self._anonymous_share

        if handler.unary_unary is not None:
            behavior = handler.unary_unary

            def unary(request: Any, context: grpc.ServicerContext) -> Any:
                if request.__class__ is Malformed:
                    refuse(method, None, request, context)
                return behavior(request, context)

            return grpc.unary_unary_rpc_method_handler(
                unary, request_deserializer=deserialize,
                response_serializer=handler.response_serializer)
        if handler.unary_stream is not None:
            streamer = handler.unary_stream

            def stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
                if request.__class__ is Malformed:
                    refuse(method, None, request, context)
                with share(method, request, context):
                    yield from streamer(request, context)

            return grpc.unary_stream_rpc_method_handler(
                stream, request_deserializer=deserialize,
                response_serializer=handler.response_serializer)
        if handler.stream_stream is not None:
            both = handler.stream_stream

            def checked(requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
                for request in requests:
                    if request.__class__ is Malformed:
                        refuse(method, None, request, context)
                    yield request

            def streams(requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
                with share(method, None, context):
                    yield from both(checked(requests, context), context)

            return grpc.stream_stream_rpc_method_handler(
                streams, request_deserializer=deserialize,
                response_serializer=handler.response_serializer)
        return handler

    @contextmanager
    def _anonymous_share(self, method: str, request: Any, context: grpc.ServicerContext
                         ) -> Iterator[None]:
        """A stream of an unauthenticated caller (health Watch, reflection) holds a worker too:
        it takes a share counted per peer host, in the players' pool (the staff's slots stay
        free)."""
        peer = _peer(context) or ""
        host = peer.split(":", 1)[-1].rsplit(":", 1)[0] if ":" in peer else peer
        who = Principal(Role.PLAYER, None, "anonymous", id=f"anonymous@{host}")
        full = self.streams.enter(who)
        if full is not None:
            self._refuse(method, Refused(errors.exhausted("", full), who), request, context,
                         time.perf_counter(), streams=self.streams.held(who))
        try:
            yield
        finally:
            self.streams.leave(who)

    # --- the log line ---------------------------------------------------------------------

    def _line(
        self,
        method: str,
        who: Principal | Refused | None,
        request: Any,
        code: grpc.StatusCode,
        started: float,
        exc: BaseException | None,
        context: grpc.ServicerContext | None = None,
        **extra: Any,
    ) -> None:
        role: str | None = None
        caller: str | None = None
        principal = who.principal if isinstance(who, Refused) else who
        if principal is not None:
            role, caller = principal.role.value, principal.label
        fields: dict[str, Any] = {
            "method": method,
            "status": code.name,
            "duration_ms": round((time.perf_counter() - started) * 1000, 3),
            "role": role,
            "caller": caller,
        }
        if request.__class__ is Malformed:
            fields["bytes"] = request.size
        else:
            fields.update(ids_of_request(request))
        reason = ""
        if exc is None:
            pass
        elif isinstance(exc, errors.ApiError | RuleViolation):
            fields["error"] = f"{exc.field}: {exc.message}" if exc.field else exc.message
            fields["reason"] = reason = exc.reason
        else:
            fields["error"] = type(exc).__name__
        if extra:
            fields.update(extra)
        if code is _INTERNAL:
            self._log.error("rpc", exc_info=exc, **fields)
        elif code in SECURITY_CODES or reason == MALFORMED:
            fields["principal"] = None if principal is None else principal.principal_id
            if isinstance(who, Refused) and who.credential:
                fields["credential"] = who.credential
            fields["peer"] = _peer(context)
            logs.warning("rpc", fields)
        else:
            logs.info("rpc", fields)

    def _refuse(self, method: str, refused: Refused, request: Any,
                context: grpc.ServicerContext, started: float, **extra: Any) -> None:
        self._line(method, refused, request, refused.error.code, started, refused.error, context,
                   **extra)
        _abort(context, refused.error)

    def _refuse_malformed(self, method: str, principal: Principal | None, request: Malformed,
                          context: grpc.ServicerContext, **extra: Any) -> None:
        started = time.perf_counter()
        error = malformed_error(request, method)
        self._line(method, principal, request, error.code, started, error, context, **extra)
        _abort(context, error)

    # --- unary calls ----------------------------------------------------------------------

    def _unary(
        self, method: str, who: Principal | Refused | _ByCertificate,
        behavior: Callable[..., Any]
    ) -> Callable[[Any, grpc.ServicerContext], Any]:
        if isinstance(who, Refused):
            refused = who
            refuse = self._refuse

            def refuse_call(request: Any, context: grpc.ServicerContext) -> Any:
                refuse(method, refused, request, context, time.perf_counter())

            return refuse_call

        line = self._line
        perf_counter = time.perf_counter
        set_principal = current_principal.set
        malformed = self._refuse_malformed

        def serve(principal: Principal, request: Any, context: grpc.ServicerContext,
                  started: float) -> Any:
            if request.__class__ is Malformed:
                malformed(method, principal, request, context)
            set_principal(principal)
            try:
                response = behavior(request, context)
            except Exception as exc:  # every error leaves as a status, never a traceback
                line(method, principal, request, errors.code_of(exc), started, exc, context)
                _abort(context, exc, request)
            line(method, principal, request, _OK, started, None)
            return response

        if isinstance(who, _ByCertificate):
            resolve = self._by_certificate
            refuse = self._refuse

            def by_certificate(request: Any, context: grpc.ServicerContext) -> Any:
                started = perf_counter()
                found = resolve(method, context)
                if isinstance(found, Refused):
                    refuse(method, found, request, context, started)
                    return None
                return serve(found, request, context, started)

            return by_certificate

        principal = who

        def run(request: Any, context: grpc.ServicerContext) -> Any:
            started = perf_counter()
            if request.__class__ is Malformed:
                malformed(method, principal, request, context)
            set_principal(principal)
            try:
                response = behavior(request, context)
            except Exception as exc:  # every error leaves as a status, never a traceback
                line(method, principal, request, errors.code_of(exc), started, exc, context)
                _abort(context, exc, request)
            line(method, principal, request, _OK, started, None)
            return response

        return run

    # --- server streams -------------------------------------------------------------------

    def _stream(
        self, method: str, who: Principal | Refused | _ByCertificate,
        behavior: Callable[..., Any]
    ) -> Callable[[Any, grpc.ServicerContext], Iterator[Any]]:
        def run(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            started = time.perf_counter()
            found = self._by_certificate(method, context) if isinstance(
                who, _ByCertificate) else who
            if isinstance(found, Refused):
                self._refuse(method, found, request, context, started)
                return
            principal = found
            if request.__class__ is Malformed:
                self._refuse_malformed(method, principal, request, context)
            full = self.streams.enter(principal)
            if full is not None:
                self._refuse(method, Refused(errors.exhausted("", full), principal), request,
                             context, started, streams=self.streams.held(principal))
            current_principal.set(principal)
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
                self._line(method, principal, request, errors.code_of(exc), started, exc,
                           context, messages=sent)
                code = grpc.StatusCode.UNKNOWN  # logged already
                _abort(context, exc, request)
            finally:
                self.streams.leave(principal)
                if code is not grpc.StatusCode.UNKNOWN:
                    if not context.is_active() and code is grpc.StatusCode.OK:
                        code = grpc.StatusCode.CANCELLED
                    self._line(method, principal, request, code, started, None, messages=sent)

        return run


def _peer(context: grpc.ServicerContext | None) -> str | None:
    if context is None:
        return None
    try:
        return str(context.peer())
    except Exception:  # a context without a peer (tests)
        return None
