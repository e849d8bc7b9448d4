"""Merkle tree over the log order (RFC 9162 §2.1): hashes, tree head, inclusion, consistency.

The proof algorithms read node hashes through ``NodeSource``: the hash of an aligned complete
subtree ``(level, index)`` covering leaves ``[index * 2**level, (index + 1) * 2**level)``. Every
subtree the RFC recursion visits from leaf 0 is aligned, so a tree of n leaves needs at most
O(log² n) node reads per proof, and which nodes are read depends only on the indices: a store can
collect them first (``needed_nodes``) and fetch them in one query.

A multi-leaf proof (SABOT-EXPORT-2, docs/export-format.md) proves any set of leaf ranges against
one tree head: the leaves between them (and before the first, after the last) are given as the
aligned complete subtrees ``gap_blocks`` names, each the largest that fits, so a gap of g leaves
costs at most 2·log2(g) hashes. Reading leaves and blocks left to right, ``Frontier`` folds them
into the tree head with a stack of O(log n) hashes (the verifier's own copy streams the same
way).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()

NodeSource = Callable[[int, int], bytes]  # (level, index) -> hash of that complete subtree


class ProofError(ValueError):
    """A proof that does not verify, or bad proof parameters."""


def leaf_hash(data: bytes) -> bytes:
    """SHA-256(0x00 || leaf)."""
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """SHA-256(0x01 || left || right)."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two smaller than n (n >= 2)."""
    return 1 << ((n - 1).bit_length() - 1)


def subtree_root(nodes: NodeSource, start: int, size: int) -> bytes:
    """MTH of leaves [start, start + size); ``start`` is aligned as the RFC recursion keeps it."""
    if size == 0:
        return EMPTY_ROOT
    if size & (size - 1) == 0:
        level = size.bit_length() - 1
        return nodes(level, start >> level)
    k = _split(size)
    return node_hash(subtree_root(nodes, start, k), subtree_root(nodes, start + k, size - k))


def root(nodes: NodeSource, size: int) -> bytes:
    """The tree head MTH(D[0:size])."""
    return subtree_root(nodes, 0, size)


def _path(nodes: NodeSource, m: int, start: int, size: int) -> list[bytes]:
    if size <= 1:
        return []
    k = _split(size)
    if m < k:
        return [*_path(nodes, m, start, k), subtree_root(nodes, start + k, size - k)]
    return [*_path(nodes, m - k, start + k, size - k), subtree_root(nodes, start, k)]


def inclusion_proof(nodes: NodeSource, index: int, size: int) -> list[bytes]:
    """PATH(index, D[0:size]) (RFC 9162 §2.1.3.1)."""
    if not 0 <= index < size:
        raise ProofError(f"leaf index {index} not in a tree of {size}")
    return _path(nodes, index, 0, size)


def _subproof(nodes: NodeSource, m: int, start: int, size: int, complete: bool) -> list[bytes]:
    if m == size:
        return [] if complete else [subtree_root(nodes, start, size)]
    k = _split(size)
    if m <= k:
        return [
            *_subproof(nodes, m, start, k, complete),
            subtree_root(nodes, start + k, size - k),
        ]
    return [*_subproof(nodes, m - k, start + k, size - k, False), subtree_root(nodes, start, k)]


def consistency_proof(nodes: NodeSource, old_size: int, new_size: int) -> list[bytes]:
    """PROOF(old_size, D[0:new_size]) (RFC 9162 §2.1.4.1); empty when the sizes are equal."""
    if not 0 < old_size <= new_size:
        raise ProofError(f"no consistency proof from {old_size} to {new_size}")
    if old_size == new_size:
        return []
    return _subproof(nodes, old_size, 0, new_size, True)


def needed_nodes(compute: Callable[[NodeSource], object]) -> set[tuple[int, int]]:
    """The (level, index) keys ``compute`` reads: run it once against placeholder hashes."""
    keys: set[tuple[int, int]] = set()

    def record(level: int, index: int) -> bytes:
        keys.add((level, index))
        return bytes(HASH_SIZE)

    compute(record)
    return keys


def verify_inclusion(
    leaf: bytes, index: int, size: int, proof: Sequence[bytes], expected_root: bytes
) -> None:
    """RFC 9162 §2.1.3.2; raises ProofError unless ``leaf`` (a leaf hash) is at ``index``."""
    if not 0 <= index < size:
        raise ProofError(f"leaf index {index} not in a tree of {size}")
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            raise ProofError("inclusion proof too long")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError("inclusion proof too short")
    if r != expected_root:
        raise ProofError("inclusion proof does not lead to the tree head")


def verify_consistency(
    old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> None:
    """RFC 9162 §2.1.4.2; raises ProofError unless the old tree is a prefix of the new one."""
    if not 0 < old_size <= new_size:
        raise ProofError(f"no consistency proof from {old_size} to {new_size}")
    if old_size == new_size:
        if proof:
            raise ProofError("consistency proof between equal sizes must be empty")
        if old_root != new_root:
            raise ProofError("equal sizes with different tree heads")
        return
    path = list(proof)
    if not path:
        raise ProofError("empty consistency proof")
    if old_size & (old_size - 1) == 0:
        path.insert(0, old_root)
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise ProofError("consistency proof too long")
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError("consistency proof too short")
    if fr != old_root:
        raise ProofError("consistency proof does not lead to the old tree head")
    if sr != new_root:
        raise ProofError("consistency proof does not lead to the new tree head")


def gap_blocks(start: int, stop: int) -> list[tuple[int, int]]:
    """(level, index) of the aligned complete subtrees covering leaves [start, stop), left to
    right, each the largest aligned one that fits (at most 2·log2(stop - start) of them)."""
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
    """The tree head built left to right from aligned complete subtrees (leaves, or blocks of
    a multi-leaf proof): a stack of at most log2(n) + 1 hashes, whatever n."""

    __slots__ = ("_stack", "size")

    def __init__(self) -> None:
        self.size = 0
        self._stack: list[tuple[int, int, bytes]] = []  # (level, index, hash)

    def push(self, level: int, h: bytes) -> None:
        """Append the complete subtree of 2**level leaves starting at ``size`` (aligned)."""
        if self.size % (1 << level):
            raise ProofError(f"a subtree of {1 << level} leaves cannot start at leaf {self.size}")
        index = self.size >> level
        self.size += 1 << level
        while self._stack and index & 1 and self._stack[-1][0] == level:
            h = node_hash(self._stack.pop()[2], h)
            level, index = level + 1, index >> 1
        self._stack.append((level, index, h))

    def root(self) -> bytes:
        """MTH of the leaves pushed so far (RFC 9162: the right-most subtrees fold first)."""
        if not self._stack:
            return EMPTY_ROOT
        h = self._stack[-1][2]
        for _level, _index, left in reversed(self._stack[:-1]):
            h = node_hash(left, h)
        return h


class MemoryTree:
    """An append-only tree in memory: one bytearray of hashes per level (32 bytes per node).

    Appending a leaf stores it and every subtree it completes (amortised two hashes per leaf).
    """

    __slots__ = ("_levels",)

    def __init__(self, leaf_hashes: Iterable[bytes] = ()) -> None:
        self._levels: list[bytearray] = [bytearray()]
        for h in leaf_hashes:
            self.append_hash(h)

    @property
    def size(self) -> int:
        return len(self._levels[0]) // HASH_SIZE

    def append(self, data: bytes) -> int:
        """Append a leaf by its bytes; returns its index."""
        return self.append_hash(leaf_hash(data))

    def append_hash(self, h: bytes) -> int:
        """Append a leaf by its leaf hash; returns its index."""
        index = self.size
        self.new_nodes(index, h)
        return index

    def new_nodes(self, index: int, h: bytes) -> list[tuple[int, int, bytes]]:
        """Store leaf ``index`` and return every (level, index, hash) it creates, leaf first."""
        if index != self.size:
            raise ValueError(f"leaf {index} appended to a tree of {self.size}")
        out = [(0, index, h)]
        self._levels[0] += h
        level, idx = 0, index
        while idx & 1:
            left = self.node(level, idx - 1)
            h = node_hash(left, h)
            level, idx = level + 1, idx >> 1
            if len(self._levels) == level:
                self._levels.append(bytearray())
            self._levels[level] += h
            out.append((level, idx, h))
        return out

    def node(self, level: int, index: int) -> bytes:
        off = index * HASH_SIZE
        data = self._levels[level]
        if off + HASH_SIZE > len(data):
            raise KeyError((level, index))
        return bytes(data[off : off + HASH_SIZE])

    def leaf(self, index: int) -> bytes:
        return self.node(0, index)

    def root(self, size: int | None = None) -> bytes:
        return root(self.node, self.size if size is None else self._check(size))

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]:
        return inclusion_proof(self.node, index, self.size if size is None else self._check(size))

    def consistency_proof(self, old_size: int, new_size: int | None = None) -> list[bytes]:
        new = self.size if new_size is None else self._check(new_size)
        return consistency_proof(self.node, old_size, new)

    def _check(self, size: int) -> int:
        if not 0 <= size <= self.size:
            raise ProofError(f"tree size {size} beyond the {self.size} leaves held")
        return size
