"""Checking the evidence chain (SABOT-CHAIN-1) over stored events, in log order.

``ChainWalk`` is fed the log's events one by one (and the slots of notarised events gone from
the store, as ``None``); at each link it checks the events since the previous link against it:
the link's signature, its place (sequence number, previous link's hash, first chain index) and
each event's hash in its slot. A problem is named at its position: the first event that does
not match its slot, a deleted event's own position (``None`` slots, or the gap it left), the
link that is missing or forged. After a problem the walk carries on from that link, so each
batch is judged on its own.

``chain_problems`` runs a walk over position ranges of a store, from the link before each
range to the link after it (the notary, the replay and the export use it).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar
from uuid import UUID

import orjson
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from services.ledger.evidence import (
    _EVENT_HEAD,
    CHAIN_ID,
    EVENT_PREFIX,
    LINK_PREFIX,
    SHORT,
    Link,
    key_id,
    link_body,
    link_message,
    signature_valid,
)
from services.regulator.source import EventTable, RawEvent
from services.topics import CHAIN_LINKED

log = logging.getLogger(__name__)

MAX_PENDING = 200_000  # events without a link before the walk gives up on them
_K = TypeVar("_K")
_V = TypeVar("_V")


@dataclass(frozen=True, slots=True)
class ChainProblem:
    position: int
    message: str


_CHECKED: dict[tuple[bytes, str], tuple[Ed25519PublicKey, str | None]] = {}
_PARSED: dict[tuple[bytes, int | None], tuple[Link, bytes]] = {}  # with its signed message
_IDS: dict[str, bytes] = {}  # an originator id's text -> its 16 bytes (hashing a slot needs them)
_TOPICS: dict[str, bytes] = {}  # a topic -> its UTF-8 bytes
_MEMO_MAX = 8192  # entries of each memo (_CHECKED, _PARSED: the least recently used leaves
# first; _IDS, _TOPICS: cleared when full)


def _keep(memo: dict[_K, _V], key: _K, value: _V) -> _V:
    """``memo[key] = value``, the least recently used entry dropped when ``memo`` is full."""
    if len(memo) >= _MEMO_MAX:
        del memo[next(iter(memo))]
    memo[key] = value
    return value


def _recalled(memo: dict[_K, _V], key: _K) -> _V | None:
    """``memo.get(key)``, a hit made the most recently used (dicts keep insertion order)."""
    found = memo.pop(key, None)
    if found is not None:
        memo[key] = found
    return found


def verify_link(link: Link, stored: bytes | None, trusted: Mapping[str, Ed25519PublicKey]
                ) -> str | None:
    """``link.verify(trusted)``, remembered by the link's stored bytes and the key that signs
    it (an Ed25519 check depends on nothing else): a replay or an export that meets a link
    again does not check its signature again. ``stored`` None: checked, not remembered."""
    key = trusted.get(link.key_id)
    if stored is None or key is None:
        return link.verify(trusted)
    memo = (stored, link.key_id)
    found = _recalled(_CHECKED, memo)
    if found is not None and (found[0] is key or found[0] == key):
        return found[1]
    made = _PARSED.get((stored, link.position))
    message = made[1] if made is not None and made[0] is link else link_message(link.body)
    # Link.verify, the key found and the message made
    good = signature_valid(key, link.signature, message)
    bad = None if good else f"link {link.seq}: bad signature"
    _keep(_CHECKED, memo, (key, bad))
    return bad


def parse_link(stored: bytes, position: int | None) -> Link:
    """``Link.parse``, remembered by the stored bytes (with its hash, once computed): links are
    met again by every range that reaches their batch. The signed message is made once: the
    link's hash and its signature check both read it."""
    memo = (stored, position)
    made = _recalled(_PARSED, memo)
    if made is None:
        link, message = _parsed(stored, position)
        link.__dict__["hash"] = hashlib.sha256(message).digest()  # Link.hash, the same bytes
        made = _keep(_PARSED, memo, (link, message))
    return made[0]


_EVENT_HASH = hashlib.sha256(EVENT_PREFIX)  # copied for each slot: the prefix hashed once


def slot_hash(index: int, ev: RawEvent) -> bytes:
    """``event_hash(index, ev.originator_id, ev.version, ev.topic, ev.state)``, the same bytes
    with the id's 16 bytes and the topic's encoding remembered and the prefix's hash copied."""
    oid = _IDS.get(ev.originator_id)
    if oid is None:
        if len(_IDS) >= _MEMO_MAX:
            _IDS.clear()
        oid = _IDS[ev.originator_id] = UUID(ev.originator_id).bytes
    topic = _TOPICS.get(ev.topic)
    if topic is None:
        if len(_TOPICS) >= _MEMO_MAX:
            _TOPICS.clear()
        topic = _TOPICS[ev.topic] = ev.topic.encode()
    h = _EVENT_HASH.copy()
    h.update(_EVENT_HEAD.pack(index, oid, ev.version, len(topic)) + topic)
    h.update(ev.state)
    return h.digest()


def _parsed(stored: bytes, position: int | None) -> tuple[Link, bytes]:
    """``Link.parse(stored, position)`` and ``link_message`` of its body, the same values
    made faster by orjson where it reads and writes exactly what ``json`` does: its parse is
    taken when it holds no float (orjson reads an integer past 64 bits as one; ``json``
    reads NaN and Infinity, a BOM, lone surrogates, which orjson refuses: those go to
    ``Link.parse``), and its sorted compact bytes when the stored bytes hold no backslash
    (no string then holds a character either encoder escapes; everything else, UTF-8 beyond
    ASCII included, both write as it is). Anything else is made as before."""
    try:
        data = orjson.loads(stored)
    except orjson.JSONDecodeError:
        data = None
    if type(data) is not dict or not _floatless(data):
        link = Link.parse(stored, position)
        return link, link_message(link.body)
    link = Link(int(data["seq"]), position, link_body(data), bytes.fromhex(data["signature"]))
    if b"\\" in stored:
        return link, link_message(link.body)
    return link, LINK_PREFIX + orjson.dumps(link.body, option=orjson.OPT_SORT_KEYS)


def _floatless(value: object) -> bool:
    """No float anywhere in a parsed JSON value (strings and integers, a link's most values,
    passed without a call)."""
    items = value.values() if type(value) is dict else value if type(value) is list else None
    if items is None:
        return type(value) is not float
    for v in items:
        t = type(v)
        if t is not str and t is not int and not _floatless(v):
            return False
    return True


def pinned_keys(publics: Iterable[bytes]) -> dict[str, Ed25519PublicKey]:
    return {key_id(p): Ed25519PublicKey.from_public_bytes(p) for p in publics}


@dataclass
class ChainWalk:
    """Feed it events in log order (``feed``), then ``finish``. ``trusted``: the keys whose
    links count (key id -> public key); ``tofu``: also trust the key the first link (seq 1)
    introduces (when no key is pinned)."""

    trusted: dict[str, Ed25519PublicKey] = field(default_factory=dict)
    tofu: bool = True
    problems: list[ChainProblem] = field(default_factory=list)
    links: int = 0
    after: int | None = None  # events at or before it precede the chain (legacy)
    _known: bool = False  # the next link's sequence, previous hash and first index are known
    _expected: int = 1
    _prev: bytes = b""
    _next_index: int = 0
    _boundary: int = 0  # the position of the last link (the next batch starts after it)
    _pending: list[tuple[int, RawEvent | None]] = field(default_factory=list)
    last: Link | None = None

    # --- where the walk starts --------------------------------------------------------------

    def start_genesis(self, after: int) -> None:
        """The walk starts at the chain's beginning: the events after ``after`` (the log's
        last position when the chain began) are the first link's."""
        self.after = after
        self._known, self._expected, self._prev, self._next_index = True, 1, b"", 0
        self._boundary = after
        self._pending = []

    def start_after(self, link: Link, position: int, stored: bytes | None = None) -> None:
        """The walk starts after a stored link (checked on its own; ``stored``: the link's
        state as stored, when the caller has it: a link checked before is not checked again)."""
        bad = verify_link(link, stored, self.trusted)
        if bad is not None:
            self.problems.append(ChainProblem(position, bad))
        self._resync(link, position)

    def trust_genesis(self, genesis: Link) -> None:
        """TOFU: trust the key the chain's first link introduces (no key pinned)."""
        if self.tofu and genesis.seq == 1 and "public_key" in genesis.body:
            try:
                public = bytes.fromhex(str(genesis.body["public_key"]))
                self.trusted.setdefault(key_id(public), Ed25519PublicKey.from_public_bytes(public))
            except ValueError:
                pass

    # --- feeding ----------------------------------------------------------------------------

    def feed(self, position: int, event: RawEvent | None) -> None:
        if event is not None and event.topic == CHAIN_LINKED:
            self._link(position, event)
            return
        if self.after is not None and position <= self.after:
            return  # before the chain began
        self._pending.append((position, event))
        if len(self._pending) > MAX_PENDING:
            first = self._pending[0][0]
            self._problem(first, f"more than {MAX_PENDING} events from position {first} on "
                                 "that no link covers")
            self._pending = []
            self._known = False

    def finish(self, *, cut: bool = False) -> None:
        """The events fed so far end where the log ends. Events after the last link are none
        of a link's: their first is named, or the first deleted one among them; ``cut``: the
        writer signed links past the end (its head file), so the log lost its end: the
        position after the last one present is named."""
        pending, self._pending = self._pending, []
        holes = [p for p, ev in pending if ev is None]
        if holes:
            self._problem(holes[0], "deleted from the store (with the link that closed it)")
        elif cut:
            last = pending[-1][0] if pending else self._boundary
            self._problem(last + 1, "the log was cut here: the writer stored more links")
        elif pending:
            self._problem(pending[0][0], "stored after the last link, covered by none "
                                         "(inserted?)")

    @property
    def pending(self) -> int:
        return len(self._pending)

    # --- links ------------------------------------------------------------------------------

    def _problem(self, position: int, message: str) -> None:
        self.problems.append(ChainProblem(position, message))

    def _resync(self, link: Link, position: int) -> None:
        self._known = True
        self._expected = link.seq + 1
        self._prev = link.hash
        self._next_index = link.first + link.count
        self._boundary = position
        self.last = link
        self._pending = []

    def _link(self, position: int, event: RawEvent) -> None:
        pending, self._pending = self._pending, []
        try:
            link = parse_link(event.state, position)
            int(link.first) + int(link.count)
        except (ValueError, KeyError, TypeError):
            self._problem(position, "a malformed link")
            self._known = False
            self._boundary = position
            return
        self.links += 1
        if link.seq == 1:
            self.trust_genesis(link)
            if self.after is None:
                self.after = int(link.body.get("after", 0))
                pending = [(p, e) for p, e in pending if p > self.after]
        bad = verify_link(link, event.state, self.trusted)
        if bad is not None:
            span = f" (positions {pending[0][0]} to {position - 1} unverified)" if pending else ""
            self._problem(position, bad + span)
            self._known = False
            self._boundary = position
            return
        lost = 0
        if self._known:
            placed, lost = self._placed(link, position, pending)
            if not placed:
                return
        if link.seq == 1 and (link.body.get("prev") or link.first != 0):
            self._problem(position, "the first link does not start the chain")
        self._slots(link, position, pending[lost:])
        self._resync(link, position)

    def _placed(self, link: Link, position: int, pending: list[tuple[int, RawEvent | None]]
                ) -> tuple[bool, int]:
        """Whether the link comes where the chain expects it (False: reported and resynced),
        and how many of the pending events belong to links that are missing."""
        if link.seq == self._expected and link.first == self._next_index:
            if link.body.get("prev", "") != self._prev.hex():
                self._problem(position, f"link {link.seq} does not follow link {link.seq - 1} "
                                        "(its previous hash differs)")
            return True, 0
        if link.seq > self._expected and link.first >= self._next_index:
            k = link.first - self._next_index
            lost = pending[:k]
            holes = [p for p, ev in lost if ev is None]
            if holes:
                at = holes[0]
            elif lost:
                at = lost[-1][0] + 1
            else:
                at = self._boundary + 1
            missing = (f"link {self._expected}" if link.seq == self._expected + 1
                       else f"links {self._expected} to {link.seq - 1}")
            self._problem(at, f"{missing} missing (deleted?)")
            self._boundary = lost[-1][0] if lost else self._boundary
            return True, min(k, len(pending))
        self._problem(position, f"link {link.seq} out of place (expected link {self._expected})")
        self._resync(link, position)
        return False, 0

    def _slots(self, link: Link, position: int, pending: list[tuple[int, RawEvent | None]]
               ) -> None:
        """The batch's events against the link's hashes, slot by slot."""
        try:
            short = bytes.fromhex(str(link.body["events"]))
            digest = str(link.body["digest"])
        except (KeyError, ValueError, TypeError):
            self._problem(position, "a malformed link")
            return
        count, first = link.count, link.first
        previous = self._boundary
        full = []
        for j, (p, ev) in enumerate(pending):
            if ev is None:
                self._problem(p, f"deleted from the store (slot {j} of link {link.seq})")
                return
            if j >= count:
                self._problem(min(p, previous + 1),
                              f"not in link {link.seq}'s batch (inserted?)")
                return
            h = slot_hash(first + j, ev)
            if h[:SHORT] != short[j * SHORT : (j + 1) * SHORT]:
                self._problem(min(p, previous + 1),
                              f"does not match slot {j} of link {link.seq} (edited, inserted, "
                              "deleted or moved)")
                return
            full.append(h)
            previous = p
        if len(pending) < count:
            self._problem(previous + 1, f"{count - len(pending)} event(s) of link {link.seq} "
                                        "missing (deleted?)")
            return
        if hashlib.sha256(b"".join(full)).hexdigest() != digest:
            first = pending[0][0] if pending else position
            self._problem(first, f"the events of link {link.seq} do not match its digest")


def genesis(events: EventTable) -> Link | None:
    first = events.at_version(CHAIN_ID, 1)
    if first is None:
        return None
    try:
        return parse_link(first.state, first.position)
    except (ValueError, KeyError, TypeError):
        return None


def link_before(events: EventTable, position: int, floor: int, step: int = 2000
                ) -> RawEvent | None:
    """The last link stored before ``position`` and after ``floor`` (None: none there): one
    query, the topic compared in the store (``step``: unused, kept for callers)."""
    if position <= floor + 1:
        return None
    return events.topic_before(CHAIN_LINKED, position, floor)


def link_at_or_after(events: EventTable, position: int, step: int = 2000) -> RawEvent | None:
    """The first link stored at or after ``position`` (None: none yet): one query."""
    return events.topic_at_or_after(CHAIN_LINKED, position)


def new_walk(events: EventTable, pinned: Mapping[str, Ed25519PublicKey] | None = None
             ) -> tuple[ChainWalk, Link | None]:
    """A walk with the trusted keys (pinned, else the first link's), and the first link."""
    walk = ChainWalk(dict(pinned or {}), tofu=not pinned)
    first = genesis(events)
    if first is not None:
        walk.trust_genesis(first)
        walk.after = int(first.body.get("after", 0))
    return walk, first


def start_at(walk: ChainWalk, events: EventTable, first: Link, position: int) -> int:
    """Start ``walk`` at the batch holding ``position``: after the link before it, or at the
    chain's beginning. Returns the position the walk must be fed from."""
    after = int(first.body.get("after", 0))
    if position <= after + 1:
        walk.start_genesis(after)
        return after + 1
    prior = link_before(events, position, after)
    if prior is None:
        walk.start_genesis(after)
        return after + 1
    try:
        walk.start_after(parse_link(prior.state, prior.position), prior.position, prior.state)
    except (ValueError, KeyError, TypeError):
        walk.start_genesis(after)
        return after + 1
    return prior.position + 1


def chain_problems(
    events: EventTable,
    ranges: Iterable[tuple[int, int]],
    pinned: Mapping[str, Ed25519PublicKey] | None = None,
    deleted: Iterable[int] = (),
) -> list[ChainProblem]:
    """The chain's problems over each position range [first, last], widened to whole batches
    (from the link before ``first`` to the first link at or after ``last``); ``deleted``:
    positions of notarised events gone from the store (each a slot the walk knows was there).
    A store whose log has no link at all has no chain to check: nothing is reported."""
    walk, first = new_walk(events, pinned)
    if first is None:
        return []
    after = int(first.body.get("after", 0))
    gone = sorted(set(deleted))
    problems: list[ChainProblem] = []
    for a, b in sorted(ranges):
        if b <= after:
            continue
        walk.problems = []
        start = start_at(walk, events, first, max(a, after + 1))
        closing = link_at_or_after(events, b)
        end = closing.position if closing is not None else None
        holes = [p for p in gone if p >= start and (end is None or p <= end)]
        _feed_range(walk, events, start, end, holes)
        walk.finish()
        problems += walk.problems
    seen: set[tuple[int, str]] = set()
    out = []
    for p in sorted(problems, key=lambda x: x.position):
        if (p.position, p.message) not in seen:
            seen.add((p.position, p.message))
            out.append(p)
    return out


def _feed_range(walk: ChainWalk, events: EventTable, start: int, end: int | None,
                holes: list[int]) -> None:
    after = start - 1
    holes_left = list(holes)
    while True:
        # no more rows than the range can hold (a range is often a few events, one a single)
        limit = 2000 if end is None else max(1, min(2000, end - after))
        batch = events.read(after, limit)
        for ev in batch:
            if end is not None and ev.position > end:
                batch = []
                break
            while holes_left and holes_left[0] < ev.position:
                walk.feed(holes_left.pop(0), None)
            walk.feed(ev.position, ev)
        if not batch or len(batch) < limit:
            break
        after = batch[-1].position
        if end is not None and after >= end:
            break  # the range's closing link fed: a further read would feed nothing
    for p in holes_left:
        walk.feed(p, None)


__all__ = ["ChainProblem", "ChainWalk", "chain_problems", "genesis", "new_walk", "pinned_keys"]
