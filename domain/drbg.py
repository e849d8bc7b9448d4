"""NIST SP 800-90A HMAC_DRBG, SHA-256: no prediction resistance, reseed or additional input."""

from __future__ import annotations

import hashlib

_IPAD = bytes(x ^ 0x36 for x in range(256))
_OPAD = bytes(x ^ 0x5C for x in range(256))


class _Keyed:
    """HMAC-SHA256 (RFC 2104) under one key, its inner and outer pads hashed once."""

    __slots__ = ("_inner", "_outer")

    def __init__(self, key: bytes) -> None:
        block = key.ljust(64, b"\x00")  # keys here are 32 bytes, under the 64-byte block
        self._inner = hashlib.sha256(block.translate(_IPAD))
        self._outer = hashlib.sha256(block.translate(_OPAD))

    def mac(self, message: bytes) -> bytes:
        inner = self._inner.copy()
        inner.update(message)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return outer.digest()


class HmacDrbg:
    """The generator of SABOT-SHUFFLE-1. Deterministic: the same inputs give the same stream."""

    __slots__ = ("_k", "_v")

    def __init__(self, entropy: bytes, nonce: bytes, personalization: bytes = b"") -> None:
        self._k = _Keyed(b"\x00" * 32)
        self._v = b"\x01" * 32
        self._update(entropy + nonce + personalization)

    def _update(self, data: bytes) -> None:
        """``K = HMAC(K, V || 0x00 || data)``, ``V = HMAC(K, V)``; again with 0x01 if data."""
        self._k = _Keyed(self._k.mac(self._v + b"\x00" + data))
        self._v = self._k.mac(self._v)
        if data:
            self._k = _Keyed(self._k.mac(self._v + b"\x01" + data))
            self._v = self._k.mac(self._v)

    def generate(self, n: int) -> bytes:
        """``V = HMAC(K, V)`` appended until ``n`` bytes are had; then ``Update(empty)``."""
        out = bytearray()
        while len(out) < n:
            self._v = self._k.mac(self._v)
            out += self._v
        self._update(b"")
        return bytes(out[:n])

    def uniform(self, n: int) -> int:
        """An unbiased integer in [0, n): one ``Generate(8)`` per draw, rejection sampling."""
        limit = 2**64 - (2**64 % n)
        while True:
            # Generate(8) inlined: one block V, then Update(empty) (two MACs, no data)
            block = self._k.mac(self._v)
            self._k = _Keyed(self._k.mac(block + b"\x00"))
            self._v = self._k.mac(block)
            x = int.from_bytes(block[:8], "big")
            if x < limit:
                return x % n
