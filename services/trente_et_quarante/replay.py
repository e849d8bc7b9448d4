"""Trente et Quarante's replay for the regulator (``services.regulator.replay.Replayer``, through
the game's registry entry): each coup of a shoe re-dealt from the shoe's order and re-settled by
the rule book, beside what its events recorded (``ReplayStep``s)."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator
from typing import Any

from domain.errors import RuleViolation
from domain.shuffle import Sabot
from domain.trente_et_quarante.chances import Chance
from domain.trente_et_quarante.deal import CoupDeal, deal_coup
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
from domain.trente_et_quarante.outcome import Outcome, judge
from domain.trente_et_quarante.rules import HouseRules
from domain.trente_et_quarante.settlement import settle
from services.regulator.replay import ReplayStep
from services.regulator.source import RawEvent
from services.regulator.vocabulary import ShoeEvents, state
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
    SHOE_COUP_DEALT,
    STAKE_EVENTS,
    TABLE_CLOSED,
)


def replay(found: ShoeEvents, opened: dict[str, Any], only: str | None
           ) -> Callable[[Sabot], Iterator[ReplayStep]]:
    """The replay of the shoe's coups (``only``: one of them) under the rules the table
    recorded (``opened``: its ``Table.Opened`` state; read now, so a bad one stops at once),
    given the shoe's order."""
    rules = HouseRules.from_options(opened["options"])

    def rounds(sabot: Sabot) -> Iterator[ReplayStep]:
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

    return rounds


# choose_refait31 records the fate it gives: chosen (in advance), partage or imprisoned
_CHOICES = {COUP_REFAIT31_CHOSEN, COUP_STAKE_PARTAGED, COUP_STAKE_IMPRISONED}


def _outcome_steps(e: RawEvent, st: dict[str, Any], outcome: Outcome, deal: CoupDeal
                   ) -> Iterator[ReplayStep]:
    """The coup's resolution as recorded beside the rule book's: totals, result, chances, the
    cut card, the next position."""
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

    def _opening(self) -> Generator[ReplayStep, None, bool]:
        """The coup's opening: its first event, its start, its events' versions (False: one is
        out of order, nothing more to compare), the stakes carried over into it."""
        evs = self.evs
        opened = evs[0]
        yield ReplayStep(opened.position, "first event", opened.topic, COUP_OPENED)
        yield ReplayStep(
            opened.position, "start position", state(opened)["start_position"], self.start
        )
        for i, e in enumerate(evs, 1):
            if e.version != i:
                yield ReplayStep(e.position, "event version in the coup", e.version, i)
                return False
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
        return True

    def steps(self) -> Iterator[ReplayStep]:
        evs, rules = self.evs, self.rules
        if not (yield from self._opening()):
            return
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
                yield from _outcome_steps(e, st, outcome, deal)
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
        mine = step.layout.find(sid)
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
