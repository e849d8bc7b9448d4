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

import bisect
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from services.ledger.actor import SYSTEM
from services.ledger.evidence import event_hash
from services.ledger.table import UNRECORDED_GAME
from services.regulator.actors import Fields, command_actors, fields_of
from services.regulator.canonical import canonical_json
from services.regulator.chain import (
    ChainProblem,
    ChainWalk,
    chain_problems,
    genesis,
    link_at_or_after,
    link_before,
    new_walk,
    parse_link,
    start_at,
)
from services.regulator.checkpoint import Checkpoint, origin_site
from services.regulator.merkle import MemoryTree, ProofError, gap_blocks, leaf_hash
from services.regulator.notary import Notary, missing_leaves
from services.regulator.source import EventTable, RawEvent, SnapshotTable
from services.regulator.vocabulary import ShoeEvents, shoe_events, shoe_of_coup, state
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


ShoeMemo = dict[str, ShoeEvents | None]  # a shoe's events, found once per export


def _shoe_events(events: EventTable, shoe_id: str, memo: ShoeMemo | None) -> ShoeEvents | None:
    """``shoe_events(events, shoe_id)``, remembered in ``memo`` (when given)."""
    if memo is None:
        return shoe_events(events, shoe_id)
    if shoe_id not in memo:
        memo[shoe_id] = shoe_events(events, shoe_id)
    return memo[shoe_id]


def shoe_ranges(events: EventTable, notary: Notary, shoe_id: str,
                memo: ShoeMemo | None = None) -> list[tuple[int, int]]:
    """Leaf index ranges [first, last] covering one shoe (and its table's Opened event);
    ``memo``: the shoes' events already found."""
    found = _shoe_events(events, shoe_id, memo)
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


def pending_shoe(events: EventTable, shoe_id: str, limit: int | None,
                 memo: ShoeMemo | None = None) -> dict[str, Any] | None:
    """What the export says about a shoe it holds whose seed it does not reveal (in play at
    the anchor's position ``limit``): its id, table, game, coups so far and why; None for a
    shoe closed by then (or no shoe)."""
    found = _shoe_events(events, shoe_id, memo)
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
    summary, memo = ExportSummary(anchor=anchor.size), ShoeMemo()
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
            ranges = [r for s in shoes for r in shoe_ranges(events, notary, s, memo)]
        selection = {"shoes": shoes}
    ranges = merge((a, min(b, anchor.size - 1)) for a, b in ranges if a < anchor.size)
    if not whole:
        ranges = merge(whole_batches(events, notary, ranges, anchor.size))
    total = sum(b - a + 1 for a, b in ranges)
    # SABOT-EXPORT-1: a proof per leaf, from every leaf hash in memory for a large export
    tree = _tree(notary, anchor.size) if each and total > PROOFS_IN_MEMORY_ABOVE else None
    # the shoes the export holds without their seed: listed, their card checks deferred
    found = (pending_shoe(events, sid, limit, memo) for sid in in_play)
    summary.pending = [held for held in found if held is not None]
    _line(out, _header(events, anchor, public_key, selection, whole, ranges, summary, each))
    deleted: list[int] = []
    covered = 0  # leaves of the tree the records so far stand for (SABOT-EXPORT-2)
    unit = (unit_positions(events, notary, shoes, ranges, memo)
            if shoe_ids is not None and not each else None)
    fed = _ChainFeed.whole_log(events, notary, ranges, anchor, chain_keys) if whole else None
    for a, b in ranges:
        if not each:
            _write_nodes(out, notary, covered, a)
        deleted += _write_range(out, events, notary, tree, anchor, a, b, summary, each, unit,
                                fed)
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
    summary.chain_problems = (fed.finish() if fed is not None else
                              _check_chain(events, notary, ranges, deleted, anchor, chain_keys))
    return summary


def _header(events: EventTable, anchor: Checkpoint, public_key: bytes,
            selection: dict[str, Any], whole: bool, ranges: list[tuple[int, int]],
            summary: ExportSummary, each: bool) -> dict[str, Any]:
    """The header record: the format, the anchor, what is selected, the ranges, the shoes
    pending and the chain's first key."""
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
    header["pending"] = summary.pending
    if first_link is not None and "public_key" in first_link.body:
        header["chain_key"] = str(first_link.body["public_key"])
    return header


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
    """What a shoe's export holds in full (``full``: positions), the chain index of each other
    event of the ranges (``chain``: by position; its hash in the chain is written for the
    links' digests), and where the chain began (``after``: events up to it precede the chain;
    None: no chain). ``stored``: the ranges' stored events, read once (None when there were
    more than ``KEEP_STORED``: they are read again as they are written); ``fields``: the
    commands' actor and effects, read once (``actors.Fields``)."""

    full: set[int]
    chain: dict[int, int]
    after: int | None
    stored: dict[int, RawEvent] | None = None
    fields: Fields = field(default_factory=dict)
    order: list[int] = field(default_factory=list)  # ``stored``'s positions, ascending

    def before_chain(self, position: int) -> bool:
        return self.after is None or position <= self.after

    def elided(self, position: int) -> bool:
        """Whether the stored event at ``position`` is written as its hashes (a ``leaf``)."""
        return position not in self.full and (position in self.chain
                                              or self.before_chain(position))


KEEP_STORED = 50_000  # a unit's stored events held between reading and writing them, at most


@dataclass
class _Scan:
    """The ranges' stored events read once for ``unit_positions``: where each (originator,
    version) is, each aggregate's positions, the game aggregates, the commands' effects, the
    chain index of each event whose batch its link closes, and what must be kept in full."""

    after: int | None
    keep: set[int] = field(default_factory=set)
    chain: dict[int, int] = field(default_factory=dict)
    where: dict[tuple[str, int], int] = field(default_factory=dict)  # -> position
    owner: dict[str, list[int]] = field(default_factory=dict)  # aggregate -> positions
    game: set[str] = field(default_factory=set)  # the ranges' game aggregates
    commands: list[tuple[int, list[tuple[str, int]]]] = field(default_factory=list)
    stored: dict[int, RawEvent] | None = field(default_factory=dict)
    fields: Fields = field(default_factory=dict)

    def range(self, evs: Iterable[RawEvent]) -> None:
        batch: list[RawEvent] = []
        for ev in evs:
            self._hold(ev)
            oid = _oid(ev.originator_id)
            self.where[(oid, ev.version)] = ev.position
            self.owner.setdefault(oid, []).append(ev.position)
            if ev.topic.startswith(GAME_AGGREGATES):
                self.game.add(oid)
            if ev.topic == CHAIN_LINKED:
                self.keep.add(ev.position)
                link = parse_link(ev.state, ev.position)
                if len(batch) == link.count:
                    for j, e in enumerate(batch):
                        self.chain[e.position] = link.first + j
                else:
                    self.keep.update(e.position for e in batch)
                batch = []
                continue
            if self.after is not None and ev.position > self.after:
                batch.append(ev)
            if ev.topic == REQUEST_RECORDED:
                effects = fields_of(ev, self.fields)[1]
                if isinstance(effects, list):
                    self.commands.append((ev.position, [(_oid(str(x[0])), int(x[1]))
                                                        for x in effects]))
        self.keep.update(e.position for e in batch)  # a batch its range does not close

    def _hold(self, ev: RawEvent) -> None:
        if self.stored is not None:
            self.stored[ev.position] = ev
            if len(self.stored) > KEEP_STORED:
                self.stored = None

    def grow(self, keep: set[int], aggregates: set[str]) -> None:
        """A command of the unit's brings in the game aggregates it also wrote (and all it
        wrote), until none is left; then every event of the unit's aggregates."""
        chosen: set[int] = set()
        grown = True
        while grown:
            grown = False
            for i, (pos, keys) in enumerate(self.commands):
                if i in chosen or not any(k[0] in aggregates for k in keys):
                    continue
                chosen.add(i)
                keep.add(pos)
                for k in keys:
                    if k in self.where:
                        keep.add(self.where[k])
                    if k[0] in self.game and k[0] not in aggregates:
                        aggregates.add(k[0])
                        grown = True
        for oid in aggregates:
            keep.update(self.owner.get(oid, ()))


def unit_positions(events: EventTable, notary: Notary, shoe_ids: Sequence[str],
                   ranges: Sequence[tuple[int, int]], memo: ShoeMemo | None = None) -> Unit:
    """The unit of ``shoe_ids`` inside ``ranges`` (leaf indices): the events of its shoes and
    their coups, rounds and matches (every game aggregate a command of theirs also wrote), its
    table's events about it, every command that wrote any of them with all its effects, and
    every chain link. Events of a batch whose stored events do not fill its link's slots (a
    store tampered with) are all kept in full, so the verifier names the fault. ``memo``: the
    shoes' events already found (``shoe_events``)."""
    keep: set[int] = set()
    aggregates: set[str] = set()
    for sid in shoe_ids:
        found = _shoe_events(events, sid, memo)
        if found is None:
            continue
        for ev in found.table:
            keep.add(ev.position)
        for ev in [*found.shoe, *(e for evs in found.coups.values() for e in evs)]:
            aggregates.add(_oid(ev.originator_id))
    first = genesis(events)
    scan = _Scan(int(first.body.get("after", 0)) if first is not None else None)
    for a, b in ranges:
        la, lb = notary.leaves(a, a + 1), notary.leaves(b, b + 1)
        if la and lb:
            scan.range(_stored_events(events, la[0][1], lb[0][1]))
    keep |= scan.keep
    scan.grow(keep, aggregates)
    return Unit(keep, scan.chain, scan.after, scan.stored, scan.fields,
                sorted(scan.stored) if scan.stored is not None else [])


_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _oid(text: str) -> str:
    if _CANONICAL_UUID.fullmatch(text):  # str(UUID(text)) is text itself
        return text
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


class _ChainFeed:
    """The evidence chain's check of a whole log's export (``chain_problems`` over its one
    range), fed the stored events as ``_write_range`` reads them instead of reading the log a
    second time: from the chain's beginning, every stored event and every notarised one gone
    from the store (``None``) in position order, the events between two of its reads too,
    and, after the last leaf, those up to the link that closes its batch."""

    def __init__(self, events: EventTable, walk: ChainWalk, start: int, last: int) -> None:
        self.events, self.walk, self.start, self.last = events, walk, start, last
        self.seen = start - 1  # the last position fed, or read past

    @classmethod
    def whole_log(cls, events: EventTable, notary: Notary, ranges: list[tuple[int, int]],
                  anchor: Checkpoint, keys: dict[str, Ed25519PublicKey] | None
                  ) -> _ChainFeed | None:
        """The feed for the whole log's export; None when ``chain_problems`` must read it
        (no chain, nothing after its start, a log whose first leaf is past the chain's
        start)."""
        walk, first = new_walk(events, keys)
        if first is None or len(ranges) != 1 or ranges[0] != (0, anchor.size - 1):
            return None
        after = int(first.body.get("after", 0))
        la, lb = notary.leaves(0, 1), notary.leaves(anchor.size - 1, anchor.size)
        if not la or not lb or lb[0][1] <= after or la[0][1] > after + 1:
            return None
        walk.problems = []
        return cls(events, walk, start_at(walk, events, first, after + 1), lb[0][1])

    def chunk(self, first: int, stored: list[tuple[int, RawEvent]], gone: list[int]) -> None:
        """One read of ``_write_range``: its stored events and its leaves' missing events,
        ``first`` the position of its first leaf."""
        if first > self.seen + 1:  # stored events between two reads (no leaf covers them)
            self._feed(list(_stored_between(self.events, self.seen + 1, first - 1).items()))
        fed: list[tuple[int, RawEvent | None]] = [*stored, *((p, None) for p in gone)]
        fed.sort(key=lambda x: x[0])
        self._feed(fed)

    def _feed(self, fed: Sequence[tuple[int, RawEvent | None]]) -> None:
        for pos, ev in fed:
            if pos >= self.start:
                self.walk.feed(pos, ev)
            self.seen = max(self.seen, pos)

    def finish(self) -> list[ChainProblem]:
        """The rest of the last leaf's batch fed (up to its closing link, or the log's end),
        the walk finished: its problems by position, each once."""
        closing = link_at_or_after(self.events, self.last)
        end = closing.position if closing is not None else None
        after = max(self.seen, self.last)
        while end is None or after < end:
            batch = self.events.read(after, 2000 if end is None else min(2000, end - after))
            self._feed([(e.position, e) for e in batch if end is None or e.position <= end])
            if len(batch) < (2000 if end is None else min(2000, end - after)):
                break
            after = batch[-1].position
        self.walk.finish()
        seen: set[tuple[int, str]] = set()
        out = []
        for p in sorted(self.walk.problems, key=lambda x: x.position):
            if (p.position, p.message) not in seen:
                seen.add((p.position, p.message))
                out.append(p)
        return out


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
    fed: _ChainFeed | None = None,
) -> list[int]:
    """Write the leaves a..b; the positions of those whose event is gone from the store
    (``fed``: the chain's check, fed what is read)."""
    step = 2000
    gone: list[int] = []
    fields: Fields = unit.fields if unit is not None else {}
    for lo in range(a, b + 1, step):
        hi = min(b, lo + step - 1)
        leaves = notary.leaves(lo, hi + 1)
        if not leaves:
            continue
        stored = _stored_between(events, leaves[0][1], leaves[-1][1], unit)
        for old in [p for p in fields if p < leaves[0][1]]:  # requests of the ranges before
            del fields[old]
        if fed is not None:
            fed.chunk(leaves[0][1], list(stored.items()), [p for _i, p, _h in leaves
                                                             if p not in stored])
        wanted = None if unit is None else {p for p in stored if not unit.elided(p)}
        actors = command_actors(events, stored, fields, wanted)  # who ran each event's command
        texts = _Texts()
        for idx, pos, h in leaves:
            ev = stored.pop(pos, None)
            if unit is not None and ev is not None and unit.elided(pos):  # another unit's
                out.write(_leaf_line(idx, pos, h, ev, unit.chain.get(pos)))
                summary.elided += 1
                continue
            proof = None
            if each:
                proof = tree.inclusion_proof(idx, anchor.size) if tree else (
                    notary.inclusion_proof(idx, anchor.size)
                )
            if ev is None:
                summary.missing += 1
                gone.append(pos)
            elif ev.topic == COUP_SETTLED:
                summary.settled.add(ev.originator_id)
            summary.events += 1
            out.write(texts.event_line(idx, pos, h, ev, _actor(actors, ev), proof))
        for pos in sorted(stored):  # stored inside the range, yet no leaf: not notarised
            _line(out, {"kind": "unnotarised", "position": pos, "event": stored[pos].content()})
            summary.unnotarised += 1
    return gone


def _leaf_line(idx: int, pos: int, h: bytes, ev: RawEvent, chained: int | None) -> str:
    """Another unit's leaf: its index, position, leaf hash and (after the chain began) its
    hash in the chain, as ``_line`` writes the record."""
    chain = "" if chained is None else '{"chain_hash":"' + event_hash(
        chained, UUID(ev.originator_id), ev.version, ev.topic, ev.state).hex() + '",'
    return (f'{chain or "{"}"index":{idx},"kind":"leaf","leaf_hash":"{h.hex()}",'
            f'"position":{pos}}}\n')


class _Texts:
    """An event record's line as ``_line`` writes it (canonical JSON, keys sorted), made
    without parsing the event's stored state and encoding it again when the stored bytes
    are already its canonical JSON: the content's text is put together around them and
    used only if its leaf hash is the notarised one (so it is the content's canonical JSON
    byte for byte); else the record is encoded as before. Actors (shared by a command's
    events) are encoded once."""

    def __init__(self) -> None:
        self.actors: dict[int, tuple[Any, str]] = {}

    def event_line(self, idx: int, pos: int, h: bytes, ev: RawEvent | None, actor: Any,
                   proof: list[bytes] | None) -> str:
        body = _content_text(ev, h) if ev is not None else None
        if body is None:
            rec: dict[str, Any] = {
                "kind": "event", "index": idx, "position": pos, "leaf_hash": h.hex(),
                "event": ev.content() if ev is not None else None, "actor": actor,
            }
            if proof is not None:
                rec["proof"] = [p.hex() for p in proof]
            return canonical_json(rec, strict=False).decode("utf-8") + "\n"
        more = "" if proof is None else ',"proof":' + _hexes(proof)
        return (f'{{"actor":{self._actor(actor)},"event":{body},"index":{idx},"kind":"event",'
                f'"leaf_hash":"{h.hex()}","position":{pos}{more}}}\n')

    def _actor(self, actor: Any) -> str:
        got = self.actors.get(id(actor))
        if got is None or got[0] is not actor:
            got = self.actors[id(actor)] = (actor, canonical_json(actor, strict=False)
                                            .decode("utf-8"))
        return got[1]


def _hexes(hashes: list[bytes]) -> str:
    return "[" + ",".join(f'"{p.hex()}"' for p in hashes) + "]"


def _text(value: str) -> str:
    """A string as canonical JSON: as it is, quoted, when nothing in it needs an escape."""
    if value.isascii() and value.isprintable() and '"' not in value and "\\" not in value:
        return f'"{value}"'
    return json.dumps(value, ensure_ascii=False)


def _content_text(ev: RawEvent, h: bytes) -> str | None:
    """``canonical_json(ev.content())`` as text, put together around the stored state's bytes,
    when its leaf hash is ``h`` (the notarised leaf: then it is that content's canonical JSON,
    whose state part is the stored bytes); None when it is not (a state not stored as its
    canonical JSON, or an event that does not match its leaf: encoded the usual way)."""
    try:
        state = ev.state.decode("utf-8")
    except UnicodeDecodeError:
        return None
    text = (f'{{"originator_id":{_text(ev.originator_id)},"position":{ev.position},'
            f'"state":{state},"topic":{_text(ev.topic)},"version":{ev.version}}}')
    return text if leaf_hash(text.encode("utf-8")) == h else None


def _actor(actors: dict[tuple[str, int], Any], ev: RawEvent | None) -> Any:
    """The actor of the command behind ``ev``; a chain link is the ledger's own."""
    if ev is None:
        return None
    if ev.topic == CHAIN_LINKED:
        return SYSTEM.to_dict()
    return actors.get((ev.originator_id, ev.version))


def _stored_between(events: EventTable, first: int, last: int, unit: Unit | None = None
                    ) -> dict[int, RawEvent]:
    """The stored events at positions first..last (the unit's, when it holds them)."""
    if unit is not None and unit.stored is not None:
        order, held = unit.order, unit.stored
        lo, hi = bisect.bisect_left(order, first), bisect.bisect_right(order, last)
        return {p: held[p] for p in order[lo:hi]}
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
