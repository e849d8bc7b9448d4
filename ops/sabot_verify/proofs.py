"""Merkle hashes and proof checks (RFC 9162 §2.1), Ed25519 checkpoints, escrow opening."""

from __future__ import annotations

import hashlib
import json
from typing import Any
from uuid import UUID

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF


class Bad(Exception):
    """Something in the export does not verify."""


def canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\0" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\1" + left + right).digest()


def mth(hashes_: list[bytes]) -> bytes:
    """Tree head from leaf hashes, bottom-up (equal to the RFC's recursive MTH)."""
    if not hashes_:
        return hashlib.sha256(b"").digest()
    level = list(hashes_)
    while len(level) > 1:
        nxt = [node_hash(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


def gap_blocks(start: int, stop: int) -> list[tuple[int, int]]:
    """(level, index) of the aligned complete subtrees a ``nodes`` record gives for leaves
    [start, stop): left to right, each the largest aligned one that fits."""
    out: list[tuple[int, int]] = []
    p = start
    while p < stop:
        level = 0
        while p % (2 << level) == 0 and p + (2 << level) <= stop:
            level += 1
        out.append((level, p >> level))
        p += 1 << level
    return out


class Frontier:
    """A tree head folded left to right from leaves and aligned complete subtrees, in a stack
    of at most log2(n) + 1 hashes: what a multi-leaf proof and a whole log are checked with as
    the export streams."""

    __slots__ = ("_stack", "size")

    def __init__(self) -> None:
        self.size = 0
        self._stack: list[tuple[int, int, bytes]] = []

    def push(self, level: int, h: bytes) -> None:
        if self.size % (1 << level):
            raise Bad(f"a subtree of {1 << level} leaves cannot start at leaf {self.size}")
        index = self.size >> level
        self.size += 1 << level
        while self._stack and index & 1 and self._stack[-1][0] == level:
            h = node_hash(self._stack.pop()[2], h)
            level, index = level + 1, index >> 1
        self._stack.append((level, index, h))

    def root(self) -> bytes:
        if not self._stack:
            return hashlib.sha256(b"").digest()
        h = self._stack[-1][2]
        for _level, _index, left in reversed(self._stack[:-1]):
            h = node_hash(left, h)
        return h


def check_inclusion(leaf: bytes, index: int, size: int, proof: list[bytes], root: bytes) -> None:
    if not 0 <= index < size:
        raise Bad(f"leaf {index} outside a tree of {size}")
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            raise Bad("inclusion proof too long")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0 or r != root:
        raise Bad(f"inclusion proof of leaf {index} in tree {size} fails")


def check_consistency(m: int, n: int, old: bytes, new: bytes, proof: list[bytes]) -> None:
    if not 0 < m <= n:
        raise Bad(f"no consistency between sizes {m} and {n}")
    if m == n:
        if proof or old != new:
            raise Bad(f"two different tree heads of size {n}")
        return
    path = list(proof)
    if not path:
        raise Bad("empty consistency proof")
    if m & (m - 1) == 0:
        path.insert(0, old)
    fn, sn = m - 1, n - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise Bad("consistency proof too long")
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0 or fr != old or sr != new:
        raise Bad(f"consistency proof from {m} to {n} fails")


def check_checkpoint(cp: dict[str, Any], public_key: bytes) -> None:
    """The Ed25519 signature over b"SABOT-CHECKPOINT-1\\n" + canonical body."""
    body = {k: cp[k] for k in ("origin", "size", "root", "position", "coup")}
    if cp.get("key_id") != hashlib.sha256(public_key).hexdigest()[:16]:
        raise Bad(f"checkpoint {cp.get('size')} signed by another key")
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(
            bytes.fromhex(cp["signature"]), b"SABOT-CHECKPOINT-1\n" + canonical(body)
        )
    except (InvalidSignature, ValueError):
        raise Bad(f"bad signature on checkpoint {cp.get('size')}") from None


def open_escrow(sealed: bytes, shoe_id: UUID, key: X25519PrivateKey) -> bytes:
    """Open a SABOT-ESCROW-1 sealed seed (docs/export-format.md)."""
    if len(sealed) != 81 or sealed[0] != 1:
        raise Bad("not a SABOT-ESCROW-1 sealed seed")
    eph = sealed[1:33]
    mine = key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    info = b"SABOT-ESCROW-1" + shoe_id.bytes
    try:
        shared = key.exchange(X25519PublicKey.from_public_bytes(eph))
        k = HKDF(hashes.SHA256(), 32, eph + mine, info).derive(shared)
        return AESGCM(k).decrypt(bytes(12), sealed[33:], info)
    except (InvalidTag, ValueError):
        raise Bad("the escrowed seed does not open with this key") from None


def load_x25519(pem: bytes) -> X25519PrivateKey:
    key = serialization.load_pem_private_key(pem, password=None)
    if not isinstance(key, X25519PrivateKey):
        raise Bad("--regulator-key is not an X25519 private key")
    return key
