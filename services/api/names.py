"""Resource names (AIP-122) and the validation of request fields at the edge, before the ledger.

Every check raises ``ApiError`` INVALID_ARGUMENT naming the request field at fault.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from typing import Any

from domain.currency import MINOR_UNITS
from services.api.errors import invalid

ID = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
ACCOUNT_ID = re.compile(r"[a-z0-9][a-z0-9:-]{0,127}")
REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
CURRENCY = re.compile(r"[A-Z]{3}")
MAX_AMOUNT = 10**12  # minor units: far above any table maximum or deposit, far below int64
MAX_TEXT = 200
MAX_PAGE_SIZE = 1000
MAX_OVERRIDES = 32


def check_id(field: str, value: str) -> str:
    if not value:
        raise invalid(field, "required")
    if len(value) > 64:
        raise invalid(field, "longer than 64 characters")
    if not ID.fullmatch(value):
        raise invalid(field, "use lower-case letters, digits and hyphens")
    return value


def check_request_id(value: str, field: str = "request_id") -> str:
    if not value:
        raise invalid(field, "required: a retry with the same request id has no second effect")
    if not REQUEST_ID.fullmatch(value):
        raise invalid(field, "1..128 characters of letters, digits, '.', '_', ':' or '-'")
    return value


def check_text(field: str, value: str, *, required: bool = False, limit: int = MAX_TEXT) -> str:
    if required and not value.strip():
        raise invalid(field, "required")
    if len(value) > limit:
        raise invalid(field, f"longer than {limit} characters")
    if any(ord(ch) < 32 for ch in value):
        raise invalid(field, "control characters are not allowed")
    return value


def check_amount(field: str, value: int) -> int:
    if value <= 0:
        raise invalid(field, "must be positive (minor units)")
    if value > MAX_AMOUNT:
        raise invalid(field, f"must not exceed {MAX_AMOUNT} minor units")
    return value


def check_currency(field: str, value: str, *, required: bool = False) -> str:
    if not value and not required:
        return value
    if not CURRENCY.fullmatch(value) or value not in MINOR_UNITS:
        raise invalid(field, "an ISO 4217 code such as EUR")
    return value


def check_enum(field: str, value: int, known: Iterable[int]) -> int:
    if value == 0:
        raise invalid(field, "required")
    if value not in (known if isinstance(known, dict | set | frozenset) else set(known)):
        raise invalid(field, f"unknown value {value}")
    return value


_SHAPES: dict[tuple[tuple[str, ...], re.Pattern[str]], re.Pattern[str]] = {}


def _shape(pattern: tuple[str, ...], last: re.Pattern[str]) -> re.Pattern[str]:
    """One regular expression for a whole well-formed name of ``pattern`` (the ids captured)."""
    whole = _SHAPES.get((pattern, last))
    if whole is None:
        ids = [ID.pattern] * (len(pattern) - 1) + [last.pattern]
        whole = re.compile("/".join(f"{re.escape(p)}/({i})" for p, i in zip(pattern, ids,
                                                                          strict=True)))
        _SHAPES[(pattern, last)] = whole
    return whole


def _parts(
    field: str, name: str, pattern: tuple[str, ...], last: re.Pattern[str] = ID
) -> list[str]:
    if not name:
        raise invalid(field, "required")
    if len(name) > 300:
        raise invalid(field, "longer than 300 characters")
    match = _shape(pattern, last).fullmatch(name)
    if match is not None:  # well-formed: the usual case
        return list(match.groups())
    parts = name.split("/")
    shape = "/".join(f"{p}/{{{p[:-1]}}}" for p in pattern)
    if len(parts) != 2 * len(pattern) or any(
        parts[2 * i] != p for i, p in enumerate(pattern)
    ):
        raise invalid(field, f"expected {shape}")
    ids = parts[1::2]
    for i, (label, value) in enumerate(zip(pattern, ids, strict=True)):
        if not (last if i == len(ids) - 1 else ID).fullmatch(value):
            raise invalid(field, f"bad {label[:-1]} id {value[:70]!r} in {shape}")
    return ids


def table_name(field: str, name: str) -> str:
    return _parts(field, name, ("tables",))[0]


def shoe_name(field: str, name: str) -> tuple[str, str]:
    table, shoe = _parts(field, name, ("tables", "shoes"))
    return table, shoe


def coup_name(field: str, name: str) -> tuple[str, str, str]:
    table, shoe, coup = _parts(field, name, ("tables", "shoes", "coups"))
    return table, shoe, coup


def coups_parent(field: str, name: str) -> tuple[str, str | None]:
    """The parent of ListCoups: ``tables/{table}/shoes/{shoe}`` (one shoe), or
    ``tables/{table}/shoes/-`` or ``tables/{table}`` (every shoe: shoe None)."""
    if name.count("/") == 1:
        return table_name(field, name), None
    if name.endswith("/shoes/-"):
        return table_name(field, name[: -len("/shoes/-")]), None
    return shoe_name(field, name)


def list_page(page_size: int, page_token: str, default: int = 50) -> tuple[int, str]:
    """(size, token) of a list request whose token the ledger issues (and checks): a negative
    size is refused, 0 is the default, more than the maximum is read as the maximum (AIP-158)."""
    if page_size < 0:
        raise invalid("page_size", "must not be negative")
    if len(page_token) > 400:
        raise invalid("page_token", "not a token this server issued")
    return min(page_size or default, MAX_PAGE_SIZE), page_token


def stake_name(field: str, name: str) -> tuple[str, str]:
    table, stake = _parts(field, name, ("tables", "stakes"))
    return table, stake


def account_name(field: str, name: str, *, house: bool = False) -> str:
    """A player's account; with ``house`` also the ledger's (``table:t1:bank``, ``cage:eur``)."""
    return _parts(field, name, ("accounts",), ACCOUNT_ID if house else ID)[0]


def table(table_id: str) -> str:
    return f"tables/{table_id}"


def shoe(table_id: str, shoe_id: str) -> str:
    return f"tables/{table_id}/shoes/{shoe_id}"


def coup(table_id: str, shoe_id: str, coup_id: str) -> str:
    return f"tables/{table_id}/shoes/{shoe_id}/coups/{coup_id}"


def stake(table_id: str, stake_id: str) -> str:
    return f"tables/{table_id}/stakes/{stake_id}"


def account(account_id: str) -> str:
    return f"accounts/{account_id}"


def page(page_size: int, page_token: str, default: int = 50) -> tuple[int, int]:
    """(offset, size) from a list request; the token is opaque to clients."""
    if page_size < 0:
        raise invalid("page_size", "must not be negative")
    size = min(page_size or default, MAX_PAGE_SIZE)
    if not page_token:
        return 0, size
    try:
        text = base64.urlsafe_b64decode(page_token.encode()).decode()
        kind, _, number = text.partition(":")
        if kind != "o" or not number.isdigit():
            raise ValueError(text)
        return int(number), size
    except ValueError:
        raise invalid("page_token", "not a token this server issued") from None


def next_token(offset: int, size: int, total: int) -> str:
    end = offset + size
    return base64.urlsafe_b64encode(f"o:{end}".encode()).decode() if end < total else ""


_LOGGED = ("name", "parent", "coup", "table")
_ATTRS: dict[type, tuple[bool, tuple[str, ...], bool]] = {}


def _attrs(kind: type) -> tuple[bool, tuple[str, ...], bool]:
    """Which of the logged fields a message type has: (request_id, names, table_id)."""
    known = _ATTRS.get(kind)
    if known is None:
        fields = getattr(getattr(kind, "DESCRIPTOR", None), "fields_by_name", None)
        if fields is None:  # not a message: look at every attribute
            return True, _LOGGED, True
        known = ("request_id" in fields, tuple(a for a in _LOGGED if a in fields),
                 "table_id" in fields)
        _ATTRS[kind] = known
    return known


def ids_of_request(request: Any) -> dict[str, str]:
    """Request id, table and coup ids of a request, for the log line (best effort, never raises)."""
    out: dict[str, str] = {}
    has_request_id, attrs, has_table_id = _attrs(type(request))
    if has_request_id:
        request_id = getattr(request, "request_id", "")
        if request_id:
            out["request_id"] = str(request_id)[:128]
    for attr in attrs:
        value = getattr(request, attr, "")
        if not isinstance(value, str) or not value.startswith("tables/"):
            continue
        parts = value.split("/")
        out.setdefault("table_id", parts[1][:64])
        if len(parts) >= 6 and parts[4] == "coups":
            out.setdefault("coup_id", parts[5][:64])
        elif len(parts) >= 4 and parts[2] == "stakes":
            out.setdefault("stake_id", parts[3][:64])
    if has_table_id:
        table_id = getattr(request, "table_id", "")
        if table_id and "table_id" not in out:
            out["table_id"] = str(table_id)[:64]
    return out
