"""Replay (regulator role): rebuild a shoe from its seed and recorded cut, re-deal, re-settle.

``Replayer.coup(id)`` and ``Replayer.shoe(id)`` yield ``ReplayStep``s, each a recorded value
beside the recomputed one (and the log position of the event that recorded it); ``verdict``
turns them into identical, or the first difference with both values. Before recomputing, the
notarised leaves over the events' span are compared with what is stored, so an edited, deleted
or moved event shows as the first difference at its position. The rules are the domain's
(``domain/``), under the ruleset and algorithm recorded with the table and the shoe.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from domain.cards import DeckKind
from domain.errors import FailedPrecondition, InvalidArgument, NotFound, RuleViolation
from domain.shuffle import ALGORITHM_ID, Sabot, commitment, load_sabot
from domain.trente_et_quarante.chances import Chance
from domain.trente_et_quarante.deal import deal_coup
from domain.trente_et_quarante.layout import (
    Layout,
    Refait31Choice,
    Stake,
    StakeStatus,
    Step,
    choose_refait31,
    close_betting,
    close_table,
    end_of_shoe,
    half_withdraw,
    insure,
    move_imprisoned,
    place_stake,
    raise_stake,
    withdraw_stake,
)
from domain.trente_et_quarante.outcome import judge
from domain.trente_et_quarante.rules import HouseRules
from domain.trente_et_quarante.settlement import settle
from services.regulator.chain import chain_problems
from services.regulator.escrow import EscrowError, open_sealed
from services.regulator.escrow_table import EscrowTable
from services.regulator.merkle import leaf_hash
from services.regulator.notary import Notary, missing_leaves
from services.regulator.source import EventTable, RawEvent
from services.regulator.vocabulary import ShoeEvents, shoe_events, shoe_of_coup, state
from services.topics import (
    COUP_BETTING_CLOSED,
    COUP_CARD_DEALT,
    COUP_INSURANCE_BOUGHT,
    COUP_LAYOUT_RESTATED,
    COUP_MONEY_MOVED,
    COUP_OPENED,
    COUP_REFAIT31_CHOSEN,
    COUP_RESOLVED,
    COUP_SETTLED,
    COUP_STAKE_CARRIED_OVER,
    COUP_STAKE_HALF_WITHDRAWN,
    COUP_STAKE_IMPRISONED,
    COUP_STAKE_MOVED,
    COUP_STAKE_PARTAGED,
    COUP_STAKE_PLACED,
    COUP_STAKE_RAISED,
    COUP_STAKE_WITHDRAWN,
    SHOE_CLOSED,
    SHOE_COUP_DEALT,
    SHOE_CUT,
    STAKE_EVENTS,
    TABLE_CLOSED,
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


class Replayer:
    """Replays from the store's events; the seed comes from the reveal, else the shoe's
    ``escrowed_seed`` (``Shoe.Shuffled`` v2) opened with ``regulator_key`` (or, for a legacy
    store, the ``escrow`` side table), else the operator's sealed seed opened with
    ``seal_key``."""

    def __init__(
        self,
        events: EventTable,
        notary: Notary | None = None,
        *,
        regulator_key: X25519PrivateKey | None = None,
        seal_key: bytes | None = None,
        escrow: EscrowTable | None = None,
        chain_keys: dict[str, Any] | None = None,
    ) -> None:
        self.events = events
        self.notary = notary
        self.chain_keys = chain_keys  # the evidence chain's keys (default: its first link's)
        self.regulator_key = regulator_key
        self.seal_key = seal_key
        self.escrow = escrow  # legacy: seeds escrowed beside the ledger (escrow_table.py)

    # --- entry points -----------------------------------------------------------------------

    def coup(self, coup_id: str) -> Iterator[ReplayStep]:
        """Every step of one coup."""
        shoe_id = shoe_of_coup(self.events, coup_id)
        if shoe_id is None:
            raise NotFound("coup_id", "NO_COUP", f"no coup {coup_id}")
        yield from self._run(shoe_id, only=str(UUID(coup_id)))

    def shoe(self, shoe_id: str) -> Iterator[ReplayStep]:
        """Every step of every coup of one shoe."""
        yield from self._run(shoe_id, only=None)

    # --- the work ---------------------------------------------------------------------------

    def _run(self, shoe_id: str, only: str | None) -> Iterator[ReplayStep]:
        found = shoe_events(self.events, shoe_id)
        if found is None:
            raise NotFound("shoe_id", "NO_SHOE", f"no shoe {shoe_id}")
        if only is not None and only not in found.coups:
            raise NotFound("coup_id", "NO_COUP", f"no coup {only} in shoe {shoe_id}")
        singles = [e.position for e in found.table if e.topic == TABLE_OPENED]
        if only is None:
            inner = [e.position for e in found.all_events() if e.position not in singles]
        else:
            inner = [e.position for e in found.coups[only]]
            singles += [e.position for e in found.shoe]
        lo, hi = min(inner), max(inner)
        hi = self._through_missing_tail(hi)
        ranges = [(p, p) for p in sorted(set(singles)) if not lo <= p <= hi] + [(lo, hi)]
        tampered = False
        checked = list(self._integrity(ranges))
        deleted = [s.position for s in checked if s.position is not None and s.replayed is None
                   and s.what.startswith("event hash")]
        checked += self._chain(ranges, deleted)
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

    def _through_missing_tail(self, last: int) -> int:
        """``last``, or past it up to the next stored event when notarised leaves lie between:
        events gone from the store right after the span (a deleted last event, e.g. the shoe's
        ``Shoe.Closed``). An untouched store has no leaf there."""
        if self.notary is None:
            return last
        after = self.events.positions(last, 1)
        end = after[0] - 1 if after else self.notary.position
        return max(last, end)

    def _recompute(self, found: ShoeEvents, only: str | None) -> Iterator[ReplayStep]:
        shuffled = state(found.shoe[0])
        rules = HouseRules.from_options(
            next(state(e)["options"] for e in found.table if e.topic == TABLE_OPENED)
        )
        yield ReplayStep(found.shoe[0].position, "algorithm", shuffled["algorithm"], ALGORITHM_ID)
        if shuffled["algorithm"] != ALGORITHM_ID:
            return
        sid = UUID(found.shoe_id)
        seed = self._seed(found, shuffled)
        yield ReplayStep(
            found.shoe[0].position, "commitment", shuffled["commitment"], commitment(seed, sid)
        )
        cut = next((int(state(e)["position"]) for e in found.shoe if e.topic == SHOE_CUT), None)
        sabot = load_sabot(seed, sid, DeckKind(shuffled["deck_kind"]), int(shuffled["decks"]), cut)
        dealt = {str(state(e)["coup_id"]): e for e in found.shoe if e.topic == SHOE_COUP_DEALT}
        order = sorted(found.coups, key=lambda c: state(found.coups[c][0])["number_in_shoe"])
        previous_next = 0
        carried: tuple[Stake, ...] | None = None
        closing = {str(state(e)["coup_id"]) for e in found.table if e.topic == TABLE_CLOSED}
        for cid in order:
            evs = found.coups[cid]
            if only is None or cid == only:
                coup = _CoupReplay(rules, sabot, evs, previous_next, carried, cid in closing)
                yield from coup.steps()
                carried = coup.left
            rec = dealt.get(cid)
            if rec is None:
                break
            previous_next = int(state(rec)["next_position"])

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

    def _chain(self, ranges: list[tuple[int, int]], deleted: list[int]) -> list[ReplayStep]:
        """The evidence chain over the ranges, widened to whole batches: a step per problem."""
        return [
            ReplayStep(p.position, f"evidence chain at position {p.position}",
                       "as the writer's link signed it", p.message)
            for p in chain_problems(self.events, ranges, self.chain_keys, deleted)
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

    def _integrity(self, ranges: list[tuple[int, int]]) -> Iterator[ReplayStep]:
        """Notarised leaves against stored events, over each [first, last] position range."""
        if self.notary is None:
            return
        singles = [a for a, b in ranges if a == b]
        if singles:  # one query each for the leaves and the events, not one range per event
            leaves = self.notary.leaves_at_positions(singles)
            stored_at = self.events.at(singles)
            for pos in singles:
                ev = stored_at.get(pos)
                got = leaf_hash(ev.leaf()).hex() if ev is not None else None
                if pos in leaves:
                    yield ReplayStep(pos, f"event hash at position {pos}", leaves[pos][1].hex(),
                                     got)
                elif ev is not None and pos <= self.notary.position:
                    yield ReplayStep(pos, f"event at position {pos}", None,
                                     "stored, never notarised")
        for first, last in ranges:
            if first == last:
                continue
            a = self.notary.index_at_or_after(first)
            b = self.notary.index_at_or_after(last + 1)
            stored = {e.position: e for e in _between(self.events, first, last)}
            for _idx, pos, h in self.notary.leaves(a, b):
                ev = stored.pop(pos, None)
                got = leaf_hash(ev.leaf()).hex() if ev is not None else None
                yield ReplayStep(pos, f"event hash at position {pos}", h.hex(), got)
            for pos in sorted(stored):
                if pos > self.notary.position:
                    continue  # stored after the notary's last sync: not notarised *yet*
                yield ReplayStep(pos, f"event at position {pos}", None, "stored, never notarised")


# choose_refait31 records the fate it gives: chosen (in advance), partage or imprisoned
_CHOICES = {COUP_REFAIT31_CHOSEN, COUP_STAKE_PARTAGED, COUP_STAKE_IMPRISONED}


def _close_betting_block(evs: list[RawEvent]) -> set[int]:
    """Indexes of close_betting's events: BettingClosed and the stake events, movements and
    restated layout recorded just before it, in the same command."""
    at = next((i for i, e in enumerate(evs) if e.topic == COUP_BETTING_CLOSED), None)
    if at is None:
        return set()
    out = {at}
    i = at - 1
    same_command = STAKE_EVENTS | {COUP_MONEY_MOVED, COUP_LAYOUT_RESTATED}
    while i > 0 and evs[i].topic in same_command:
        if _timestamp(evs[i]) != _timestamp(evs[at]):
            break
        out.add(i)
        i -= 1
    return out


def _timestamp(e: RawEvent) -> Any:
    return state(e).get("timestamp")


class _CoupReplay:
    """Re-applies a coup's recorded commands with the domain's rules, beside what was recorded."""

    def __init__(
        self,
        rules: HouseRules,
        sabot: Sabot,
        evs: list[RawEvent],
        start: int,
        carried: tuple[Stake, ...] | None,
        closes_table: bool = False,  # the table's close settled its stakes on this coup
    ) -> None:
        self.rules, self.sabot, self.evs, self.start = rules, sabot, evs, start
        self.carried = carried
        self.closes_table = closes_table
        self.layout = Layout()
        self.left: tuple[Stake, ...] | None = None  # the layout for the next coup, once settled

    def steps(self) -> Iterator[ReplayStep]:
        evs, rules = self.evs, self.rules
        opened = evs[0]
        yield ReplayStep(opened.position, "first event", opened.topic, COUP_OPENED)
        yield ReplayStep(
            opened.position, "start position", state(opened)["start_position"], self.start
        )
        for i, e in enumerate(evs, 1):
            if e.version != i:
                yield ReplayStep(e.position, "event version in the coup", e.version, i)
                return
        recorded_in = [
            _stake(state(e)["stake"]) for e in evs if e.topic == COUP_STAKE_CARRIED_OVER
        ]
        if self.carried is not None:
            pos = next((e.position for e in evs if e.topic == COUP_STAKE_CARRIED_OVER),
                       opened.position)
            yield ReplayStep(pos, "stakes carried over", _dicts(recorded_in),
                             _dicts(self.carried))
            self.layout = Layout(self.carried)
        else:
            self.layout = Layout(tuple(recorded_in))
        deal = deal_coup(self.sabot.cards, self.start, rules.cut_card)
        outcome = judge(deal)
        cards = iter(deal.cards)
        phase = "betting"
        closed = False
        pending: list[tuple[Any, ...]] = []  # movements expected (settlement, shoe end)
        fates: dict[str, tuple[Any, ...]] = {}
        n_moves = 0
        block = _close_betting_block(evs)
        for n, e in enumerate(evs):
            st = state(e)
            if n == 0 or e.topic == COUP_STAKE_CARRIED_OVER:
                continue
            if phase == "betting" and n not in block and e.topic in STAKE_EVENTS:
                yield from self._command(e, st)
            elif phase == "betting" and n in block:
                if not closed:  # the fates close_betting gives, then BettingClosed
                    step = close_betting(rules, self.layout)
                    self.layout = step.layout
                    fates = _fates(step)
                    closed = True
                if e.topic in STAKE_EVENTS:
                    yield _fate_step(e, st, fates)
            elif e.topic == COUP_LAYOUT_RESTATED:
                yield ReplayStep(e.position, "layout restated", _dicts(
                    [_stake(x) for x in st["stakes"]]), _dicts(self.layout.stakes))
            elif e.topic == COUP_CARD_DEALT:
                want = next(cards, None)
                got_card = [st["row"], st["code"], st["position"], st["running_total"]]
                replayed = (
                    None if want is None
                    else [want.row.value, want.card.code, want.position, want.running_total]
                )
                yield ReplayStep(e.position, "card dealt", got_card, replayed)
            elif e.topic == COUP_RESOLVED:
                extra = next(cards, None)
                if extra is not None:
                    yield ReplayStep(e.position, "card dealt", None, extra.card.code)
                mine = {
                    "noir_total": outcome.noir_total,
                    "rouge_total": outcome.rouge_total,
                    "result": outcome.result.value,
                    "refait_total": outcome.refait_total,
                    "couleur": outcome.couleur,
                    "winning_chances": sorted(c.value for c in outcome.winning_chances),
                    "cut_card_reached": deal.cut_card_reached,
                    "next_position": deal.next_position,
                }
                for k, v in mine.items():
                    got_v = sorted(st[k]) if k == "winning_chances" else st[k]
                    yield ReplayStep(e.position, f"outcome {k}", got_v, v)
                step = settle(rules, self.layout, outcome)
                self.layout = step.layout
                pending, fates, n_moves = _moves(step), _fates(step), 0
                phase = "settling"
            elif e.topic == COUP_MONEY_MOVED and phase != "betting":
                got_m = [st["kind"], st["stake_id"], st["account_id"], st["chance"], st["amount"]]
                want_m = list(pending[n_moves]) if n_moves < len(pending) else None
                n_moves += 1
                yield ReplayStep(e.position, f"movement {n_moves}", got_m, want_m)
            elif e.topic in STAKE_EVENTS and phase != "betting":
                yield _fate_step(e, st, fates)
            elif e.topic == COUP_SETTLED and phase == "settling":
                if n_moves < len(pending):
                    yield ReplayStep(
                        e.position, f"movement {n_moves + 1}", None, list(pending[n_moves])
                    )
                self.left = self.layout.stakes
                # what follows, if anything, is the shoe's end: free stakes go back
                step = end_of_shoe(self.layout)
                if self.closes_table:  # then the table's close: what is left leaves too
                    shut = close_table(rules, step.layout)
                    step = Step(shut.layout, step.movements + shut.movements,
                                step.fates + shut.fates)
                self.layout = step.layout
                pending, fates, n_moves = _moves(step), _fates(step), 0
                phase = "shoe_end"
            if phase == "shoe_end" and e.topic != COUP_SETTLED:
                self.left = self.layout.stakes  # the shoe's end was recorded
        if phase == "shoe_end" and 0 < n_moves < len(pending):
            yield ReplayStep(None, f"movement {n_moves + 1} at the shoe's end", None,
                             list(pending[n_moves]))

    def _command(self, e: RawEvent, st: dict[str, Any]) -> Iterator[ReplayStep]:
        """A betting command, re-applied from what its event records."""
        rules, layout, sid = self.rules, self.layout, str(st["stake_id"])
        after = st.get("stake")
        try:
            if e.topic == COUP_STAKE_PLACED:
                choice = after.get("choice") if after else None
                step = place_stake(
                    rules, layout, sid, str(st["account_id"]), Chance(st["chance"]),
                    int(st["amount_after"]), Refait31Choice(choice) if choice else None,
                )
            elif e.topic == COUP_STAKE_RAISED:
                step = raise_stake(rules, layout, sid, st["amount_after"] - st["amount_before"])
            elif e.topic == COUP_STAKE_WITHDRAWN:
                step = withdraw_stake(rules, layout, sid)
            elif e.topic == COUP_INSURANCE_BOUGHT:
                step = insure(rules, layout, sid)
            elif e.topic in _CHOICES:
                if e.topic == COUP_STAKE_PARTAGED:
                    choice = Refait31Choice.PARTAGE
                elif e.topic == COUP_STAKE_IMPRISONED:
                    choice = Refait31Choice.PRISON
                elif after and after.get("choice"):
                    choice = Refait31Choice(after["choice"])
                else:
                    choice = Refait31Choice.PRISON
                step = choose_refait31(rules, layout, sid, choice)
            elif e.topic == COUP_STAKE_HALF_WITHDRAWN:
                step = half_withdraw(rules, layout, sid)
            elif e.topic == COUP_STAKE_MOVED:
                step = move_imprisoned(rules, layout, sid, Chance(st["chance"]))
            else:
                yield ReplayStep(e.position, f"stake {sid} {st['fate']}", e.topic,
                                 "no betting command gives this event")
                return
        except RuleViolation as exc:
            yield ReplayStep(e.position, f"stake {sid} {st['fate']}", after,
                             f"refused: {exc.field}: {exc.message}")
            return
        self.layout = step.layout
        mine = next((s for s in step.layout.stakes if s.stake_id == sid), None)
        yield ReplayStep(
            e.position, f"stake {sid} {st['fate']}",
            _dicts([_stake(after)])[0] if after else None,
            _dicts([mine])[0] if mine else None,
        )


def _dicts(stakes: Iterable[Stake]) -> list[dict[str, Any]]:
    return [
        {
            "stake_id": s.stake_id, "player": s.player, "chance": s.chance.value,
            "amount": s.amount, "status": s.status.value, "insured": s.insured,
            "choice": s.choice.value if s.choice else None, "awaiting_choice": s.awaiting_choice,
        }
        for s in stakes
    ]


def _moves(step: Step) -> list[tuple[Any, ...]]:
    return [(m.kind.value, m.stake_id, m.player, m.chance.value, m.amount) for m in step.movements]


def _fates(step: Step) -> dict[str, tuple[Any, ...]]:
    return {
        f.stake_id: (f.fate.value, f.amount_after, f.status_after.value if f.status_after else None)
        for f in step.fates
    }


def _fate_step(e: RawEvent, st: dict[str, Any], fates: dict[str, tuple[Any, ...]]) -> ReplayStep:
    got = [st["fate"], st["amount_after"], st["status_after"]]
    want = fates.get(st["stake_id"])
    return ReplayStep(e.position, f"fate of stake {st['stake_id']}", got,
                      list(want) if want else None)


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


def _stake(d: dict[str, Any]) -> Stake:
    choice = d.get("choice")
    return Stake(
        stake_id=d["stake_id"],
        player=d["player"],
        chance=Chance(d["chance"]),
        amount=int(d["amount"]),
        status=StakeStatus(d["status"]),
        insured=bool(d["insured"]),
        choice=Refait31Choice(choice) if choice else None,
        awaiting_choice=bool(d.get("awaiting_choice", False)),
    )
