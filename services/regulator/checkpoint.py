"""Signed checkpoints: an Ed25519 signature over a tree head (origin, size, root, last position).

The signed message is ``b"SABOT-CHECKPOINT-1\\n" + canonical_json(body)``; ``body`` holds
``origin``, ``size``, ``root`` (hex), ``position`` (log position of leaf size-1, or null) and
``coup`` (the coup whose end it marks, or null). docs/export-format.md documents it.

The origin names the log: ``sabot`` for a single site (and every checkpoint signed before
sites), ``sabot/SITE`` for a site of a group (``SABOT_SITE``): ``checkpoint_origin``,
``origin_site``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from services.regulator.canonical import canonical_json

CHECKPOINT_PREFIX = b"SABOT-CHECKPOINT-1\n"
ORIGIN = "sabot"  # the origin of a single site's log (and of every log before sites)


def checkpoint_origin(site: str | None) -> str:
    """The origin a checkpoint of ``site``'s log names (None: a single site's, ``sabot``)."""
    return ORIGIN if site is None else f"{ORIGIN}/{site}"


def origin_site(origin: str) -> str | None:
    """The site a checkpoint's origin names (None: ``sabot``, a single site's)."""
    head, slash, site = origin.partition("/")
    return site if head == ORIGIN and slash and site else None


class CheckpointError(ValueError):
    """A checkpoint whose signature or content does not verify."""


def public_key_bytes(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw)


def key_id(public_key: bytes) -> str:
    """First 8 bytes of SHA-256 of the raw 32-byte public key, hex."""
    return hashlib.sha256(public_key).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes
    position: int | None
    coup: str | None
    key_id: str
    signature: bytes

    def body(self) -> dict[str, Any]:
        return checkpoint_body(self.origin, self.size, self.root, self.position, self.coup)

    def to_json(self) -> dict[str, Any]:
        return {**self.body(), "key_id": self.key_id, "signature": self.signature.hex()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Checkpoint:
        try:
            return cls(
                origin=str(data["origin"]),
                size=int(data["size"]),
                root=bytes.fromhex(data["root"]),
                position=None if data["position"] is None else int(data["position"]),
                coup=None if data["coup"] is None else str(data["coup"]),
                key_id=str(data["key_id"]),
                signature=bytes.fromhex(data["signature"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(f"malformed checkpoint: {exc}") from None


def checkpoint_body(
    origin: str, size: int, root: bytes, position: int | None, coup: str | None
) -> dict[str, Any]:
    return {"origin": origin, "size": size, "root": root.hex(), "position": position, "coup": coup}


def signed_message(body: dict[str, Any]) -> bytes:
    return CHECKPOINT_PREFIX + canonical_json(body)


def sign_checkpoint(
    key: Ed25519PrivateKey,
    origin: str,
    size: int,
    root: bytes,
    position: int | None = None,
    coup: str | None = None,
) -> Checkpoint:
    body = checkpoint_body(origin, size, root, position, coup)
    signature = key.sign(signed_message(body))
    kid = key_id(public_key_bytes(key.public_key()))
    return Checkpoint(origin, size, root, position, coup, kid, signature)


def verify_checkpoint(checkpoint: Checkpoint, public_key: bytes) -> None:
    """Raises CheckpointError unless ``public_key`` (raw 32 bytes) signed this checkpoint."""
    if checkpoint.key_id != key_id(public_key):
        raise CheckpointError(f"checkpoint signed by key {checkpoint.key_id}, not this key")
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(
            checkpoint.signature, signed_message(checkpoint.body())
        )
    except (InvalidSignature, ValueError):
        raise CheckpointError(f"bad signature on checkpoint {checkpoint.size}") from None
