"""The notary: follows the ledger's log, keeps its Merkle tree in tables, signs checkpoints.

Every stored event becomes leaf ``i`` in log order (``regulator_leaves``: index, position, leaf
hash); every complete subtree is kept in ``regulator_nodes`` (level >= 1), so any proof over a
tree of n leaves reads O(log² n) rows in one query. A checkpoint is signed at the end of every
round of every game and on demand. Polling (``sync``) works on SQLite and PostgreSQL alike.

Where rounds end is the games' business, not the notary's: it imports no game. Its maker hands
it ``round_end(event) -> round id | None`` (the composition root, ``services.bootstrap``, and the
server hand it ``services.regulator.vocabulary.round_end``: every registered game's
``Game.round_ends``). The checkpoint of a round is signed after the last event of the run of
its aggregate's events that holds its end (what the command that ended it stored on that
aggregate: a Cuarenta match's pot movements follow its ``Won``), or at the end of the batch
read when the run reaches it.

Only one notary may write a store: every write holds the store's writer lock (``writer_lock``).
A notary that runs (``Follower``, ``follow``) holds it for as long as it runs, and one that finds
it taken stands by, retrying, and takes over when the holder stops or dies; a one-off ``sync`` or
``checkpoint_now`` takes it for the call (re-reading the tree first) or raises ``NotaryBusy``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from services.regulator import merkle
from services.regulator.chain import ChainProblem, ChainWalk, new_walk, pinned_keys, start_at
from services.regulator.checkpoint import Checkpoint, sign_checkpoint
from services.regulator.source import Database, EventTable, RawEvent
from services.regulator.writer_lock import NotaryBusy, WriterLock

__all__ = ["Follower", "Notary", "NotaryBusy", "RoundEnd", "follow", "follow_with",
           "missing_leaves", "no_round_end", "signing_follower"]

log = logging.getLogger(__name__)

RoundEnd = Callable[[RawEvent], str | None]  # the round's id when the event ends a round


TREE_TABLES = ("regulator_leaves", "regulator_nodes", "regulator_checkpoints")
_PG_REFUSE = """
CREATE OR REPLACE FUNCTION regulator_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'sabot: % on %.% is forbidden: the Merkle log is append-only',
        TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME USING ERRCODE = 'insufficient_privilege';
END;
$$
"""


def no_round_end(event: RawEvent) -> str | None:
    """No event ends a round: a notary that signs on demand only (or a reader's)."""
    return None


class Notary:
    """Merkle log over one event table; the tree tables live in ``db`` (often the same store)."""

    def __init__(
        self,
        db: Database,
        events: EventTable,
        key: Ed25519PrivateKey | None,
        origin: str = "sabot",
        round_end: RoundEnd = no_round_end,
        *,
        create: bool = True,
        chain_keys: dict[str, Any] | None = None,
    ) -> None:
        """``create=False``: a reader that neither creates nor changes the tree's tables (an
        absent tree reads as empty). ``chain_keys``: the evidence chain's public keys by key
        id (default: the key its first link introduces); every event notarised is checked
        against the chain, and what does not match is logged and kept in ``chain_problems``
        (it is notarised all the same: the tree records what the store holds)."""
        self.db = db
        self.events = events
        self.key = key
        self.origin = origin
        self.round_end = round_end
        self.chain_keys = chain_keys
        self.chain_problems: list[ChainProblem] = []  # the latest (at most 1000)
        self._walk: ChainWalk | None = None
        self._last: dict[int, bytes] = {}
        self._size = 0
        self._position = 0
        self.writer = WriterLock(db)
        if create:
            self._create_tables()
        elif not db.table_exists("regulator_checkpoints"):
            self._absent = True
            return
        self._absent = False
        self._load_frontier()

    @property
    def present(self) -> bool:
        """Whether the tree's tables exist (a reader made with ``create=False``)."""
        return not self._absent

    # --- tables -----------------------------------------------------------------------------

    def _create_tables(self) -> None:
        """The tree's tables; on PostgreSQL they are append-only too (triggers refuse UPDATE,
        DELETE and TRUNCATE). On PostgreSQL, tables an owner role made for a server role that
        may only read and insert them (``sabot ledger-schema``) are left as they are."""
        if self.db.is_postgres and self._set_up_by_owner():
            return
        blob = "BYTEA" if self.db.is_postgres else "BLOB"
        with self.db.transaction():
            if self.db.is_postgres:
                self.db.execute("SELECT pg_advisory_xact_lock(hashtext('sabot_regulator'))")
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS regulator_leaves (idx BIGINT PRIMARY KEY, "
                f"position BIGINT NOT NULL UNIQUE, hash {blob} NOT NULL)"
            )
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS regulator_nodes (level INTEGER NOT NULL, "
                f"idx BIGINT NOT NULL, hash {blob} NOT NULL, PRIMARY KEY (level, idx))"
            )
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS regulator_checkpoints (size BIGINT PRIMARY KEY, "
                f"origin TEXT NOT NULL, root {blob} NOT NULL, position BIGINT, coup TEXT, "
                f"key_id TEXT NOT NULL, signature {blob} NOT NULL)"
            )
            if self.db.is_postgres:
                self.db.execute(_PG_REFUSE)
                for table in TREE_TABLES:
                    self.db.execute(
                        f"CREATE OR REPLACE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE "
                        f"ON {table} FOR EACH ROW EXECUTE FUNCTION regulator_refuse_change()"
                    )
                    self.db.execute(
                        f"CREATE OR REPLACE TRIGGER {table}_no_truncate BEFORE TRUNCATE "
                        f"ON {table} FOR EACH STATEMENT EXECUTE FUNCTION regulator_refuse_change()"
                    )

    def _set_up_by_owner(self) -> bool:
        """Whether every tree table exists and this role does not own them."""
        marks = ", ".join("to_regclass(?)" for _ in TREE_TABLES)
        found, owned = self.db.rows(
            "SELECT count(*), coalesce(bool_or(pg_has_role(relowner, 'USAGE')), false) "
            f"FROM pg_class WHERE oid IN ({marks})", TREE_TABLES)[0]
        return int(found) == len(TREE_TABLES) and not owned

    def _load_frontier(self) -> None:
        self._walk = None  # started again from the store at the next sync
        self._last, self._size, self._position = {}, 0, 0
        rows = self.db.rows("SELECT idx, position FROM regulator_leaves ORDER BY idx DESC LIMIT 1")
        if not rows:
            return
        self._size = int(rows[0][0]) + 1
        self._position = int(rows[0][1])
        keys = [(lv, (self._size >> lv) - 1) for lv in range(64) if self._size >> lv]
        found = self.nodes(keys)
        self._last = {lv: found[(lv, i)] for lv, i in keys}

    # --- the writer's lock ------------------------------------------------------------------

    def hold(self, wait: float = 0.0, poll: float = 0.2) -> bool:
        """Take the store's writer lock and keep it until ``release`` (or the connection's end),
        trying for up to ``wait`` seconds; False if another notary holds it. Once taken, the
        tree is read again from the store (another notary may have grown it)."""
        deadline = time.monotonic() + wait
        while not self.writer.try_acquire():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(poll, left))
        self._load_frontier()
        return True

    def release(self) -> None:
        """Let the writer lock go (a no-op when it is not held)."""
        self.writer.release()

    def refresh(self) -> None:
        """Read the tree again from the store, without the lock (for a reader while another
        notary writes: leaves and nodes are only ever added, each batch in one transaction)."""
        self._load_frontier()

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Hold the writer lock for one write: as it is (``hold``), or for this call only."""
        if self.writer.held:
            yield
            return
        if not self.writer.try_acquire():
            raise NotaryBusy(self.writer.where)
        try:
            self._load_frontier()
            yield
        finally:
            self.writer.release()

    # --- reading the tree -------------------------------------------------------------------

    @property
    def size(self) -> int:
        return self._size

    @property
    def position(self) -> int:
        """Log position of the last leaf (0 when empty)."""
        return self._position

    def nodes(self, keys: Sequence[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
        """Node hashes by (level, index); level 0 are the leaves. Raises KeyError if absent."""
        out: dict[tuple[int, int], bytes] = {}
        leaves = sorted({i for lv, i in keys if lv == 0})
        inner = sorted({(lv, i) for lv, i in keys if lv > 0})
        for c in range(0, len(leaves), 500):
            chunk = leaves[c : c + 500]
            marks = ",".join("?" * len(chunk))
            for idx, h in self.db.rows(
                f"SELECT idx, hash FROM regulator_leaves WHERE idx IN ({marks})", chunk
            ):
                out[(0, int(idx))] = bytes(h)
        for c in range(0, len(inner), 250):
            pairs = inner[c : c + 250]
            cond = " OR ".join(["(level = ? AND idx = ?)"] * len(pairs))
            flat = [x for p in pairs for x in p]
            for lv, idx, h in self.db.rows(
                f"SELECT level, idx, hash FROM regulator_nodes WHERE {cond}", flat
            ):
                out[(int(lv), int(idx))] = bytes(h)
        missing = [k for k in keys if k not in out]
        if missing:
            raise KeyError(f"Merkle nodes missing: {missing[:5]}")
        return out

    def _run(self, compute: Callable[[merkle.NodeSource], Any]) -> Any:
        keys = merkle.needed_nodes(compute)
        found = self.nodes(sorted(keys))
        return compute(lambda lv, i: found[(lv, i)])

    def _check_size(self, size: int | None) -> int:
        n = self._size if size is None else size
        if not 0 <= n <= self._size:
            raise merkle.ProofError(f"tree size {n} beyond the {self._size} leaves notarised")
        return n

    def root(self, size: int | None = None) -> bytes:
        n = self._check_size(size)
        result: bytes = self._run(lambda src: merkle.root(src, n))
        return result

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]:
        n = self._check_size(size)
        result: list[bytes] = self._run(lambda src: merkle.inclusion_proof(src, index, n))
        return result

    def consistency_proof(self, old_size: int, new_size: int | None = None) -> list[bytes]:
        n = self._check_size(new_size)
        result: list[bytes] = self._run(lambda src: merkle.consistency_proof(src, old_size, n))
        return result

    def leaves(self, first: int = 0, stop: int | None = None) -> list[tuple[int, int, bytes]]:
        """(index, position, leaf hash) for leaves first <= index < stop."""
        end = self._size if stop is None else stop
        return [
            (int(i), int(p), bytes(h))
            for i, p, h in self.db.rows(
                "SELECT idx, position, hash FROM regulator_leaves WHERE idx >= ? AND idx < ? "
                "ORDER BY idx",
                (first, end),
            )
        ]

    def leaf_positions(self, first: int = 0, stop: int | None = None) -> list[tuple[int, int]]:
        """(index, position) for leaves first <= index < stop (no hashes read)."""
        end = self._size if stop is None else stop
        return [
            (int(i), int(p))
            for i, p in self.db.rows(
                "SELECT idx, position FROM regulator_leaves WHERE idx >= ? AND idx < ? "
                "ORDER BY idx",
                (first, end),
            )
        ]

    def leaf_at_position(self, position: int) -> tuple[int, bytes] | None:
        if self._absent:
            return None
        rows = self.db.rows(
            "SELECT idx, hash FROM regulator_leaves WHERE position = ?", (position,)
        )
        return (int(rows[0][0]), bytes(rows[0][1])) if rows else None

    def leaves_at_positions(self, positions: Sequence[int]) -> dict[int, tuple[int, bytes]]:
        """(index, leaf hash) by log position, for those of ``positions`` that are leaves."""
        out: dict[int, tuple[int, bytes]] = {}
        if self._absent:
            return out
        wanted = sorted(set(positions))
        for c in range(0, len(wanted), 500):
            chunk = wanted[c : c + 500]
            marks = ",".join("?" * len(chunk))
            for idx, pos, h in self.db.rows(
                f"SELECT idx, position, hash FROM regulator_leaves WHERE position IN ({marks})",
                chunk,
            ):
                out[int(pos)] = (int(idx), bytes(h))
        return out

    def leaves_around(self, positions: Sequence[int], first: int, last: int
                      ) -> tuple[dict[int, tuple[int, bytes]], list[tuple[int, int, bytes]]]:
        """``leaves_at_positions(positions)`` and the leaves of the positions ``first`` to
        ``last``, ``leaves(index_at_or_after(first), index_at_or_after(last + 1))``, in one
        statement (a replay's single events and its span: four statements before)."""
        wanted = sorted(set(positions))
        if self._absent or len(wanted) > 500:
            return self.leaves_at_positions(wanted), self.leaves(
                self.index_at_or_after(first), self.index_at_or_after(last + 1))
        first_at = ("coalesce((SELECT idx FROM regulator_leaves WHERE position >= ? "
                    "ORDER BY position LIMIT 1), ?)")
        sql = (f"SELECT 1, idx, position, hash FROM regulator_leaves WHERE idx >= {first_at} "
               f"AND idx < {first_at}")
        params: list[Any] = [first, self._size, last + 1, self._size]
        if wanted:
            chosen: list[Any]
            if self.db.is_postgres:  # one text whatever their number: prepared once
                at, chosen = "= ANY(CAST(? AS BIGINT[]))", [wanted]
            else:
                at, chosen = f"IN ({','.join('?' * len(wanted))})", list(wanted)
            sql = (f"SELECT 0, idx, position, hash FROM regulator_leaves WHERE position {at} "
                   f"UNION ALL {sql}")
            params = [*chosen, *params]
        at_positions: dict[int, tuple[int, bytes]] = {}
        spanned: list[tuple[int, int, bytes]] = []
        for part, idx, pos, h in self.db.rows(f"{sql} ORDER BY 1, 2", params):
            if part == 0:
                at_positions[int(pos)] = (int(idx), bytes(h))
            else:
                spanned.append((int(idx), int(pos), bytes(h)))
        return at_positions, spanned

    def index_at_or_after(self, position: int) -> int:
        """The first leaf index whose position is >= ``position`` (``size`` if none)."""
        rows = self.db.rows(  # positions grow with the index: the first one is the least
            "SELECT idx FROM regulator_leaves WHERE position >= ? ORDER BY position LIMIT 1",
            (position,),
        )
        return int(rows[0][0]) if rows else self._size

    # --- checkpoints ------------------------------------------------------------------------

    def checkpoints(self, first_size: int = 0, last_size: int | None = None) -> list[Checkpoint]:
        end = self._size if last_size is None else last_size
        if self._absent:
            return []
        rows = self.db.rows(
            "SELECT origin, size, root, position, coup, key_id, signature FROM "
            "regulator_checkpoints WHERE size >= ? AND size <= ? ORDER BY size",
            (first_size, end),
        )
        return [_checkpoint(r) for r in rows]

    def latest_checkpoint(self) -> Checkpoint | None:
        if self._absent:
            return None
        rows = self.db.rows(
            "SELECT origin, size, root, position, coup, key_id, signature FROM "
            "regulator_checkpoints ORDER BY size DESC LIMIT 1"
        )
        return _checkpoint(rows[0]) if rows else None

    def checkpoint_now(self) -> Checkpoint | None:
        """Sign the current tree head (None when the tree is empty or already signed)."""
        with self._writing():
            if self._size == 0:
                return None
            latest = self.latest_checkpoint()
            if latest is not None and latest.size == self._size:
                return latest
            with self.db.transaction():
                return self._sign(self._size, self.root(), self._position, None)

    def _sign(self, size: int, root: bytes, position: int, coup: str | None) -> Checkpoint:
        if self.key is None:
            raise RuntimeError("the notary has no checkpoint key")
        cp = sign_checkpoint(self.key, self.origin, size, root, position, coup)
        self.db.execute(
            "INSERT INTO regulator_checkpoints (size, origin, root, position, coup, key_id, "
            "signature) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (cp.size, cp.origin, cp.root, cp.position, cp.coup, cp.key_id, cp.signature),
        )
        return cp

    # --- appending --------------------------------------------------------------------------

    def sync(self, batch: int = 5000, max_events: int | None = None) -> list[Checkpoint]:
        """Notarise every new event; returns the checkpoints signed on the way. Raises
        ``NotaryBusy`` when another notary holds the store."""
        signed: list[Checkpoint] = []
        done = 0
        with self._writing():
            self._start_walk()
            while max_events is None or done < max_events:
                limit = batch if max_events is None else min(batch, max_events - done)
                events = self.events.read(self._position, limit)
                if not events:
                    break
                signed += self._append(events)
                done += len(events)
        return signed

    def _start_walk(self) -> None:
        """Start checking the chain where the tree ends (once the log has a chain)."""
        if self._walk is not None:
            return
        walk, first = new_walk(self.events, self.chain_keys)
        if first is None:
            return  # no link yet: every event so far precedes the chain
        start = start_at(walk, self.events, first, self._position + 1)
        after = start - 1
        while after < self._position:  # the batch's events notarised already, fed again
            batch = self.events.read(after, min(5000, self._position - after))
            if not batch:
                break
            for ev in batch:
                walk.feed(ev.position, ev)
            after = batch[-1].position
        self._walk = walk
        self._report()

    def _report(self) -> None:
        walk = self._walk
        if walk is None or not walk.problems:
            return
        for p in walk.problems:
            log.error("notary: evidence chain broken at position %d: %s", p.position, p.message)
        self.chain_problems = (self.chain_problems + walk.problems)[-1000:]
        walk.problems = []

    def _append(self, events: Sequence[RawEvent]) -> list[Checkpoint]:
        walk = self._walk
        if walk is not None:
            for ev in events:
                walk.feed(ev.position, ev)
            self._report()
        size, last = self._size, dict(self._last)
        leaf_rows: list[tuple[int, int, bytes]] = []
        node_rows: list[tuple[int, int, bytes]] = []
        ends: list[tuple[int, int, str, bytes]] = []
        pending: str | None = None  # a round ended in the current run of its aggregate
        mark: tuple[int, int, bytes] = (0, 0, b"")  # (size, position, root) at the run's last
        for i, ev in enumerate(events):
            h = merkle.leaf_hash(ev.leaf())
            leaf_rows.append((size, ev.position, h))
            level, idx = 0, size
            while idx & 1:
                parent = merkle.node_hash(last[level], h)
                last[level] = h
                h, level, idx = parent, level + 1, idx >> 1
                node_rows.append((level, idx, h))
            last[level] = h
            size += 1
            if self.key is None:
                continue
            ended = self.round_end(ev)
            if ended is not None:
                if pending is not None:  # a second end in one run: the first's stops before it
                    ends.append((mark[0], mark[1], pending, mark[2]))
                pending = ended
            if pending is None:
                continue
            mark = (size, ev.position, _root_from_frontier(last, size))
            after = events[i + 1] if i + 1 < len(events) else None
            if after is None or after.originator_id != ev.originator_id:
                ends.append((mark[0], mark[1], pending, mark[2]))
                pending = None
        signed: list[Checkpoint] = []
        try:
            with self.db.transaction():
                self.db.executemany(
                    "INSERT INTO regulator_leaves (idx, position, hash) VALUES (?, ?, ?)",
                    leaf_rows,
                )
                if node_rows:
                    self.db.executemany(
                        "INSERT INTO regulator_nodes (level, idx, hash) VALUES (?, ?, ?)",
                        node_rows,
                    )
                for n, pos, round_id, root in ends:
                    signed.append(self._sign(n, root, pos, round_id))
        except BaseException:
            self._walk = None  # it saw events the tree did not take: start it again
            raise
        self._size, self._last, self._position = size, last, events[-1].position
        return signed


def missing_leaves(
    events: EventTable, notary: Notary, first: int = 0, stop: int | None = None
) -> list[int]:
    """Indexes of the leaves first <= index < stop whose event is gone from the store: the
    leaves' positions and the store's, walked side by side (no content read)."""
    end = notary.size if stop is None else stop
    out: list[int] = []
    if first >= end:
        return out
    step = 100_000
    start = notary.leaf_positions(first, first + 1)
    stored = _stored_positions(events, start[0][1] - 1 if start else 0, step)
    cur = next(stored, None)
    for lo in range(first, end, step):
        for idx, pos in notary.leaf_positions(lo, min(end, lo + step)):
            while cur is not None and cur < pos:
                cur = next(stored, None)  # stored, no leaf: not this check's business
            if cur != pos:
                out.append(idx)
    return out


def _stored_positions(events: EventTable, after: int, step: int) -> Iterator[int]:
    while True:
        batch = events.positions(after, step)
        if not batch:
            return
        yield from batch
        after = batch[-1]


def _root_from_frontier(last: dict[int, bytes], size: int) -> bytes:
    """MTH of the first ``size`` leaves from the last node of each level (the frontier)."""
    acc: bytes | None = None
    for level in range(size.bit_length()):
        if size >> level & 1:
            h = last[level]  # node (level, (size >> level) - 1): a complete subtree
            acc = h if acc is None else merkle.node_hash(h, acc)
    assert acc is not None
    return acc


def _checkpoint(row: tuple[Any, ...]) -> Checkpoint:
    origin, size, root, position, coup, kid, sig = row
    return Checkpoint(
        str(origin),
        int(size),
        bytes(root),
        None if position is None else int(position),
        None if coup is None else str(coup),
        str(kid),
        bytes(sig),
    )


def follow(
    url: str,
    key: Ed25519PrivateKey,
    stop: threading.Event,
    interval: float = 0.2,
    origin: str = "sabot",
    on_standby: Callable[[str], None] | None = None,
    *,
    round_end: RoundEnd,
) -> None:
    """Notarise the store at ``url`` as it grows, signing at every round's end (``round_end``),
    until ``stop`` is set. Run it in a thread or process of its own (it opens its own
    connection). While another notary holds the store it stands by (``on_standby`` is told
    once), retrying every ``interval`` seconds, and takes over when that one stops or dies."""
    db = Database(url)
    try:
        follow_with(Notary(db, EventTable(db), key, origin, round_end), stop, interval,
                    on_standby)
    finally:
        db.close()


def follow_with(notary: Notary, stop: threading.Event, interval: float = 0.2,
                on_standby: Callable[[str], None] | None = None) -> None:
    """``follow`` on a signing ``notary`` made by the caller (``sabot store checkpoint
    --follow``: ``services.bootstrap.store_notary``, with the chain's pinned keys), whose
    connection stays the caller's; the store's writer lock is released when it ends."""
    try:
        if not _stand_by(notary, stop, interval, on_standby):
            return
        while not stop.is_set():
            notary.sync()
            stop.wait(interval)
        notary.sync()
    finally:
        notary.release()


def _stand_by(
    notary: Notary,
    stop: threading.Event,
    retry: float,
    on_standby: Callable[[str], None] | None = None,
) -> bool:
    """Wait for the store's writer lock, retrying every ``retry`` seconds; False if ``stop``
    came first. Logged (and ``on_standby`` told) once when it must wait, and on taking over."""
    if notary.hold():
        return True
    text = (f"notary: standing by: another notary is writing {notary.writer.where}; "
            f"retrying every {retry:g}s")
    log.warning(text)
    if on_standby is not None:
        on_standby(text)
    while not stop.wait(retry):
        if notary.hold():
            log.warning("notary: the other notary has gone; taking over %s", notary.writer.where)
            if on_standby is not None:
                on_standby(f"notary: taking over {notary.writer.where}")
            return True
    return False


class Follower:
    """The notary of a running server, in a thread of its own: it notarises the store as it
    grows (a checkpoint at every round's end, ``round_end``), signs a checkpoint of the whole
    log on demand (``checkpoint_now``), and survives a lost connection (it reconnects after
    ``retry`` seconds). It holds the store's writer lock while it runs: a second server on the
    same store stands by (its on-demand requests time out) and takes over when the first stops
    or dies."""

    def __init__(
        self,
        url: str,
        key: Ed25519PrivateKey,
        origin: str = "sabot",
        interval: float = 0.2,
        retry: float = 1.0,
        on_error: Callable[[BaseException], None] | None = None,
        chain_keys: dict[str, Any] | None = None,
        *,
        round_end: RoundEnd,
    ) -> None:
        self.url, self.key, self.origin = url, key, origin
        self.round_end = round_end
        self.chain_keys = chain_keys  # the evidence chain's keys (default: its first link's)
        self.interval, self.retry = interval, retry
        self.on_error = on_error
        self.stopped = threading.Event()
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._wanted = 0  # on-demand syncs asked for, and done (tickets)
        self._done = 0
        self._sign_upto = 0  # the last ticket that asked for a checkpoint
        self._latest: Checkpoint | None = None
        self._cond = threading.Condition(self._lock)
        self._thread = threading.Thread(target=self._loop, name="sabot-notary", daemon=True)
        self.ready = threading.Event()  # the tree's tables exist
        self.active = threading.Event()  # this notary holds the store (not standing by)
        self.standby = threading.Event()  # another notary holds the store: this one waits

    def start(self) -> Follower:
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Notarise what is left, then stop."""
        self.stopped.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def poke(self) -> None:
        """Sync now rather than at the next poll."""
        self._wake.set()

    def checkpoint_now(self, timeout: float = 10.0) -> Checkpoint | None:
        """Notarise every event stored so far and sign the whole tree head; the checkpoint
        (None when nothing is stored, or on timeout / when stopped)."""
        return self._ask(True, timeout)[1]

    def sync_now(self, timeout: float = 10.0) -> bool:
        """Notarise every event stored so far (no checkpoint); False on timeout / stopped."""
        return self._ask(False, timeout)[0]

    def _ask(self, sign: bool, timeout: float) -> tuple[bool, Checkpoint | None]:
        with self._cond:
            self._wanted += 1
            ticket = self._wanted
            if sign:
                self._sign_upto = ticket
        self._wake.set()
        with self._cond:
            done = self._cond.wait_for(
                lambda: self._done >= ticket or self.stopped.is_set(), timeout
            ) and self._done >= ticket
            return done, (self._latest if done else None)

    def _note_standby(self, text: str) -> None:
        if text.startswith("notary: standing by"):  # (not "taking over")
            self.standby.set()

    def _loop(self) -> None:
        while not self.stopped.is_set():
            db: Database | None = None
            notary: Notary | None = None
            try:
                db = Database(self.url)
                notary = Notary(db, EventTable(db), self.key, self.origin, self.round_end,
                                chain_keys=self.chain_keys)
                self.ready.set()
                if not _stand_by(notary, self.stopped, self.retry,
                                 on_standby=self._note_standby):
                    return
                self.standby.clear()
                self.active.set()
                while True:
                    with self._cond:
                        wanted, sign = self._wanted, self._sign_upto > self._done
                    notary.sync()
                    if wanted > self._done:
                        latest = notary.checkpoint_now() if sign else None
                        with self._cond:
                            self._latest, self._done = latest, wanted
                            self._cond.notify_all()
                    if self.stopped.is_set():
                        break
                    self._wake.wait(self.interval)
                    self._wake.clear()
                return
            except Exception as exc:  # the store went away: report, wait, reconnect
                if self.on_error is not None:
                    self.on_error(exc)
                self.stopped.wait(self.retry)
            finally:
                self.active.clear()
                self.standby.clear()
                if notary is not None:
                    notary.release()
                if db is not None:
                    db.close()
                with self._cond:
                    self._cond.notify_all()


def signing_follower(url: str, checkpoint_key: bytes, chain_public_keys: Sequence[bytes] = (),
                     *, round_end: RoundEnd, origin: str = "sabot",
                     on_error: Callable[[BaseException], None] | None = None) -> Follower:
    """The notary of a server on ``url`` (not started): it signs with the raw Ed25519
    ``checkpoint_key`` at every round's end (``round_end``: the games', ``services.regulator
    .vocabulary.round_end``) and checks the evidence chain against ``chain_public_keys`` (none:
    the keys the chain introduces). ``services.bootstrap.notary`` makes it from the settings."""
    key = Ed25519PrivateKey.from_private_bytes(checkpoint_key)
    chain_keys = pinned_keys(chain_public_keys) if chain_public_keys else None
    return Follower(url, key, origin, on_error=on_error, chain_keys=chain_keys,
                    round_end=round_end)
