"""The per-RPC fast paths give the answers of the plain ones: the log line without structlog's
pipeline, the names' one-regex check, the interceptor's cached handlers and principal."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import grpc
import pytest
import structlog

from services.api import interceptor, logs, names
from services.api.errors import ApiError
from services.api.gen.sabot.v1 import betting_pb2, table_pb2
from services.api.roles import Principal, Role
from services.bootstrap import ROLE_TABLE

ANNE = Principal(Role.PLAYER, "anne", "player:anne")


def test_the_fast_info_line_is_the_structlog_line(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    saved = structlog.get_config()
    monkeypatch.setattr(logs, "_sink", logs._sink)  # the shared server's log comes back after
    monkeypatch.setattr(logs, "_level", logs._level)
    logs.configure(stream=stream)
    try:
        fields: dict[str, Any] = {"method": "/m", "status": "OK", "duration_ms": 0.5,
                                  "role": None, "caller": "é", "token": "t", "messages": 3}
        structlog.get_logger("fresh").info("rpc", **dict(fields))
        logs.info("rpc", dict(fields))
        logs.flush()
        slow, fast = stream.getvalue().splitlines()
        # the same text but for the timestamp (taken at another microsecond)
        assert re.sub(r'"timestamp": "[^"]*"', "", slow) == re.sub(r'"timestamp": "[^"]*"', "",
                                                                    fast)
        assert json.loads(fast)["token"] == "[redacted]"
        assert json.loads(fast)["timestamp"].endswith("Z")
        with logs.muted():
            logs.info("rpc", {"method": "/m"})
        logs.flush()
        assert len(stream.getvalue().splitlines()) == 2
    finally:
        structlog.configure(**saved)


@pytest.mark.parametrize("name", ["tables/t1/shoes/s-1/coups/c9", "tables/t1/shoes/s1/coup/c",
                                  "tables/T1/shoes/s/coups/c", "tables/t/shoes//coups/c",
                                  "tables/t/shoes/s/coups/c/x", "", "tables/" + "a" * 65 + "/x",
                                  "tables/t/shoes/s/coups/c\n"])
def test_a_name_is_checked_as_before(name: str) -> None:
    def slow() -> tuple[str, ...] | str:
        try:
            if not name:
                return "required"
            parts = name.split("/")
            assert len(parts) == 6 and parts[::2] == ["tables", "shoes", "coups"]
            assert all(names.ID.fullmatch(p) for p in parts[1::2])
            return tuple(parts[1::2])
        except AssertionError:
            return "refused"

    try:
        got: tuple[str, ...] | str = names.coup_name("coup", name)
    except ApiError as exc:
        assert exc.field == "coup"
        got = "required" if exc.message == "required" else "refused"
    assert got == slow()


def test_the_log_ids_of_a_request() -> None:
    request = betting_pb2.PlaceStakeRequest(request_id="r1", coup="tables/t/shoes/s/coups/c")
    assert names.ids_of_request(request) == {"request_id": "r1", "table_id": "t", "coup_id": "c"}
    assert names.ids_of_request(table_pb2.OpenTableRequest(table_id="t2")) == {"table_id": "t2"}
    assert names.ids_of_request(None) == {}


class _Details(grpc.HandlerCallDetails):
    def __init__(self, method: str, token: str) -> None:
        self.method = method
        self.invocation_metadata = (("authorization", f"Bearer {token}"),)


def test_the_interceptor_keeps_the_wrapped_handler_and_passes_the_principal() -> None:
    seen: list[Principal | None] = []

    def behavior(request: Any, context: Any) -> str:
        seen.append(interceptor.current_principal.get())
        return "answer"

    handler = grpc.unary_unary_rpc_method_handler(behavior)
    api = interceptor.ApiInterceptor({"tok": ANNE}, table=ROLE_TABLE)
    method = "/sabot.v1.BettingService/PlaceStake"
    first = api.intercept_service(lambda d: handler, _Details(method, "tok"))
    again = api.intercept_service(lambda d: handler, _Details(method, "tok"))
    assert first is not None and first is again and first is not handler
    refused = api.intercept_service(lambda d: handler, _Details(method, "nope"))
    assert refused is not None and refused is not first
    assert api.intercept_service(lambda d: handler, _Details(method, "nope")) is not refused
    other = grpc.unary_unary_rpc_method_handler(behavior)
    assert api.intercept_service(lambda d: other, _Details(method, "tok")) is not first
    import contextvars

    run = first.unary_unary
    assert run is not None
    answer = contextvars.Context().run(run, None, None)  # type: ignore[arg-type]
    assert answer == "answer" and seen == [ANNE]
    assert interceptor.current_principal.get() is None
