"""The ledger socket's protocol (SABOT-LEDGER-WIRE-1): frames, the handshake, the table of
methods, and how arguments, answers and errors are written. Nothing the peer sends is unpickled
or evaluated: every frame is JSON, every value is checked against the method's declared types.

**Frames.** A 4-byte big-endian length, then that many bytes of UTF-8 JSON (at most
``MAX_CALL`` for what the server's process sends, ``MAX_ANSWER`` for the ledger's answers).

**Handshake**, before anything else on a connection, with the per-start secret the ledger process
got through its standard input: the host sends ``{"protocol": "sabot-ledger", "version": 1,
"nonce": N}`` (32 random bytes, hex); the client answers ``{"protocol", "version", "proof":
HMAC-SHA256(secret, "sabot-ledger/1 client " + N)}``; the host checks it (constant time) and
answers ``{"accepted": true, "proof": HMAC-SHA256(secret, "sabot-ledger/1 host " + N)}``, which
the client checks in turn. Any other first frame (a raw call, a pickle, another version, a
wrong proof) is refused: the host logs it (with the peer's pid and uid) and closes the
connection, having run nothing.

**Calls**: ``[call_id, method, {param: value, ...}]``, ``method`` one of the ``Schema``'s (an
explicit table, the core's methods and the games' the ledger plays: a command or a query, its
parameters and their types, its answer's type);
optionally a fourth element, the caller's trace context ``{"traceparent": T, "tracestate":
S}`` (W3C trace-context strings, at most ``MAX_TRACE`` characters each; sent only when tracing
is on, ``services/traces.py``): a three-element call is as valid as before, so this is still
version 1.
**Answers**: ``{"saved": P, "answers": [[call_id, true, value] | [call_id, false, error]]}``,
``P`` the host's last saved log position. A value is the answer's view as JSON (dataclass
fields by name; tuples as arrays; times as ISO 8601), read back into the declared type. An
error is ``{"class": C, "field", "reason", "message"}``: ``C`` one of ``ERRORS`` (the rule
book's and the ledger's errors keep their class, field, reason and message; ``NotTheWriter``, a
standby's answer, is ``{"class", "holder", "retry_after"}``), ``Unavailable`` or ``Integrity``
(the store's), or ``Failure`` (anything else, as its class name and text).
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import socket
import struct
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, Union

import orjson
from eventsourcing import persistence

from domain.errors import FailedPrecondition, InvalidArgument, NotFound, RuleViolation
from services.ledger.actor import Actor
from services.ledger.errors import (
    AlreadyExists,
    Conflict,
    NotTheWriter,
    PermissionDenied,
    RequestIdReused,
    StoreFull,
    StoreUnavailable,
)
from services.ledger.methods import (
    ACTOR,
    BOOL,
    COMMAND,
    CORE_METHODS,
    CORE_NAMES,
    INT,
    ITEMS,
    OPT_INT,
    OPT_MAP,
    OPT_STR,
    OPT_WORDS,
    QUERY,
    STR,
    WORDS,
    Method,
)

PROTOCOL = "sabot-ledger"
VERSION = 1
_HEADER = struct.Struct("!I")
MAX_HELLO = 1024
MAX_CALL = 1 << 20  # the gRPC server refuses requests beyond 1 MiB before they get here
MAX_ANSWER = 1 << 30
MAX_TRACE = 512  # characters of a traceparent or tracestate value
TRACE_KEYS = frozenset({"traceparent", "tracestate"})


class ProtocolError(Exception):
    """A frame that is not SABOT-LEDGER-WIRE-1 (not JSON, too big, not a declared call, ...)."""


class RemoteFailure(Exception):
    """An error of the ledger process that is none of ``ERRORS`` (its class name and text)."""


class HostGone(Conflict):
    """The ledger process cannot be reached; nothing is known of the call (retry it)."""


# --- frames -----------------------------------------------------------------------------------


def send(sock: socket.socket, message: Any) -> None:
    sock.sendall(frame(message))


def frame(message: Any) -> bytes:
    """``message`` as one frame: its length, then its JSON."""
    data = orjson.dumps(message)
    return _HEADER.pack(len(data)) + data


def _exact(sock: socket.socket, n: int) -> bytes | None:
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def receive(sock: socket.socket, limit: int) -> Any:
    """The next frame's JSON value, or None at the end of the stream; ProtocolError for a frame
    over ``limit`` bytes or that is not JSON."""
    header = _exact(sock, _HEADER.size)
    if header is None:
        return None
    (size,) = _HEADER.unpack(header)
    if size > limit:
        raise ProtocolError(f"a frame of {size} bytes (at most {limit})")
    data = _exact(sock, size)
    if data is None:
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        raise ProtocolError(f"a frame of {size} bytes that is not JSON") from None


class Reader:
    """The frames of one connection, read in chunks: one ``recv`` takes every frame that came
    together (many calls, or many answers), where ``receive`` takes two per frame. The same
    frames, the same checks (``receive``'s)."""

    CHUNK = 1 << 16

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buffer = bytearray()
        self._at = 0  # where the next frame starts in the buffer

    def _fill(self, wanted: int) -> bool:
        """Read more (at least one byte, up to what ``wanted`` more bytes need); False at the
        end of the stream."""
        if self._at:
            del self._buffer[:self._at]
            self._at = 0
        data = self.sock.recv(min(max(self.CHUNK, wanted), 1 << 20))
        if not data:
            return False
        self._buffer += data
        return True

    def receive(self, limit: int) -> Any:
        """The next frame's JSON value, or None at the end of the stream; ProtocolError for a
        frame over ``limit`` bytes or that is not JSON."""
        buffer = self._buffer
        while len(buffer) - self._at < _HEADER.size:
            if not self._fill(_HEADER.size):
                return None
            buffer = self._buffer
        (size,) = _HEADER.unpack_from(buffer, self._at)
        if size > limit:
            raise ProtocolError(f"a frame of {size} bytes (at most {limit})")
        start = self._at + _HEADER.size
        while len(buffer) < start + size:
            if not self._fill(start + size - len(buffer)):
                return None
            buffer = self._buffer
            start = self._at + _HEADER.size
        data = bytes(buffer[start:start + size])
        self._at = start + size
        if self._at == len(buffer):
            buffer.clear()
            self._at = 0
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            raise ProtocolError(f"a frame of {size} bytes that is not JSON") from None


# --- the handshake ----------------------------------------------------------------------------


def _proof(secret: bytes, side: str, nonce: str) -> str:
    text = f"{PROTOCOL}/{VERSION} {side} {nonce}".encode()
    return hmac.new(secret, text, hashlib.sha256).hexdigest()


def challenge(nonce: str) -> dict[str, Any]:
    return {"protocol": PROTOCOL, "version": VERSION, "nonce": nonce}


def client_reply(secret: bytes, hello: Any) -> dict[str, Any]:
    """The client's answer to the host's challenge (ProtocolError if it is not one)."""
    if not isinstance(hello, dict) or hello.get("protocol") != PROTOCOL:
        raise ProtocolError("the peer is not a ledger host")
    if hello.get("version") != VERSION:
        raise ProtocolError(f"the ledger host speaks version {hello.get('version')!r}, "
                            f"not {VERSION}")
    nonce = hello.get("nonce")
    if not isinstance(nonce, str) or len(nonce) != 64:
        raise ProtocolError("the ledger host sent no nonce")
    return {"protocol": PROTOCOL, "version": VERSION, "proof": _proof(secret, "client", nonce)}


def check_reply(secret: bytes, nonce: str, reply: Any) -> str | None:
    """Why the client's reply is refused (None: accepted)."""
    if not isinstance(reply, dict) or reply.get("protocol") != PROTOCOL:
        return "not a handshake of this protocol"
    if reply.get("version") != VERSION:
        return f"protocol version {reply.get('version')!r}, not {VERSION}"
    proof = reply.get("proof")
    if not isinstance(proof, str) or not hmac.compare_digest(
        proof.encode(), _proof(secret, "client", nonce).encode()
    ):
        return "a wrong proof of the secret"
    return None


def acceptance(secret: bytes, nonce: str) -> dict[str, Any]:
    return {"accepted": True, "proof": _proof(secret, "host", nonce)}


def check_acceptance(secret: bytes, nonce: str, message: Any) -> None:
    if not isinstance(message, dict) or message.get("accepted") is not True:
        raise ProtocolError("the ledger host refused the connection")
    proof = message.get("proof")
    if not isinstance(proof, str) or not hmac.compare_digest(
        proof.encode(), _proof(secret, "host", nonce).encode()
    ):
        raise ProtocolError("the ledger host does not know the secret")


# --- values -----------------------------------------------------------------------------------

_DECODERS: dict[Any, Callable[[Any], Any]] = {}


def decoder(tp: Any) -> Callable[[Any], Any]:
    """A function from the JSON of a value of type ``tp`` (a view, a tuple of them, ...) to the
    value; made once per type from its annotations."""
    known = _DECODERS.get(tp)
    if known is None:
        known = _DECODERS[tp] = _make_decoder(tp)
    return known


def _same(data: Any) -> Any:
    return data


def _make_decoder(tp: Any) -> Callable[[Any], Any]:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        (inner,) = [a for a in typing.get_args(tp) if a is not type(None)]
        inner_decode = decoder(inner)
        if inner_decode is _same:
            return _same
        return lambda data: None if data is None else inner_decode(data)
    if origin is tuple:
        item = decoder(typing.get_args(tp)[0])
        if item is _same:
            return tuple
        return lambda data: tuple([item(v) for v in data])
    if origin is list:
        item = decoder(typing.get_args(tp)[0])
        return lambda data: [item(v) for v in data]
    if origin is dict:
        return dict
    if tp is datetime:
        return lambda data: None if data is None else datetime.fromisoformat(data)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        fields = [(f.name, decoder(hints[f.name])) for f in dataclasses.fields(tp)]
        plain = [name for name, fn in fields if fn is _same]
        mapped = [(name, fn) for name, fn in fields if fn is not _same]
        cls = tp

        def view(data: dict[str, Any]) -> Any:
            values = {name: data[name] for name in plain}
            for name, fn in mapped:
                values[name] = fn(data[name])
            return cls(**values)

        return view
    return _same


# --- the table of methods ---------------------------------------------------------------------


class Named(typing.Protocol):
    """A game as the socket's table reads it (``services.ledger.game.LedgerGame``)."""

    @property
    def name(self) -> str: ...

    @property
    def methods(self) -> Mapping[str, Method]: ...


def _page_decoder(view: Any) -> Callable[[Any], Any]:
    item = decoder(view)
    return lambda data: ([item(v) for v in data[0]], data[1])


def _answer_decoder(method: Method) -> Callable[[Any], Any]:
    if typing.get_origin(method.answer) is tuple:
        return _page_decoder(typing.get_args(typing.get_args(method.answer)[0])[0])
    return decoder(method.answer)


class Schema:
    """The socket's table of methods (``methods``: name -> its declaration), the core's and
    those of the games a ledger plays; ``commands`` and ``queries``, their names; ``answers``,
    each method's decoder of its answer (made on first use)."""

    def __init__(self, methods: Mapping[str, Method]) -> None:
        self.methods: Mapping[str, Method] = dict(methods)
        self.commands = frozenset(n for n, m in self.methods.items() if m.kind == COMMAND)
        self.queries = frozenset(n for n, m in self.methods.items() if m.kind == QUERY)
        self._answers: dict[str, Callable[[Any], Any]] = {}
        # each method's parameters in order, and each one's check (made once, not per call)
        self._plans = {name: _Plan(m) for name, m in self.methods.items()}

    def answer(self, name: str) -> Callable[[Any], Any]:
        """The decoder of the method ``name``'s answer (KeyError: no such method)."""
        known = self._answers.get(name)
        if known is None:
            known = self._answers[name] = _answer_decoder(self.methods[name])
        return known

    def call_frame(self, call_id: int, method: str, args: tuple[Any, ...],
                   kwargs: dict[str, Any], trace: dict[str, str] | None = None) -> list[Any]:
        """The frame of a call (TypeError, before anything is sent, for arguments the method
        does not declare or that are not of their declared types); ``trace``: the caller's
        trace context, the frame's optional fourth element."""
        plan = self._plans.get(method)
        if plan is None:
            raise TypeError(f"the ledger socket serves no method {method!r}")
        names = plan.names
        if len(args) > len(names):
            raise TypeError(f"{method} takes {len(names)} arguments")
        values = dict(zip(names, args, strict=False))
        for key, value in kwargs.items():
            if key in values:
                raise TypeError(f"{method}: {key} given twice")
            values[key] = value
        actor = values.get("actor")
        if isinstance(actor, Actor):
            values["actor"] = actor.to_dict()
        plan.check(method, values)
        if trace:
            return [call_id, method, values, trace]
        return [call_id, method, values]

    def read_call(self, frame: Any) -> tuple[int, str, dict[str, Any]]:
        """A call frame checked against the table (ProtocolError otherwise): its id, its method
        and its arguments, the actor as an ``Actor``."""
        if type(frame) is not list or len(frame) not in (3, 4) or type(frame[0]) is not int:
            raise ProtocolError("a call is [call_id, method, {arguments}] (and its trace "
                                "context)")
        call_id, method, values = frame[:3]
        if len(frame) == 4:
            trace_context(frame)
        plan = self._plans.get(method) if type(method) is str else None
        if plan is None:
            raise ProtocolError(f"no method {str(method)[:64]!r} in the table")
        try:
            plan.check(method, values)
        except TypeError as exc:
            raise ProtocolError(str(exc)) from None
        if "actor" in values:
            values["actor"] = Actor.from_dict(values["actor"])
        return call_id, method, values


def schema_of(games: Iterable[Named]) -> Schema:
    """The table of the core's methods and the ``games``' (ValueError: a method's name taken
    twice, or one of the core's)."""
    methods: dict[str, Method] = dict(CORE_METHODS)
    for game in games:
        for name, method in game.methods.items():
            if name in methods:
                raise ValueError(f"{game.name}: the method name {name!r} is taken")
            methods[name] = method
    assert set(methods) >= CORE_NAMES
    return Schema(methods)


def _is_int(v: Any) -> bool:
    return type(v) is int


def _are_words(v: Any) -> bool:
    """A list of texts (a tuple too, on the caller's side), or one text of words."""
    return type(v) is str or (type(v) in (list, tuple) and all(type(w) is str for w in v))


_ITEM_VALUES = (str, int, bool, type(None))  # the values of a batch's item
_CHECKS: dict[str, Callable[[Any], bool]] = {
    STR: lambda v: type(v) is str,
    OPT_STR: lambda v: v is None or type(v) is str,
    INT: _is_int,
    OPT_INT: lambda v: v is None or type(v) is int,
    WORDS: _are_words,
    OPT_WORDS: lambda v: v is None or _are_words(v),
    OPT_MAP: lambda v: v is None or (
        type(v) is dict and all(type(k) is str and type(x) is str for k, x in v.items())),
    ITEMS: lambda v: type(v) in (list, tuple) and all(
        type(i) is dict and all(type(k) is str and type(x) in _ITEM_VALUES for k, x in i.items())
        for i in v),
    BOOL: lambda v: type(v) is bool,
    ACTOR: lambda v: type(v) is dict and type(v.get("principal")) is str
    and type(v.get("role")) is str and type(v.get("peer", "")) is str
    and (v.get("account") is None or type(v.get("account")) is str),
}


class _Plan:
    """A method's parameters as a call is written and checked: their names in order, and each
    one's type and check (``_CHECKS``), made once per method."""

    __slots__ = ("checks", "names")

    def __init__(self, spec: Method) -> None:
        self.names = spec.names
        self.checks = {name: (kind, _CHECKS[kind]) for name, kind in spec.params}

    def check(self, method: str, values: Any) -> None:
        """TypeError unless ``values`` are named arguments of this method, each of its type."""
        if type(values) is not dict:
            raise TypeError(f"{method}: the arguments are not named")
        checks = self.checks
        for key, value in values.items():
            found = checks.get(key)
            if found is None:
                raise TypeError(f"{method} has no parameter {key!r}")
            if not found[1](value):
                raise TypeError(f"{method}: {key} must be {found[0]}, not "
                                f"{type(value).__name__}")


def trace_context(frame: list[Any]) -> dict[str, str] | None:
    """A call frame's trace context (None: none; ProtocolError if it is not one)."""
    if len(frame) < 4:
        return None
    trace = frame[3]
    if type(trace) is not dict or not set(trace) <= TRACE_KEYS or not all(
            type(v) is str and len(v) <= MAX_TRACE for v in trace.values()):
        raise ProtocolError("a call's trace context is {traceparent, tracestate} strings")
    return trace


# --- errors -----------------------------------------------------------------------------------

ERRORS: dict[str, type[RuleViolation]] = {
    cls.__name__: cls
    for cls in (RuleViolation, InvalidArgument, FailedPrecondition, NotFound, AlreadyExists,
                RequestIdReused, PermissionDenied, Conflict, HostGone, NotTheWriter,
                StoreUnavailable, StoreFull)
}
_UNAVAILABLE = (persistence.OperationalError, persistence.InterfaceError,
                persistence.ConnectionUnavailableError, persistence.ConnectionPoolClosedError)


def error_message(exc: BaseException) -> dict[str, Any]:
    """An error as the socket writes it."""
    if isinstance(exc, RuleViolation):  # as its nearest class in the table
        name = next(c.__name__ for c in type(exc).__mro__ if ERRORS.get(c.__name__) is c)
        if isinstance(exc, NotTheWriter):  # a standby's answer: who writes, when to retry
            return {"class": name, "holder": exc.holder, "retry_after": exc.retry_after}
        return {"class": name, "field": exc.field, "reason": exc.reason,
                "message": exc.message}
    text = str(exc)
    if isinstance(exc, persistence.IntegrityError):
        return {"class": "Integrity", "message": text}
    if isinstance(exc, _UNAVAILABLE) or _store_unavailable(exc):
        return {"class": "Unavailable", "message": text}
    return {"class": "Failure", "message": f"{type(exc).__name__}: {text}"}


def _store_unavailable(exc: BaseException) -> bool:
    """psycopg's and sqlite3's own OperationalError (not imported here)."""
    return type(exc).__name__ == "OperationalError" and type(exc).__module__.split(".")[0] in (
        "psycopg", "sqlite3")


def read_error(data: Any) -> BaseException:
    """The exception an error message stands for."""
    if type(data) is not dict:
        return RemoteFailure("a malformed error")
    name = data.get("class")
    message = str(data.get("message", ""))
    cls = ERRORS.get(name) if type(name) is str else None
    if cls is NotTheWriter:
        retry = data.get("retry_after")
        return NotTheWriter(str(data.get("holder", "")),
                            float(retry) if isinstance(retry, int | float) else 0.25)
    if cls is not None:
        error = cls.__new__(cls)
        RuleViolation.__init__(error, str(data.get("field", "")), str(data.get("reason", "")),
                               message)
        return error
    if name == "Integrity":
        return persistence.IntegrityError(message)
    if name == "Unavailable":
        return persistence.OperationalError(message)
    return RemoteFailure(message)
