"""A whole log's export verified as it is read, in memory bounded by what is open (issue 25 item
3): the same checks as the buffered verifier (``integrity``, ``chain``, ``money``, ``actors``,
``shoes``, ``treinta_y_una``, ``site``), each made incremental.

What it holds, whatever the log's length: the Merkle frontier (log2 n hashes); the chain's
current batch; a window of the last ``WINDOW`` events (key, posting, actor), in which every
command's effects must lie; each account's balance after each of its versions (8 bytes an
entry: the snapshots come last and may name any version); the shoes not yet done (their events,
dropped when the shoe is done: its table's next shoe, the table reopened, the link after the
table's close, or the export's end); the checkpoints (size, root, coup, position, origin: a few
hundred bytes a coup) and the ids of the shoes and coups done. A log holding Cuarenta matches
or Treinta y Una rounds is verified buffered for now (their verdicts' order is not yet the
buffered one).

It vouches only for what it has checked: anything that does not verify, or that it cannot check
as it reads (records out of order, an unnotarised event, escrow records, an effect outside the
window, an event of a shoe already done, a malformed record), raises ``Unsure``, and the caller
verifies the buffered way, whose verdict and messages stand. So a tampered export is reported
exactly as before; an intact one never needs the whole log in memory.
"""

from __future__ import annotations

import json
from array import array
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from sabot_verify.actors import Reporter
from sabot_verify.chain import Slot, Walk, key_id, link_hash, snapshot_hash
from sabot_verify.cuarenta import MATCH_PREFIX, verify_matches
from sabot_verify.integrity import FORMAT, Export, cut
from sabot_verify.integrity import dumps as _dumps
from sabot_verify.proofs import Frontier, check_checkpoint, check_consistency, leaf_hash
from sabot_verify.seeds import seeds
from sabot_verify.shoes import Pending, Verdict, check_shoes, plain
from sabot_verify.site import SITE, SiteCheck, check_site
from sabot_verify.topics import (
    ACCOUNT_DEBITS,
    ACCOUNT_ENTRIES,
    ACCOUNT_OPENED,
    CHAIN_LINKED,
    CHAINED_SNAPSHOT,
    COUP_SETTLED,
    REQUEST_RECORDED,
    SHOE_PREFIX,
    SHOE_SHUFFLED,
    TABLE_CLOSED,
    TABLE_OPENED,
)
from sabot_verify.treinta_y_una import ROUND_PREFIX, verify_rounds

WINDOW = 4096  # events: a command's effects lie within this many of it (the same batch)
_AFAR = 1 << 62  # a coup's checkpoint size while the checkpoints are still to come


class Unsure(Exception):
    """The stream cannot vouch for the export: verify it the buffered way."""


@dataclass
class Streamed:
    """What the verdict is made of, for an export the stream vouched for."""

    header: dict[str, Any]
    events: int
    checkpoints: dict[int, dict[str, Any]]  # by size: size, root, coup, position, origin
    links: int
    accounts: int
    verdicts: list[Verdict]
    pending: list[Pending]
    sited: SiteCheck
    who: list[str]


@dataclass
class _Held:
    """An event in the window: its posting (debit or credit, amount), whether a command
    claimed it, and its record's actor (``None`` when not held for the actor check)."""

    position: int
    debit: bool | None  # None: not a posting
    amount: int
    claimed: bool = False
    actor: Any = None
    actor_checked: bool = True


@dataclass
class _Command:
    position: int
    debit: int = 0
    credit: int = 0
    waiting: int = 0


@dataclass
class _Money:
    """Every posting claimed by exactly one command, each command's postings balanced, every
    account re-derived (``money.check_money``), within the window."""

    after: int | None = None  # the chain's start: postings up to it need no command
    seen: int = 0
    recent: dict[tuple[str, int], _Held] = field(default_factory=dict)
    order: deque[tuple[str, int]] = field(default_factory=deque)
    future: dict[tuple[str, int], tuple[_Command, int]] = field(default_factory=dict)
    future_order: deque[tuple[tuple[str, int], int]] = field(default_factory=deque)
    actors: dict[tuple[str, int], tuple[Any, int]] = field(default_factory=dict)
    early: list[int] = field(default_factory=list)  # unclaimed postings before ``after`` is known
    balances: dict[str, array[int]] = field(default_factory=dict)

    def feed(self, position: int, ev: dict[str, Any], actor: Any, held: bool) -> None:
        state = ev.get("state")
        if not isinstance(state, dict):
            return
        key = (str(ev["originator_id"]), int(ev["version"]))
        if key in self.recent:
            raise Unsure(f"event {key} twice")
        topic = ev["topic"]
        entry = _Held(position, None, 0, actor=actor if held else None, actor_checked=held)
        if topic in ACCOUNT_ENTRIES:
            entry.debit = topic in ACCOUNT_DEBITS
            entry.amount = int(plain(state).get("amount", 0))
        if topic == ACCOUNT_OPENED or topic in ACCOUNT_ENTRIES:
            self._account(key, topic, state)
        waiting = self.future.pop(key, None)
        if waiting is not None:
            self._claim(entry, waiting[0])
        expected = self.actors.pop(key, None)
        if expected is not None and held and expected[0] != actor:
            raise Unsure("an event's actor is not its command's")
        self.recent[key] = entry
        self.order.append(key)
        self.seen += 1
        if topic == REQUEST_RECORDED:
            self._command(position, state, actor, held)
        self._expire(WINDOW)

    def _account(self, key: tuple[str, int], topic: str, state: dict[str, Any]) -> None:
        oid, version = key
        got = self.balances.get(oid)
        n = 1 if got is None else len(got) + 1
        if version != n:
            raise Unsure(f"account {oid}: version {version} where {n} was due")
        if topic == ACCOUNT_OPENED:
            if got is not None:
                raise Unsure(f"account {oid} opened twice")
            self.balances[oid] = array("q", [0])
            return
        if got is None:
            raise Unsure(f"account {oid}: an entry before it was opened")
        st = plain(state)
        amount = int(st["amount"])
        running = got[-1] + (-amount if topic in ACCOUNT_DEBITS else amount)
        if int(st.get("balance", running)) != running:
            raise Unsure(f"account {oid}: balance differs")
        got.append(running)

    def _command(self, position: int, state: dict[str, Any], actor: Any, held: bool) -> None:
        effects = state.get("effects")
        if isinstance(effects, list):
            cmd = _Command(position)
            for item in effects:
                key = (str(item[0]), int(item[1]))
                entry = self.recent.get(key)
                if entry is not None:
                    if entry.claimed:
                        raise Unsure(f"{key} claimed twice")
                    self._claim(entry, cmd)
                elif key in self.future:
                    raise Unsure(f"{key} claimed twice")
                else:
                    self.future[key] = (cmd, self.seen)
                    self.future_order.append((key, self.seen))
                    cmd.waiting += 1
            self._balanced(cmd)
        if held:
            self._actors(position, state, actor)

    def _actors(self, position: int, state: dict[str, Any], actor: Any) -> None:
        st = plain(state) if set(state) == {"_type_", "_data_"} else {
            k: plain(state.get(k)) for k in ("actor", "effects")}  # the two it reads
        own = st.get("actor")
        if own is None:
            return
        if actor != own:
            raise Unsure(f"the actor field of command {position} is not the command's own")
        for effect in st.get("effects") or ():
            if not isinstance(effect, list):
                continue
            try:
                key = (effect[0], effect[1])
                entry = self.recent.get(key)
            except (IndexError, TypeError):
                raise Unsure("a malformed effect") from None
            if entry is None:
                self.actors[key] = (own, self.seen)
            elif entry.actor_checked and entry.actor != own:
                raise Unsure("an event's actor is not its command's")

    def _claim(self, entry: _Held, cmd: _Command) -> None:
        entry.claimed = True
        if entry.debit is True:
            cmd.debit += entry.amount
        elif entry.debit is False:
            cmd.credit += entry.amount
        if cmd.waiting:
            cmd.waiting -= 1
            self._balanced(cmd)

    def _balanced(self, cmd: _Command) -> None:
        if not cmd.waiting and cmd.debit != cmd.credit:
            raise Unsure(f"command at {cmd.position}: debits {cmd.debit}, credits {cmd.credit}")

    def _expire(self, keep: int) -> None:
        while len(self.order) > keep:
            entry = self.recent.pop(self.order.popleft())
            if entry.debit is not None and not entry.claimed:
                if self.after is None:
                    self.early.append(entry.position)
                elif entry.position > self.after:
                    raise Unsure(f"a posting at {entry.position} no command lists")
        while self.future_order and self.seen - self.future_order[0][1] > keep:
            key, _at = self.future_order.popleft()
            if key in self.future:
                raise Unsure(f"an effect {key} not within the window of its command")
        if len(self.actors) > 2 * WINDOW:
            self.actors = {k: v for k, v in self.actors.items() if self.seen - v[1] <= keep}

    def chain_began(self, after: int) -> None:
        self.after = after
        if any(p > after for p in self.early):
            raise Unsure("a posting no command lists")
        self.early = []

    def finish(self, after: int | None) -> None:
        if self.after is None:
            self.chain_began(after or 0)
        self._expire(0)
        if self.future:
            raise Unsure("an effect of a command not in the export")
        if sum(b[-1] for b in self.balances.values()) != 0:
            raise Unsure("the balances do not sum to 0")

    def snapshot(self, snap: dict[str, Any], snapshots: dict[int, tuple[str, ...]],
                 links: int) -> None:
        """A stored snapshot against its link and the balance re-derived at its version."""
        oid, version = str(snap.get("originator_id")), int(snap.get("version", 0))
        if snap.get("topic") != CHAINED_SNAPSHOT:
            return
        state = snap["state"]
        seq = int(state["link"])
        if not 1 <= seq <= links or snapshot_hash(snap).hex() not in snapshots.get(seq, ()):
            raise Unsure(f"snapshot of {oid} at version {version}: not its link's")
        got = self.balances.get(oid)
        if got is not None and 1 <= version <= len(got) \
                and plain(state.get("state", {})).get("balance") != got[version - 1]:
            raise Unsure(f"snapshot of {oid} at version {version}: another balance")


@dataclass
class _Shoe:
    shoe_id: str
    first: int | None = None  # the position of its first Shoe event
    table: str | None = None
    records: list[dict[str, Any]] = field(default_factory=list)
    children: set[str] = field(default_factory=set)


@dataclass
class _Units:
    """Shoes (with their coups and rounds) checked as each is done; matches at the end."""

    reg: X25519PrivateKey | None
    shoes: dict[str, _Shoe] = field(default_factory=dict)
    owner: dict[str, str] = field(default_factory=dict)  # a child aggregate -> its shoe
    done: set[str] = field(default_factory=set)  # shoes and children checked and dropped
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)  # table id -> Opened
    table_of: dict[str, str] = field(default_factory=dict)  # table aggregate -> table id
    closing: dict[str, dict[str, Any]] = field(default_factory=dict)  # coup -> Table.Closed
    closed_tables: set[str] = field(default_factory=set)  # closed since the last link
    matches: list[dict[str, Any]] = field(default_factory=list)
    shuffles: list[dict[str, Any]] = field(default_factory=list)
    deferred: list[tuple[str, int]] = field(default_factory=list)  # coup, its end's leaf
    verdicts: list[tuple[int, int, list[Verdict]]] = field(default_factory=list)
    rounds: list[tuple[int, Verdict]] = field(default_factory=list)
    pending: list[tuple[int, Pending]] = field(default_factory=list)

    def feed(self, r: dict[str, Any]) -> None:
        ev = r["event"]
        topic, oid = ev["topic"], ev["originator_id"]
        if topic.startswith((MATCH_PREFIX, ROUND_PREFIX)):  # verified buffered, for now
            raise Unsure("a Cuarenta match or a Treinta y Una round")
        if topic == TABLE_OPENED:
            self._table(r, plain(ev.get("state", {})))
        elif topic == TABLE_CLOSED:
            st = plain(ev.get("state", {}))
            if str(st.get("coup_id")) in self.done:
                raise Unsure("a table's close on a coup already checked")
            self.closing[str(st.get("coup_id"))] = r
            self.closed_tables.add(self.table_of.get(oid, ""))
        if topic.startswith(SHOE_PREFIX):
            self._shoe_event(r, oid, topic)
            return
        sid = self.owner.get(oid)
        if sid is None:
            if oid in self.done:
                raise Unsure(f"an event of {oid} after its shoe was checked")
            raw = ev.get("state")
            named = raw.get("shoe_id") if isinstance(raw, dict) else None
            if isinstance(named, dict):
                named = plain(named)
            if ev["version"] != 1 or not isinstance(named, str):
                if topic.startswith(ROUND_PREFIX):
                    raise Unsure("a round's event outside any shoe")
                return
            sid = named
            if sid in self.done:
                raise Unsure(f"a child of shoe {sid} after the shoe was checked")
            self.owner[oid] = sid
            self._bucket(sid).children.add(oid)
        self.shoes[sid].records.append(r)

    def _table(self, r: dict[str, Any], st: dict[str, Any]) -> None:
        tid = str(st.get("table_id"))
        known = self.tables.get(tid)
        if known is not None and plain(known["event"].get("state", {})) != st:
            raise Unsure(f"table {tid} opened again with other rules")
        self.tables[tid] = r
        self.table_of[r["event"]["originator_id"]] = tid
        self._finish_table(tid, None)

    def _bucket(self, sid: str) -> _Shoe:
        shoe = self.shoes.get(sid)
        if shoe is None:
            shoe = self.shoes[sid] = _Shoe(sid)
        return shoe

    def _shoe_event(self, r: dict[str, Any], sid: str, topic: str) -> None:
        if sid in self.done:
            raise Unsure(f"an event of shoe {sid} after it was checked")
        if topic == SHOE_SHUFFLED:
            self.shuffles.append(r)
            table = str(plain(r["event"].get("state", {})).get("table_id"))
            self._finish_table(table, sid)
            self._bucket(sid).table = table
        shoe = self._bucket(sid)
        if shoe.first is None:
            shoe.first = int(r["position"])
        shoe.records.append(r)

    def linked(self) -> None:
        """A link: the commands before it are whole; a table closed before it is done."""
        for tid in self.closed_tables:
            self._finish_table(tid, None)
        self.closed_tables.clear()

    def _finish_table(self, table: str, keep: str | None) -> None:
        for sid in [s for s, shoe in self.shoes.items() if shoe.table == table and s != keep]:
            self._check(self.shoes.pop(sid))

    def finish(self, checkpoints: dict[int, dict[str, Any]]) -> None:
        for sid in list(self.shoes):
            self._check(self.shoes.pop(sid))
        ends = {cp["coup"]: cp for cp in checkpoints.values() if cp.get("coup")}
        for cid, index in self.deferred:
            cp = ends.get(cid)
            if cp is None or index >= cp["size"]:
                raise Unsure(f"coup {cid}: its end under no signed checkpoint")
        if self.matches:
            records = sorted(self.shuffles + self.matches, key=lambda r: int(r["position"]))
            for v in verify_matches(records, seeds(records, [], self.reg)):
                if not v.ok:
                    raise Unsure(v.what)
                self.rounds.append((1 << 62, v))

    def _check(self, shoe: _Shoe) -> None:
        """One shoe with its coups and rounds, as ``check_shoes`` and ``verify_rounds`` check
        it in a whole export; its coups' checkpoints are checked at the end."""
        self.done.add(shoe.shoe_id)
        self.done.update(shoe.children)
        for oid in shoe.children:
            del self.owner[oid]
        records = list(shoe.records)
        records += [r for tid, r in self.tables.items() if tid == shoe.table]
        records += [self.closing.pop(c) for c in shoe.children if c in self.closing]
        records.sort(key=lambda r: int(r["position"]))
        index_of = {int(r["position"]): int(r["index"]) for r in records}
        ends: dict[int, dict[str, Any]] = {}
        settled: set[str] = set()
        for r in records:
            ev = r["event"]
            if ev["topic"] == COUP_SETTLED and ev["originator_id"] not in settled:
                settled.add(ev["originator_id"])
                ends[-len(ends) - 1] = {"coup": ev["originator_id"], "size": _AFAR}
                self.deferred.append((ev["originator_id"], index_of[int(r["position"])]))
        seed_of = seeds(records, [], self.reg)
        verdicts, pending = check_shoes(records, None, seed_of, ends, index_of)
        if any(not v.ok for v in verdicts):
            raise Unsure(f"shoe {shoe.shoe_id}")
        first = shoe.first if shoe.first is not None else 1 << 62
        self.verdicts.append((first, len(self.verdicts), verdicts))
        self.pending += [(first, p) for p in pending]
        starts: dict[str, int] = {}
        for r in records:
            ev = r["event"]
            if ev["topic"].startswith(ROUND_PREFIX):
                starts.setdefault(ev["originator_id"], int(r["position"]))
        rounds = verify_rounds(records, seed_of)
        for start, v in zip(starts.values(), rounds, strict=True):
            if not v.ok:
                raise Unsure(v.what)
            self.rounds.append((start, v))

    def results(self) -> tuple[list[Verdict], list[Pending]]:
        verdicts = [v for _f, _n, vs in sorted(self.verdicts, key=lambda x: x[:2]) for v in vs]
        verdicts += [v for _s, v in sorted(self.rounds, key=lambda x: x[0])]
        pending = [p for _f, p in sorted(self.pending, key=lambda x: x[0])]
        return verdicts, pending


class _Log:
    """The export read record by record (``verify_log``)."""

    def __init__(self, header: dict[str, Any], key: bytes | None,
                 chain_keys: list[bytes] | None, head: dict[str, Any] | None,
                 reg: X25519PrivateKey | None) -> None:
        self.header = header
        self.key = key if key is not None else bytes.fromhex(header["checkpoint_key"])
        trusted: dict[str, Ed25519PublicKey] = {}
        keys = chain_keys or ([bytes.fromhex(header["chain_key"])]
                              if header.get("chain_key") else [])
        for k in keys:
            trusted[key_id(k)] = Ed25519PublicKey.from_public_bytes(k)
        self.walk = Walk(trusted)
        self.walk.known = True  # the whole log: its first link must be link 1
        self.head = head
        self.head_hash: str | None = None
        self.frontier = Frontier()
        self.last_position = -1
        self.events = 0
        self.links = 0
        self.snapshots: dict[int, tuple[str, ...]] = {}  # link seq -> the snapshots it names
        self.money = _Money()
        self.reporter = Reporter()
        self.units = _Units(reg)
        self.checkpoints: dict[int, dict[str, Any]] = {}
        self.last_cp: dict[str, Any] | None = None
        self.site_link: dict[str, Any] | None = None  # the first link naming a site
        self.records = 0
        self.ended = False

    def event(self, r: dict[str, Any], line: str) -> None:
        idx, pos, ev = r["index"], r["position"], r["event"]
        if type(idx) is not int or idx != self.frontier.size or not isinstance(ev, dict) \
                or type(pos) is not int or ev.get("position") != pos:
            raise Unsure("an event record out of its place")
        h = bytes.fromhex(r["leaf_hash"])
        got = cut(line, r)
        if leaf_hash(got[0] if got is not None else _dumps(ev).encode()) != h:
            raise Unsure(f"position {pos}: not its notarised hash")
        self.frontier.push(0, h)
        self.events += 1
        self._content(pos, ev, got[1] if got is not None else None, r.get("actor"), True)
        self.reporter.feed(r)
        self.units.feed(r)

    def tail(self, r: dict[str, Any]) -> None:
        pos, ev = r["position"], r.get("event")
        if type(pos) is not int or not isinstance(ev, dict) or ev.get("position") != pos:
            raise Unsure("a tail record out of its place")
        self._content(pos, ev, None, None, False)

    def _content(self, pos: int, ev: dict[str, Any], state: bytes | None, actor: Any,
                 held: bool) -> None:
        if pos <= self.last_position:
            raise Unsure(f"position {pos} out of order")
        self.last_position = pos
        self.records += 1
        walk = self.walk
        if ev.get("topic") == CHAIN_LINKED:
            walk.feed(pos, ev)
            self._linked(pos, ev)
        else:
            walk.feed(pos, Slot(ev, state) if state is not None else ev)
        if walk.findings:
            raise Unsure(walk.findings[0].message)
        self.money.feed(pos, ev, actor, held)

    def _linked(self, pos: int, ev: dict[str, Any]) -> None:
        for seq, (body, _at) in self.walk.links.items():
            self.links += 1
            named = body.get("snapshots")
            if named:
                self.snapshots[seq] = tuple(named)
            if self.head is not None and seq == int(self.head["seq"]):
                self.head_hash = link_hash(body).hex()
        self.walk.links.clear()
        if self.money.after is None and self.walk.after is not None:
            self.money.chain_began(self.walk.after)
        state = ev.get("state")
        if isinstance(state, dict):
            site = state.get("site")
            if site is None:
                if self.site_link is not None:
                    raise Unsure("a link without its site")
            elif not isinstance(site, str) or not SITE.fullmatch(site):
                raise Unsure("a malformed site")
            elif self.site_link is None:
                self.site_link = {"position": pos, "event": ev}
            elif site != self.site_link["event"]["state"]["site"]:
                raise Unsure("two sites")
        self.units.linked()

    def checkpoint(self, cp: dict[str, Any]) -> None:
        check_checkpoint(cp, self.key)
        prev = self.last_cp
        size = int(cp["size"])
        if prev is not None:
            cons = cp.get("consistency") or {}
            if cons.get("from") != prev["size"] or size <= prev["size"]:
                raise Unsure(f"checkpoint {size}: no consistency proof from {prev['size']}")
            check_consistency(prev["size"], size, bytes.fromhex(prev["root"]),
                              bytes.fromhex(cp["root"]), [bytes.fromhex(p) for p in cons["proof"]])
        self.checkpoints[size] = {k: cp[k] for k in ("size", "root", "coup", "position", "origin")
                                  if k in cp}
        self.last_cp = cp

    def finish(self, pinned: str | None) -> Streamed:
        anchor = self.last_cp
        if not self.ended or anchor is None or anchor["size"] != self.header.get("anchor"):
            raise Unsure("the anchor checkpoint is not the last checkpoint")
        if self.frontier.size != anchor["size"] or self.frontier.root().hex() != anchor["root"]:
            raise Unsure("the leaves do not lead to the anchor")
        walk = self.walk
        cut_short = False
        if self.head is not None:
            if int(self.head["seq"]) > walk.last_seq:
                cut_short = True
            elif self.head_hash is not None and self.head_hash != self.head["link"]:
                raise Unsure("the writer's head names another link")
        walk.finish(cut=cut_short)
        if walk.findings or (not self.links and self.records):
            raise Unsure("evidence chain")
        self.money.finish(walk.after)
        self.units.finish(self.checkpoints)
        tiny = Export(self.header, events=[self.site_link] if self.site_link else [],
                      checkpoints=list(self.checkpoints.values()))
        sited = check_site(tiny, pinned)
        if sited.problems:
            raise Unsure("site")
        verdicts, pending = self.units.results()
        return Streamed(self.header, self.events, self.checkpoints, self.links,
                        len(self.money.balances), verdicts, pending, sited, self.reporter.lines())


def streamable(header: dict[str, Any]) -> bool:
    """A whole log's SABOT-EXPORT-2 export: what the stream verifies."""
    return header.get("format") == FORMAT and header.get("coverage") == "log"


def verify_log(lines: Iterable[str], key: bytes | None, chain_keys: list[bytes] | None,
               head: dict[str, Any] | None, pinned: str | None,
               reg: X25519PrivateKey | None) -> Streamed:
    """Verify a whole log's export as it is read (module docstring); ``key``: the checkpoint
    key (None: the header's); ``Unsure`` when it cannot vouch for it."""
    try:
        return _read(lines, key, chain_keys, head, pinned, reg)
    except Unsure:
        raise
    except Exception as exc:  # whatever it is, the buffered verifier says it
        raise Unsure(repr(exc)) from None


def _read(lines: Iterable[str], key: bytes | None, chain_keys: list[bytes] | None,
          head: dict[str, Any] | None, pinned: str | None,
          reg: X25519PrivateKey | None) -> Streamed:
    log: _Log | None = None
    for line in lines:
        if not line.strip():
            continue
        r = json.loads(line)
        if log is None:
            if not isinstance(r, dict) or r.get("kind") != "header" or not streamable(r):
                raise Unsure("not a whole log's SABOT-EXPORT-2 export")
            log = _Log(r, key, chain_keys, head, reg)
            continue
        kind = r.get("kind")
        if log.ended:
            raise Unsure("a record after the end record")
        if kind == "event":
            log.event(r, line)
        elif kind == "tail":
            log.tail(r)
        elif kind == "snapshot":
            log.money.snapshot(r, log.snapshots, log.links)
        elif kind == "checkpoint":
            log.checkpoint(r)
        elif kind == "end":
            log.ended = True
        else:  # nodes, leaf, unnotarised, escrow: not in an intact whole log's export
            raise Unsure(f"a {kind!r} record")
    if log is None:
        raise Unsure("no header")
    return log.finish(pinned)


__all__ = ["Streamed", "Unsure", "cut", "streamable", "verify_log"]
