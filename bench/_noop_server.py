"""A gRPC server whose PlaceStake does nothing: it answers a fixed StakeResult at once. Built as
``sabot serve`` builds its server (sync grpcio, 32 workers, the health service), it shows what
the same load costs with no ledger at all: the floor under ``bench.load``'s stake figures.

``python -m bench._noop_server PORT [CERT KEY]`` prints ``ready`` once it serves (over TLS
with a certificate and key)."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2_grpc

from services.api.gen.sabot.v1 import betting_pb2, common_pb2

ANSWER = betting_pb2.StakeResult(
    coup="tables/t/shoes/s/coups/c",
    stake=common_pb2.Stake(name="tables/t/stakes/s", chance=common_pb2.CHANCE_NOIR,
                           amount=common_pb2.Money(amount_minor=100, currency_code="EUR")),
    balance=common_pb2.Money(amount_minor=10**11, currency_code="EUR"),
)


def place_stake(request: betting_pb2.PlaceStakeRequest, context: Any) -> betting_pb2.StakeResult:
    return ANSWER


def main(port: str, cert: str | None = None, key: str | None = None) -> None:
    server = grpc.server(ThreadPoolExecutor(max_workers=32))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        "sabot.v1.BettingService",
        {"PlaceStake": grpc.unary_unary_rpc_method_handler(
            place_stake, request_deserializer=betting_pb2.PlaceStakeRequest.FromString,
            response_serializer=betting_pb2.StakeResult.SerializeToString)}),))
    health_pb2_grpc.add_HealthServicer_to_server(health.HealthServicer(), server)
    if cert and key:
        with open(cert, "rb") as c, open(key, "rb") as k:
            tls = grpc.ssl_server_credentials([(k.read(), c.read())])
        bound = server.add_secure_port(f"127.0.0.1:{port}", tls)
    else:
        bound = server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    print(f"ready 127.0.0.1:{bound}", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main(*(sys.argv[1:4] or ["0"]))
