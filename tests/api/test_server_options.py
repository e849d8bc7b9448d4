"""The gRPC server ``sabot serve`` builds: its options take effect (channelz off: grpc's core
keeps no per-call counters for it) and it still serves."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from services.api.config import Config
from services.api.server import _grpc_server

# grpc's core: the servers channelz lists, as JSON (grpc's own channelz service reads it so)
_cygrpc = importlib.import_module("grpc._cython.cygrpc")
_get_servers: Callable[[int], bytes] = _cygrpc.channelz_get_servers


def _channelz_servers() -> int:
    return len(json.loads(_get_servers(0)).get("server", []))


def test_the_server_is_not_in_channelz_and_serves() -> None:
    before = _channelz_servers()
    server = _grpc_server(Config(workers=2), [])
    health_pb2_grpc.add_HealthServicer_to_server(health.HealthServicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        assert _channelz_servers() == before  # not registered with channelz: it is off
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            for _ in range(10):
                answer = stub.Check(health_pb2.HealthCheckRequest(), timeout=5)
                assert answer.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        server.stop(None).wait(5)


def test_a_server_with_channelz_on_is_listed() -> None:
    """The check above can fail: a server built with grpc's defaults is listed."""
    from concurrent.futures import ThreadPoolExecutor

    before = _channelz_servers()
    server = grpc.server(ThreadPoolExecutor(max_workers=1))
    server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        assert _channelz_servers() == before + 1
    finally:
        server.stop(None).wait(5)
