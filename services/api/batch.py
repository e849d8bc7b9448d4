"""What the batch RPCs share (``BettingService.BatchStakes``, ``CashierService.BatchMovements``):
an item's refusal as ``sabot.v1.ItemError`` and the ledger's item fields renamed to the
request's (``items[3].amount`` -> ``stakes[3].amount.amount_minor``). The batch rules are the
ledger's: ``services/ledger/batch.py``."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

import grpc

from domain.errors import RuleViolation
from services.api import errors
from services.api.gen.sabot.v1 import common_pb2
from services.ledger.batch import MAX_ITEMS, ItemError

__all__ = ["MAX_ITEMS", "check_count", "item_error", "renamed"]

_CODES: dict[str, grpc.StatusCode] = {
    "InvalidArgument": grpc.StatusCode.INVALID_ARGUMENT,
    "FailedPrecondition": grpc.StatusCode.FAILED_PRECONDITION,
    "NotFound": grpc.StatusCode.NOT_FOUND,
    "AlreadyExists": grpc.StatusCode.ALREADY_EXISTS,
    "PermissionDenied": grpc.StatusCode.PERMISSION_DENIED,
}
_ITEM = re.compile(r"^(\w+)\[(\d+)\]\.?(.*)$")


def check_count(field: str, n: int) -> None:
    """1 to ``MAX_ITEMS`` items (INVALID_ARGUMENT naming ``field``)."""
    if n == 0:
        raise errors.invalid(field, "a batch holds at least one item", "EMPTY_BATCH")
    if n > MAX_ITEMS:
        raise errors.invalid(field, f"a batch holds at most {MAX_ITEMS} items, not {n}",
                             "TOO_MANY_ITEMS")


def item_error(error: ItemError, field: str) -> common_pb2.ItemError:
    code = _CODES.get(error.kind, grpc.StatusCode.FAILED_PRECONDITION)
    return common_pb2.ItemError(code=code.value[0], reason=error.reason, field=field,
                                message=error.message)


def renamed(exc: RuleViolation, items: str, field_of: Callable[[int], Mapping[str, str]],
            outside: Mapping[str, str]) -> RuleViolation:
    """``exc`` naming the request's field: an item's (``<ledger items>[i].<key>``, its key
    renamed by ``field_of(i)``, prefixed with ``items[i].``) or the batch's own (``outside``)."""
    found = _ITEM.match(exc.field)
    if found is None:
        exc.field = outside.get(exc.field, exc.field)
        return exc
    index = int(found.group(2))
    key = found.group(3)
    exc.field = f"{items}[{index}]" + (f".{field_of(index).get(key, key)}" if key else "")
    return exc
