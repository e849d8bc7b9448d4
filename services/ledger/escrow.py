"""Seed escrow (SABOT-ESCROW-1): the shoe's seed sealed to the regulator's X25519 public key.

``sealed = 0x01 || ephemeral_public (32) || AES-256-GCM(seed) (32 + 16 tag)``, 81 bytes, where
the key is HKDF-SHA256(X25519(ephemeral, regulator), salt = ephemeral_public || regulator_public,
info = b"SABOT-ESCROW-1" || shoe_id.bytes), the nonce is 12 zero bytes (every key is used once)
and the associated data is b"SABOT-ESCROW-1" || shoe_id.bytes. The ephemeral key is derived from
the seed and the shoe id by default, so the same seed gives the same events (replays stay
byte-identical) while staying secret until the seed is revealed. Only the regulator's private key
opens it; the server never holds that key.
"""

from __future__ import annotations

from uuid import UUID

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

ESCROW_ID = b"SABOT-ESCROW-1"
VERSION = 1
SEALED_SIZE = 1 + 32 + 32 + 16
_NONCE = bytes(12)


class EscrowError(ValueError):
    """A sealed seed that does not open (wrong key, wrong shoe, altered bytes)."""


def _raw(key: X25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def _key(shared: bytes, eph_pub: bytes, reg_pub: bytes, shoe_id: UUID) -> bytes:
    return HKDF(
        algorithm=hashes.SHA256(),
        length=32,
        salt=eph_pub + reg_pub,
        info=ESCROW_ID + shoe_id.bytes,
    ).derive(shared)


def _ephemeral(seed: bytes, shoe_id: UUID) -> X25519PrivateKey:
    raw = HKDF(
        algorithm=hashes.SHA256(),
        length=32,
        salt=shoe_id.bytes,
        info=ESCROW_ID + b" ephemeral",
    ).derive(seed)
    return X25519PrivateKey.from_private_bytes(raw)


def seal_to_regulator(
    seed: bytes, shoe_id: UUID, public_key: bytes, ephemeral: X25519PrivateKey | None = None
) -> bytes:
    """Seal ``seed`` to the regulator's raw 32-byte X25519 public key."""
    if len(public_key) != 32:
        raise ValueError("regulator public key must be 32 raw bytes")
    reg = X25519PublicKey.from_public_bytes(public_key)
    eph = ephemeral if ephemeral is not None else _ephemeral(seed, shoe_id)
    eph_pub = _raw(eph.public_key())
    key = _key(eph.exchange(reg), eph_pub, public_key, shoe_id)
    body = AESGCM(key).encrypt(_NONCE, seed, ESCROW_ID + shoe_id.bytes)
    return bytes([VERSION]) + eph_pub + body


def open_sealed(sealed: bytes, shoe_id: UUID, private_key: X25519PrivateKey) -> bytes:
    """The seed, or EscrowError. (The verifier has its own copy of this function.)"""
    if len(sealed) != SEALED_SIZE or sealed[0] != VERSION:
        raise EscrowError("not a SABOT-ESCROW-1 sealed seed")
    eph_pub = sealed[1:33]
    reg_pub = _raw(private_key.public_key())
    try:
        shared = private_key.exchange(X25519PublicKey.from_public_bytes(eph_pub))
        key = _key(shared, eph_pub, reg_pub, shoe_id)
        return AESGCM(key).decrypt(_NONCE, sealed[33:], ESCROW_ID + shoe_id.bytes)
    except (InvalidTag, ValueError):
        raise EscrowError("the sealed seed does not open with this key for this shoe") from None


def generate_regulator_key() -> tuple[bytes, bytes]:
    """(private PEM, public raw 32 bytes) for a new regulator key pair."""
    key = X25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return pem, _raw(key.public_key())


def load_private_key(pem: bytes) -> X25519PrivateKey:
    key = serialization.load_pem_private_key(pem, password=None)
    if not isinstance(key, X25519PrivateKey):
        raise ValueError("not an X25519 private key")
    return key
