"""Replay (regulator role): rebuild a shoe from its seed and recorded cut, re-deal, re-settle.

``Replayer.coup(id)`` and ``Replayer.shoe(id)`` yield ``ReplayStep``s, each a recorded value
beside the recomputed one (and the log position of the event that recorded it); ``verdict``
turns them into identical, or the first difference with both values. Before recomputing, the
notarised leaves over the events' span are compared with what is stored, so an edited, deleted
or moved event shows as the first difference at its position. The rules are the domain's
(``domain/``), under the ruleset and algorithm recorded with the table and the shoe.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import pairwise
from typing import Any
from uuid import UUID

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from domain.cards import DeckKind
from domain.errors import FailedPrecondition, InvalidArgument, NotFound
from domain.shuffle import ALGORITHM_ID, Sabot, commitment, load_sabot
from services.ledger.table import UNRECORDED_GAME
from services.regulator.chain import chain_problems, genesis
from services.regulator.escrow import EscrowError, open_sealed
from services.regulator.escrow_table import EscrowTable
from services.regulator.merkle import leaf_hash
from services.regulator.notary import Notary, missing_leaves
from services.regulator.source import CoveredEvents, EventTable, RawEvent
from services.regulator.vocabulary import ShoeEvents, coup_events, shoe_events, state
from services.topics import (
    CHAIN_LINKED,
    SHOE_CLOSED,
    SHOE_COUP_DEALT,
    SHOE_CUT,
    TABLE_OPENED,
)


@dataclass(frozen=True, slots=True)
class ReplayStep:
    """One recorded fact beside its recomputation."""

    position: int | None  # log position of the event that records it
    what: str
    recorded: Any
    replayed: Any

    @property
    def same(self) -> bool:
        return bool(self.recorded == self.replayed)


@dataclass(frozen=True, slots=True)
class ReplayVerdict:
    identical: bool
    steps: int
    first_difference: ReplayStep | None

    def __str__(self) -> str:
        d = self.first_difference
        if d is None:
            return f"identical ({self.steps} steps)"
        return (
            f"first difference at position {d.position}: {d.what}: recorded {d.recorded!r}, "
            f"replayed {d.replayed!r}"
        )


def verdict(steps: Iterable[ReplayStep]) -> ReplayVerdict:
    n, first = 0, None
    for s in steps:
        n += 1
        if first is None and not s.same:
            first = s
    return ReplayVerdict(first is None, n, first)


# A game's replay of a shoe's rounds: ``replay(found, opened, only)`` (the shoe's events, grouped
# by ``vocabulary.shoe_events``; the table's ``Table.Opened`` state; one round's id or None)
# reads the table's rules and returns ``rounds(sabot)``, which yields a ``ReplayStep`` per
# recorded value beside the recomputed one.
Rounds = Callable[[Sabot], Iterator[ReplayStep]]
Replay = Callable[[ShoeEvents, Mapping[str, Any], str | None], Rounds]


@dataclass(frozen=True)
class RegulatorGame:
    """What the regulator needs of a game (its port, handed in by the composition root,
    ``services/bootstrap.py``): its name, its replay of a shoe's rounds (``Replay``; None:
    none here: its rounds are replayed by its own RPC), the topics of the events that end one
    of its rounds (a coup, a round, a match, a hand that moves money: the notary signs a
    checkpoint at each, ``vocabulary.RoundEnds``) and every topic its aggregates store."""

    name: str
    replay: Replay | None = None
    round_ends: frozenset[str] = frozenset()
    topics: frozenset[str] = frozenset()


class Replayer:
    """Replays from the store's events; the seed comes from the reveal, else the shoe's
    ``escrowed_seed`` (``Shoe.Shuffled`` v2) opened with ``regulator_key`` (or, for a legacy
    store, the ``escrow`` side table), else the operator's sealed seed opened with
    ``seal_key``. ``games``: the games whose rounds it replays (by the table's game)."""

    def __init__(
        self,
        events: EventTable,
        notary: Notary | None = None,
        *,
        games: Sequence[RegulatorGame],
        regulator_key: X25519PrivateKey | None = None,
        seal_key: bytes | None = None,
        escrow: EscrowTable | None = None,
        chain_keys: dict[str, Any] | None = None,
    ) -> None:
        self.events = events
        self.games = {game.name: game for game in games}
        self.notary = notary
        self.chain_keys = chain_keys  # the evidence chain's keys (default: its first link's)
        self.regulator_key = regulator_key
        self.seal_key = seal_key
        self.escrow = escrow  # legacy: seeds escrowed beside the ledger (escrow_table.py)

    # --- entry points -----------------------------------------------------------------------

    def coup(self, coup_id: str) -> Iterator[ReplayStep]:
        """Every step of one coup (its events read once: its shoe found from the first)."""
        found = coup_events(self.events, coup_id)
        if found is None:
            raise NotFound("coup_id", "NO_COUP", f"no coup {coup_id}")
        shoe_id, evs = found
        yield from self._run(shoe_id, only=str(UUID(coup_id)), only_events=evs)

    def shoe(self, shoe_id: str) -> Iterator[ReplayStep]:
        """Every step of every coup of one shoe."""
        yield from self._run(shoe_id, only=None)

    # --- the work ---------------------------------------------------------------------------

    def _run(self, shoe_id: str, only: str | None,
             only_events: list[RawEvent] | None = None) -> Iterator[ReplayStep]:
        found = shoe_events(self.events, shoe_id, only, only_events)
        if found is None:
            raise NotFound("shoe_id", "NO_SHOE", f"no shoe {shoe_id}")
        if only is not None and only not in found.coups:
            raise NotFound("coup_id", "NO_COUP", f"no coup {only} in shoe {shoe_id}")
        singles = [e.position for e in found.table if e.topic == TABLE_OPENED]
        gaps: list[tuple[int, int]] = []
        if only is None:
            inner = [e.position for e in found.all_events() if e.position not in singles]
        else:
            inner = [e.position for e in found.coups[only]]
            gaps = _gaps_before(found.shoe, min(inner))
            found = _dealt_through(found, max(inner))
            singles += [e.position for e in found.shoe]
        lo, hi = min(inner), max(inner)
        ranges = _ranges(singles, gaps, lo, hi)
        events = self._cover(ranges)
        # the rows read around the span hold the position after it, where a tail left by
        # deleted events ends (answered as the store would); covered again only if it is one
        end = self._through_missing_tail(hi, events)
        if end != hi:
            hi = end
            ranges = _ranges(singles, gaps, lo, hi)
            events = self._cover(ranges)
        tampered = False
        checked = list(self._integrity(ranges, events))
        deleted = [s.position for s in checked if s.position is not None and s.replayed is None
                   and s.what.startswith("event hash")]
        checked += self._chain(ranges, deleted, events)
        for step in sorted(checked, key=lambda s: s.position or 0):
            tampered = tampered or not step.same
            yield step
        if not any(e.topic == SHOE_CLOSED for e in found.shoe):
            for step in self._missing_after(hi):  # not closed in the store: its end is open
                tampered = True
                yield step
        try:
            yield from self._recompute(found, only)
        except (KeyError, TypeError, ValueError, InvalidArgument) as exc:
            yield ReplayStep(None, "replay stopped: a recorded event is malformed", None, repr(exc))
        except FailedPrecondition as exc:
            if not tampered:
                raise
            # e.g. its Shoe.Closed (the revealed seed) deleted: the log's difference stands
            yield ReplayStep(None, "replay stopped: no revealed seed in the store", None,
                             f"{exc.field}: {exc.message}")

    def _through_missing_tail(self, last: int, events: EventTable) -> int:
        """``last``, or past it up to the next stored event when notarised leaves lie between:
        events gone from the store right after the span (a deleted last event, e.g. the shoe's
        ``Shoe.Closed``). An untouched store has no leaf there."""
        if self.notary is None:
            return last
        after = events.positions(last, 1)
        end = after[0] - 1 if after else self.notary.position
        return max(last, end)

    def _recompute(self, found: ShoeEvents, only: str | None) -> Iterator[ReplayStep]:
        """The shoe's algorithm, commitment and order from its seed, then its rounds by the
        rules of the table's game (``RegulatorGame.replay``)."""
        shuffled = state(found.shoe[0])
        opened = next(state(e) for e in found.table if e.topic == TABLE_OPENED)
        name = str(opened.get("game", UNRECORDED_GAME))
        game = self.games.get(name)
        if game is None:
            raise InvalidArgument("game", "UNKNOWN_GAME", f"unknown game {name[:64]!r} (one of "
                                  f"{', '.join(self.games)})")
        if game.replay is None:
            raise FailedPrecondition("shoe_id", "NO_REPLAY",
                                     f"no replay of {game.name} rounds here yet")
        rounds = game.replay(found, opened, only)  # reads the rules first: a bad one stops here
        yield ReplayStep(found.shoe[0].position, "algorithm", shuffled["algorithm"], ALGORITHM_ID)
        if shuffled["algorithm"] != ALGORITHM_ID:
            return
        sid = UUID(found.shoe_id)
        seed = self._seed(found, shuffled)
        yield ReplayStep(
            found.shoe[0].position, "commitment", shuffled["commitment"], commitment(seed, sid)
        )
        cut = next((int(state(e)["position"]) for e in found.shoe if e.topic == SHOE_CUT), None)
        sabot = _sabot(seed, sid, DeckKind(shuffled["deck_kind"]), int(shuffled["decks"]), cut)
        yield from rounds(sabot)

    def _seed(self, found: ShoeEvents, shuffled: dict[str, Any]) -> bytes:
        sid = UUID(found.shoe_id)
        for e in found.shoe:
            if e.topic == SHOE_CLOSED and state(e).get("seed"):
                return bytes.fromhex(state(e)["seed"])
        if self.regulator_key is not None:
            sealed = shuffled.get("escrowed_seed")
            if sealed:
                try:
                    return open_sealed(bytes.fromhex(sealed), sid, self.regulator_key)
                except EscrowError:
                    pass
            if self.escrow is not None:
                seed = self.escrow.find(sid, shuffled["commitment"], self.regulator_key)
                if seed is not None:
                    return seed
        if self.seal_key is not None:
            from services.ledger.seal import unseal

            return unseal(self.seal_key, shuffled["sealed_seed"], sid)
        raise FailedPrecondition(
            "shoe_id", "SEED_UNAVAILABLE",
            "the shoe is in play: its seed needs the regulator's key (escrow) or the seal key",
        )

    def _cover(self, ranges: list[tuple[int, int]]) -> EventTable:
        """The stored rows both checks read (the ranges widened to the chain's batches around
        them: from the link before each range to the link at or after its end), read in a few
        queries instead of several per range; the checks ask it what they asked the store
        (``source.CoveredEvents`` answers exactly as the store would)."""
        covered = CoveredEvents(self.events)
        first = genesis(covered)
        if first is None:  # no chain (the integrity check's own reads then go to the store)
            return covered
        try:
            after = int(first.body.get("after", 0))
        except (TypeError, ValueError):
            return covered  # chain_problems stops on it as it would have
        # the questions chain_problems asks of each range (chain.start_at, link_at_or_after)
        return covered.fill([(max(a, after + 1), b) for a, b in ranges if b > after],
                            CHAIN_LINKED, after)

    def _chain(self, ranges: list[tuple[int, int]], deleted: list[int], events: EventTable
               ) -> list[ReplayStep]:
        """The evidence chain over the ranges, widened to whole batches: a step per problem."""
        return [
            ReplayStep(p.position, f"evidence chain at position {p.position}",
                       "as the writer's link signed it", p.message)
            for p in chain_problems(events, ranges, self.chain_keys, deleted)
        ]

    def _missing_after(self, last: int) -> Iterator[ReplayStep]:
        """Every notarised event after position ``last`` that is gone from the store (a shoe
        whose ``Shoe.Closed`` was deleted reads as in play: what followed it must show)."""
        if self.notary is None:
            return
        start = self.notary.index_at_or_after(last + 1)
        for idx in missing_leaves(self.events, self.notary, start):  # few: each a deletion
            for _idx, pos, h in self.notary.leaves(idx, idx + 1):
                yield ReplayStep(pos, f"event hash at position {pos}", h.hex(), None)

    def _integrity(self, ranges: list[tuple[int, int]], events: EventTable
                   ) -> Iterator[ReplayStep]:
        """Notarised leaves against stored events, over each [first, last] position range."""
        if self.notary is None:
            return
        singles = [a for a, b in ranges if a == b]
        spans = [(a, b) for a, b in ranges if a != b]
        spanned: dict[tuple[int, int], list[tuple[int, int, bytes]]] = {}
        leaves: dict[int, tuple[int, bytes]] = {}
        if len(spans) == 1:  # a coup's or a shoe's: the leaves of both in one statement
            leaves, spanned[spans[0]] = self.notary.leaves_around(singles, *spans[0])
        elif singles:
            leaves = self.notary.leaves_at_positions(singles)
        if singles:  # one query each for the leaves and the events, not one range per event
            stored_at = events.at(singles)
            for pos in singles:
                ev = stored_at.get(pos)
                if pos in leaves:
                    h = leaves[pos][1]
                    yield ReplayStep(pos, f"event hash at position {pos}", h.hex(),
                                     _leaf_hex(ev, h))
                elif ev is not None and pos <= self.notary.position:
                    yield ReplayStep(pos, f"event at position {pos}", None,
                                     "stored, never notarised")
        for first, last in ranges:
            if first == last:
                continue
            notarised = spanned.get((first, last))
            if notarised is None:
                notarised = self.notary.leaves(self.notary.index_at_or_after(first),
                                               self.notary.index_at_or_after(last + 1))
            stored = {e.position: e for e in _between(events, first, last)}
            for _idx, pos, h in notarised:
                ev = stored.pop(pos, None)
                yield ReplayStep(pos, f"event hash at position {pos}", h.hex(), _leaf_hex(ev, h))
            for pos in sorted(stored):
                if pos > self.notary.position:
                    continue  # stored after the notary's last sync: not notarised *yet*
                yield ReplayStep(pos, f"event at position {pos}", None, "stored, never notarised")


def _ranges(singles: list[int], gaps: list[tuple[int, int]], lo: int, hi: int
            ) -> list[tuple[int, int]]:
    """The position ranges a replay checks: each single event outside the span [lo, hi] on its
    own, the gaps, the span."""
    return [(p, p) for p in sorted(set(singles)) if not lo <= p <= hi] + gaps + [(lo, hi)]


def _gaps_before(shoe: list[RawEvent], lo: int) -> list[tuple[int, int]]:
    """The positions before ``lo`` (a coup's first event) between two of the shoe's events
    whose versions do not follow (the shoe's events are read by aggregate: one deleted between
    them, an earlier coup's deal, is in no range of a coup's replay unless it checks these)."""
    out = []
    for before, after in pairwise(shoe):
        first, last = before.position + 1, min(after.position, lo) - 1
        if after.version != before.version + 1 and first <= last:
            out.append((first, last))
    return out


def _dealt_through(found: ShoeEvents, last: int) -> ShoeEvents:
    """``found`` without the shoe's ``Shoe.CoupDealt`` recorded after position ``last`` (a
    coup's last event): the later coups' deals, which a coup's replay does not read (it starts
    the coup where the deal before it ended). Every shoe event left is one the replay proves
    (its leaf and its batch's links), and only those are handed to the game's replay."""
    return replace(found, shoe=[e for e in found.shoe
                                if e.position <= last or e.topic != SHOE_COUP_DEALT])


def _leaf_hex(ev: RawEvent | None, notarised: bytes) -> str | None:
    """``leaf_hash(ev.leaf()).hex()`` (None: no event), first tried on the stored state's bytes
    as they are: when they are the canonical JSON ``leaf`` would write for them, the leaf is
    the same bytes without parsing and writing them again. Only a match is taken from that
    try: if ``{"originator_id":X,"position":P,"state":`` S ``,"topic":T,"version":V}`` is the
    notarised leaf, a canonical JSON object, then its prefix up to S (X and P end where their
    literals end) and its tail after S (``,"topic":"`` cannot occur inside the string T, whose
    quotes are escaped, nor inside a number) are those of the notarised leaf, so S is the
    canonical JSON of the notarised state and ``ev.leaf()`` is those very bytes. Anything else
    is hashed as ``ev.leaf()`` makes it."""
    if ev is None:
        return None
    quick = b"".join((
        b'{"originator_id":', _quoted(ev.originator_id), b',"position":',
        str(ev.position).encode(), b',"state":', ev.state, b',"topic":', _quoted(ev.topic),
        b',"version":', str(ev.version).encode(), b"}",
    ))
    if leaf_hash(quick) == notarised:
        return notarised.hex()
    return leaf_hash(ev.leaf()).hex()


_QUOTED: dict[str, bytes] = {}  # a text -> its JSON string (ids and topics recur)


def _quoted(text: str) -> bytes:
    """``json.dumps(text, ensure_ascii=False).encode()``, remembered (bounded)."""
    found = _QUOTED.get(text)
    if found is None:
        if len(_QUOTED) >= 8192:
            _QUOTED.clear()
        found = _QUOTED[text] = json.dumps(text, ensure_ascii=False).encode()
    return found


# The shoe's order from its seed, remembered (a pure function of its arguments): a regulator
# who replays the coups of one shoe in turn pays the shuffle (HMAC_DRBG) once.
_sabot = lru_cache(maxsize=32)(load_sabot)


def _between(events: EventTable, first: int, last: int) -> list[RawEvent]:
    out: list[RawEvent] = []
    after = first - 1
    while after < last:
        batch = events.read(after, min(2000, last - after))
        for e in batch:
            if e.position > last:
                return out
            out.append(e)
        if not batch:
            break
        after = batch[-1].position
    return out
