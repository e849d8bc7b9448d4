"""The edge's cost per call, in process (no network): the interceptor's hot path for a
PlaceStake whose caller's decision is cached (a named principal of the credentials file), the
same when each call brings a new header (SHA-256 of the token, keyring look-up, new handler),
a malformed request refused, the metrics interceptor (``services.metrics``: the RPC timed and
counted by method and code, its deadline noted) on top of the cached path, and the tolerant
deserializer against the generated one. The floor beside them: the same handler called bare
(deserialize and run, no interceptor); the metrics' share also as a ratio to that floor.

Processor time (``time.process_time``), best of 15 rounds: the figure least disturbed by what
else the machine runs. ``python -m bench.edge`` prints the rows."""

from __future__ import annotations

import contextlib
import contextvars
import io
import time
from collections.abc import Callable
from typing import Any

import grpc

from services import metrics
from services.api import credentials, interceptor, logs
from services.api.gen.sabot.v1 import betting_pb2, common_pb2
from services.api.roles import Role
from services.bootstrap import ROLE_TABLE

Row = tuple[str, float]
ROUNDS = 15
CALLS = 5000


class _Details(grpc.HandlerCallDetails):
    def __init__(self, header: str) -> None:
        self.method = "/sabot.v1.BettingService/PlaceStake"
        self.invocation_metadata = (("user-agent", "grpc-python"), ("authorization", header))


class _Context:
    def peer(self) -> str:
        return "ipv4:127.0.0.1:50000"

    def time_remaining(self) -> float:
        return 10.0  # a call with a deadline (the metrics interceptor notes it)

    def code(self) -> Any:
        return None

    def abort_with_status(self, status: Any) -> None:
        raise RuntimeError("aborted")


def _best(one: Callable[[], None], calls: int = CALLS) -> float:
    """Microseconds of processor time per call, best of ``ROUNDS``."""
    for _ in range(calls // 5):
        one()
    best = float("inf")
    for _ in range(ROUNDS):
        started = time.process_time()
        for _ in range(calls):
            one()
        best = min(best, (time.process_time() - started) / calls * 1e6)
        logs.flush()
    return best


def run() -> list[Row]:
    logs.configure(stream=io.StringIO())
    answer = betting_pb2.StakeResult()

    def behavior(request: Any, context: Any) -> Any:
        return answer

    parse = betting_pb2.PlaceStakeRequest.FromString
    handler = grpc.unary_unary_rpc_method_handler(
        behavior, request_deserializer=parse,
        response_serializer=betting_pb2.StakeResult.SerializeToString)
    data = betting_pb2.PlaceStakeRequest(
        request_id="r" * 32, coup="tables/t/shoes/s/coups/c", account="accounts/anne",
        chance=common_pb2.CHANCE_NOIR,
        amount=common_pb2.Money(amount_minor=100, currency_code="EUR")).SerializeToString()
    token = credentials.new_token()
    principal = credentials.principal_of("anne", Role.PLAYER, None, "bench")
    api = interceptor.ApiInterceptor({token: principal}, table=ROLE_TABLE)
    details = _Details(f"Bearer {token}")
    context = _Context()

    def bare() -> None:
        contextvars.Context().run(behavior, parse(data), context)

    def hit() -> None:
        h: Any = api.intercept_service(lambda d: handler, details)
        contextvars.Context().run(h.unary_unary, h.request_deserializer(data), context)

    fresh = [_Details(f"Bearer {token}" + " " * (n % 7)) for n in range(CALLS)]
    many = interceptor.ApiInterceptor({token: principal}, table=ROLE_TABLE)
    turn = iter(range(1 << 62))

    def miss() -> None:
        many._handlers.clear()  # every call decides again: hash, look-up, new handler
        d = fresh[next(turn) % CALLS]
        h: Any = many.intercept_service(lambda x: handler, d)
        contextvars.Context().run(h.unary_unary, h.request_deserializer(data), context)

    series = metrics.ServerMetrics(process=False)
    from services.ledger.writer import call_deadline

    outer = metrics.MetricsInterceptor(series, call_deadline)

    def measured() -> None:
        h: Any = outer.intercept_service(lambda d: api.intercept_service(lambda x: handler, d),
                                         details)
        contextvars.Context().run(h.unary_unary, h.request_deserializer(data), context)

    broken = data[:-3]

    def malformed() -> None:
        h: Any = api.intercept_service(lambda d: handler, details)
        with contextlib.suppress(RuntimeError):
            contextvars.Context().run(h.unary_unary, h.request_deserializer(broken), context)

    tolerant = interceptor.tolerant(parse)
    assert tolerant is not None

    def generated() -> None:
        parse(data)

    def wrapped() -> None:
        tolerant(data)

    floor = _best(bare)
    rows = [("edge.floor_bare_handler_us", round(floor, 2))]
    for name, fn in (("interceptor_cached_principal", hit), ("interceptor_new_header", miss),
                     ("interceptor_malformed_refused", malformed)):
        cost = _best(fn)
        rows += [(f"edge.{name}_us", round(cost, 2)),
                 (f"edge.{name}_over_floor_us", round(cost - floor, 2))]
    cached = _best(hit)
    with_metrics = _best(measured)
    rows += [("edge.metrics_interceptor_us", round(with_metrics, 2)),
             ("edge.metrics_over_cached_us", round(with_metrics - cached, 2)),
             ("edge.metrics_over_cached_x_floor", round((with_metrics - cached) / floor, 2))]
    rows.append(("edge.tolerant_deserializer_extra_us",
                 round(_best(wrapped, 20_000) - _best(generated, 20_000), 3)))
    return rows


if __name__ == "__main__":
    for name, value in run():
        print(f"{name:<48} {value}")
