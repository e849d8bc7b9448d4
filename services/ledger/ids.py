"""Ids: client-chosen names of tables and accounts, and the UUIDs of every aggregate."""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from uuid import UUID, uuid5

from domain.errors import InvalidArgument
from domain.money import PLAYER

NAME_PATTERN = re.compile(r"[a-z0-9-]{1,64}")
NAMESPACE = UUID("5a6b0c7e-3e5f-4d0a-9b1c-7a2d8e4f6c10")
MAX_REQUEST_ID = 128


def check_name(value: str, field: str) -> str:
    """A table or account id: 1..64 characters of ``[a-z0-9-]``."""
    if not isinstance(value, str) or not NAME_PATTERN.fullmatch(value):
        raise InvalidArgument(field, "BAD_ID", "must be 1 to 64 characters of [a-z0-9-]")
    return value


def check_request_id(value: str) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_REQUEST_ID:
        raise InvalidArgument(
            "request_id", "BAD_REQUEST_ID", f"must be 1 to {MAX_REQUEST_ID} characters"
        )
    return value


def parse_uuid(value: str, field: str) -> UUID:
    try:
        return UUID(value)
    except (ValueError, TypeError, AttributeError):
        raise InvalidArgument(field, "BAD_ID", "must be a UUID") from None


@lru_cache(maxsize=65536)
def table_uuid(table_id: str) -> UUID:
    return uuid5(NAMESPACE, "table:" + table_id)


@lru_cache(maxsize=65536)
def account_uuid(account_id: str) -> UUID:
    return uuid5(NAMESPACE, "account:" + account_id)


def request_uuid(request_id: str, scope: str = "") -> UUID:
    """The Request aggregate's id: from the principal's id (``scope``) and its request id, so
    no principal can burn or probe another's ids. ``scope`` "" (the ledger's own actors, and
    every request stored before ids were scoped): from the request id alone."""
    if not scope:
        return uuid5(NAMESPACE, "request:" + request_id)
    return uuid5(NAMESPACE, f"request:{len(scope)}:{scope}:{request_id}")


def stake_uuid(coup_id: str, account_id: str, client_id: str) -> UUID:
    """The id of a stake placed with a client's own stake id: made by the ledger from the coup,
    the account and the client's id, so stake ids never collide across coups, tables or
    players (the client's id only keeps one account from placing the same stake twice on a
    coup). A stake placed without one gets a fresh random id (``LedgerConfig.new_id``)."""
    return uuid5(NAMESPACE, f"stake:{coup_id}:{account_id}:{client_id}")


def stake_id_text(coup_id: str, account_id: str, client_id: str) -> str:
    """``str(stake_uuid(coup_id, account_id, client_id))``, written from the name's SHA-1
    without making the UUID (a batch derives one per item): ``uuid5``'s bits, its text."""
    return uuid5_text(f"stake:{coup_id}:{account_id}:{client_id}")


_NAMESPACE_BYTES = NAMESPACE.bytes
# the hex digit of the UUID's clock_seq_hi_and_reserved's high nibble from the hash's: its two
# top bits the RFC 4122 variant (10)
_VARIANT = {f"{n:x}": f"{(n & 0x3) | 0x8:x}" for n in range(16)}


def uuid5_text(name: str) -> str:
    """``str(uuid5(NAMESPACE, name))``: the first 16 bytes of SHA-1(namespace, name) with the
    version (5) and the variant set, as the UUID's text (tests/ledger/test_ids.py compares)."""
    h = hashlib.sha1(_NAMESPACE_BYTES + bytes(name, "utf-8")).hexdigest()  # uuid5
    return f"{h[:8]}-{h[8:12]}-5{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:32]}"


def movement_account(table_id: str, role: str, player: str) -> str:
    """The account a game's movement role names: ``player``'s own for the role ``player``
    (``domain.money.PLAYER``, every game's), else the table's (``table_account``)."""
    return player if role == PLAYER else table_account(table_id, str(role))


def table_account(table_id: str, role: str) -> str:
    """The concrete account of a table's role: ``table:<id>:<role>``."""
    return f"table:{table_id}:{role}"


def cage_account(currency: str) -> str:
    return f"cage:{currency.lower()}"
