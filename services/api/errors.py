"""Errors of the API edge, and the mapping of every error to a gRPC status with rich details.

Details follow AIP-193 via ``google.rpc.Status``: an ``ErrorInfo`` (reason, and the field in its
metadata) always, a ``BadRequest`` field violation naming the field, a ``PreconditionFailure``
for FAILED_PRECONDITION, a ``ResourceInfo`` for NOT_FOUND / ALREADY_EXISTS (the resource's type,
e.g. ``sabot.v1.Coup``, and name, e.g. ``tables/t1/shoes/S/coups/C``, from the request) and a
``RetryInfo`` for ABORTED and UNAVAILABLE. A store that cannot be reached
(``StoreUnavailable``, or the store's own errors) is UNAVAILABLE, "retry with the same request
id". A standby's answer to a command (``NotTheWriter``) is UNAVAILABLE with an
``ErrorInfo`` (reason ``NOT_THE_WRITER``, metadata ``active_writer``: the server that writes the
store now, as it names itself) and a ``RetryInfo``. A store whose disk is full (``StoreFull``,
or the store's own disk-full error) is UNAVAILABLE reason ``STORE_FULL``: free space, then retry
with the same request id.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import grpc
import psycopg
from eventsourcing import persistence
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2  # type: ignore[import-untyped]
from grpc_status import rpc_status

from domain.errors import FailedPrecondition, InvalidArgument, NotFound, RuleViolation
from services.ledger.errors import (
    AlreadyExists,
    Conflict,
    NotTheWriter,
    PermissionDenied,
    StoreUnavailable,
)
from services.ledger.writer import store_full

DOMAIN = "sabot.casino"
# The store cannot be reached now: the client may retry (with the same request id).
_UNAVAILABLE = (
    persistence.OperationalError,
    persistence.InterfaceError,
    persistence.ConnectionUnavailableError,
    persistence.ConnectionPoolClosedError,
    psycopg.OperationalError,
    sqlite3.OperationalError,
)


class ApiError(Exception):
    """An error decided at the edge (authentication, roles, validation) with its status code."""

    def __init__(self, code: grpc.StatusCode, field: str, reason: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.code = code
        self.field = field
        self.reason = reason
        self.message = message


def exhausted(field: str, message: str) -> ApiError:
    return ApiError(grpc.StatusCode.RESOURCE_EXHAUSTED, field, "RESOURCE_EXHAUSTED", message)


def invalid(field: str, message: str, reason: str = "INVALID_ARGUMENT") -> ApiError:
    return ApiError(grpc.StatusCode.INVALID_ARGUMENT, field, reason, message)


def unauthenticated(message: str) -> ApiError:
    return ApiError(grpc.StatusCode.UNAUTHENTICATED, "authorization", "UNAUTHENTICATED", message)


def permission_denied(field: str, message: str) -> ApiError:
    return ApiError(grpc.StatusCode.PERMISSION_DENIED, field, "PERMISSION_DENIED", message)


def code_of(exc: BaseException) -> grpc.StatusCode:
    """The status code for an error; anything unforeseen is INTERNAL (a bug, logged as such)."""
    if isinstance(exc, ApiError):
        return exc.code
    if isinstance(exc, InvalidArgument):
        return grpc.StatusCode.INVALID_ARGUMENT
    if isinstance(exc, FailedPrecondition):
        return grpc.StatusCode.FAILED_PRECONDITION
    if isinstance(exc, NotFound):
        return grpc.StatusCode.NOT_FOUND
    if isinstance(exc, AlreadyExists):
        return grpc.StatusCode.ALREADY_EXISTS
    if isinstance(exc, PermissionDenied):
        return grpc.StatusCode.PERMISSION_DENIED
    if isinstance(exc, Conflict):
        return grpc.StatusCode.ABORTED
    if isinstance(exc, NotTheWriter | StoreUnavailable):
        return grpc.StatusCode.UNAVAILABLE
    if isinstance(exc, RuleViolation):
        return grpc.StatusCode.FAILED_PRECONDITION
    if isinstance(exc, _UNAVAILABLE):
        return grpc.StatusCode.UNAVAILABLE
    if isinstance(exc, persistence.IntegrityError):
        return grpc.StatusCode.ABORTED
    return grpc.StatusCode.INTERNAL


def _pack(message: object) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)  # type: ignore[arg-type]
    return packed


# The collections of the resource names (AIP-122), the message of each, and the collection a
# NOT_FOUND / ALREADY_EXISTS reason is about (otherwise: the last collection of the field's name).
RESOURCE_TYPES = {"tables": "sabot.v1.Table", "shoes": "sabot.v1.Shoe",
                  "coups": "sabot.v1.Coup", "stakes": "sabot.v1.Stake",
                  "accounts": "sabot.v1.Account"}
_REASON_COLLECTIONS = {
    "UNKNOWN_TABLE": "tables", "TABLE_EXISTS": "tables", "UNKNOWN_SHOE": "shoes",
    "NO_SHOE": "shoes", "SHOE_EXISTS": "shoes", "UNKNOWN_COUP": "coups", "NO_COUP": "coups",
    "COUP_EXISTS": "coups", "UNKNOWN_STAKE": "stakes", "STAKE_EXISTS": "stakes",
    "UNKNOWN_ACCOUNT": "accounts", "ACCOUNT_EXISTS": "accounts",
}


def resource_info(reason: str, field: str, description: str, request: Any = None
                  ) -> error_details_pb2.ResourceInfo:
    """What a NOT_FOUND or ALREADY_EXISTS is about: the resource's type and its name, from the
    request field at fault (a resource name is cut to the resource the reason names: the table
    of ``tables/t9/shoes/S`` when the table does not exist; a bare id gets its collection)."""
    fields = getattr(getattr(request, "DESCRIPTOR", None), "fields_by_name", {})

    def text(name: str) -> str:
        value = getattr(request, name) if name in fields else ""
        return value if isinstance(value, str) else ""

    value = text(field)
    parts = value.split("/") if value else []
    collection = _REASON_COLLECTIONS.get(reason, parts[-2] if len(parts) >= 2 else "")
    name = value
    if collection in parts[::2]:  # the collections sit at the even places of a name
        at = max(i for i in range(0, len(parts), 2) if parts[i] == collection)
        name = "/".join(parts[:at + 2])
    elif value and "/" not in value and collection:  # a bare id: where it would live
        under = text("parent")
        if collection == "stakes":  # tables/{table}/stakes/{stake}
            found = [text(f) for f in fields if text(f).startswith("tables/")]
            under = "/".join(found[0].split("/")[:2]) if found else ""
        top = collection in ("tables", "accounts") or not under
        name = f"{collection}/{value}" if top else f"{under}/{collection}/{value}"
    return error_details_pb2.ResourceInfo(resource_type=RESOURCE_TYPES.get(collection, ""),
                                          resource_name=name, description=description)


def to_status(exc: BaseException, field_names: dict[str, str] | None = None,
              request: Any = None) -> grpc.Status:
    """The rich status for ``exc``. ``field_names`` renames ledger fields to request fields;
    ``request``: the call's, which names the resource of a NOT_FOUND or ALREADY_EXISTS."""
    code = code_of(exc)
    if code is grpc.StatusCode.INTERNAL:
        status = status_pb2.Status(code=code_pb2.INTERNAL, message="internal error")
        return rpc_status.to_status(status)
    if not isinstance(exc, ApiError | RuleViolation):  # the store: say so, not its internals
        message = "the store is unavailable; retry with the same request id"
        if code is grpc.StatusCode.ABORTED:
            message = "a concurrent change came first; retry with the same request id"
        status = status_pb2.Status(code=code.value[0], message=message)
        reason = code.name
        if code is grpc.StatusCode.UNAVAILABLE and store_full(exc):
            message, reason = "the store is full; free space, then retry with the same " \
                "request id", "STORE_FULL"
        info = error_details_pb2.ErrorInfo(reason=reason, domain=DOMAIN)
        status.details.append(_pack(info))
        if code is grpc.StatusCode.UNAVAILABLE:
            status.details.append(_pack(_retry_info(StoreUnavailable.retry_after)))
        return rpc_status.to_status(status)
    if isinstance(exc, NotTheWriter):
        return _standby(exc)
    if isinstance(exc, StoreUnavailable):
        status = status_pb2.Status(code=code_pb2.UNAVAILABLE, message=exc.message)
        status.details.append(_pack(error_details_pb2.ErrorInfo(reason=exc.reason,
                                                                domain=DOMAIN)))
        status.details.append(_pack(_retry_info(exc.retry_after)))
        return rpc_status.to_status(status)
    field = (field_names or {}).get(exc.field, exc.field)
    message = f"{field}: {exc.message}" if field else exc.message
    status = status_pb2.Status(code=code.value[0], message=message)
    info = error_details_pb2.ErrorInfo(reason=exc.reason, domain=DOMAIN)
    if field:
        info.metadata["field"] = field
    status.details.append(_pack(info))
    if field:
        violation = error_details_pb2.BadRequest.FieldViolation(
            field=field, description=exc.message, reason=exc.reason
        )
        status.details.append(_pack(error_details_pb2.BadRequest(field_violations=[violation])))
    if code is grpc.StatusCode.FAILED_PRECONDITION:
        failure = error_details_pb2.PreconditionFailure(
            violations=[
                error_details_pb2.PreconditionFailure.Violation(
                    type=exc.reason, subject=field, description=exc.message
                )
            ]
        )
        status.details.append(_pack(failure))
    elif code in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.ALREADY_EXISTS):
        status.details.append(_pack(resource_info(exc.reason, field, exc.message, request)))
    elif code is grpc.StatusCode.ABORTED:
        retry = error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(nanos=50_000_000))
        status.details.append(_pack(retry))
    return rpc_status.to_status(status)


def _retry_info(seconds: float) -> error_details_pb2.RetryInfo:
    delay = duration_pb2.Duration()
    delay.FromNanoseconds(int(seconds * 1e9))
    return error_details_pb2.RetryInfo(retry_delay=delay)


def _standby(exc: NotTheWriter) -> grpc.Status:
    status = status_pb2.Status(code=code_pb2.UNAVAILABLE, message=exc.message)
    info = error_details_pb2.ErrorInfo(reason=exc.reason, domain=DOMAIN)
    if exc.holder:
        info.metadata["active_writer"] = exc.holder
    status.details.append(_pack(info))
    delay = duration_pb2.Duration()
    delay.FromNanoseconds(int(exc.retry_after * 1e9))
    status.details.append(_pack(error_details_pb2.RetryInfo(retry_delay=delay)))
    return rpc_status.to_status(status)


def details_of(error: grpc.RpcError) -> tuple[str, str]:
    """Client side: the (field, reason) of a rich error, or empty strings."""
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    if status is None:
        return "", ""
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            return info.metadata.get("field", ""), info.reason
    return "", ""
