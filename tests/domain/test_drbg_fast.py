"""``HmacDrbg`` (pad states hashed once, K's last use consuming them, Generate(8) inlined) against
a plain SP 800-90A HMAC_DRBG written with the ``hmac`` module: the same bytes and draws."""

from __future__ import annotations

import hmac

from hypothesis import given, settings
from hypothesis import strategies as st

from domain.drbg import HmacDrbg


class ReferenceDrbg:
    def __init__(self, entropy: bytes, nonce: bytes, personalization: bytes = b"") -> None:
        self.k = b"\x00" * 32
        self.v = b"\x01" * 32
        self.update(entropy + nonce + personalization)

    def mac(self, message: bytes) -> bytes:
        return hmac.new(self.k, message, "sha256").digest()

    def update(self, data: bytes) -> None:
        self.k = self.mac(self.v + b"\x00" + data)
        self.v = self.mac(self.v)
        if data:
            self.k = self.mac(self.v + b"\x01" + data)
            self.v = self.mac(self.v)

    def generate(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            self.v = self.mac(self.v)
            out += self.v
        self.update(b"")
        return out[:n]

    def uniform(self, n: int) -> int:
        limit = 2**64 - (2**64 % n)
        while True:
            x = int.from_bytes(self.generate(8), "big")
            if x < limit:
                return x % n


bounds = st.lists(
    st.one_of(st.integers(1, 400), st.integers(2**63, 2**64)),  # the latter reject often
    max_size=20,
)


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=32, max_size=32), st.binary(max_size=16), bounds, st.booleans())
def test_draws_and_bytes_are_the_reference(
    entropy: bytes, nonce: bytes, ns: list[int], one_by_one: bool
) -> None:
    fast, slow = HmacDrbg(entropy, nonce, b"P"), ReferenceDrbg(entropy, nonce, b"P")
    assert fast.generate(40) == slow.generate(40)
    expected = [slow.uniform(n) for n in ns]
    if one_by_one:
        assert [fast.uniform(n) for n in ns] == expected
    else:
        assert list(fast.uniforms(ns)) == expected
    assert fast.uniform(52) == slow.uniform(52)  # the state left behind is the same
    assert fast.generate(70) == slow.generate(70)


def test_stopping_the_draws_early_leaves_the_state_of_the_draws_taken() -> None:
    fast, slow = HmacDrbg(b"e" * 32, b"n"), ReferenceDrbg(b"e" * 32, b"n")
    draws = fast.uniforms([10, 20, 30, 40])
    assert [next(draws), next(draws)] == [slow.uniform(10), slow.uniform(20)]
    assert fast.generate(32) == slow.generate(32)
