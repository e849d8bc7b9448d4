"""The multi-leaf proof of SABOT-EXPORT-2: any set of leaf ranges, the rest given as the
aligned blocks ``gap_blocks`` names, folds into the RFC 9162 tree head (the server's
``merkle.Frontier`` and the verifier's own copy alike); a changed hash or a block out of place
does not."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sabot_verify import proofs

from services.regulator.merkle import Frontier, MemoryTree, ProofError, gap_blocks, leaf_hash


def _tree(n: int) -> MemoryTree:
    return MemoryTree(leaf_hash(i.to_bytes(4, "big")) for i in range(n))


@st.composite
def trees_and_ranges(draw: st.DrawFn) -> tuple[int, list[tuple[int, int]]]:
    n = draw(st.integers(1, 3000))
    cuts = sorted(set(draw(st.lists(st.integers(0, n), min_size=0, max_size=8))))
    bounds = [0, *cuts, n]
    pairs = [(a, b) for a, b in itertools.pairwise(bounds) if a < b]
    kept = [p for i, p in enumerate(pairs) if draw(st.booleans()) or i == 0]
    return n, kept


def _fold(frontier: Frontier | proofs.Frontier, t: MemoryTree, n: int,
          ranges: list[tuple[int, int]]) -> None:
    covered = 0
    for a, b in ranges:
        for level, index in gap_blocks(covered, a):
            frontier.push(level, t.node(level, index))
        for i in range(a, b):
            frontier.push(0, t.leaf(i))
        covered = b
    for level, index in gap_blocks(covered, n):
        frontier.push(level, t.node(level, index))


@settings(max_examples=150, deadline=None)
@given(trees_and_ranges())
def test_leaves_and_blocks_fold_into_the_tree_head(case: tuple[int, list[tuple[int, int]]]
                                                   ) -> None:
    n, ranges = case
    t = _tree(n)
    for frontier in (Frontier(), proofs.Frontier()):
        _fold(frontier, t, n, ranges)
        assert frontier.size == n
        assert frontier.root() == t.root()


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 10**7), st.integers(1, 10**7))
def test_a_gap_is_at_most_two_log_blocks(start: int, length: int) -> None:
    blocks = gap_blocks(start, start + length)
    assert blocks == proofs.gap_blocks(start, start + length)
    assert len(blocks) <= 2 * length.bit_length()
    p = start
    for level, index in blocks:  # aligned, contiguous, covering exactly the gap
        assert index << level == p
        p += 1 << level
    assert p == start + length


def test_a_changed_hash_or_a_misplaced_block_does_not_fold() -> None:
    t = _tree(1000)
    good = Frontier()
    _fold(good, t, 1000, [(300, 420)])
    assert good.root() == t.root()
    bad = Frontier()
    blocks = gap_blocks(0, 300)
    for j, (level, index) in enumerate(blocks):
        h = t.node(level, index)
        bad.push(level, bytes([h[0] ^ 1]) + h[1:] if j == 1 else h)
    for i in range(300, 1000):
        bad.push(0, t.leaf(i))
    assert bad.size == 1000 and bad.root() != t.root()
    with pytest.raises(ProofError):  # a block of 4 cannot start at leaf 1
        _misplaced(t)
    with pytest.raises(proofs.Bad):
        f = proofs.Frontier()
        f.push(0, t.leaf(0))
        f.push(1, t.node(1, 1))  # a block of 2 cannot start at leaf 1


def _misplaced(t: MemoryTree) -> None:
    f = Frontier()
    f.push(0, t.leaf(0))
    f.push(2, t.node(2, 1))
