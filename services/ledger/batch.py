"""What every batch command shares (a player's stakes of one coup: Trente et Quarante's
``stake_batch``; a cashier's movements: the core's ``cash_batch``): its size, its items' shape
checks, an item's refusal as its answer holds it, and the cashier's answer.

A batch is ONE command: one request id, one stored ``Request`` (its ``arguments`` hold every
item), decided in one unit of work. Its items are decided in order, each as its unary command
would be, on the state the items before it left. The whole call is refused (nothing stored)
when its shape is wrong (no item, more than ``MAX_ITEMS``, an item named twice: INVALID_ARGUMENT
naming ``<items>[i].<field>``), when an item is not the caller's to make (PERMISSION_DENIED),
or, ``atomic``, when any item is refused (that item's refusal, its field prefixed by its index).
Not atomic, a refused item gets its refusal in its result (``ItemError``) and the others stand.
Every check of an item comes before the first event of the batch, so a refusal never leaves
half-written state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from domain.errors import InvalidArgument, RuleViolation
from services.ledger.views import AccountView

MAX_ITEMS = 100  # items of one batch: a coup's whole layout for one terminal, with room


@dataclasses.dataclass(frozen=True, slots=True)
class ItemError:
    """An item's refusal: its class (``InvalidArgument``, ``FailedPrecondition``, ``NotFound``,
    ``AlreadyExists``, ``PermissionDenied``), reason, the item's own field (without its index)
    and message."""

    kind: str
    reason: str
    field: str
    message: str


def item_error(exc: RuleViolation) -> ItemError:
    return ItemError(type(exc).__name__, exc.reason, exc.field, exc.message)


def at(exc: RuleViolation, items: str, index: int) -> RuleViolation:
    """``exc`` naming the item's field: ``<items>[<index>].<field>``."""
    exc.field = f"{items}[{index}].{exc.field}"
    return exc


def check_items(items: Any, name: str) -> list[dict[str, Any]]:
    """The batch's items: a list of 1 to ``MAX_ITEMS`` maps (INVALID_ARGUMENT naming
    ``name``: ``EMPTY_BATCH``, ``TOO_MANY_ITEMS``, ``NOT_AN_ITEM``)."""
    if not isinstance(items, list | tuple) or not items:
        raise InvalidArgument(name, "EMPTY_BATCH", "a batch holds at least one item")
    if len(items) > MAX_ITEMS:
        raise InvalidArgument(name, "TOO_MANY_ITEMS",
                              f"a batch holds at most {MAX_ITEMS} items, not {len(items)}")
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise InvalidArgument(f"{name}[{i}]", "NOT_AN_ITEM", "an item is a map")
    return list(items)


def text_of(item: dict[str, Any], key: str, items: str, index: int,
            optional: bool = False) -> str | None:
    value = item.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise InvalidArgument(f"{items}[{index}].{key}", "INVALID_ARGUMENT", "must be a text")
    return value


def int_of(item: dict[str, Any], key: str, items: str, index: int) -> int:
    value = item.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidArgument(f"{items}[{index}].{key}", "INVALID_ARGUMENT",
                              "must be an integer")
    return value


def duplicate(keys: Sequence[object], items: str, field: str) -> None:
    """INVALID_ARGUMENT ``DUPLICATE_ITEM`` naming the later of two items with one key (None:
    no key)."""
    seen: dict[object, int] = {}
    for i, key in enumerate(keys):
        if key is None:
            continue
        if key in seen:
            raise InvalidArgument(f"{items}[{i}].{field}", "DUPLICATE_ITEM",
                                  f"item {i} names what item {seen[key]} names")
        seen[key] = i


@dataclasses.dataclass(frozen=True, slots=True)
class CashItemResult:
    """One movement of a cashier's batch: the account after it, or its refusal."""

    account: AccountView | None = None
    error: ItemError | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class CashBatchResult:
    """The answer to ``cash_batch``: one result per movement, in order."""

    items: tuple[CashItemResult, ...]
    accepted: int
