"""The evidence chain (SABOT-CHAIN-1, docs/export-format.md): each batch of events closed by a
link signed with the writer's Ed25519 key.

The exported events are walked in log order, range by range. At each link: its signature (a
trusted key), its place (sequence number, previous link's hash, first chain index) and, slot by
slot, each event's hash (chain index, originator id, version, topic, the state's canonical
bytes), or, for another unit's event a shoe's export holds as a ``leaf`` record, the hash it
gives (``chain_hash``: the link's digest over every slot proves it). The first bad slot is
named: an edited, inserted or moved event at its position, a deleted one at its own position
(a notarised event the store lost) or at the gap it left.
"""

from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from sabot_verify.proofs import canonical
from sabot_verify.topics import CHAIN_LINKED

LINK_PREFIX = b"SABOT-CHAIN-1\n"
EVENT_PREFIX = b"SABOT-CHAIN-1 event\n"
SNAPSHOT_PREFIX = b"SABOT-CHAIN-1 snapshot\n"
SHORT = 4


def key_id(public: bytes) -> str:
    return hashlib.sha256(public).hexdigest()[:16]


class Slot(dict[str, Any]):
    """An event's content as the chain needs it (originator, version, topic), with its state's
    canonical bytes already at hand (``raw``: cut from the export's line, proven by its leaf
    hash), so they are not serialised again."""

    __slots__ = ("raw",)

    def __init__(self, content: dict[str, Any], raw: bytes) -> None:
        super().__init__(content)
        self.raw = raw


def state_bytes(content: dict[str, Any]) -> bytes:
    """The stored state's bytes: its canonical JSON (the ledger writes keys sorted), or the
    bytes given in ``state_b64``."""
    if isinstance(content, Slot):
        return content.raw
    if "state_b64" in content:
        import base64

        return base64.b64decode(content["state_b64"])
    return canonical(content["state"])


_ID_BYTES: dict[Any, bytes] = {}  # an originator id's text -> its 16 bytes (aggregates recur)
_EVENT_HEAD = struct.Struct(">Q16sQH")


def _id_bytes(originator_id: Any) -> bytes:
    got = _ID_BYTES.get(originator_id) if type(originator_id) is str else None
    if got is None:
        got = UUID(originator_id).bytes
        if len(_ID_BYTES) >= 65_536:
            _ID_BYTES.clear()
        _ID_BYTES[originator_id] = got
    return got


def event_hash(index: int, content: dict[str, Any]) -> bytes:
    topic = str(content["topic"]).encode()
    h = hashlib.sha256(EVENT_PREFIX)
    h.update(_EVENT_HEAD.pack(index, _id_bytes(content["originator_id"]),
                              int(content["version"]), len(topic)))
    h.update(topic)
    h.update(state_bytes(content))
    return h.digest()


def snapshot_hash(content: dict[str, Any]) -> bytes:
    topic = str(content["topic"]).encode()
    h = hashlib.sha256(SNAPSHOT_PREFIX)
    h.update(struct.pack(">16sQH", UUID(content["originator_id"]).bytes,
                         int(content["version"]), len(topic)))
    h.update(topic)
    h.update(state_bytes(content))
    return h.digest()


def body_of(state: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in state.items() if k not in ("signature", "class_version")}


def link_hash(body: dict[str, Any]) -> bytes:
    return hashlib.sha256(LINK_PREFIX + canonical(body)).digest()


@dataclass
class Finding:
    position: int
    message: str


@dataclass
class Walk:
    """One pass over the exported events; ``links``: every link whose signature verified, by
    sequence number (body and position)."""

    trusted: dict[str, Ed25519PublicKey]
    findings: list[Finding] = field(default_factory=list)
    links: dict[int, tuple[dict[str, Any], int]] = field(default_factory=dict)
    after: int | None = None  # the first link's "after": events up to it precede the chain
    last_position: int = 0  # the last position fed (present or deleted)
    last_seq: int = 0
    known: bool = False
    expected: int = 1
    prev: bytes = b""
    next_index: int = 0
    boundary: int = 0
    pending: list[tuple[int, dict[str, Any] | None]] = field(default_factory=list)

    def restart(self, boundary: int) -> None:
        """A new exported range: nothing is known until its first link."""
        self.known, self.pending, self.boundary = False, [], boundary

    def feed(self, position: int, content: dict[str, Any] | None) -> None:
        self.last_position = max(self.last_position, position)
        if content is not None and content.get("topic") == CHAIN_LINKED:
            self._link(position, content)
            return
        if self.after is not None and position <= self.after:
            return
        self.pending.append((position, content))

    def finish(self, cut: bool = False) -> None:
        pending, self.pending = self.pending, []
        holes = [p for p, c in pending if c is None]
        if holes:
            self._bad(holes[0], "deleted from the store (with the link that closed it)")
        elif cut:
            last = pending[-1][0] if pending else self.boundary
            self._bad(last + 1, "the log was cut here: the writer's head names a later link")
        elif pending:
            self._bad(pending[0][0], "after the last link, covered by none (inserted?)")

    def _bad(self, position: int, message: str) -> None:
        self.findings.append(Finding(position, f"evidence chain: {message}"))

    def _verify(self, body: dict[str, Any], signature: str) -> str | bytes:
        """What is wrong with the link's signature, or the bytes it signs (its hash is the
        next link's ``prev``: ``link_hash``, not encoded twice)."""
        key = self.trusted.get(str(body.get("key_id")))
        if key is None:
            return f"link {body.get('seq')} is signed by key {body.get('key_id')}, not a " \
                   "trusted one (--chain-key)"
        signed = LINK_PREFIX + canonical(body)
        try:
            key.verify(bytes.fromhex(signature), signed)
        except (InvalidSignature, ValueError):
            return f"link {body.get('seq')}: bad signature"
        return signed

    def _resync(self, body: dict[str, Any], position: int, signed: bytes) -> None:
        self.known = True
        self.expected = int(body["seq"]) + 1
        self.prev = hashlib.sha256(signed).digest()  # link_hash(body)
        self.next_index = int(body["first"]) + int(body["count"])
        self.boundary = position
        self.last_seq = max(self.last_seq, int(body["seq"]))

    def _link(self, position: int, content: dict[str, Any]) -> None:
        pending, self.pending = self.pending, []
        try:
            state = content["state"]
            body = body_of(state)
            seq, first = int(body["seq"]), int(body["first"])
            int(body["count"])
            signature = str(state["signature"])
        except (KeyError, TypeError, ValueError):
            self._bad(position, "a malformed link")
            self.known, self.boundary = False, position
            return
        if seq == 1 and self.after is None:
            self.after = int(body.get("after", 0))
            pending = [(p, c) for p, c in pending if p > self.after]
        signed = self._verify(body, signature)
        if isinstance(signed, str):
            span = f" (positions {pending[0][0]} to {position - 1} unverified)" if pending else ""
            self._bad(position, signed + span)
            self.known, self.boundary = False, position
            return
        self.links[seq] = (body, position)
        lost = 0
        if self.known:
            if seq == self.expected and first == self.next_index:
                if body.get("prev", "") != self.prev.hex():
                    self._bad(position, f"link {seq} does not follow link {seq - 1}")
            elif seq > self.expected and first >= self.next_index:
                k = first - self.next_index
                gone = pending[:k]
                holes = [p for p, c in gone if c is None]
                at = holes[0] if holes else (gone[-1][0] + 1 if gone else self.boundary + 1)
                self._bad(at, f"link(s) {self.expected} to {seq - 1} missing (deleted?)")
                lost = min(k, len(pending))
                if gone:
                    self.boundary = gone[-1][0]
            else:
                self._bad(position, f"link {seq} out of place (expected link {self.expected})")
                self._resync(body, position, signed)
                return
        if seq == 1 and (body.get("prev") or first != 0):
            self._bad(position, "the first link does not start the chain")
        self._slots(body, position, pending[lost:])
        self._resync(body, position, signed)

    def _slots(self, body: dict[str, Any], position: int,
               pending: list[tuple[int, dict[str, Any] | None]]) -> None:
        seq, first, count = int(body["seq"]), int(body["first"]), int(body["count"])
        try:
            short = bytes.fromhex(str(body["events"]))
            digest = str(body["digest"])
        except (KeyError, ValueError):
            self._bad(position, "a malformed link")
            return
        previous = self.boundary
        full = []
        for j, (p, c) in enumerate(pending):
            if c is None:
                self._bad(p, f"deleted from the store (slot {j} of link {seq})")
                return
            if j >= count:
                self._bad(min(p, previous + 1), f"not in link {seq}'s batch (inserted?)")
                return
            try:
                h = (bytes.fromhex(c["chain_hash"]) if "chain_hash" in c  # a leaf record's
                     else event_hash(first + j, c))
                if len(h) != 32:
                    raise ValueError("not a SHA-256 hash")
            except (KeyError, TypeError, ValueError):
                self._bad(p, "a malformed event")
                return
            if h[:SHORT] != short[j * SHORT:(j + 1) * SHORT]:
                self._bad(min(p, previous + 1), f"does not match slot {j} of link {seq} "
                                                "(edited, inserted, deleted or moved)")
                return
            full.append(h)
            previous = p
        if len(pending) < count:
            self._bad(previous + 1, f"{count - len(pending)} event(s) of link {seq} missing "
                                    "(deleted?)")
            return
        if hashlib.sha256(b"".join(full)).hexdigest() != digest:
            self._bad(pending[0][0] if pending else position,
                      f"the events of link {seq} do not match its digest")


def load_head(text: str) -> dict[str, Any]:
    """A writer's head file (SABOT-CHAIN-HEAD-1): of its records (one JSON object a line), the
    valid one with the highest ``seq``: {"seq", "link", "position", ...}."""
    best: dict[str, Any] | None = None
    for line in text.splitlines():
        try:
            head = json.loads(line)
            if not isinstance(head, dict) or head.get("format") != "SABOT-CHAIN-HEAD-1":
                continue
            int(head["seq"])
            bytes.fromhex(head["link"])
        except (ValueError, KeyError, TypeError):
            continue
        if best is None or int(head["seq"]) > int(best["seq"]):
            best = head
    if best is None:
        raise ValueError("not a SABOT-CHAIN-HEAD-1 file")
    return best


def walk_export(
    records: list[tuple[int, int | None, dict[str, Any] | None]],
    trusted: dict[str, Ed25519PublicKey],
    head: dict[str, Any] | None = None,
    whole: bool = False,
) -> Walk:
    """``records``: (position, leaf index or None for a record no leaf covers, content or None
    for a deleted event), in position order; a break in the leaf indexes starts a new range.
    ``head``: the writer's head file, when the export reaches the log's end; ``whole``: the
    export starts at the log's beginning (so its first link must be link 1)."""
    walk = Walk(trusted)
    walk.known = whole
    last_index: int | None = None
    for position, index, content in records:
        if index is not None:
            if last_index is not None and index != last_index + 1:
                walk.finish()
                walk.restart(position - 1)
            last_index = index
        walk.feed(position, content)
    cut = False
    if head is not None:
        seq = int(head["seq"])
        found = walk.links.get(seq)
        if seq > walk.last_seq:
            cut = True
        elif found is not None and link_hash(found[0]).hex() != head["link"]:
            walk._bad(found[1], f"link {seq} is not the one the writer's head names (rewritten)")
    walk.finish(cut=cut)
    return walk
