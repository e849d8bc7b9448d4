"""Fuzzed bytes against every RPC of a real server, as an admin (who may call everything, so
every servicer's own checks are reached; one call in ten as a player): random bytes, well-formed
requests with every field at random, truncated and bit-flipped requests,
requests of another method, garbage after a request, and hand-made broken protobuf (a length
beyond the end, a wrong wire type, bad UTF-8, an endless varint, deep nesting).

Sent through a raw channel with identity serializers (the bytes go out as they are). Whatever
the bytes: never INTERNAL nor UNKNOWN, nothing stored (the log does not move), the server still
up, and every request that does not parse answered INVALID_ARGUMENT (MALFORMED_REQUEST) and
logged at warning."""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message
from google.protobuf.message_factory import GetMessageClass
from grpc_health.v1 import health_pb2

from services.api import logs
from services.api.gen.sabot.cuarenta.v1 import cuarenta_pb2
from services.api.gen.sabot.treinta_y_una.v1 import treinta_y_una_pb2
from services.api.gen.sabot.v1 import (
    betting_pb2,
    cashier_pb2,
    events_pb2,
    regulator_pb2,
    reports_pb2,
    table_pb2,
)
from services.api.interceptor import MALFORMED
from services.api.roles import Role, is_public
from services.bootstrap import ROLE_TABLE

from .support import Api, open_coup, open_shoe, open_table

RPC_ROLES, allowed = ROLE_TABLE.rows, ROLE_TABLE.allowed  # the server's role table
TOTAL = 10_000
SEED = 20261201
MODULES = (table_pb2, betting_pb2, cashier_pb2, events_pb2, regulator_pb2, reports_pb2,
           cuarenta_pb2, treinta_y_una_pb2)
NEVER = {grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN}
# A request id no one- to three-bit change can make valid: a write never gets through.
BAD_ID = "! ! ! ! !"
STREAM_DEADLINE = 0.3  # a stream that parses may be a live one (Watch...): cut it there
# A stream request that must be refused (it does not parse: INVALID_ARGUMENT; a player's call of
# an RPC not his: PERMISSION_DENIED) is refused at once whatever the machine's load: this
# deadline only bounds the wait for that refusal (at load 20 on two cores a refusal was seen to
# take more than 0.3 s; the refusal's code is still asserted).
REFUSAL_DEADLINE = 10.0


@dataclass(frozen=True)
class Rpc:
    path: str
    request: type[Message]
    streams: bool


def rpcs() -> list[Rpc]:
    out = []
    for module in MODULES:
        for service in module.DESCRIPTOR.services_by_name.values():
            for method in service.methods:
                out.append(Rpc(f"/{service.full_name}/{method.name}",
                               GetMessageClass(method.input_type), method.server_streaming))
    out.append(Rpc("/grpc.health.v1.Health/Check", health_pb2.HealthCheckRequest, False))
    return out


def _fill(message: Message, rng: random.Random, names: list[str], depth: int = 0) -> None:
    """Every field set: strings from ``names`` (real resource names, or the bad request id),
    numbers and enums at random, nested messages filled in turn."""
    descriptor: Descriptor = message.DESCRIPTOR
    for f in descriptor.fields:
        if f.name == "request_id":
            value: Any = BAD_ID
        elif f.type == FieldDescriptor.TYPE_STRING:
            value = rng.choice(names)
        elif f.type == FieldDescriptor.TYPE_BYTES:
            value = rng.randbytes(rng.randrange(0, 8))
        elif f.type == FieldDescriptor.TYPE_BOOL:
            value = rng.random() < 0.5
        elif f.type == FieldDescriptor.TYPE_ENUM:
            value = rng.choice([v.number for v in f.enum_type.values] + [rng.randrange(-3, 99)])
        elif f.type == FieldDescriptor.TYPE_MESSAGE:
            if depth > 2:
                continue
            if f.message_type.GetOptions().map_entry:
                getattr(message, f.name)[rng.choice(names)] = rng.choice(names)
                continue
            child = getattr(message, f.name).add() if f.is_repeated else getattr(message, f.name)
            _fill(child, rng, names, depth + 1)
            continue
        elif f.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
            value = rng.choice([0.0, -1.5, 1e300, float("nan")])
        else:
            value = rng.choice([0, 1, -1, 7, 100, 2**31 - 1, -(2**31)])
            if f.type in (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT64,
                          FieldDescriptor.TYPE_SFIXED64):
                value = rng.choice([value, 2**63 - 1, -(2**63), 10**12])
            elif f.type in (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32):
                value = abs(value) % 2**32
            elif f.type in (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64):
                value = rng.choice([abs(value), 2**64 - 1])
        if f.is_repeated:
            getattr(message, f.name).append(value)
        else:
            setattr(message, f.name, value)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _broken(rng: random.Random, seed: bytes) -> bytes:
    """Hand-made protobuf that cannot parse (or parses into nonsense)."""
    field = rng.randrange(1, 12)
    kind = rng.randrange(7)
    if kind == 0:  # a length running past the end
        return _varint(field << 3 | 2) + _varint(rng.randrange(10, 10_000)) + b"xy"
    if kind == 1:  # bad UTF-8 in a string field (field 1 is a string in most requests)
        return _varint(1 << 3 | 2) + _varint(3) + b"\xff\xfe\xfd"
    if kind == 2:  # an endless varint
        return _varint(field << 3) + b"\xff" * rng.randrange(10, 20)
    if kind == 3:  # wire types 3, 4 (groups) and 6, 7 (none)
        return _varint(field << 3 | rng.choice([3, 4, 6, 7])) + rng.randbytes(4)
    if kind == 4:  # field number 0
        return b"\x00" + rng.randbytes(3)
    if kind == 5:  # deep nesting of length-delimited fields
        body = b""
        for _ in range(rng.randrange(50, 120)):
            body = _varint(field << 3 | 2) + _varint(len(body)) + body
        return body
    return seed + _varint(field << 3 | 5) + b"\x01"  # a fixed32 cut short


def corpus(targets: list[Rpc], names: list[str], total: int) -> Iterator[tuple[Rpc, bytes]]:
    rng = random.Random(SEED)
    seeds: dict[str, list[bytes]] = {}
    for rpc in targets:
        seeds[rpc.path] = []
        for _ in range(4):
            message = rpc.request()
            _fill(message, rng, names)
            seeds[rpc.path].append(message.SerializeToString())
    everything = [s for group in seeds.values() for s in group]
    for n in range(total):
        rpc = targets[n % len(targets)]
        seed = rng.choice(seeds[rpc.path])
        kind = rng.randrange(7)
        if kind == 6:  # well-formed, every field at random: the servicers' own checks
            message = rpc.request()
            _fill(message, rng, names)
            data = message.SerializeToString()
        elif kind == 0:
            data = rng.randbytes(rng.randrange(0, 80))
        elif kind == 1:
            data = seed[:rng.randrange(0, max(len(seed), 1))]
        elif kind == 2:
            flipped = bytearray(seed or b"\x00")
            for _ in range(rng.randrange(1, 4)):
                flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
            data = bytes(flipped)
        elif kind == 3:
            data = rng.choice(everything)  # another method's request
        elif kind == 4:
            data = seed + rng.randbytes(rng.randrange(1, 16))
        else:
            data = _broken(rng, seed)
        yield rpc, data


def parses(rpc: Rpc, data: bytes) -> bool:
    try:
        rpc.request.FromString(data)
    except DecodeError:
        return False
    return True


def _call(channel: grpc.Channel, rpc: Rpc, data: bytes, metadata: tuple[tuple[str, str], ...],
          refused: bool = False) -> grpc.StatusCode:
    """The call's status; ``refused``: one the server must refuse (a stream's deadline is then
    ``REFUSAL_DEADLINE``, else ``STREAM_DEADLINE``)."""
    try:
        if rpc.streams:
            deadline = REFUSAL_DEADLINE if refused else STREAM_DEADLINE
            stream = channel.unary_stream(rpc.path)(data, metadata=metadata, timeout=deadline)
            try:
                next(iter(stream), None)
            finally:
                stream.cancel()
            code = stream.code()
        else:
            channel.unary_unary(rpc.path)(data, metadata=metadata, timeout=10)
            return grpc.StatusCode.OK
    except grpc.RpcError as exc:
        code = exc.code()
    return grpc.StatusCode.OK if code is None else code


def _await_no_streams(api: Api) -> None:
    """The server has ended the streams cancelled here (the admin's share is free again)."""
    import time

    admin = next(c.principal for c in api.running.credentials.credentials()
                 if c.principal.principal_id == api.principals["admin"])
    deadline = time.monotonic() + 10
    while api.running.streams.held(admin):
        assert time.monotonic() < deadline, "the fuzz's streams did not end"
        time.sleep(0.05)


def _malformed_lines(api: Api) -> Counter[str]:
    logs.flush()
    found: Counter[str] = Counter()
    for line in api.log.getvalue().splitlines():
        if MALFORMED in line:
            entry = json.loads(line)
            if entry.get("reason") == MALFORMED:
                assert entry["level"] == "warning" and entry["peer"]
                found[entry["method"]] += 1
    return found


@pytest.fixture(scope="module")
def names(api: Api) -> list[str]:
    """Real names (the calls then reach the ledger's queries) and broken ones."""
    table = open_table(api)
    shoe = open_shoe(api, table.name)
    coup = open_coup(api, shoe.name)
    return [table.name, shoe.name, coup.name, coup.name.replace("coups", "stakes"),
            "accounts/anne", "accounts/nobody", "", BAD_ID, "tables/\x00", "x" * 300,
            "tables/t/shoes/s/coups/c", "2026-03-01", "\u202e", "accounts/anne\n"]


def test_fuzzed_requests_are_never_internal_store_nothing_and_are_logged(
        api: Api, names: list[str]) -> None:
    targets = rpcs()
    # every RPC of sabot.v1 and of the games' services (and the health check)
    assert {r.path for r in targets} == {*RPC_ROLES, "/grpc.health.v1.Health/Check"}
    ledger = api.running.ledger
    end = api.running.hub.catch_up()  # the log's last position
    logged_before = _malformed_lines(api)
    admin = (("authorization", f"Bearer {api.tokens['admin']}"),)
    player = (("authorization", f"Bearer {api.tokens['player']}"),)
    channel = grpc.insecure_channel(api.target)
    codes: Counter[grpc.StatusCode] = Counter()
    bad: list[tuple[str, bytes, grpc.StatusCode]] = []
    malformed: Counter[str] = Counter()
    lock = threading.Lock()
    work = [(n, rpc, data) for n, (rpc, data) in enumerate(corpus(targets, names, TOTAL))]

    def one(item: tuple[int, Rpc, bytes]) -> None:
        n, rpc, data = item
        as_player = n % 10 == 9
        denied = as_player and not (is_public(rpc.path) or allowed(rpc.path, Role.PLAYER))
        code = _call(channel, rpc, data, player if as_player else admin,
                     refused=denied or not parses(rpc, data))
        with lock:
            codes[code] += 1
            if code in NEVER:
                bad.append((rpc.path, data, code))
            if as_player and not (is_public(rpc.path) or allowed(rpc.path, Role.PLAYER)):
                if code is not grpc.StatusCode.PERMISSION_DENIED:  # the role table first
                    bad.append((rpc.path, data, code))
                return
            if not parses(rpc, data):
                malformed[rpc.path] += 1
                if code is not grpc.StatusCode.INVALID_ARGUMENT:
                    bad.append((rpc.path, data, code))

    streams = [w for w in work if w[1].streams]
    unary = [w for w in work if not w[1].streams]
    run: Callable[[tuple[int, Rpc, bytes]], None] = one
    try:
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(run, unary))
        with ThreadPoolExecutor(2) as pool:  # an admin holds 4 streams at once
            list(pool.map(run, streams))
    finally:
        channel.close()
        _await_no_streams(api)
    assert sum(codes.values()) == TOTAL
    assert not bad, bad[:10]
    assert sum(malformed.values()) > TOTAL // 4  # most of the corpus does not parse
    after = ledger.read_events(end, 1000)
    assert after == [], [e.topic for e in after]  # nothing stored
    logged = _malformed_lines(api) - logged_before
    assert logged == malformed  # each malformed call logged, once
    health = api.anonymous().health.Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
    assert health.status == health_pb2.HealthCheckResponse.SERVING
    table = api.as_("croupier").tables.GetTable(table_pb2.GetTableRequest(name=names[0]))
    assert table.name == names[0]


def test_every_rpc_answers_undecodable_bytes_invalid_argument_with_details(api: Api) -> None:
    from services.api.errors import details_of

    channel = grpc.insecure_channel(api.target)
    metadata = (("authorization", f"Bearer {api.tokens['admin']}"),)
    try:
        for rpc in rpcs():
            data = b"\x0a\x10ab"  # field 1: 16 bytes long, and 2 come
            assert not parses(rpc, data)
            try:
                if rpc.streams:
                    list(channel.unary_stream(rpc.path)(data, metadata=metadata, timeout=5))
                else:
                    channel.unary_unary(rpc.path)(data, metadata=metadata, timeout=5)
            except grpc.RpcError as exc:
                assert exc.code() is grpc.StatusCode.INVALID_ARGUMENT, rpc.path
                assert details_of(exc) == ("request", MALFORMED), rpc.path
                assert "does not parse" in (exc.details() or "")
            else:
                raise AssertionError(f"{rpc.path} accepted bytes that do not parse")
    finally:
        channel.close()

