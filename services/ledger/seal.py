"""Sealing a shoe's seed: AES-256-GCM under the configured key, the shoe id as associated data.

The nonce is derived from the shoe id: each shoe id is sealed once, so a nonce never repeats
under one key, and the same shoe sealed again (a replay) gives the same bytes.
"""

from __future__ import annotations

import hashlib
from uuid import UUID

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from domain.errors import FailedPrecondition

_NONCE_LABEL = b"SABOT-SEAL-NONCE"


def _nonce(shoe_id: UUID) -> bytes:
    return hashlib.sha256(_NONCE_LABEL + shoe_id.bytes).digest()[:12]


def seal(key: bytes, seed: bytes, shoe_id: UUID) -> str:
    """The sealed seed, hex."""
    return AESGCM(key).encrypt(_nonce(shoe_id), seed, shoe_id.bytes).hex()


def unseal(key: bytes, sealed: str, shoe_id: UUID) -> bytes:
    try:
        return AESGCM(key).decrypt(_nonce(shoe_id), bytes.fromhex(sealed), shoe_id.bytes)
    except (InvalidTag, ValueError):
        raise FailedPrecondition(
            "shoe_id", "SEAL_KEY_MISMATCH", "the sealed seed does not open with this key"
        ) from None
