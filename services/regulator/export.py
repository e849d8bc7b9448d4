"""The canonical export (SABOT-EXPORT-2, docs/export-format.md): leaves and checkpoints, JSONL.

The default export covers the whole log up to the anchor: every leaf (account openings, cash in
and out before the first shoe, every shoe closed or in play), the stored snapshots, and the
closed shoes listed for the verifier to replay. A shoe in play at the anchor (its seed not
revealed yet) is held all the same, so that the chain and the money stay whole, and listed in
the header's ``pending``: its id, table, game, coups so far and why its card checks wait. A
narrower export covers ranges of the Merkle log's leaves: for a shoe, every leaf from its first
event to its last (and on past it, over any leaves whose events are gone from the store before
the next stored event; for a shoe not closed in the store, every later leaf whose event is
gone), plus its table's ``Opened`` event; for a time range, every leaf whose event's timestamp
falls in it. Every range is widened to whole batches of the evidence chain (from the link
before it to the link after it), so the verifier can check each batch against its signed link.
Each leaf is written with its position, its notarised hash and the stored content; a leaf whose
event is gone from the store is written with ``"event": null``, and a stored event that was
never notarised is written too, so the verifier can name the first tampered position. When the
anchor ends inside a batch (a checkpoint at a coup's end, while a server writes), the stored
events after it up to that batch's link follow as ``tail`` records.

A shoe's export (a Trente et Quarante shoe, the shoe of Treinta y Una rounds or of a Cuarenta
match) holds in full only what is the unit's (``unit_positions``): its shoe's, coups', rounds'
and matches' events, its table's events about it, every command (``Request.Recorded``) that
wrote one of them with all that command wrote (the postings it caused), and the chain's links.
Every other leaf of its ranges (another table's play in the same batches) is a ``leaf`` record:
its index, position, leaf hash and its hash in the evidence chain, so that the Merkle proof and
every link's digest still check, without its content.

What proves the leaves against the ONE anchor checkpoint is a multi-leaf proof: before each
range a ``nodes`` record gives the aligned complete subtrees covering the leaves since the last
range (``merkle.gap_blocks``: at most 2·log2 of the gap's size), and one after the last range
covers the rest of the tree; the verifier folds leaves and nodes into the tree head as the file
streams (``merkle.Frontier``). A whole-log export has no ``nodes`` at all: its leaves are the
tree. So a shoe's export costs its own leaves plus O(log n) hashes per range, not ~log2 n hashes
per leaf. ``proofs="each"`` writes the older SABOT-EXPORT-1 (an inclusion proof in every event
record), which sabot-verify still reads.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from services.ledger.actor import SYSTEM
from services.ledger.evidence import event_hash
from services.ledger.table import UNRECORDED_GAME
from services.regulator.actors import command_actors
from services.regulator.canonical import canonical_json
from services.regulator.chain import (
    ChainProblem,
    chain_problems,
    genesis,
    link_at_or_after,
    link_before,
    parse_link,
)
from services.regulator.checkpoint import Checkpoint, origin_site
from services.regulator.merkle import MemoryTree, ProofError, gap_blocks
from services.regulator.notary import Notary, missing_leaves
from services.regulator.source import EventTable, RawEvent, SnapshotTable
from services.regulator.vocabulary import shoe_events, shoe_of_coup, state
from services.topics import (
    CHAIN_LINKED,
    COUP,
    COUP_EVENTS,
    COUP_OPENED,
    COUP_SETTLED,
    CUARENTA_MATCH,
    REQUEST_RECORDED,
    SHOE,
    SHOE_CLOSED,
    SHOE_EVENTS,
    SHOE_SHUFFLED,
    TABLE_OPENED,
    TREINTA_Y_UNA_ROUND,
)

FORMAT = "SABOT-EXPORT-2"  # one multi-leaf proof against the anchor (``nodes`` records)
FORMAT_EACH = "SABOT-EXPORT-1"  # an inclusion proof in every event record (``proofs="each"``)
PROOF_STYLES = ("multi", "each")
PROOFS_IN_MEMORY_ABOVE = 2000  # leaves (SABOT-EXPORT-1); more: load every leaf hash once


class TextSink(Protocol):
    """Where the export's text goes (a text file, a StringIO, an RPC's batches)."""

    def write(self, text: str, /) -> int: ...


class ExportError(ValueError):
    """An export that cannot be made (nothing notarised, unknown shoe, ...)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class StoreTampered(ExportError):
    """The store's Merkle log contradicts itself (its leaves, nodes or checkpoints deleted or
    altered behind the notary): no export can be made of it; said in one line."""


def damaged(exc: Exception) -> StoreTampered:
    """The notary's tables failed under the export (a proof beyond the leaves held, a node
    missing): the store was tampered with."""
    what = exc.args[0] if exc.args else exc
    return StoreTampered("store", f"the store's Merkle log is damaged ({what}): rows of its "
                         "tables were deleted or altered behind the notary (tampered?)")


@dataclass
class ExportSummary:
    events: int = 0
    missing: int = 0  # notarised leaves whose event is gone from the store
    unnotarised: int = 0  # stored events inside the ranges that no leaf covers
    tail: int = 0  # stored events after the anchor, up to the link closing its last batch
    elided: int = 0  # leaves of the ranges not the unit's: written as their hashes
    snapshots: int = 0
    checkpoints: int = 0
    anchor: int = 0
    shoes: list[str] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)  # shoes in play at the anchor
    settled: set[str] = field(default_factory=set)  # coups whose end is exported
    chain_problems: list[ChainProblem] = field(default_factory=list)  # found while exporting


def shoe_ranges(events: EventTable, notary: Notary, shoe_id: str) -> list[tuple[int, int]]:
    """Leaf index ranges [first, last] covering one shoe (and its table's Opened event)."""
    found = shoe_events(events, shoe_id)
    if found is None:
        raise ExportError("shoe_id", f"no shoe {shoe_id}")
    evs = found.all_events()
    table_opened = [e for e in found.table if e.topic == TABLE_OPENED]
    inner = [e for e in evs if e not in table_opened]
    ranges = []
    for group in ([*table_opened], inner):
        if not group:
            continue
        first = notary.index_at_or_after(group[0].position)
        last = notary.index_at_or_after(group[-1].position)
        if last >= notary.size or notary.leaves(last, last + 1)[0][1] != group[-1].position:
            last -= 1  # the last event is not notarised (or its leaf is gone): stop before
        if group is inner:
            last = max(last, _missing_tail(events, notary, group[-1].position))
        if first <= last:
            ranges.append((first, last))
    if inner and not any(e.topic == SHOE_CLOSED for e in found.shoe):
        # not closed in the store (in play, or its Shoe.Closed deleted): its end is open, so
        # every later notarised event gone from the store is exported too
        start = notary.index_at_or_after(inner[-1].position + 1)
        ranges += [(i, i) for i in missing_leaves(events, notary, start)]
    return ranges


def _missing_tail(events: EventTable, notary: Notary, position: int) -> int:
    """The last leaf index before the next stored event after ``position``: the leaves past
    ``position``'s own are notarised events gone from the store (a deleted tail of the shoe,
    e.g. its ``Shoe.Closed``); on an untouched store there are none."""
    after = events.positions(position, 1)
    stop = notary.index_at_or_after(after[0]) if after else notary.size
    return stop - 1


def time_ranges(
    events: EventTable, notary: Notary, since: datetime | None, until: datetime | None,
    limit: int | None = None,
) -> tuple[list[tuple[int, int]], list[str], list[str]]:
    """The leaf range whose events' timestamps are in [since, until) (a scan of the log), the
    closed shoes it touches and the shoes in play it touches (closed or not at the anchor's
    position ``limit``; both exported whole, so that their coups can be verified: a shoe in
    play with the regulator's key)."""
    first = last = None
    touched: set[str] = set()
    coups: set[str] = set()
    for ev in events.iterate():
        ts = _timestamp(ev)
        if ts is None or (since is not None and ts < since) or (until is not None and ts >= until):
            continue
        if first is None:
            first = ev.position
        last = ev.position
        if ev.topic in SHOE_EVENTS:
            touched.add(ev.originator_id)
        elif ev.topic in COUP_EVENTS:
            coups.add(ev.originator_id)
    if first is None or last is None:
        return [], [], []
    for cid in coups:
        sid = shoe_of_coup(events, cid)
        if sid is not None:
            touched.add(sid)
    closed, in_play = shoes_at(events, limit)
    closed = [s for s in closed if s in touched]
    in_play = [s for s in in_play if s in touched]
    a, b = notary.index_at_or_after(first), notary.index_at_or_after(last)
    if b >= notary.size or notary.leaves(b, b + 1)[0][1] != last:
        b -= 1
    ranges = [(a, b)] if a <= b else []
    whole = [r for sid in closed + in_play for r in shoe_ranges(events, notary, sid)]
    return ranges + whole, closed, in_play


def shoes_at(events: EventTable, limit: int | None) -> tuple[list[str], list[str]]:
    """The shoes closed at log position ``limit`` (the anchor's last leaf; None: the whole
    store), in the order they closed, and the shoes in play there (shuffled, not closed by
    then), in the order they were shuffled."""
    closed = [e.originator_id for e in events.by_topic(SHOE_CLOSED)
              if limit is None or e.position <= limit]
    done = set(closed)
    in_play = [e.originator_id for e in events.by_topic(SHOE_SHUFFLED)
               if (limit is None or e.position <= limit) and e.originator_id not in done]
    return closed, in_play


PENDING_IN_PLAY = ("in play: its seed is revealed when it closes (Shoe.Closed); its card "
                   "checks are deferred (the regulator's key opens the escrowed seed)")
PENDING_CLOSED_LATER = ("in play at the anchor (closed after it): its card checks are deferred "
                        "to an export anchored after its close")


def pending_shoe(events: EventTable, shoe_id: str, limit: int | None) -> dict[str, Any] | None:
    """What the export says about a shoe it holds whose seed it does not reveal (in play at
    the anchor's position ``limit``): its id, table, game, coups so far and why; None for a
    shoe closed by then (or no shoe)."""
    found = shoe_events(events, shoe_id)
    if found is None:
        return None
    shuffled = found.shoe[0]
    if limit is not None and shuffled.position > limit:
        return None
    seen = [e for e in found.all_events() if limit is None or e.position <= limit]
    closed = [e for e in found.shoe if e.topic == SHOE_CLOSED]
    if any(e.topic == SHOE_CLOSED for e in seen):
        return None
    opened = [e for e in found.table if e.topic == TABLE_OPENED]
    game = state(opened[0]).get("game", UNRECORDED_GAME) if opened else None
    return {
        "shoe_id": found.shoe_id,
        "table_id": found.table_id,
        "game": game,
        "position": shuffled.position,  # of its Shoe.Shuffled
        "coups": sum(1 for e in seen if e.topic == COUP_OPENED),
        "settled": sum(1 for e in seen if e.topic == COUP_SETTLED),
        "reason": PENDING_CLOSED_LATER if closed else PENDING_IN_PLAY,
    }


def _timestamp(ev: RawEvent) -> datetime | None:
    ts = state(ev).get("timestamp")
    if not isinstance(ts, str):
        return None
    try:
        return datetime.fromisoformat(ts)
    except ValueError:
        return None


def merge(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def write_export(
    out: TextSink,
    events: EventTable,
    notary: Notary,
    public_key: bytes,
    *,
    shoe_ids: Sequence[str] | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    chain_keys: dict[str, Ed25519PublicKey] | None = None,
    known_sizes: Sequence[int] | None = None,
    proofs: str = "multi",
) -> ExportSummary:
    """Write the export of the whole log (default), of the shoes or of the time range;
    ``public_key`` is the checkpoint key's raw public half, named in the header;
    ``chain_keys``: the evidence chain's keys to check it with while exporting (default: the
    key its first link introduces); ``known_sizes``: sizes of checkpoints the regulator holds,
    whose consistency proofs to the anchor the anchor's record carries (``known``);
    ``proofs``: ``multi`` (SABOT-EXPORT-2, one multi-leaf proof) or ``each`` (SABOT-EXPORT-1,
    an inclusion proof per event, as before)."""
    if proofs not in PROOF_STYLES:
        raise ExportError("proofs", f"one of {', '.join(PROOF_STYLES)}, not {proofs!r}")
    anchor = notary.latest_checkpoint()
    if anchor is None:
        raise ExportError("store", "no signed checkpoint yet: run `sabot store checkpoint` first")
    if any(m <= 0 for m in known_sizes or ()):
        raise ExportError("known_size", "a tree size is 1 or more")
    if anchor.size > notary.size:
        raise StoreTampered("store", f"the latest signed checkpoint (size {anchor.size}) is "
                            f"beyond the {notary.size} leaves the store's Merkle log holds: "
                            "leaves were deleted (tampered?)")
    try:
        return _write_export(out, events, notary, anchor, public_key, shoe_ids, since, until,
                             chain_keys, sorted({m for m in known_sizes or () if m <= anchor.size}),
                             proofs == "each")
    except (ProofError, KeyError) as exc:  # the notary's own tables contradict each other
        raise damaged(exc) from None


def _write_export(
    out: TextSink, events: EventTable, notary: Notary, anchor: Checkpoint, public_key: bytes,
    shoe_ids: Sequence[str] | None, since: datetime | None, until: datetime | None,
    chain_keys: dict[str, Ed25519PublicKey] | None, known_sizes: list[int], each: bool,
) -> ExportSummary:
    summary = ExportSummary(anchor=anchor.size)
    whole = shoe_ids is None and since is None and until is None
    limit = anchor.position  # the log's position at the anchor: later events are not exported
    if since is not None or until is not None:
        ranges, shoes, in_play = time_ranges(events, notary, since, until, limit)
        summary.shoes = shoes
        selection: dict[str, Any] = {
            "since": since.isoformat() if since else None,
            "until": until.isoformat() if until else None,
            "shoes": shoes,
        }
    else:
        if shoe_ids is not None:  # the shoes asked for (no scan of the log by topic)
            shoes = in_play = list(shoe_ids)
        else:
            shoes, in_play = shoes_at(events, limit)
        summary.shoes = shoes
        if whole:  # every leaf: all the money, every shoe (its closed ones are replayed)
            ranges = [(0, anchor.size - 1)]
        else:
            ranges = [r for s in shoes for r in shoe_ranges(events, notary, s)]
        selection = {"shoes": shoes}
    ranges = merge((a, min(b, anchor.size - 1)) for a, b in ranges if a < anchor.size)
    if not whole:
        ranges = merge(whole_batches(events, notary, ranges, anchor.size))
    total = sum(b - a + 1 for a, b in ranges)
    # SABOT-EXPORT-1: a proof per leaf, from every leaf hash in memory for a large export
    tree = _tree(notary, anchor.size) if each and total > PROOFS_IN_MEMORY_ABOVE else None
    first_link = genesis(events)
    header: dict[str, Any] = {
        "kind": "header",
        "format": FORMAT_EACH if each else FORMAT,
        "origin": anchor.origin,
        "site": origin_site(anchor.origin),  # the site the signed anchor names (null: none)
        "checkpoint_key": public_key.hex(),
        "selection": selection,
        "coverage": "log" if whole else "ranges",
        "anchor": anchor.size,
        "ranges": [[a, b] for a, b in ranges],
    }
    # the shoes the export holds without their seed: listed, their card checks deferred
    found = (pending_shoe(events, sid, limit) for sid in in_play)
    summary.pending = [held for held in found if held is not None]
    header["pending"] = summary.pending
    if first_link is not None and "public_key" in first_link.body:
        header["chain_key"] = str(first_link.body["public_key"])
    _line(out, header)
    deleted: list[int] = []
    covered = 0  # leaves of the tree the records so far stand for (SABOT-EXPORT-2)
    unit = (unit_positions(events, notary, shoes, ranges)
            if shoe_ids is not None and not each else None)
    for a, b in ranges:
        if not each:
            _write_nodes(out, notary, covered, a)
        deleted += _write_range(out, events, notary, tree, anchor, a, b, summary, each, unit)
        covered = b + 1
    if not each:
        _write_nodes(out, notary, covered, anchor.size)
    if ranges and ranges[-1][1] == anchor.size - 1 and anchor.position is not None:
        _write_tail(out, events, anchor.position, summary)
    if whole:
        for snap in SnapshotTable(events.db).records():
            _line(out, {"kind": "snapshot", **snap})
            summary.snapshots += 1
    if shoe_ids is not None and events.db.table_exists("regulator_escrow"):
        # seeds escrowed beside the ledger (escrow_table.py): what a shoe in play needs
        for (sealed,) in events.db.rows("SELECT sealed FROM regulator_escrow ORDER BY id"):
            _line(out, {"kind": "escrow", "sealed": bytes(sealed).hex()})
    _write_checkpoints(out, notary, tree, anchor, ranges, summary, known_sizes)
    _write_end(out, summary, each)
    summary.chain_problems = _check_chain(events, notary, ranges, deleted, anchor,
                                          chain_keys)
    return summary


def _write_checkpoints(out: TextSink, notary: Notary, tree: MemoryTree | None,
                       anchor: Checkpoint, ranges: list[tuple[int, int]], summary: ExportSummary,
                       known_sizes: list[int]) -> None:
    """The checkpoints of the exported coups' ends and the anchor, each proven from the one
    before it (and the anchor from the regulator's own ``known_sizes``)."""
    first = ranges[0][0] if ranges else anchor.size - 1
    # the checkpoints of the exported coups' ends, and the anchor; each proven from the last
    cps = [
        c for c in notary.checkpoints(first + 1, anchor.size)
        if c.coup in summary.settled or c.size == anchor.size
    ]
    prev: Checkpoint | None = None
    for cp in cps:
        rec: dict[str, Any] = {"kind": "checkpoint", **cp.to_json()}
        if prev is not None:
            proof = tree.consistency_proof(prev.size, cp.size) if tree else (
                notary.consistency_proof(prev.size, cp.size)
            )
            rec["consistency"] = {"from": prev.size, "proof": [p.hex() for p in proof]}
        if cp.size == anchor.size and known_sizes:  # from the regulator's own checkpoints
            rec["known"] = [
                {"from": m, "proof": [p.hex() for p in (
                    tree.consistency_proof(m, cp.size) if tree
                    else notary.consistency_proof(m, cp.size))]}
                for m in known_sizes
            ]
        _line(out, rec)
        prev = cp
        summary.checkpoints += 1


def _write_end(out: TextSink, summary: ExportSummary, each: bool) -> None:
    """The end record: what the export holds, counted."""
    counts = {k: v for k, v in vars(summary).items()
              if k not in ("shoes", "settled", "chain_problems", "pending")}
    counts["pending"] = len(summary.pending)
    if each:  # SABOT-EXPORT-1's end record, as it was
        counts.pop("elided")
    _line(out, {"kind": "end", **counts})


# the topics' prefixes of a unit's own aggregates (shoe, coup, match, round)
GAME_AGGREGATES = tuple(f"{name}." for name in (SHOE, COUP, CUARENTA_MATCH, TREINTA_Y_UNA_ROUND))


@dataclass
class Unit:
    """What a shoe's export holds in full (``full``: positions), the chain hash of each other
    event of the ranges (``chain``: by position, for the links' digests), and where the chain
    began (``after``: events up to it precede the chain; None: no chain)."""

    full: set[int]
    chain: dict[int, bytes]
    after: int | None

    def before_chain(self, position: int) -> bool:
        return self.after is None or position <= self.after


def unit_positions(events: EventTable, notary: Notary, shoe_ids: Sequence[str],
                   ranges: Sequence[tuple[int, int]]) -> Unit:
    """The unit of ``shoe_ids`` inside ``ranges`` (leaf indices): the events of its shoes and
    their coups, rounds and matches (every game aggregate a command of theirs also wrote), its
    table's events about it, every command that wrote any of them with all its effects, and
    every chain link. Events of a batch whose stored events do not fill its link's slots (a
    store tampered with) are all kept in full, so the verifier names the fault."""
    keep: set[int] = set()
    aggregates: set[str] = set()
    for sid in shoe_ids:
        found = shoe_events(events, sid)
        if found is None:
            continue
        for ev in found.table:
            keep.add(ev.position)
        for ev in [*found.shoe, *(e for evs in found.coups.values() for e in evs)]:
            aggregates.add(_oid(ev.originator_id))
    first = genesis(events)
    after = int(first.body.get("after", 0)) if first is not None else None
    chain: dict[int, bytes] = {}
    where: dict[tuple[str, int], int] = {}  # (originator, version) -> position
    owner: dict[str, list[int]] = {}  # aggregate -> positions
    game: set[str] = set()  # the ranges' game aggregates
    commands: list[tuple[int, list[tuple[str, int]]]] = []
    for a, b in ranges:
        la, lb = notary.leaves(a, a + 1), notary.leaves(b, b + 1)
        if not la or not lb:
            continue
        batch: list[RawEvent] = []
        for ev in _stored_events(events, la[0][1], lb[0][1]):
            oid = _oid(ev.originator_id)
            where[(oid, ev.version)] = ev.position
            owner.setdefault(oid, []).append(ev.position)
            if ev.topic.startswith(GAME_AGGREGATES):
                game.add(oid)
            if ev.topic == CHAIN_LINKED:
                keep.add(ev.position)
                link = parse_link(ev.state, ev.position)
                if len(batch) == link.count:
                    for j, e in enumerate(batch):
                        chain[e.position] = event_hash(link.first + j, UUID(e.originator_id),
                                                       e.version, e.topic, e.state)
                else:
                    keep.update(e.position for e in batch)
                batch = []
                continue
            if after is not None and ev.position > after:
                batch.append(ev)
            if ev.topic == REQUEST_RECORDED:
                effects = state(ev).get("effects")
                if isinstance(effects, list):
                    commands.append((ev.position, [(_oid(str(x[0])), int(x[1]))
                                                   for x in effects]))
        keep.update(e.position for e in batch)  # a batch its range does not close
    chosen: set[int] = set()
    grown = True
    while grown:  # a command of the unit's brings in the game aggregates it also wrote
        grown = False
        for i, (pos, keys) in enumerate(commands):
            if i in chosen or not any(k[0] in aggregates for k in keys):
                continue
            chosen.add(i)
            keep.add(pos)
            for k in keys:
                if k in where:
                    keep.add(where[k])
                if k[0] in game and k[0] not in aggregates:
                    aggregates.add(k[0])
                    grown = True
    for oid in aggregates:
        keep.update(owner.get(oid, ()))
    return Unit(keep, chain, after)


def _oid(text: str) -> str:
    try:
        return str(UUID(text))
    except ValueError:
        return text


def _stored_events(events: EventTable, first: int, last: int) -> Iterable[RawEvent]:
    """The stored events at positions first..last, in order, read 2,000 at a time."""
    after = first - 1
    while after < last:
        batch = events.read(after, min(2000, last - after))
        if not batch:
            return
        for e in batch:
            if e.position > last:
                return
            yield e
        after = batch[-1].position


def whole_batches(events: EventTable, notary: Notary, ranges: Iterable[tuple[int, int]],
                  size: int) -> list[tuple[int, int]]:
    """Leaf ranges widened to whole batches of the evidence chain: from the event after the
    link before each range to the first link at or after its end (capped at ``size``)."""
    first = genesis(events)
    if first is None:
        return list(ranges)
    after = int(first.body.get("after", 0))
    out = []
    for a, b in ranges:
        la = notary.leaves(a, a + 1)
        lb = notary.leaves(b, b + 1)
        if not la or not lb:
            out.append((a, b))
            continue
        pa, pb = la[0][1], lb[0][1]
        start = pa
        if pa > after:
            prior = link_before(events, pa, after)
            start = prior.position + 1 if prior is not None else after + 1
        closing = link_at_or_after(events, pb) if pb > after else None
        stop = notary.index_at_or_after(closing.position + 1) - 1 if closing else b
        out.append((min(a, notary.index_at_or_after(start)), min(max(b, stop), size - 1)))
    return out


def _write_tail(out: TextSink, events: EventTable, position: int, summary: ExportSummary
                ) -> None:
    """The stored events after the anchor's last leaf up to the link closing its batch, when
    that leaf is not a link (the anchor is a checkpoint at a coup's end)."""
    last = events.at([position]).get(position)
    if last is None or last.topic == CHAIN_LINKED or genesis(events) is None:
        return
    closing = link_at_or_after(events, position + 1)
    stop = closing.position if closing is not None else None
    after = position
    while True:
        batch = events.read(after, 2000)
        for ev in batch:
            if stop is not None and ev.position > stop:
                return
            _line(out, {"kind": "tail", "position": ev.position, "event": ev.content()})
            summary.tail += 1
        if len(batch) < 2000:
            return
        after = batch[-1].position


def _check_chain(events: EventTable, notary: Notary, ranges: list[tuple[int, int]],
                 deleted: list[int], anchor: Checkpoint,
                 keys: dict[str, Ed25519PublicKey] | None) -> list[ChainProblem]:
    """The chain's problems over the exported ranges (positions), as the export saw them."""
    spans = []
    for a, b in ranges:
        la, lb = notary.leaves(a, a + 1), notary.leaves(b, b + 1)
        if la and lb:
            spans.append((la[0][1], lb[0][1]))
    return chain_problems(events, spans, keys, deleted)


def _tree(notary: Notary, size: int) -> MemoryTree:
    tree = MemoryTree()
    step = 100_000
    for a in range(0, size, step):
        for _i, _p, h in notary.leaves(a, min(size, a + step)):
            tree.append_hash(h)
    return tree


def _write_nodes(out: TextSink, notary: Notary, start: int, stop: int) -> None:
    """The ``nodes`` record standing for leaves [start, stop) of the anchor's tree: the hashes
    of ``gap_blocks(start, stop)``, in that order (nothing when the gap is empty)."""
    if start >= stop:
        return
    blocks = gap_blocks(start, stop)
    found = notary.nodes(blocks)
    _line(out, {"kind": "nodes", "first": start, "stop": stop,
                "hashes": [found[k].hex() for k in blocks]})


def _write_range(
    out: TextSink,
    events: EventTable,
    notary: Notary,
    tree: MemoryTree | None,
    anchor: Checkpoint,
    a: int,
    b: int,
    summary: ExportSummary,
    each: bool,
    unit: Unit | None = None,
) -> list[int]:
    """Write the leaves a..b; the positions of those whose event is gone from the store."""
    step = 2000
    gone: list[int] = []
    for lo in range(a, b + 1, step):
        hi = min(b, lo + step - 1)
        leaves = notary.leaves(lo, hi + 1)
        if not leaves:
            continue
        stored = _stored_between(events, leaves[0][1], leaves[-1][1])
        actors = command_actors(events, stored)  # who ran the command behind each event
        for idx, pos, h in leaves:
            ev = stored.pop(pos, None)
            if unit is not None and ev is not None and pos not in unit.full:
                chained = unit.chain.get(pos)
                if chained is not None or unit.before_chain(pos):  # another unit's: its hashes
                    leaf: dict[str, Any] = {"kind": "leaf", "index": idx, "position": pos,
                                            "leaf_hash": h.hex()}
                    if chained is not None:
                        leaf["chain_hash"] = chained.hex()
                    _line(out, leaf)
                    summary.elided += 1
                    continue
            rec: dict[str, Any] = {
                "kind": "event",
                "index": idx,
                "position": pos,
                "leaf_hash": h.hex(),
                "event": ev.content() if ev is not None else None,
                "actor": _actor(actors, ev),
            }
            if each:
                proof = tree.inclusion_proof(idx, anchor.size) if tree else (
                    notary.inclusion_proof(idx, anchor.size)
                )
                rec["proof"] = [p.hex() for p in proof]
            if ev is None:
                summary.missing += 1
                gone.append(pos)
            elif ev.topic == COUP_SETTLED:
                summary.settled.add(ev.originator_id)
            summary.events += 1
            _line(out, rec)
        for pos in sorted(stored):  # stored inside the range, yet no leaf: not notarised
            _line(out, {"kind": "unnotarised", "position": pos, "event": stored[pos].content()})
            summary.unnotarised += 1
    return gone


def _actor(actors: dict[tuple[str, int], Any], ev: RawEvent | None) -> Any:
    """The actor of the command behind ``ev``; a chain link is the ledger's own."""
    if ev is None:
        return None
    if ev.topic == CHAIN_LINKED:
        return SYSTEM.to_dict()
    return actors.get((ev.originator_id, ev.version))


def _stored_between(events: EventTable, first: int, last: int) -> dict[int, RawEvent]:
    out: dict[int, RawEvent] = {}
    after = first - 1
    while after < last:
        batch = events.read(after, min(2000, last - after))
        if not batch:
            break
        for e in batch:
            if e.position > last:
                return out
            out[e.position] = e
        after = batch[-1].position
    return out


def _line(out: TextSink, record: dict[str, Any]) -> None:
    out.write(canonical_json(record, strict=False).decode("utf-8"))
    out.write("\n")


def read_export(lines: Iterable[str]) -> list[dict[str, Any]]:
    """Parse an export (for tests and tools; the verifier has its own reader)."""
    return [json.loads(line) for line in lines if line.strip()]


__all__ = ["FORMAT", "FORMAT_EACH", "PROOF_STYLES", "ExportError", "ExportSummary", "ProofError",
           "StoreTampered", "Unit", "damaged", "read_export", "unit_positions", "write_export"]
