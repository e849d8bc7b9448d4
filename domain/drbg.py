"""NIST SP 800-90A HMAC_DRBG, SHA-256: no prediction resistance, reseed or additional input."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from hashlib import sha256
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _hashlib import HASH

_IPAD = bytes(x ^ 0x36 for x in range(256))
_OPAD = bytes(x ^ 0x5C for x in range(256))
# A key here is always 32 bytes (the all-zero initial K, then HMAC-SHA256 outputs): its 64-byte
# block is the key then 32 zero bytes, and a zero byte XOR a pad is the pad byte itself.
_KEY_BYTES = 32
_IPAD_REST = b"\x36" * (64 - _KEY_BYTES)
_OPAD_REST = b"\x5c" * (64 - _KEY_BYTES)
_TWO_64 = 2**64


def _keyed(key: bytes) -> tuple[HASH, HASH]:
    """HMAC-SHA256 (RFC 2104) under ``key``: SHA-256 having hashed the inner pad block, and having
    hashed the outer pad block. A MAC goes on from copies of them (or from them themselves when
    it is the key's last use: see ``HmacDrbg._last_mac``)."""
    return sha256(key.translate(_IPAD) + _IPAD_REST), sha256(key.translate(_OPAD) + _OPAD_REST)


class HmacDrbg:
    """The generator of SABOT-SHUFFLE-1. Deterministic: the same inputs give the same stream.

    K itself is not kept, only its two pad states (``_keyed``); V is ``_v``."""

    __slots__ = ("_inner", "_outer", "_v")

    def __init__(self, entropy: bytes, nonce: bytes, personalization: bytes = b"") -> None:
        self._inner, self._outer = _keyed(b"\x00" * _KEY_BYTES)
        self._v = b"\x01" * 32
        self._update(entropy + nonce + personalization)

    def _mac(self, message: bytes) -> bytes:
        """``HMAC(K, message)``; K stays usable."""
        inner = self._inner.copy()
        inner.update(message)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return outer.digest()

    def _last_mac(self, message: bytes) -> bytes:
        """``HMAC(K, message)`` as K's last use (the next step replaces K): the pad states go on
        hashing themselves, no copies. Same bytes as ``_mac``."""
        self._inner.update(message)
        self._outer.update(self._inner.digest())
        return self._outer.digest()

    def _update(self, data: bytes) -> None:
        """``K = HMAC(K, V || 0x00 || data)``, ``V = HMAC(K, V)``; again with 0x01 if data."""
        self._inner, self._outer = _keyed(self._last_mac(self._v + b"\x00" + data))
        self._v = self._mac(self._v)
        if data:
            self._inner, self._outer = _keyed(self._last_mac(self._v + b"\x01" + data))
            self._v = self._mac(self._v)

    def generate(self, n: int) -> bytes:
        """``V = HMAC(K, V)`` appended until ``n`` bytes are had; then ``Update(empty)``."""
        out = bytearray()
        while len(out) < n:
            self._v = self._mac(self._v)
            out += self._v
        self._update(b"")
        return bytes(out[:n])

    def uniform(self, n: int) -> int:
        """An unbiased integer in [0, n): one ``Generate(8)`` per draw, rejection sampling."""
        return next(self.uniforms((n,)))

    def uniforms(self, bounds: Iterable[int]) -> Iterator[int]:
        """``uniform(n)`` for each ``n`` of ``bounds`` in turn, lazily (the shuffle draws a whole
        shoe in one loop: no method call and state reload per draw). The generator's state is
        written back before each draw is yielded: stopping early leaves it as ``uniform`` would.
        Draw nothing else from this generator while the iterator is in use."""
        inner, outer, v = self._inner, self._outer, self._v
        for n in bounds:
            limit = _TWO_64 - (_TWO_64 % n)
            while True:
                # Generate(8) inlined (the shuffle's hot path: 3 MACs a draw), on local names:
                # ``_mac`` and ``_last_mac`` spelt out.
                # V = HMAC(K, V): the block drawn
                h = inner.copy()
                h.update(v)
                o = outer.copy()
                o.update(h.digest())
                block = o.digest()
                # Update(empty): K = HMAC(K, V || 0x00), K's last use (its states consumed) ...
                inner.update(block + b"\x00")
                outer.update(inner.digest())
                inner, outer = _keyed(outer.digest())
                # ... V = HMAC(K, V)
                h = inner.copy()
                h.update(block)
                o = outer.copy()
                o.update(h.digest())
                v = o.digest()
                x = int.from_bytes(block[:8], "big")
                if x < limit:
                    break
            self._inner, self._outer, self._v = inner, outer, v
            yield x % n
