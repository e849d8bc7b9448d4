"""Merkle tree: RFC 9162 definitions, proofs round-trip, forged proofs rejected, checkpoints."""

from __future__ import annotations

import hashlib

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from services.regulator.checkpoint import (
    Checkpoint,
    CheckpointError,
    public_key_bytes,
    sign_checkpoint,
    verify_checkpoint,
)
from services.regulator.merkle import (
    EMPTY_ROOT,
    MemoryTree,
    ProofError,
    consistency_proof,
    leaf_hash,
    needed_nodes,
    node_hash,
    verify_consistency,
    verify_inclusion,
)


def _k(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def mth(d: list[bytes]) -> bytes:
    """MTH straight from RFC 9162 §2.1.1."""
    if not d:
        return hashlib.sha256(b"").digest()
    if len(d) == 1:
        return leaf_hash(d[0])
    k = _k(len(d))
    return node_hash(mth(d[:k]), mth(d[k:]))


def path(m: int, d: list[bytes]) -> list[bytes]:
    if len(d) == 1:
        return []
    k = _k(len(d))
    if m < k:
        return [*path(m, d[:k]), mth(d[k:])]
    return [*path(m - k, d[k:]), mth(d[:k])]


def subproof(m: int, d: list[bytes], b: bool) -> list[bytes]:
    if m == len(d):
        return [] if b else [mth(d)]
    k = _k(len(d))
    if m <= k:
        return [*subproof(m, d[:k], b), mth(d[k:])]
    return [*subproof(m - k, d[k:], False), mth(d[:k])]


def leaves(n: int) -> list[bytes]:
    return [f"leaf {i}".encode() for i in range(n)]


def test_empty_and_single() -> None:
    t = MemoryTree()
    assert t.root() == EMPTY_ROOT
    t.append(b"x")
    assert t.root() == hashlib.sha256(b"\x00x").digest()


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 31, 33])
def test_against_rfc_definitions(n: int) -> None:
    d = leaves(n)
    t = MemoryTree(leaf_hash(x) for x in d)
    for size in range(1, n + 1):
        assert t.root(size) == mth(d[:size])
        for m in range(size):
            assert t.inclusion_proof(m, size) == path(m, d[:size])
            verify_inclusion(leaf_hash(d[m]), m, size, t.inclusion_proof(m, size), t.root(size))
        for old in range(1, size + 1):
            proof = t.consistency_proof(old, size)
            assert proof == ([] if old == size else subproof(old, d[:size], True))
            verify_consistency(old, size, t.root(old), t.root(size), proof)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 300), st.data())
def test_proofs_verify_and_forgeries_fail(n: int, data: st.DataObject) -> None:
    t = MemoryTree(leaf_hash(x) for x in leaves(n))
    m = data.draw(st.integers(0, n - 1))
    proof = t.inclusion_proof(m)
    verify_inclusion(t.leaf(m), m, n, proof, t.root())
    # another leaf, another index, a flipped proof byte, a dropped element: all rejected
    with pytest.raises(ProofError):
        verify_inclusion(leaf_hash(b"forged"), m, n, proof, t.root())
    if n > 1:
        with pytest.raises(ProofError):
            verify_inclusion(t.leaf(m), (m + 1) % n, n, proof, t.root())
        bad = [bytearray(p) for p in proof]
        i = data.draw(st.integers(0, len(bad) - 1))
        bad[i][0] ^= 1
        with pytest.raises(ProofError):
            verify_inclusion(t.leaf(m), m, n, [bytes(b) for b in bad], t.root())
        with pytest.raises(ProofError):
            verify_inclusion(t.leaf(m), m, n, proof[:-1], t.root())
    old = data.draw(st.integers(1, n))
    cproof = t.consistency_proof(old)
    verify_consistency(old, n, t.root(old), t.root(), cproof)
    if old < n:
        with pytest.raises(ProofError):
            verify_consistency(old, n, leaf_hash(b"forged"), t.root(), cproof)
        with pytest.raises(ProofError):
            verify_consistency(old, n, t.root(old), leaf_hash(b"forged"), cproof)
        forged = [bytes(32), *cproof[1:]]
        with pytest.raises(ProofError):
            verify_consistency(old, n, t.root(old), t.root(), forged)


def test_rewritten_history_fails_consistency() -> None:
    d = leaves(20)
    honest = MemoryTree(leaf_hash(x) for x in d)
    d2 = list(d)
    d2[3] = b"edited"
    rewritten = MemoryTree(leaf_hash(x) for x in d2)
    with pytest.raises(ProofError):
        proof = rewritten.consistency_proof(10)
        verify_consistency(10, 20, honest.root(10), rewritten.root(), proof)


def test_needed_nodes_are_few() -> None:
    t = MemoryTree(leaf_hash(x) for x in leaves(1000))
    keys = needed_nodes(lambda src: consistency_proof(src, 377, 999))
    assert len(keys) <= 2 * 10 * 10
    values = {k: t.node(*k) for k in keys}
    assert consistency_proof(lambda lv, i: values[(lv, i)], 377, 999) == t.consistency_proof(
        377, 999
    )


def test_checkpoint_signature() -> None:
    key = Ed25519PrivateKey.generate()
    pub = public_key_bytes(key.public_key())
    t = MemoryTree(leaf_hash(x) for x in leaves(5))
    cp = sign_checkpoint(key, "sabot-test", 5, t.root(), position=42, coup="c-1")
    verify_checkpoint(cp, pub)
    verify_checkpoint(Checkpoint.from_json(cp.to_json()), pub)
    forged = Checkpoint.from_json({**cp.to_json(), "size": 4})
    with pytest.raises(CheckpointError):
        verify_checkpoint(forged, pub)
    other = public_key_bytes(Ed25519PrivateKey.generate().public_key())
    with pytest.raises(CheckpointError):
        verify_checkpoint(cp, other)
