"""Write-time evidence (SABOT-CHAIN-1): every saved batch closed by a signed link.

Each ``app.save`` of the writer is one transaction; with evidence on, the events of the batch
are followed, in the same insert, by one ``Chain.Linked`` event (aggregate ``CHAIN_ID``,
version = the link's sequence number). The link holds, for the batch's events in insert
order, a SHA-256 of each event's stored bytes and place in the chain (``event_hash``: its
chain index, originator id, version, topic and state), the first 4 bytes of each (to name the
first bad one) and a digest of them all; the hash of the previous link; the hashes of the
snapshots taken with the batch; and an Ed25519 signature by a key the database never holds
(``SABOT_CHAIN_KEY``). Someone with the database but without the key can edit, insert, delete
or reorder events, links or snapshots, but not make the links agree again.

Two writers on one store cannot fork the chain: both would save the same chain version, the
store's unique key lets one in and the other's whole batch fails with ``IntegrityError``; the
writer forgets its chain head and decides again on the store's.

Deleting the log's last batches together with their links leaves a shorter chain that still
verifies. Two things outside the database catch it: the signed checkpoints the notary gave
the regulator (``sabot proof --from-size``), and the writer's head file (``SABOT_CHAIN_HEAD``):
after each commit the writer records its last link there; a writer started on a store whose
chain does not reach that link refuses to write (``ChainBroken``), and ``sabot-verify
--chain-head FILE`` names where the log was cut. docs/export-format.md defines the bytes.

Sites (a group's casinos, one store each): a writer given a site (``SABOT_SITE``) names it in
every link it signs (``"site"`` in the signed body), so a log is bound to its site by the key's
signature, whatever keys the sites share. A link without ``site`` is of the format before sites
(or of a single site that names none): such links verify as they always did. The store's site
is the one its chain's last link names, recorded by the first link a writer of that site signs
and never changed: a writer refuses a store whose last link names another site, or any site
when it names none (``WrongSite``).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import logging
import os
import struct
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any
from uuid import UUID, uuid5

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from eventsourcing.domain import Aggregate, Snapshot
from eventsourcing.persistence import EventStore, StoredEvent
from eventsourcing.utils import register_topic
from nacl.bindings import crypto_sign_open
from nacl.exceptions import CryptoError

from domain.errors import FailedPrecondition
from services.ledger.ids import NAMESPACE

log = logging.getLogger(__name__)

CHAIN_ID = uuid5(NAMESPACE, "chain")
LINKED_TOPIC = "sabot.ledger:Chain.Linked"
SNAPSHOT_TOPIC = "sabot.ledger:Snapshot"
LINK_PREFIX = b"SABOT-CHAIN-1\n"
EVENT_PREFIX = b"SABOT-CHAIN-1 event\n"
SNAPSHOT_PREFIX = b"SABOT-CHAIN-1 snapshot\n"
SHORT = 4  # bytes of each event's hash written in the link
HEAD_FORMAT = "SABOT-CHAIN-HEAD-1"
HEAD_SLOT = 256  # bytes: the head file holds two slots, written by turns
_EVENT_HEAD = struct.Struct(">Q16sQH")  # chain index, originator id, version, topic length
_SNAPSHOT_HEAD = struct.Struct(">16sQH")


class ChainBroken(RuntimeError):
    """The store's chain does not reach what this writer signed (truncated or rewritten), or
    does not cover an event the writer loaded (edited, inserted, deleted, moved)."""


class WrongSite(ChainBroken):
    """The store belongs to another site: its chain's last link names a site other than this
    writer's (or this writer names none). One store per site: it writes nothing there."""


class EvidenceBroken(FailedPrecondition):
    """The answer to every command once the writer found the store's evidence chain broken
    (FAILED_PRECONDITION, reason ``EVIDENCE_BROKEN``): nothing was decided or stored; the
    store must be investigated (docs/operations.md) before this writer writes again."""

    def __init__(self, message: str) -> None:
        super().__init__("", "EVIDENCE_BROKEN", message)


class Chain(Aggregate):
    """The chain of links; never loaded as an aggregate (its events are written and read raw)."""

    TOPIC = "sabot.ledger:Chain"

    class Event(Aggregate.Event):
        TOPIC = "sabot.ledger:Chain.Event"

    class Linked(Aggregate.Created):
        TOPIC = LINKED_TOPIC
        class_version = 1


class ChainedSnapshot(Snapshot):
    """A snapshot whose hash is written in the link of the batch it was taken with (``link``:
    that link's sequence number)."""

    TOPIC = SNAPSHOT_TOPIC
    link: int


register_topic(SNAPSHOT_TOPIC, ChainedSnapshot)


def canonical(value: Any) -> bytes:
    """Sorted keys, no spaces, UTF-8: the bytes the ledger's transcoder writes too."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _id_bytes(originator_id: UUID | str) -> bytes:
    return (originator_id if isinstance(originator_id, UUID) else UUID(originator_id)).bytes


def event_hash(index: int, originator_id: UUID | str, version: int, topic: str, state: bytes
               ) -> bytes:
    """SHA-256(prefix || index (8 bytes) || originator id (16) || version (8) || topic length
    (2) || topic || state), all integers big-endian."""
    t = topic.encode()
    h = hashlib.sha256(EVENT_PREFIX)
    h.update(_EVENT_HEAD.pack(index, _id_bytes(originator_id), version, len(t)))
    h.update(t)
    h.update(state)
    return h.digest()


def snapshot_hash(originator_id: UUID | str, version: int, topic: str, state: bytes) -> bytes:
    t = topic.encode()
    h = hashlib.sha256(SNAPSHOT_PREFIX)
    h.update(_SNAPSHOT_HEAD.pack(_id_bytes(originator_id), version, len(t)))
    h.update(t)
    h.update(state)
    return h.digest()


def link_message(body: Mapping[str, Any]) -> bytes:
    """What the key signs; its SHA-256 is the link's hash (the next link's ``prev``)."""
    return LINK_PREFIX + canonical(dict(body))


def link_body(state: Mapping[str, Any]) -> dict[str, Any]:
    """A stored link's signed body: its state without the signature."""
    return {k: v for k, v in state.items() if k not in ("signature", "class_version")}


def key_id(public: bytes) -> str:
    """First 8 bytes of SHA-256 of the raw 32-byte public key, hex (as checkpoints)."""
    return hashlib.sha256(public).hexdigest()[:16]


def public_bytes(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


# a trusted key (by id, the key held so the id stays its own) -> its 32 raw bytes (few keys)
_RAW: dict[int, tuple[Ed25519PublicKey, bytes]] = {}


def signature_valid(key: Ed25519PublicKey, signature: bytes, message: bytes) -> bool:
    """Whether ``key`` signed ``message`` (Ed25519): ``key.verify``'s answer, found faster.
    libsodium (PyNaCl's ``crypto_sign_open``, ~0.6x OpenSSL's time here) is asked first: what
    it accepts OpenSSL accepts too (its checks are OpenSSL's and more: S canonical, A and R
    canonical and not of small order, then the same equation [S]B - [k]A = R, cofactorless).
    Anything it refuses, or cannot take (a signature of another length), is decided by
    ``key.verify`` as before, so every refusal is OpenSSL's own (tests/regulator/
    test_signature.py compares the two on tampered signatures, wrong keys, malformed bytes)."""
    held = _RAW.get(id(key))
    if held is None or held[0] is not key:
        if len(_RAW) >= 256:
            _RAW.clear()
        held = _RAW[id(key)] = (key, public_bytes(key))
    raw = held[1]
    if len(signature) == 64:
        try:
            crypto_sign_open(signature + message, raw)
            return True
        except (CryptoError, ValueError, TypeError):
            pass
    try:
        key.verify(signature, message)
    except InvalidSignature:
        return False
    return True


@dataclass(frozen=True)
class Link:
    """A stored link, parsed."""

    seq: int
    position: int | None
    body: dict[str, Any]
    signature: bytes

    @cached_property
    def hash(self) -> bytes:
        return hashlib.sha256(link_message(self.body)).digest()

    @property
    def first(self) -> int:
        return int(self.body["first"])

    @property
    def count(self) -> int:
        return int(self.body["count"])

    @property
    def key_id(self) -> str:
        return str(self.body["key_id"])

    @property
    def site(self) -> str | None:
        """The site the link names (None: a link of a single site, or of the format before
        sites)."""
        site = self.body.get("site")
        return None if site is None else str(site)

    def verify(self, trusted: Mapping[str, Ed25519PublicKey]) -> str | None:
        """None if a trusted key signed it, else why not."""
        key = trusted.get(self.key_id)
        if key is None:
            return f"link {self.seq} is signed by key {self.key_id}, not a trusted one"
        if not signature_valid(key, self.signature, link_message(self.body)):
            return f"link {self.seq}: bad signature"
        return None

    @classmethod
    def parse(cls, state: bytes, position: int | None = None) -> Link:
        data = json.loads(state)
        return cls(int(data["seq"]), position, link_body(data), bytes.fromhex(data["signature"]))


class ChainKey:
    """The writer's Ed25519 signing key."""

    def __init__(self, private: Ed25519PrivateKey, made_here: bool = False) -> None:
        self.private = private
        self.public = public_bytes(private.public_key())
        self.key_id = key_id(self.public)
        self.made_here = made_here  # an ephemeral key: no other writer's links are checkable

    @classmethod
    def from_raw(cls, raw: bytes) -> ChainKey:
        return cls(Ed25519PrivateKey.from_private_bytes(raw))

    @classmethod
    def ephemeral(cls) -> ChainKey:
        return cls(Ed25519PrivateKey.generate(), made_here=True)

    def trusted(self) -> dict[str, Ed25519PublicKey]:
        return {self.key_id: self.private.public_key()}


@dataclass(frozen=True)
class Head:
    """The chain's end as this writer knows it: the last link's sequence number and hash, the
    next event's chain index, the last link's key and position."""

    seq: int = 0
    hash: bytes = b""
    next_index: int = 0
    key_id: str = ""
    position: int | None = None
    site: str | None = None  # the site the last link names


@dataclass(frozen=True)
class Pending:
    """A link made for a batch, not stored yet."""

    stored: StoredEvent
    head: Head  # the head once it is stored (position unknown until then)
    confirm: tuple[int, bytes] | None = None  # the save inserts only if the store still
    # holds this link (sequence number, stored bytes): the last this writer committed
    events: Sequence[StoredEvent] = ()  # the batch's events
    hashes: Sequence[bytes] = ()  # and their full hashes (chain indexes from ``first``)
    first: int = 0


class ChainWriter:
    """Makes each batch's link and follows the chain's head. A failed save (another writer's
    link collided, or anything else) makes it read the head from the store again before the
    next link: the links of one store form one chain whoever writes them."""

    def __init__(self, recorder: Any, key: ChainKey, head_file: str | Path | None = None,
                 site: str | None = None, check_site: bool = True) -> None:
        """``site``: the site every link names (None: none); ``check_site``: refuse a store
        whose last link names another site (off for a reader that never writes)."""
        self.recorder = recorder
        self.key = key
        self.site = site
        self.check_site = check_site
        self.head_file = Path(head_file) if head_file else None
        self.links_file = (self.head_file.with_name(self.head_file.name + ".links")
                           if self.head_file else None)
        self.rows = StoreRows(recorder)
        self.guard = ChainGuard(self.rows, key)
        self.broken: str | None = None  # why this writer stopped writing (None: it writes)
        self.checks = True  # off only in the bench's comparison (what the checks cost)
        self.in_insert = False  # the recorder's insert confirms the previous link itself
        self._mine_state: bytes | None = None  # the stored bytes of ``_mine``'s link
        self._head: Head | None = None  # None: read it from the store before the next link
        self._mine: Head | None = None  # the last link this writer committed (or its head file's)
        self._written = 0  # the highest link written to the head file
        self._lock = threading.Lock()
        self._head_fd: int | None = None
        self._links_fd: int | None = None

    # --- the head ---------------------------------------------------------------------------

    def stored_link(self, seq: int) -> Link | None:
        rows = self.recorder.select_events(CHAIN_ID, gt=seq - 1, lte=seq)
        return Link.parse(rows[0].state) if rows else None

    def _read_head(self) -> Head:
        row = self.rows.last_link()
        if row is None:
            return Head()
        link = _parse(row)
        return Head(link.seq, link.hash, link.first + link.count, link.key_id, row.position,
                    link.site)

    def head(self) -> Head:
        """The chain's head: remembered, or read from the store again (after a failed save,
        an outage, a regained lease): then the store must still hold the last link this
        writer committed, and a later last link must be one it trusts (``ChainBroken``)."""
        if self.broken is not None:
            raise ChainBroken(self.broken)
        if self._head is None:
            head = self._read_head()
            self._confirm(head)
            wrong = self.wrong_site(head)
            if wrong is not None:
                raise self._stop(f"{wrong}; writing stopped")
            self._head = head
        return self._head

    def wrong_site(self, head: Head) -> str | None:
        """Why this writer may not write after ``head`` (the store's last link): the store
        belongs to another site; None if it may (the same site, or a store no site named)."""
        if not self.check_site or head.site is None or head.site == self.site:
            return None
        mine = (f"not to site {self.site!r} (SABOT_SITE / --site)" if self.site is not None
                else "and this server names no site (SABOT_SITE / --site): set it to "
                     f"{head.site!r} if this is that site's server")
        return (f"the store belongs to site {head.site!r} (link {head.seq} of its evidence "
                f"chain, at position {head.position}, names it), {mine}: one store per site")

    def _stop(self, message: str) -> ChainBroken:
        """Stop writing: every later link is refused with ``message``."""
        self.broken = message
        return ChainBroken(message)

    def _confirm(self, head: Head) -> None:
        """``head`` (just read from the store) continues what this writer signed."""
        mine = self._mine
        if mine is not None and mine.seq > 0:
            if head.seq < mine.seq:
                where = f" (position {mine.position})" if mine.position is not None else ""
                raise self._stop(
                    f"link {mine.seq} is missing: this writer signed it{where}, but the store's "
                    f"evidence chain ends at link {head.seq}: the store went back in time (a "
                    "failover to a standby behind it, a backup restored in place, or its end "
                    "deleted); writing stopped")
            self._still_there(mine)
            if head.seq == mine.seq:
                return
        if head.seq == 0:
            return
        rows = self.rows.links(head.seq - 1, head.seq)
        bad = self.guard.accept(_parse(rows[0])) if rows else f"link {head.seq} vanished"
        if bad is not None:
            raise self._stop(f"position {head.position}: the store's last link is not one this "
                             f"writer trusts: {bad}; writing stopped")

    def _still_there(self, mine: Head) -> None:
        """The store still holds the last link this writer committed (one indexed read)."""
        found = self.rows.links(mine.seq - 1, mine.seq)
        if not found:
            end = self._read_head()
            where = f" (position {mine.position})" if mine.position is not None else ""
            raise self._stop(
                f"link {mine.seq} is missing: this writer signed it{where}, but the store's "
                f"evidence chain ends at link {end.seq}: the store went back in time (a failover "
                "to a standby behind it, a backup restored in place, or its end deleted); "
                "writing stopped")
        if found[0].state == self._mine_state:  # the bytes it stored: no need to parse
            return
        if _parse(found[0]).hash != mine.hash:
            raise self._stop(
                f"position {found[0].position}: link {mine.seq} in the store is not the link "
                f"{mine.seq} this writer signed: the chain was rewritten; writing stopped")
        self._mine_state = found[0].state

    def previous_gone(self) -> ChainBroken:
        """The insert found the store without the link this writer committed last: why."""
        mine = self._mine
        if self.broken is not None:
            return ChainBroken(self.broken)
        if mine is not None:
            try:
                self._still_there(mine)
            except ChainBroken as exc:
                return exc
        return self._stop(f"link {mine.seq if mine else 0} this writer signed is gone from "
                          "the store, or was rewritten; writing stopped")

    def forget(self) -> None:
        """The last save failed: read the head from the store next time."""
        self._head = None

    def check_head_file(self) -> Link | None:
        """Raise ``ChainBroken`` if the store's chain does not hold the last link this writer
        recorded in its head file (the store lost its end, or was rewritten); else that link
        (None: no head file, or an empty one)."""
        if self.head_file is None or not self.head_file.exists():
            return None
        try:
            data = read_head(self.head_file.read_text())
            seq, want = int(data["seq"]), bytes.fromhex(data["link"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ChainBroken(f"SABOT_CHAIN_HEAD: cannot read {self.head_file}: {exc}") from None
        if seq == 0:
            return None
        rows = self.rows.links(seq - 1, seq)
        found = _parse(rows[0]) if rows else None
        if found is None:
            end = self._read_head()
            raise ChainBroken(
                f"the store's evidence chain ends at link {end.seq}, but this writer signed "
                f"link {seq} (position {data.get('position')}, head file {self.head_file}): "
                "events were deleted from the store's end, or it was restored from an older "
                "backup; refusing to write"
            )
        if found.hash != want:
            raise ChainBroken(
                f"link {seq} in the store is not the one this writer signed (head file "
                f"{self.head_file}): the chain was rewritten; refusing to write"
            )
        self._written = seq
        self._mine = Head(seq, want, found.first + found.count, found.key_id, found.position)
        self.guard.vouch(seq, want)
        return found

    def check_at_start(self) -> int:
        """Check the store before the first write: it holds the head file's link
        (``check_head_file``), and the chain from there (without a head file: from its
        beginning, its last link trusted as its end) to the log's end verifies with this
        writer's key. ``ChainBroken`` naming the position; else the links checked."""
        wrong = self.wrong_site(self._read_head())
        if wrong is not None:
            raise WrongSite(f"{wrong}; refusing to write")
        start = self.check_head_file()
        try:
            n = self.guard.walk(start, start.position or 0 if start else 0, tofu=start is None)
        except ChainBroken as exc:
            raise ChainBroken(f"{exc}; refusing to write") from None
        log.info("evidence chain: %d link(s) checked from %s to the log's end", n,
                 f"link {start.seq}" if start is not None else "the chain's beginning")
        return n

    # --- making and committing links --------------------------------------------------------

    def link(self, stored: Sequence[StoredEvent], snapshots: Sequence[StoredEvent],
             timestamp: datetime) -> Pending:
        """The link closing a batch of stored events (and the snapshots saved with it). The
        store must still hold the last link this writer committed (``ChainBroken``)."""
        mine = self._mine
        confirm = None
        if self._head is not None and mine is not None and mine.seq > 0 and self.checks:
            if self.in_insert and self._mine_state is not None:
                confirm = (mine.seq, self._mine_state)  # in the insert: no read of its own
            else:
                self._still_there(mine)
        head = self.head()
        seq = head.seq + 1
        index = head.next_index
        hashes = []
        for s in stored:
            hashes.append(event_hash(index, s.originator_id, s.originator_version, s.topic,
                                     s.state))
            index += 1
        body: dict[str, Any] = {
            "seq": seq,
            "prev": head.hash.hex(),
            "first": head.next_index,
            "count": len(stored),
            "events": b"".join(h[:SHORT] for h in hashes).hex(),
            "digest": hashlib.sha256(b"".join(hashes)).hexdigest(),
            "snapshots": [
                snapshot_hash(s.originator_id, s.originator_version, s.topic, s.state).hex()
                for s in snapshots
            ],
            "key_id": self.key.key_id,
            "timestamp": {"_type_": "datetime_iso", "_data_": timestamp.isoformat()},
        }
        if self.site is not None:  # bound to its site by the signature (SABOT-CHAIN-1 + site)
            body["site"] = self.site
        if seq == 1:
            body["after"] = int(self.recorder.max_notification_id() or 0)
        if head.key_id != self.key.key_id:
            body["public_key"] = self.key.public.hex()
        message = link_message(body)
        signature = self.key.private.sign(message)
        state = canonical({**body, "signature": signature.hex()})
        event = StoredEvent(originator_id=CHAIN_ID, originator_version=seq, topic=LINKED_TOPIC,
                            state=state)
        after = Head(seq, hashlib.sha256(message).digest(), index, self.key.key_id,
                     site=self.site)
        return Pending(event, after, confirm, stored, hashes, head.next_index)

    def next_seq(self) -> int:
        return self.head().seq + 1

    def committed(self, pending: Pending, position: int | None,
                  positions: Sequence[int] = ()) -> None:
        """The batch and its link are stored (the link at ``position``, its events at
        ``positions``: remembered as checked, so loading them again costs a hash each)."""
        if positions and self.checks:
            self.guard.remember(
                [(p, e.originator_id if isinstance(e.originator_id, UUID)
                  else UUID(str(e.originator_id)), e.originator_version)
                 for p, e in zip(positions, pending.events, strict=False)],
                pending.first, pending.hashes)
        h = pending.head
        self._head = self._mine = Head(h.seq, h.hash, h.next_index, h.key_id, position, h.site)
        self._mine_state = pending.stored.state
        self.guard.vouch(h.seq, h.hash)
        if self.head_file is not None:
            self._write_head_file(self._head)

    def _write_head_file(self, head: Head) -> None:
        """Write the head in place, into one of two fixed slots by turns (one ``pwrite``, no
        new file, no fsync: a few microseconds): a write torn by a crash spoils one slot, and
        the other still holds the head before it. A head the crash lost only lags the store."""
        data = json.dumps({"format": HEAD_FORMAT, "seq": head.seq, "link": head.hash.hex(),
                           "position": head.position, "events": head.next_index,
                           "key_id": head.key_id}, sort_keys=True).encode()
        if len(data) > HEAD_SLOT - 1:
            raise ValueError("chain head too long for its slot")
        record = data + b" " * (HEAD_SLOT - 1 - len(data)) + b"\n"
        assert self.head_file is not None and self.links_file is not None
        with self._lock:
            if head.seq <= self._written:  # never over a later link this writer signed
                log.error("evidence chain: link %d not written to %s, which holds link %d",
                          head.seq, self.head_file, self._written)
                return
            if self._head_fd is None:
                self._head_fd = os.open(self.head_file, os.O_RDWR | os.O_CREAT, 0o600)
            if self._links_fd is None:
                self._links_fd = os.open(self.links_file,
                                         os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            os.pwrite(self._head_fd, record, (head.seq % 2) * HEAD_SLOT)
            os.write(self._links_fd, data + b"\n")
            self._written = head.seq

    def close(self) -> None:
        with self._lock:
            for fd in (self._head_fd, self._links_fd):
                if fd is not None:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            self._head_fd = self._links_fd = None


def read_head(text: str) -> dict[str, Any]:
    """The head a head file holds: of its slots (JSON lines), the valid one with the highest
    ``seq``. ValueError if none is valid."""
    best: dict[str, Any] | None = None
    for line in text.splitlines():
        try:
            data = json.loads(line)
            if data.get("format") != HEAD_FORMAT:
                continue
            int(data["seq"])
            bytes.fromhex(data["link"])
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        if best is None or int(data["seq"]) > int(best["seq"]):
            best = data
    if best is None:
        raise ValueError("no SABOT-CHAIN-HEAD-1 record")
    return best


def chained_snapshot(snapshot: Any, link: int) -> ChainedSnapshot:
    """A taken snapshot, bound to the link of the batch it is saved with."""
    make: Any = ChainedSnapshot
    snap: ChainedSnapshot = make(
        originator_id=snapshot.originator_id, originator_version=snapshot.originator_version,
        timestamp=snapshot.timestamp, topic=snapshot.topic, state=snapshot.state, link=link,
    )
    return snap


class VerifiedSnapshots(EventStore):  # type: ignore[type-arg]
    """The snapshot store, read through a check: a snapshot is used only if its hash is in
    the link it names and a trusted key signed that link. Any other (edited, inserted, taken
    before the chain, or under a key not trusted here) is refused and reported, and the
    aggregate loads from its events instead."""

    def __init__(self, inner: EventStore, events_recorder: Any,  # type: ignore[type-arg]
                 trusted: Mapping[str, Ed25519PublicKey] | None = None) -> None:
        super().__init__(inner.mapper, inner.recorder)
        self.events_recorder = events_recorder
        self.trusted: Mapping[str, Ed25519PublicKey] = trusted or {}
        self.verify = True  # off only with evidence off (the bench's comparison)
        self.refused: list[tuple[UUID | str, int, str]] = []  # the latest refusals (reported)

    def get(self, originator_id: UUID, *, gt: int | None = None, lte: int | None = None,
            desc: bool = False, limit: int | None = None) -> Iterator[Any]:
        if not self.verify:
            return super().get(originator_id, gt=gt, lte=lte, desc=desc, limit=limit)
        rows = self.recorder.select_events(originator_id=originator_id, gt=gt, lte=lte,
                                           desc=desc, limit=limit)
        out = []
        for row in rows:
            why = self.problem(row)
            if why is None:
                out.append(self.mapper.to_domain_event(row))
                continue
            self.refused.append((row.originator_id, row.originator_version, why))
            del self.refused[:-100]
            # an unknown key is no sign of tampering (a reader without the key, a key rotated
            # since): the aggregate just loads from its events
            level = logging.ERROR if "not a trusted" not in why else logging.INFO
            log.log(level, "snapshot of %s at version %d refused: %s; loading from its events",
                    row.originator_id, row.originator_version, why)
        return iter(out)

    def problem(self, row: StoredEvent) -> str | None:
        """None if the stored snapshot is the one its link vouches for."""
        if row.topic != SNAPSHOT_TOPIC:
            return "taken without evidence (no link names it)"
        try:
            seq = int(json.loads(row.state)["link"])
        except (ValueError, KeyError, TypeError):
            return "malformed: no link"
        stored = self.events_recorder.select_events(CHAIN_ID, gt=seq - 1, lte=seq)
        if not stored:
            return f"it names link {seq}, which is not in the store"
        try:
            link = Link.parse(stored[0].state)
        except (ValueError, KeyError, TypeError):
            return f"link {seq} is malformed"
        bad = link.verify(self.trusted)
        if bad is not None:
            return bad
        mine = snapshot_hash(row.originator_id, row.originator_version, row.topic,
                             row.state).hex()
        if mine not in link.body.get("snapshots", []):
            return f"it does not match the hash link {seq} recorded (edited?)"
        return None


class VerifiedEvents(EventStore):  # type: ignore[type-arg]
    """The events store, read through the writer's check (``ChainGuard``): an aggregate's
    events are used only if links this writer trusts cover them, else ``ChainBroken`` (the
    writer stops writing). Without a guard (evidence off) it is the library's store."""

    def __init__(self, inner: EventStore) -> None:  # type: ignore[type-arg]
        super().__init__(inner.mapper, inner.recorder)
        self.guard: ChainGuard | None = None

    def get(self, originator_id: UUID, *, gt: int | None = None, lte: int | None = None,
            desc: bool = False, limit: int | None = None) -> Iterator[Any]:
        guard = self.guard
        if guard is None:
            return super().get(originator_id, gt=gt, lte=lte, desc=desc, limit=limit)
        rows = guard.rows.stream(originator_id, gt, lte, desc, limit)
        whole = lte is None and limit is None and not desc  # to the aggregate's end
        guard.check(rows, UUID(str(originator_id)) if whole else None, gt)
        to_domain = self.mapper.to_domain_event
        return iter([to_domain(row.stored()) for row in rows])


def load_chain_key(text: str, field: str = "SABOT_CHAIN_KEY") -> bytes:
    """The raw 32-byte Ed25519 private key from 64 hex digits or a key file (hex, or the PEM
    that ``sabot chain-keygen`` writes). ValueError naming ``field``."""
    text = text.strip()
    raw = text
    if len(text) != 64 or not all(c in "0123456789abcdefABCDEF" for c in text):
        path = Path(text)
        if not path.is_file():
            raise ValueError(f"{field}: 64 hex digits, or the path of a key file")
        data = path.read_bytes()
        if data.lstrip().startswith(b"-----BEGIN"):
            key = serialization.load_pem_private_key(data, password=None)
            if not isinstance(key, Ed25519PrivateKey):
                raise ValueError(f"{field}: {path} is not an Ed25519 private key")
            return key.private_bytes_raw()
        raw = data.decode("ascii", "replace").strip()
    try:
        key_bytes = bytes.fromhex(raw)
    except ValueError:
        raise ValueError(f"{field}: not hexadecimal") from None
    if len(key_bytes) != 32:
        raise ValueError(f"{field}: must be 32 bytes (64 hex digits)")
    return key_bytes


__all__ = [
    "CHAIN_ID", "LINKED_TOPIC", "Chain", "ChainBroken", "ChainGuard", "ChainKey", "ChainWriter",
    "ChainedSnapshot", "EvidenceBroken", "Head", "Link", "StoreRows", "VerifiedEvents",
    "VerifiedSnapshots", "WrongSite", "canonical", "event_hash", "load_chain_key",
    "snapshot_hash",
]


# --- the writer's own check of what it loads (issue 20) -------------------------------------

PAGE = 256  # links per read while vouching for links under another key
SPAN = 50_000  # positions: an aggregate's unchecked events within it are checked in one read
# What ``ChainGuard`` remembers, each the oldest dropped first (measured with tracemalloc, per
# entry with its dict slot), so the ledger process holds at most ~19 MB of it:
# - positions whose event hash is remembered (a reload costs a SHA-256 an event, not a read of
#   its batch): ~240 bytes each (the position, the chain index, the 32-byte hash), 12 MB; ten
#   thousand stakes' events, filled within the first minute of a load;
CHECKED = 50_000
# - aggregates whose last checked event is remembered (one loaded without it lost it): ~270
#   bytes each (a UUID, a version, a position), 4.5 MB; every command adds its request, so
#   this covers the last ~16,000 commands' requests and the aggregates they touched;
LATEST = 16_384
# - links vouched for (a batch loaded again is not verified again): ~150 bytes each (a
#   sequence number, a 32-byte hash), 1.2 MB; the last ~8,000 batches' links (one a save)
VOUCHED = 8_192


@dataclass(frozen=True, slots=True)
class Row:
    """A stored event with its log position."""

    position: int
    originator_id: UUID
    version: int
    topic: str
    state: bytes

    def stored(self) -> StoredEvent:
        return StoredEvent(originator_id=self.originator_id, originator_version=self.version,
                           topic=self.topic, state=self.state)

    def hash(self, index: int) -> bytes:
        return event_hash(index, self.originator_id, self.version, self.topic, self.state)


class StoreRows:
    """The events table's rows with their log positions (SQLite: ``rowid``; PostgreSQL:
    ``notification_id``), read on the recorder's own connections."""

    def __init__(self, recorder: Any) -> None:
        self.recorder = recorder
        datastore: Any = getattr(recorder, "datastore", None)  # none: a bench's stub
        table = getattr(recorder, "events_table_name", "stored_events")
        self.postgres = hasattr(datastore, "schema")
        if self.postgres:
            from psycopg.sql import SQL, Identifier

            self._select: Any = SQL(
                "SELECT notification_id AS position, originator_id, originator_version, topic, "
                "state FROM {}.{} WHERE ").format(Identifier(datastore.schema), Identifier(table))
            self._pos = "notification_id"
        else:
            self._select = ("SELECT rowid AS position, originator_id, originator_version, "
                            f"topic, state FROM {table} WHERE ")
            self._pos = "rowid"

    def _query(self, where: str, params: Sequence[Any]) -> list[Row]:
        datastore = self.recorder.datastore
        if self.postgres:
            from psycopg.sql import SQL

            with datastore.get_connection() as conn, conn.cursor() as curs:
                curs.execute(self._select + SQL(where.replace("?", "%s")), list(params))
                found = curs.fetchall()
            return [Row(int(r["position"]), r["originator_id"], int(r["originator_version"]),
                        str(r["topic"]), bytes(r["state"])) for r in found]
        with datastore.transaction(commit=False) as c:
            c.execute(self._select + where, list(params))
            found = c.fetchall()
        return [Row(int(r[0]), UUID(str(r[1])), int(r[2]), str(r[3]), bytes(r[4]))
                for r in found]

    def _id(self, originator_id: UUID | str) -> Any:
        oid = originator_id if isinstance(originator_id, UUID) else UUID(str(originator_id))
        return oid if self.postgres else oid.hex

    def stream(self, originator_id: UUID | str, gt: int | None = None, lte: int | None = None,
               desc: bool = False, limit: int | None = None) -> list[Row]:
        """One aggregate's events, as the library's ``select_events`` reads them."""
        where = "originator_id = ?"
        params: list[Any] = [self._id(originator_id)]
        if gt is not None:
            where += " AND originator_version > ?"
            params.append(gt)
        if lte is not None:
            where += " AND originator_version <= ?"
            params.append(lte)
        where += " ORDER BY originator_version" + (" DESC" if desc else "")
        if limit is not None:
            where += " LIMIT ?"
            params.append(limit)
        return self._query(where, params)

    def after(self, position: int, limit: int) -> list[Row]:
        return self._query(f"{self._pos} > ? ORDER BY {self._pos} LIMIT ?", (position, limit))

    def before(self, position: int, limit: int) -> list[Row]:
        return self._query(f"{self._pos} < ? ORDER BY {self._pos} DESC LIMIT ?",
                           (position, limit))

    def links(self, gt: int, lte: int) -> list[Row]:
        """The chain's links ``gt`` < seq <= ``lte``, in order."""
        return self.stream(CHAIN_ID, gt=gt, lte=lte)

    def last_link(self) -> Row | None:
        rows = self.stream(CHAIN_ID, desc=True, limit=1)
        return rows[0] if rows else None


def _parse(row: Row) -> Link:
    try:
        link = Link.parse(row.state, row.position)
        int(link.first) + int(link.count)
    except (ValueError, KeyError, TypeError):
        raise ChainBroken(f"position {row.position}: a malformed link") from None
    return link


class ChainGuard:
    """What the writer checks before it spends an event it loads (issue 20): the event is
    covered by a link it has checked, and is the event that link hashed.

    A loaded event's batch (from the link before it to the link that closes it) is checked
    once, as ``sabot-verify`` checks it: the closing link is one this writer trusts, it
    follows the opening link (sequence number, previous hash, first chain index), and each
    event of the batch matches its slot; then each of its events' full hashes is remembered
    by position (``CHECKED`` of them), so loading it again costs one SHA-256. A link this
    writer trusts is signed by its key, or vouched for by the previous-hash chain from one
    it trusts (its head file's link; a link signed by its key): links signed before a key
    rotation, or by an ephemeral key, are checked that way. A problem raises ``ChainBroken``
    naming the position."""

    def __init__(self, rows: StoreRows, key: ChainKey) -> None:
        self.rows = rows
        self.trusted = key.trusted()
        # with a key made for this process only (no SABOT_CHAIN_KEY: tests, a throwaway store)
        # another writer's links cannot be told from forged ones: their places and hashes
        # are checked, not who signed them
        self.lenient = key.made_here
        self.vouched: dict[int, bytes] = {}  # seq -> hash of links known good
        self.checked: dict[int, tuple[int, bytes]] = {}  # position -> (chain index, hash)
        self.latest: dict[UUID, tuple[int, int]] = {}  # aggregate -> its last checked event
        # (version, position): an aggregate loaded without it lost it
        self._after: int | None = None  # link 1's "after": events up to it precede the chain
        self._lock = threading.RLock()
        # how many of each are remembered, at most (see CHECKED, LATEST, VOUCHED)
        self.sizes = {"checked": CHECKED, "latest": LATEST, "vouched": VOUCHED}

    # --- links --------------------------------------------------------------------------

    def after(self) -> int | None:
        """The log position the chain began after (None: the store holds no link yet)."""
        if self._after is None:
            first = self.rows.links(0, 1)
            if first:
                self._after = int(_parse(first[0]).body.get("after", 0))
        return self._after

    def vouch(self, seq: int, digest: bytes) -> None:
        vouched = self.vouched
        with self._lock:
            vouched[seq] = digest
            while len(vouched) > self.sizes["vouched"]:  # the oldest first (in sequence)
                del vouched[next(iter(vouched))]

    def accept(self, link: Link) -> str | None:
        """None if this writer trusts ``link``, else why not."""
        known = self.vouched.get(link.seq)
        if known is not None:
            return None if known == link.hash else (
                f"link {link.seq} is not the link {link.seq} this writer knows (rewritten)")
        if link.key_id in self.trusted:
            bad = link.verify(self.trusted)
            if bad is None:
                self.vouch(link.seq, link.hash)
            return bad
        if self.lenient:
            return None
        return self._vouch_by_later(link)

    def _vouch_by_later(self, link: Link) -> str | None:
        """A link signed by a key this writer does not hold: good if the links after it
        chain (previous hashes) to one it trusts."""
        chain = [link]
        seq = link.seq
        while True:
            later = self.rows.links(seq, seq + PAGE)
            for row in later:
                nxt = _parse(row)
                prev = chain[-1]
                if nxt.seq != prev.seq + 1 or nxt.body.get("prev") != prev.hash.hex():
                    return f"link {nxt.seq} does not follow link {prev.seq}"
                known = self.vouched.get(nxt.seq)
                good = (known == nxt.hash) if known is not None else (
                    nxt.key_id in self.trusted and nxt.verify(self.trusted) is None)
                if known is not None and not good:
                    return f"link {nxt.seq} is not the link {nxt.seq} this writer knows"
                if good:
                    for each in chain:
                        self.vouch(each.seq, each.hash)
                    self.vouch(nxt.seq, nxt.hash)
                    return None
                chain.append(nxt)
            if len(later) < PAGE:
                return (f"link {link.seq} is signed by key {link.key_id}, which this writer "
                        "does not hold, and no link it trusts follows it")
            seq += PAGE

    # --- batches ------------------------------------------------------------------------

    def check_batch(self, opening: Link | None, rows: Sequence[Row], closing_row: Row,
                    accept: bool = True) -> Link:
        """Check one batch: ``rows`` (log order) between the link ``opening`` (None: the
        chain's beginning) and the link stored at ``closing_row``; remember its events'
        hashes. Returns the closing link; ``ChainBroken`` naming the first bad position."""
        closing = _parse(closing_row)
        at = closing_row.position
        if accept:
            bad = self.accept(closing)
            if bad is not None:
                raise ChainBroken(f"position {at}: {bad}")
        start = rows[0].position if rows else at
        if opening is None:
            if closing.seq != 1:
                raise ChainBroken(f"position {start}: link(s) 1 to {closing.seq - 1} missing "
                                  "before it (deleted?)")
            if closing.first != 0 or closing.body.get("prev"):
                raise ChainBroken(f"position {at}: the first link does not start the chain")
        else:
            if closing.seq != opening.seq + 1 or closing.first != opening.first + opening.count:
                raise ChainBroken(f"position {start}: link(s) {opening.seq + 1} to "
                                  f"{closing.seq - 1} missing (deleted?)"
                                  if closing.seq > opening.seq + 1 else
                                  f"position {at}: link {closing.seq} out of place (expected "
                                  f"link {opening.seq + 1})")
            if closing.body.get("prev") != opening.hash.hex():
                raise ChainBroken(f"position {at}: link {closing.seq} does not follow link "
                                  f"{opening.seq}")
            if accept:  # the closing link, trusted, vouches for the one it follows
                self.vouch(opening.seq, opening.hash)
        try:
            short = bytes.fromhex(str(closing.body["events"]))
            digest = str(closing.body["digest"])
        except (KeyError, ValueError, TypeError):
            raise ChainBroken(f"position {at}: a malformed link") from None
        previous = opening.position if opening is not None and opening.position else start - 1
        hashes = []
        for j, row in enumerate(rows):
            if j >= closing.count:
                raise ChainBroken(f"position {min(row.position, previous + 1)}: not in link "
                                  f"{closing.seq}'s batch (inserted?)")
            h = row.hash(closing.first + j)
            if h[:SHORT] != short[j * SHORT:(j + 1) * SHORT]:
                raise ChainBroken(f"position {min(row.position, previous + 1)}: does not match "
                                  f"slot {j} of link {closing.seq} (edited, inserted, deleted or "
                                  "moved)")
            hashes.append(h)
            previous = row.position
        if len(rows) < closing.count:
            raise ChainBroken(f"position {previous + 1}: {closing.count - len(rows)} event(s) "
                              f"of link {closing.seq} missing (deleted?)")
        if hashlib.sha256(b"".join(hashes)).hexdigest() != digest:
            raise ChainBroken(f"position {start}: the events of link {closing.seq} do not "
                              "match its digest")
        self.remember([(row.position, row.originator_id, row.version) for row in rows],
                      closing.first, hashes)
        return closing

    def remember(self, events: Sequence[tuple[int, UUID, int]], first: int,
                 hashes: Sequence[bytes]) -> None:
        """Events checked (or just committed by this writer): (position, aggregate, version)
        each, the first one's chain index, their full hashes. An aggregate whose last event
        is newer moves to the end of ``latest`` (the ones not seen for longest go first)."""
        with self._lock:
            checked, latest = self.checked, self.latest
            for j, (position, oid, version) in enumerate(events):
                checked[position] = (first + j, hashes[j])
                known = latest.get(oid)
                if known is None or known[0] < version:
                    if known is not None:
                        del latest[oid]
                    latest[oid] = (version, position)
            for table, most in ((checked, self.sizes["checked"]),
                                (latest, self.sizes["latest"])):
                if len(table) > most:
                    for old in list(itertools.islice(table, len(table) - most)):
                        del table[old]  # type: ignore[arg-type]

    def _pages(self, read: Any, position: int) -> Iterator[Row]:
        """Rows from ``position`` on (``read``: ``rows.before`` or ``rows.after``), read in
        pages of 16 rows first (a link closes every batch: one is usually near), growing."""
        size = 16
        while True:
            page = read(position, size)
            yield from page
            if len(page) < size:
                return
            position = page[-1].position
            size = min(size * 4, 4096)

    def _link_before(self, position: int) -> tuple[Row | None, list[Row]]:
        """The last link before ``position`` (None: the chain's beginning), and the events
        between it and ``position`` (in log order)."""
        after = self.after()
        back: list[Row] = []
        for row in self._pages(self.rows.before, position):
            if row.topic == LINKED_TOPIC:
                return row, back[::-1]
            if after is not None and row.position <= after:
                break
            back.append(row)
        return None, back[::-1]

    def _batch_of(self, position: int) -> None:
        """Read and check the batch holding the event at ``position``."""
        opening_row, rows = self._link_before(position)
        closing_row: Row | None = None
        for row in self._pages(self.rows.after, position - 1):
            if row.topic == LINKED_TOPIC:
                closing_row = row
                break
            rows.append(row)
        if closing_row is None:
            first = rows[0].position if rows else position
            raise ChainBroken(f"position {first}: stored after the last link, covered by none "
                              "(inserted?)")
        opening = _parse(opening_row) if opening_row is not None else None
        self.check_batch(opening, rows, closing_row)

    def _range(self, lo: int, hi: int) -> None:
        """Check every batch from the one holding ``lo`` to the one holding ``hi``, reading
        the log once (an aggregate's events spread over many batches)."""
        opening_row, pending = self._link_before(lo)
        opening = _parse(opening_row) if opening_row is not None else None
        for row in self._pages(self.rows.after, lo - 1):
            if row.topic != LINKED_TOPIC:
                pending.append(row)
                continue
            opening, pending = self.check_batch(opening, pending, row), []
            if row.position > hi:
                return
        if pending:
            raise ChainBroken(f"position {pending[0].position}: stored after the last link, "
                              "covered by none (inserted?)")

    def check(self, rows: Sequence[Row], stream: UUID | None = None, gt: int | None = None
              ) -> None:
        """``ChainBroken`` unless every row (loaded to be used) is the event a link this
        writer trusts covers. Events stored before the chain began are covered by none.
        ``stream``: the rows are that aggregate's events after version ``gt``, to its end:
        its last event checked before must be among them (else it was deleted)."""
        with self._lock:
            if stream is not None:
                seen = self.latest.get(stream)
                last = max((row.version for row in rows), default=gt or 0)
                if seen is not None and seen[0] > last:
                    raise ChainBroken(f"position {seen[1]}: event {seen[0]} of {stream} is "
                                      "gone from the store (deleted?)")
            if not rows:
                return
            after = self.after()
            if after is None:
                return  # no link yet: every event precedes the chain
            checked = self.checked
            new = [row.position for row in rows
                   if row.position > after and row.position not in checked]
            if new and max(new) - min(new) <= min(SPAN, 16 * len(new) + 256):
                # their batches close together: one read over them all
                self._range(min(new), max(new))
            for row in rows:
                if row.position <= after:
                    continue
                known = checked.get(row.position)
                if known is None:
                    self._batch_of(row.position)
                    known = checked.get(row.position)
                if known is not None and row.hash(known[0]) == known[1]:
                    continue
                # the row read is not the one checked: read its batch again, from the store
                checked.pop(row.position, None)
                self._batch_of(row.position)
                known = checked.get(row.position)
                if known is None or row.hash(known[0]) != known[1]:
                    raise ChainBroken(f"position {row.position}: not the event its link covers "
                                      "(changed while it was read)")
            if stream is not None:
                self._gapless(rows, stream, gt)

    def _gapless(self, rows: Sequence[Row], stream: UUID, gt: int | None) -> None:
        """An aggregate's events after ``gt`` follow each other, version after version: a
        missing one (deleted from a batch checked before) is looked for again in the store
        between its neighbours, to name its position."""
        expected, previous = (gt or 0) + 1, None
        for row in sorted(rows, key=lambda r: r.version):
            if row.version != expected:
                lo = previous.position if previous is not None else row.position
                self._range(lo, row.position)  # raises, naming the first bad position
                raise ChainBroken(f"position {row.position}: event {expected} of {stream} is "
                                  "gone from the store (deleted?)")
            expected, previous = row.version + 1, row

    # --- the walk at start --------------------------------------------------------------

    def walk(self, start: Link | None, start_position: int, tofu: bool) -> int:
        """Check the chain from the link ``start`` (stored at ``start_position``; None: the
        chain's beginning) to the log's end; ``tofu``: the store's last link is trusted as
        its end (no head file says what this writer signed). Returns the links checked."""
        with self._lock:
            after = self.after()
            if after is None:
                return 0
            position = start_position if start is not None else after
            opening = start
            pending: list[Row] = []
            foreign: list[tuple[Link, int]] = []  # links awaiting a trusted one after them
            n = 0
            while True:
                page = self.rows.after(position, 2000)
                for row in page:
                    if row.topic != LINKED_TOPIC:
                        pending.append(row)
                        continue
                    link = _parse(row)
                    own = link.key_id in self.trusted
                    if own:
                        bad = link.verify(self.trusted)
                        if bad is not None:
                            raise ChainBroken(f"position {row.position}: {bad}")
                    closing = self.check_batch(opening, pending, row, accept=False)
                    n += 1
                    if own or self.vouched.get(link.seq) == link.hash:
                        for each, _ in foreign:
                            self.vouch(each.seq, each.hash)
                        foreign = []
                        self.vouch(link.seq, link.hash)
                    else:
                        foreign.append((link, row.position))
                    opening, pending = closing, []
                if len(page) < 2000:
                    break
                position = page[-1].position
            if pending:
                raise ChainBroken(f"position {pending[0].position}: stored after the last "
                                  "link, covered by none (inserted?)")
            if foreign and not tofu and not self.lenient:
                link, at = foreign[0]
                raise ChainBroken(f"position {at}: link {link.seq} is signed by key "
                                  f"{link.key_id}, which this writer does not hold, and no "
                                  "link it trusts follows it")
            for each, _ in foreign:
                self.vouch(each.seq, each.hash)
            return n
