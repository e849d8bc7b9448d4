"""A small client of sabot.v1: one channel (plaintext, TLS or mTLS), the stubs, and the bearer
token on every call."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2_grpc

from services.api.gen.sabot.v1 import (
    betting_pb2_grpc,
    cashier_pb2_grpc,
    events_pb2_grpc,
    regulator_pb2_grpc,
    reports_pb2_grpc,
    table_pb2_grpc,
)
from services.api.tls import channel_credentials, open_channel

PemSource = Path | str | bytes  # a PEM file's path, or its bytes


def new_request_id() -> str:
    return str(uuid.uuid4())


class _Authed:
    """Wraps a stub so that every call carries ``authorization: Bearer <token>``."""

    def __init__(self, stub: Any, token: str | None, timeout: float | None) -> None:
        self._stub = stub
        self._metadata = (("authorization", f"Bearer {token}"),) if token else ()
        self._timeout = timeout

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._stub, name)

        def call(request: Any, **kwargs: Any) -> Any:
            kwargs.setdefault("metadata", self._metadata)
            if self._timeout is not None:
                kwargs.setdefault("timeout", self._timeout)
            return method(request, **kwargs)

        return call


class Client:
    """Every sabot.v1 service over one channel, as one caller (one token, or on an mTLS server
    the client certificate alone).

    ``tls_ca``: the CA of the server's certificate (a TLS channel; with ``tls_ca=True`` the
    system's roots); ``tls_cert`` and ``tls_key``: this client's certificate and key (mTLS).
    Without them the channel is plaintext."""

    def __init__(
        self,
        target: str,
        token: str | None = None,
        *,
        channel: grpc.Channel | None = None,
        timeout: float | None = 30.0,
        tls_ca: PemSource | bool | None = None,
        tls_cert: PemSource | None = None,
        tls_key: PemSource | None = None,
    ) -> None:
        self.owns_channel = channel is None
        if channel is None:
            tls = None
            if tls_ca is not None or tls_cert is not None or tls_key is not None:
                ca = None if isinstance(tls_ca, bool) else tls_ca
                tls = channel_credentials(ca, tls_cert, tls_key)
            channel = open_channel(target, tls)
        self.channel = channel
        self.token = token
        self.tables: Any = _Authed(table_pb2_grpc.TableServiceStub(self.channel), token, timeout)
        self.betting: Any = _Authed(
            betting_pb2_grpc.BettingServiceStub(self.channel), token, timeout
        )
        self.cashier: Any = _Authed(
            cashier_pb2_grpc.CashierServiceStub(self.channel), token, timeout
        )
        self.reports: Any = _Authed(
            cashier_pb2_grpc.ReportServiceStub(self.channel), token, timeout
        )
        self.watch: Any = _Authed(events_pb2_grpc.WatchServiceStub(self.channel), token, None)
        self.feed: Any = _Authed(events_pb2_grpc.FeedServiceStub(self.channel), token, None)
        self.recall: Any = _Authed(events_pb2_grpc.RecallServiceStub(self.channel), token, timeout)
        self.read_models: Any = _Authed(
            reports_pb2_grpc.ReadModelServiceStub(self.channel), token, timeout
        )
        self.regulator: Any = _Authed(
            regulator_pb2_grpc.RegulatorServiceStub(self.channel), token, None
        )
        self.health = health_pb2_grpc.HealthStub(self.channel)

    def as_(self, token: str) -> Client:
        """The same channel, another caller."""
        return Client("", token, channel=self.channel)

    def close(self) -> None:
        if self.owns_channel:
            self.channel.close()
