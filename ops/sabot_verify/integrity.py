"""The export's integrity: leaf hashes, inclusion proofs, signed checkpoints, consistency.

SABOT-EXPORT-2 proves its leaves with one multi-leaf proof against the anchor: its ``nodes``
records stand for the leaves between the exported ranges, and leaves and nodes fold into the
tree head (``Frontier``), which must be the anchor's root. SABOT-EXPORT-1 (older exports) carries
an inclusion proof in every event record; both are read.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from sys import intern
from typing import Any

from sabot_verify.proofs import (
    Bad,
    Frontier,
    canonical,
    check_checkpoint,
    check_consistency,
    check_inclusion,
    gap_blocks,
    leaf_hash,
)

FORMAT = "SABOT-EXPORT-2"  # one multi-leaf proof (``nodes`` records)
FORMAT_EACH = "SABOT-EXPORT-1"  # an inclusion proof in every event record
FORMATS = (FORMAT, FORMAT_EACH)


@dataclass
class Problem:
    position: int | None  # the log position at fault, when there is one
    message: str


@dataclass
class Export:
    header: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)  # "event" records in order
    unnotarised: list[dict[str, Any]] = field(default_factory=list)
    tail: list[dict[str, Any]] = field(default_factory=list)  # after the anchor, to a link
    snapshots: list[dict[str, Any]] = field(default_factory=list)
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    escrow: list[bytes] = field(default_factory=list)  # sealed seeds (nil shoe id)
    nodes: list[dict[str, Any]] = field(default_factory=list)  # the multi-leaf proof's blocks
    leaves: list[dict[str, Any]] = field(default_factory=list)  # other units' leaves: hashes
    end: dict[str, Any] | None = None
    # per event record (same order as ``events``): its event's and state's canonical bytes as
    # cut from its line (``cut``), None when the line is not the record's canonical JSON
    cuts: list[tuple[bytes, bytes | None] | None] = field(default_factory=list)
    # event record (its place in ``events``) -> its state's canonical bytes, for the records
    # whose cut bytes ``check`` proved by the leaf hash (what the chain hashes, not re-encoded)
    proven: dict[int, bytes] = field(default_factory=dict)

    @property
    def multi(self) -> bool:
        """SABOT-EXPORT-2: one multi-leaf proof, not a proof per event."""
        return self.header.get("format") == FORMAT


def _shared(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object with its keys and short strings (topics, ids, codes) shared between
    records: ``json.loads`` makes new ones for every line, ~12 KB an event held in all."""
    return {intern(k): intern(v) if type(v) is str and len(v) < 48 else v for k, v in pairs}


_DECODER = json.JSONDecoder(object_pairs_hook=_shared)
_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


def dumps(value: Any) -> str:
    """Canonical JSON text (``proofs.canonical``, as text); an int, and a string that needs no
    escape (printable ASCII without a quote or a backslash: ids, hashes, topics), without the
    encoder."""
    if type(value) is int:
        return str(value)
    if type(value) is str and value.isascii() and value.isprintable() and '"' not in value \
            and "\\" not in value:
        return f'"{value}"'
    return _ENCODE(value)


_ACTOR = '{"actor":'
_EVENT = ',"event":{"originator_id":'


def cut(line: str, r: dict[str, Any]) -> tuple[bytes, bytes | None] | None:
    """The event's canonical bytes and its state's, cut from the event record's line when the
    line is laid out as the writer lays it (keys sorted, no spaces); None when it is not (they
    are then serialised). Sound: the event's bytes are proven by its leaf hash before they are
    used, so they are one canonical JSON object; the line's parse took that object whole as
    the record's ``event`` (it begins at the first ``"event":`` key whose value is such an
    object: one nested in an earlier value would close inside it, not be whole; and the
    record's other keys after it are rebuilt from the record's own values)."""
    text = line.rstrip("\n")
    if len(r) != 6 or "actor" not in r or not text.startswith(_ACTOR):
        return None
    start = text.find(_EVENT)
    tail = (',"index":' + dumps(r.get("index")) + ',"kind":"event","leaf_hash":'
            + dumps(r.get("leaf_hash")) + ',"position":' + dumps(r.get("position")) + "}")
    if start < 0 or not text.endswith(tail):
        return None
    event = text[start + 9:len(text) - len(tail)]  # from the object after ',"event":'
    ev = r["event"]
    if not isinstance(ev, dict) or len(ev) != 5:
        return event.encode(), None
    try:
        pre = ('{"originator_id":' + dumps(ev["originator_id"]) + ',"position":'
               + dumps(ev["position"]) + ',"state":')
        post = ',"topic":' + dumps(ev["topic"]) + ',"version":' + dumps(ev["version"]) + "}"
    except KeyError:
        return event.encode(), None
    if event.startswith(pre) and event.endswith(post):
        return event.encode(), event[len(pre):len(event) - len(post)].encode()
    return event.encode(), None


def _packed(proof: Any) -> Any:
    """An inclusion proof as one bytes object of 32-byte hashes (a list of 64-hex strings
    costs ~4 times as much); anything else is kept as it is, for ``check`` to say what."""
    if isinstance(proof, list) and all(type(p) is str and len(p) == 64 for p in proof):
        try:
            return bytes.fromhex("".join(proof))
        except ValueError:
            pass
    return proof


def _hashes(proof: Any) -> list[bytes]:
    if isinstance(proof, bytes):
        return [proof[i:i + 32] for i in range(0, len(proof), 32)]
    return [bytes.fromhex(p) for p in proof]


def parse(lines: Iterable[str]) -> Export:
    """Read an export line by line (a file object will do: it is never held whole)."""
    exp: Export | None = None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            r = _DECODER.decode(line)
        except ValueError:
            raise Bad(f"line {n}: not JSON") from None
        if exp is None:
            if not isinstance(r, dict) or r.get("kind") != "header":
                raise Bad("the export does not start with a header")
            if r.get("format") not in FORMATS:
                raise Bad(f"unknown format {r.get('format')!r} (expected {FORMAT} or "
                          f"{FORMAT_EACH})")
            exp = Export(r)
            continue
        kind = r.get("kind")
        if kind == "event":
            exp.cuts.append(cut(line, r) if exp.multi else None)  # before "proof" is set
            if exp.multi:  # proven by the export's multi-leaf proof: no proof of its own
                r["proof"] = b""
            elif "proof" in r:
                r["proof"] = _packed(r["proof"])
            exp.events.append(r)
        elif kind == "nodes" and exp.multi:
            exp.nodes.append(r)
        elif kind == "leaf" and exp.multi:
            exp.leaves.append(r)
        elif kind == "unnotarised":
            exp.unnotarised.append(r)
        elif kind == "tail":
            exp.tail.append(r)
        elif kind == "snapshot":
            exp.snapshots.append(r)
        elif kind == "checkpoint":
            exp.checkpoints.append(r)
        elif kind == "escrow":
            exp.escrow.append(bytes.fromhex(r["sealed"]))
        elif kind == "end":
            exp.end = r
        else:
            raise Bad(f"unknown record kind {kind!r}")
    if exp is None:
        raise Bad("the export does not start with a header")
    if exp.end is None:
        raise Bad("the export is truncated (no end record)")
    return exp


def check(exp: Export, key: bytes) -> tuple[list[Problem], dict[int, dict[str, Any]]]:
    """Every integrity problem, and the checkpoints by size (all verified when no problem)."""
    problems: list[Problem] = []
    by_size: dict[int, dict[str, Any]] = {}
    prev: dict[str, Any] | None = None
    for cp in exp.checkpoints:
        try:
            check_checkpoint(cp, key)
            if prev is not None:
                cons = cp.get("consistency") or {}
                if cons.get("from") != prev["size"]:
                    raise Bad(f"checkpoint {cp['size']}: no consistency proof from {prev['size']}")
                check_consistency(
                    prev["size"],
                    cp["size"],
                    bytes.fromhex(prev["root"]),
                    bytes.fromhex(cp["root"]),
                    [bytes.fromhex(p) for p in cons["proof"]],
                )
        except (Bad, KeyError, TypeError, ValueError) as exc:
            problems.append(Problem(cp.get("position"), f"checkpoint {cp.get('size')}: {exc}"))
        by_size[cp["size"]] = cp
        prev = cp
    anchor = by_size.get(exp.header.get("anchor", -1))
    if anchor is None or exp.checkpoints[-1] is not anchor:
        problems.append(Problem(None, "the anchor checkpoint is not the last checkpoint"))
        return problems, by_size
    root, size = bytes.fromhex(anchor["root"]), anchor["size"]
    if exp.multi:
        problems += _multi_leaf(exp, size, root)
    last_index = -1
    for i, r in enumerate(exp.events):
        pos, idx = r.get("position"), r.get("index")
        try:
            if not isinstance(idx, int) or idx <= last_index:
                raise Bad(f"leaf index {idx} out of order")
            last_index = idx
            h = bytes.fromhex(r["leaf_hash"])
            if not exp.multi:
                check_inclusion(h, idx, size, _hashes(r["proof"]), root)
            ev = r.get("event")
            if ev is None:
                raise Bad("notarised event missing from the store (deleted?)")
            if not _proven(exp, i, h) and leaf_hash(canonical(ev)) != h:
                raise Bad("stored event does not match its notarised hash (edited or moved)")
            if ev.get("position") != pos:
                raise Bad(f"event stored at position {ev.get('position')}, notarised at {pos}")
        except (Bad, KeyError, TypeError, ValueError) as exc:
            problems.append(Problem(pos, f"position {pos} (leaf {idx}): {exc}"))
    for r in exp.unnotarised:
        pos = r.get("position")
        problems.append(Problem(pos, f"position {pos}: stored event no leaf covers (inserted?)"))
    return problems, by_size


def _proven(exp: Export, i: int, h: bytes) -> bool:
    """Whether event record ``i``'s bytes cut from its line are its notarised leaf (then its
    state's bytes are kept in ``exp.proven`` for the chain)."""
    got = exp.cuts[i] if i < len(exp.cuts) else None
    if got is None or leaf_hash(got[0]) != h:
        return False
    if got[1] is not None:
        exp.proven[i] = got[1]
    return True


def _multi_leaf(exp: Export, size: int, root: bytes) -> list[Problem]:
    """The multi-leaf proof: the event records' leaves and the ``nodes`` records' blocks, in
    leaf order, must stand for the anchor's ``size`` leaves exactly and fold into its root.
    A leaf left out, added or moved breaks the order at its record; a leaf or node hash
    changed, the root."""
    frontier = Frontier()
    nodes = iter(exp.nodes)
    pending = next(nodes, None)
    first = last = None

    def fold_nodes(upto: int) -> None:
        nonlocal pending
        while pending is not None and _int(pending.get("first")) < upto:
            start, stop = _int(pending.get("first")), _int(pending.get("stop"))
            if start != frontier.size:
                raise Bad(f"a nodes record for leaves {start} to {stop - 1} where leaf "
                          f"{frontier.size} is next (leaves left out, added or moved)")
            blocks = gap_blocks(start, stop)
            hashes = pending.get("hashes")
            if not isinstance(hashes, list) or len(hashes) != len(blocks):
                raise Bad(f"the nodes record for leaves {start} to {stop - 1} holds "
                          f"{len(hashes) if isinstance(hashes, list) else 'no'} hashes, not "
                          f"{len(blocks)}")
            for (level, _index), h in zip(blocks, hashes, strict=True):
                frontier.push(level, bytes.fromhex(h))
            pending = next(nodes, None)

    for r in heapq.merge(exp.events, exp.leaves, key=_index):
        pos, idx = r.get("position"), r.get("index")
        if not isinstance(idx, int):
            if r.get("kind") == "leaf":
                return [Problem(pos if isinstance(pos, int) else None,
                                f"a leaf record without a leaf index ({idx!r})")]
            continue  # said by the per-event check
        try:
            fold_nodes(idx + 1)
            if idx > frontier.size:
                gone = (f"leaf {frontier.size}" if idx == frontier.size + 1
                        else f"leaves {frontier.size} to {idx - 1}")
                raise Bad(f"{gone} before it in neither a record nor the multi-leaf proof "
                          "(left out, or this leaf moved)")
            if idx < frontier.size:
                raise Bad(f"leaf {idx} again, or out of its place (added or moved): leaf "
                          f"{frontier.size} is next")
            frontier.push(0, bytes.fromhex(r["leaf_hash"]))
        except (Bad, KeyError, TypeError, ValueError) as exc:
            return [Problem(pos, f"position {pos} (leaf {idx}): {exc}")]
        first = pos if first is None else first
        last = pos
    try:
        fold_nodes(size + 1)
        if pending is not None:
            raise Bad("a nodes record beyond the anchor's tree")
    except (Bad, KeyError, TypeError, ValueError) as exc:
        return [Problem(None, f"the multi-leaf proof: {exc}")]
    if frontier.size != size:
        return [Problem(None, f"the multi-leaf proof stands for {frontier.size} leaves, the "
                              f"anchor checkpoint for {size} (leaves left out or added)")]
    if frontier.root() != root:
        span = f" (leaves at positions {first} to {last})" if first is not None else ""
        return [Problem(None, f"the multi-leaf proof of the exported leaves{span} does not "
                               "lead to the anchor checkpoint's root (a leaf hash or a proof "
                               "node changed)")]
    return []


def _index(record: dict[str, Any]) -> int:
    idx = record.get("index")
    return idx if isinstance(idx, int) else -1


def _int(value: Any) -> int:
    if not isinstance(value, int):
        raise Bad(f"a nodes record's bound {value!r} is not a leaf index")
    return value
