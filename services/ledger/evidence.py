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
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import struct
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID, uuid5

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from eventsourcing.domain import Aggregate, Snapshot
from eventsourcing.persistence import EventStore, StoredEvent
from eventsourcing.utils import register_topic

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
    """The store's chain does not reach what this writer signed (truncated or rewritten)."""


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


@dataclass(frozen=True)
class Link:
    """A stored link, parsed."""

    seq: int
    position: int | None
    body: dict[str, Any]
    signature: bytes

    @property
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

    def verify(self, trusted: Mapping[str, Ed25519PublicKey]) -> str | None:
        """None if a trusted key signed it, else why not."""
        key = trusted.get(self.key_id)
        if key is None:
            return f"link {self.seq} is signed by key {self.key_id}, not a trusted one"
        try:
            key.verify(self.signature, link_message(self.body))
        except InvalidSignature:
            return f"link {self.seq}: bad signature"
        return None

    @classmethod
    def parse(cls, state: bytes, position: int | None = None) -> Link:
        data = json.loads(state)
        return cls(int(data["seq"]), position, link_body(data), bytes.fromhex(data["signature"]))


class ChainKey:
    """The writer's Ed25519 signing key."""

    def __init__(self, private: Ed25519PrivateKey) -> None:
        self.private = private
        self.public = public_bytes(private.public_key())
        self.key_id = key_id(self.public)

    @classmethod
    def from_raw(cls, raw: bytes) -> ChainKey:
        return cls(Ed25519PrivateKey.from_private_bytes(raw))

    @classmethod
    def ephemeral(cls) -> ChainKey:
        return cls(Ed25519PrivateKey.generate())

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


@dataclass(frozen=True)
class Pending:
    """A link made for a batch, not stored yet."""

    stored: StoredEvent
    head: Head  # the head once it is stored (position unknown until then)


class ChainWriter:
    """Makes each batch's link and follows the chain's head. A failed save (another writer's
    link collided, or anything else) makes it read the head from the store again before the
    next link: the links of one store form one chain whoever writes them."""

    def __init__(self, recorder: Any, key: ChainKey, head_file: str | Path | None = None
                 ) -> None:
        self.recorder = recorder
        self.key = key
        self.head_file = Path(head_file) if head_file else None
        self._head: Head | None = None  # None: read it from the store before the next link
        self._lock = threading.Lock()
        self._head_fd: int | None = None

    # --- the head ---------------------------------------------------------------------------

    def stored_link(self, seq: int) -> Link | None:
        rows = self.recorder.select_events(CHAIN_ID, gt=seq - 1, lte=seq)
        return Link.parse(rows[0].state) if rows else None

    def _read_head(self) -> Head:
        rows = self.recorder.select_events(CHAIN_ID, desc=True, limit=1)
        if not rows:
            return Head()
        link = Link.parse(rows[0].state)
        return Head(link.seq, link.hash, link.first + link.count, link.key_id)

    def head(self) -> Head:
        if self._head is None:
            self._head = self._read_head()
        return self._head

    def forget(self) -> None:
        """The last save failed: read the head from the store next time."""
        self._head = None

    def check_head_file(self) -> None:
        """Raise ``ChainBroken`` if the store's chain does not hold the last link this writer
        recorded in its head file (the store lost its end, or was rewritten)."""
        if self.head_file is None or not self.head_file.exists():
            return
        try:
            data = read_head(self.head_file.read_text())
            seq, want = int(data["seq"]), bytes.fromhex(data["link"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ChainBroken(f"SABOT_CHAIN_HEAD: cannot read {self.head_file}: {exc}") from None
        if seq == 0:
            return
        found = self.stored_link(seq)
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

    # --- making and committing links --------------------------------------------------------

    def link(self, stored: Sequence[StoredEvent], snapshots: Sequence[StoredEvent],
             timestamp: datetime) -> Pending:
        """The link closing a batch of stored events (and the snapshots saved with it)."""
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
        if seq == 1:
            body["after"] = int(self.recorder.max_notification_id() or 0)
        if head.key_id != self.key.key_id:
            body["public_key"] = self.key.public.hex()
        message = link_message(body)
        signature = self.key.private.sign(message)
        state = canonical({**body, "signature": signature.hex()})
        event = StoredEvent(originator_id=CHAIN_ID, originator_version=seq, topic=LINKED_TOPIC,
                            state=state)
        after = Head(seq, hashlib.sha256(message).digest(), index, self.key.key_id)
        return Pending(event, after)

    def next_seq(self) -> int:
        return self.head().seq + 1

    def committed(self, pending: Pending, position: int | None) -> None:
        """The batch and its link are stored (the link at ``position``)."""
        h = pending.head
        self._head = Head(h.seq, h.hash, h.next_index, h.key_id, position)
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
        assert self.head_file is not None
        with self._lock:
            if self._head_fd is None:
                self._head_fd = os.open(self.head_file, os.O_RDWR | os.O_CREAT, 0o600)
            os.pwrite(self._head_fd, record, (head.seq % 2) * HEAD_SLOT)

    def close(self) -> None:
        with self._lock:
            if self._head_fd is not None:
                with contextlib.suppress(OSError):
                    os.close(self._head_fd)
                self._head_fd = None


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
    "CHAIN_ID", "LINKED_TOPIC", "Chain", "ChainBroken", "ChainKey", "ChainWriter",
    "ChainedSnapshot", "Head", "Link", "VerifiedSnapshots", "canonical", "event_hash",
    "load_chain_key", "snapshot_hash",
]
