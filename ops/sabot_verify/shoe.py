"""SABOT-SHUFFLE-1 re-implemented from SHUFFLE.md alone: HMAC_DRBG, Fisher–Yates, cut."""

from __future__ import annotations

import hashlib
import hmac
from uuid import UUID

ALGORITHM_ID = "SABOT-SHUFFLE-1"
_PERS = b"SABOT-SHUFFLE-1"

_DECKS = {
    "FRENCH-52": ("A23456789TJQK", "SHDC"),
    "FRENCH-40": ("A234567JQK", "SHDC"),
}
_SPANISH_RANKS = ("1", "2", "3", "4", "5", "6", "7", "10", "11", "12")


def _h(k: bytes, d: bytes) -> bytes:
    return hmac.new(k, d, hashlib.sha256).digest()


class Drbg:
    """HMAC_DRBG (SHA-256), no reseed, no prediction resistance, no additional input."""

    def __init__(self, entropy: bytes, nonce: bytes, pers: bytes = b"") -> None:
        self.k, self.v = b"\0" * 32, b"\1" * 32
        self._update(entropy + nonce + pers)

    def _update(self, data: bytes) -> None:
        self.k = _h(self.k, self.v + b"\0" + data)
        self.v = _h(self.k, self.v)
        if data:
            self.k = _h(self.k, self.v + b"\1" + data)
            self.v = _h(self.k, self.v)

    def generate(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            self.v = _h(self.k, self.v)
            out += self.v
        self._update(b"")
        return out[:n]

    def below(self, n: int) -> int:
        limit = 2**64 - 2**64 % n
        while True:
            x = int.from_bytes(self.generate(8), "big")
            if x < limit:
                return x % n


def deck(kind: str) -> list[str]:
    if kind == "SPANISH-40":
        return [r + s for s in "OCEB" for r in _SPANISH_RANKS]
    if kind not in _DECKS:
        raise ValueError(f"unknown deck kind {kind!r}")
    ranks, suits = _DECKS[kind]
    return [r + s for s in suits for r in ranks]


def shuffled(seed: bytes, shoe_id: UUID, kind: str, decks: int) -> list[str]:
    """The shoe before the cut, as card codes."""
    if len(seed) != 32:
        raise ValueError("seed must be 32 bytes")
    a = deck(kind) * decks
    g = Drbg(seed, shoe_id.bytes, _PERS)
    for i in range(len(a) - 1, 0, -1):
        j = g.below(i + 1)
        a[i], a[j] = a[j], a[i]
    return a


def cut(cards: list[str], c: int | None) -> list[str]:
    if c is None:
        return list(cards)
    if not 1 <= c <= len(cards) - 1:
        raise ValueError(f"cut {c} out of range")
    return cards[c:] + cards[:c]


def commitment(seed: bytes, shoe_id: UUID) -> str:
    return hashlib.sha256(_PERS + shoe_id.bytes + seed).hexdigest()


def digest(cards: list[str]) -> str:
    return hashlib.sha256(" ".join(cards).encode("ascii")).hexdigest()


def value(code: str) -> int:
    """Trente et Quarante pip value: A = 1, 2..9 face, T J Q K = 10."""
    r = code[:-1]
    if r == "A":
        return 1
    if r in ("T", "J", "Q", "K"):
        return 10
    return int(r)


def is_red(code: str) -> bool:
    return code[-1] in "HD"
