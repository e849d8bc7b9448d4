"""NIST SP 800-90A HMAC_DRBG, SHA-256: no prediction resistance, reseed or additional input."""

from __future__ import annotations

import hmac


def _hmac(key: bytes, data: bytes) -> bytes:
    return hmac.digest(key, data, "sha256")


class HmacDrbg:
    """The generator of SABOT-SHUFFLE-1. Deterministic: the same inputs give the same stream."""

    __slots__ = ("_k", "_v")

    def __init__(self, entropy: bytes, nonce: bytes, personalization: bytes = b"") -> None:
        self._k = b"\x00" * 32
        self._v = b"\x01" * 32
        self._update(entropy + nonce + personalization)

    def _update(self, data: bytes) -> None:
        self._k = _hmac(self._k, self._v + b"\x00" + data)
        self._v = _hmac(self._k, self._v)
        if data:
            self._k = _hmac(self._k, self._v + b"\x01" + data)
            self._v = _hmac(self._k, self._v)

    def generate(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            self._v = _hmac(self._k, self._v)
            out += self._v
        self._update(b"")
        return bytes(out[:n])

    def uniform(self, n: int) -> int:
        """An unbiased integer in [0, n): one ``Generate(8)`` per draw, rejection sampling."""
        limit = 2**64 - (2**64 % n)
        while True:
            x = int.from_bytes(self.generate(8), "big")
            if x < limit:
                return x % n
