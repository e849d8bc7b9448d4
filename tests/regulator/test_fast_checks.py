"""The replay's faster checks give exactly the answers of the ones they stand for.

- ``evidence.signature_valid`` (libsodium first, OpenSSL on a refusal) accepts and refuses
  exactly what ``Ed25519PublicKey.verify`` does: good signatures, tampered ones (any bit),
  wrong keys, malformed bytes (other lengths, S not reduced, small-order keys and R).
- ``chain._parsed`` (orjson where it reads and writes as ``json`` does) gives
  ``Link.parse``'s link and ``link_message``'s bytes, or raises as it does.
- ``chain.slot_hash`` is ``evidence.event_hash``.
"""

from __future__ import annotations

import json
from uuid import UUID

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from hypothesis import given, settings
from hypothesis import strategies as st

from services.ledger.evidence import Link, event_hash, link_message, signature_valid
from services.regulator import chain
from services.regulator.chain import _parsed, slot_hash
from services.regulator.source import RawEvent

L = 2**252 + 27742317777372353535851937790883648493  # the group's order


def _openssl(key: Ed25519PublicKey, signature: bytes, message: bytes) -> bool:
    try:
        key.verify(signature, message)
    except InvalidSignature:
        return False
    return True


def _same(key: Ed25519PublicKey, signature: bytes, message: bytes) -> bool:
    got = signature_valid(key, signature, message)
    assert got == _openssl(key, signature, message), (signature.hex(), message)
    return got


@settings(max_examples=300, deadline=None)
@given(seed=st.binary(min_size=32, max_size=32), other=st.binary(min_size=32, max_size=32),
       message=st.binary(max_size=600), bit=st.integers(0, 64 * 8 - 1),
       mbit=st.integers(0, 4800))
def test_signature_valid_answers_as_openssl(seed: bytes, other: bytes, message: bytes, bit: int,
                                            mbit: int) -> None:
    private = Ed25519PrivateKey.from_private_bytes(seed)
    key = private.public_key()
    signature = private.sign(message)
    assert _same(key, signature, message)
    flipped = bytearray(signature)
    flipped[bit // 8] ^= 1 << (bit % 8)
    assert not _same(key, bytes(flipped), message)
    if message:
        changed = bytearray(message)
        changed[(mbit // 8) % len(message)] ^= 1 << (mbit % 8)
        assert not _same(key, signature, bytes(changed))
    wrong = Ed25519PrivateKey.from_private_bytes(other).public_key()
    assert _same(wrong, signature, message) == (other == seed)
    s = int.from_bytes(signature[32:], "little")
    if s + L < 2**256:  # the same S, not reduced: refused by both
        assert not _same(key, signature[:32] + (s + L).to_bytes(32, "little"), message)
    for cut in (signature[:63], signature + b"\x00", b"", signature[:32]):
        assert not _same(key, cut, message)


SMALL_ORDER = [  # encodings of points of small order (and a non-canonical one)
    bytes(32),
    (1).to_bytes(32, "little"),
    bytes.fromhex("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
    bytes.fromhex("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a"),
    bytes.fromhex("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05"),
    bytes.fromhex("edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
]


@pytest.mark.parametrize("point", SMALL_ORDER)
def test_small_order_keys_and_r_answer_as_openssl(point: bytes) -> None:
    message = b"SABOT-CHAIN-1\n{}"
    try:
        weak = Ed25519PublicKey.from_public_bytes(point)
    except ValueError:
        weak = None
    for s in (bytes(32), (1).to_bytes(32, "little")):
        if weak is not None:
            _same(weak, point + s, message)
        good = Ed25519PrivateKey.from_private_bytes(b"\x01" * 32).public_key()
        _same(good, point + s, message)


json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
)
json_value = st.recursive(json_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=8)


@settings(max_examples=400, deadline=None)
@given(extra=st.dictionaries(st.text(max_size=8), json_value, max_size=6),
       seq=st.one_of(st.integers(-5, 2**66), st.text(max_size=3), st.none()),
       signature=st.one_of(st.binary(max_size=64).map(bytes.hex), st.integers(), st.none()),
       style=st.sampled_from(["canonical", "spaced", "ascii", "raw"]),
       raw=st.binary(max_size=40))
def test_parsed_is_link_parse(extra: dict[str, object], seq: object, signature: object,
                              style: str, raw: bytes) -> None:
    data = {**extra, "seq": seq, "signature": signature}
    if style == "canonical":
        stored = json.dumps(data, sort_keys=True, separators=(",", ":"),
                            ensure_ascii=False).encode("utf-8", "surrogatepass")
    elif style == "spaced":
        stored = json.dumps(data).encode()
    elif style == "ascii":
        stored = json.dumps(data, sort_keys=True, ensure_ascii=True).encode()
    else:
        stored = raw
    try:
        want = Link.parse(stored, 7)
        message = link_message(want.body)
    except (ValueError, KeyError, TypeError) as exc:
        with pytest.raises(type(exc)):
            _parsed(stored, 7)
        return
    link, made = _parsed(stored, 7)
    assert made == message
    assert (link.seq, link.position, link.signature) == (want.seq, want.position,
                                                         want.signature)
    assert json.dumps(link.body, sort_keys=True) == json.dumps(want.body, sort_keys=True)
    assert [type(v) for v in link.body.values()] == [type(v) for v in want.body.values()]


@settings(max_examples=300, deadline=None)
@given(index=st.integers(0, 2**64 - 1), oid=st.uuids(), version=st.integers(0, 2**64 - 1),
       topic=st.text(max_size=40), state=st.binary(max_size=300),
       hyphens=st.booleans())
def test_slot_hash_is_event_hash(index: int, oid: UUID, version: int, topic: str, state: bytes,
                                 hyphens: bool) -> None:
    try:
        topic.encode()
    except UnicodeEncodeError:
        return
    text = str(oid) if hyphens else oid.hex
    ev = RawEvent(1, text, version, topic, state)
    assert slot_hash(index, ev) == event_hash(index, oid, version, topic, state)
    assert slot_hash(index, ev) == event_hash(index, text, version, topic, state)


def test_the_link_memos_drop_the_least_recently_used() -> None:
    memo: dict[int, str] = {}
    for i in range(chain._MEMO_MAX):
        chain._keep(memo, i, str(i))
    assert chain._recalled(memo, 0) == "0"  # 0 is now the most recently used
    chain._keep(memo, -1, "new")  # full: 1, the least recently used, leaves
    assert len(memo) == chain._MEMO_MAX
    assert 1 not in memo and 0 in memo and memo[-1] == "new"
    assert chain._recalled(memo, 1) is None
