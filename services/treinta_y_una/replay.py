"""The regulator's replay of a Treinta y Una round: the round's recorded commands run again
through the rule book on the shoe rebuilt from its seed (revealed at the round's end, or opened
from the escrow with the regulator's key), each event it records set beside the stored one.

``replay_round(events, seed)``: ``events`` are the round's stored events (its originator's, in
order) and its shoe's ``Shoe.Shuffled``; the answer lists each step (the stored event, the
replayed one, whether they agree) and the verdict. The bank's lot is drawn again from the seed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from domain.cards import Card
from domain.shuffle import commitment
from domain.treinta_y_una import round as R
from domain.treinta_y_una.banker import BankerChoice, BankerReason, BankLot, draw_banker
from domain.treinta_y_una.rules import TableRules
from domain.treinta_y_una.stakes import Stake
from services import topics
from services.ledger.hidden import card_commitment, card_salt, shoe_order
from services.ledger.ids import movement_account
from services.ledger.views import StoredEvent
from services.treinta_y_una.commands import fact_event


@dataclasses.dataclass(frozen=True, slots=True)
class Step:
    position: int | None  # the stored event's log position (None: replayed, not stored)
    stored: str  # its short topic ("" when missing)
    replayed: str
    identical: bool
    detail: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class RoundVerdict:
    round_id: str
    identical: bool
    steps: tuple[Step, ...]
    detail: str

    def __str__(self) -> str:
        return f"round {self.round_id}: {'IDENTICAL' if self.identical else 'DIFFERS'}" + (
            f" ({self.detail})" if self.detail else "")


_IGNORED = {"originator_id", "originator_version", "timestamp", "originator_topic"}


def replay_round(events: Sequence[StoredEvent], seed: bytes) -> RoundVerdict:
    opened = next(e for e in events if e.topic == topics.TREINTA_Y_UNA_ROUND_OPENED)
    rid = opened.originator_id
    st = opened.state
    own = [e for e in events if e.originator_id == rid]
    sid = UUID(str(st["shoe_id"]))
    if commitment(seed, sid) != st["commitment"]:
        return RoundVerdict(rid, False, (), "the seed does not open the shoe's commitment")
    cards = shoe_order(seed, sid, "SPANISH-40", 1, None)
    rules = TableRules.from_options(st["options"])
    carried = [Stake(str(p), int(a), int(h)) for p, a, h in st["carried"]]
    choice, wrong = _banker(seed, st)
    if wrong is not None:
        return RoundVerdict(rid, False, (), wrong)

    def commit(p: int, who: str) -> str:
        return card_commitment(card_salt(seed, sid, p), p, cards[p].code)

    def show(p: int, who: str) -> dict[str, Any]:
        return {"position": p, "holder": who, "code": cards[p].code,
                "salt": card_salt(seed, sid, p).hex()}

    expected: list[tuple[str, dict[str, Any]]] = []
    seq = 0

    def record(step: R.Step, waited: int = 0) -> None:
        nonlocal seq
        closing = []
        for fact in step.facts:
            found = fact_event(fact, step, waited, commit, show)
            if found is None:
                continue
            if found[0].TOPIC == topics.TREINTA_Y_UNA_ROUND_SETTLED or \
                    found[0].TOPIC == topics.TREINTA_Y_UNA_ROUND_CANCELLED:
                closing.append(found)
                continue
            expected.append((found[0].TOPIC, found[1]))
        for m in step.movements:
            seq += 1

            table = st["table_id"]
            expected.append((topics.TREINTA_Y_UNA_ROUND_MONEY_MOVED, {
                "seq": seq, "kind": m.kind.value, "player": m.player, "amount": m.amount,
                "debit_account": movement_account(table, m.source, m.player),
                "credit_account": movement_account(table, m.destination, m.player)}))
        expected.extend((c[0].TOPIC, c[1]) for c in closing)

    state = R.open_round(rules, st["seats"], choice, int(st["bank"]), carried)
    record(state)
    current = state.round
    for e in own[1:]:
        try:
            step, waited = _rule_step(rules, current, cards, e)
        except Exception as exc:  # the rule book refuses what the log records
            return RoundVerdict(rid, False, (), f"position {e.position}: the rule book "
                                f"refuses {topics.short(e.topic)}: {exc}")
        if step is not None:
            record(step, waited)
            current = step.round
    return _verdict(rid, own[1:], expected)


def _banker(seed: bytes, st: dict[str, Any]) -> tuple[BankerChoice, str | None]:
    """The round's banker as the rules choose him (drawn by lot from the seed, or the last
    round's next banker), and why the recorded one is wrong (None: it is right)."""
    lot = st.get("lot")
    if lot is None:
        return BankerChoice(st["banker"], BankerReason(st["banker_reason"])), None
    choice = draw_banker(seed, UUID(lot["nonce"]), list(lot["seats"]))
    recorded = BankerChoice(st["banker"], BankerReason(st["banker_reason"]),
                            BankLot(UUID(lot["nonce"]), tuple(lot["seats"]), int(lot["index"])))
    if choice != recorded:
        return choice, f"the lot draws {choice.player}, the round records {st['banker']}"
    return choice, None


def _rule_step(rules: TableRules, current: R.Round, cards: Sequence[Card], e: StoredEvent
               ) -> tuple[R.Step | None, int]:
    """The rule book's step a stored event of the round records (None: an event no input
    makes), and the seconds waited for a stand for the absent player."""
    s = e.state
    if e.topic == topics.TREINTA_Y_UNA_ROUND_STAKE_PLACED:
        return R.place_stake(rules, current, s["player"], int(s["amount"])), 0
    if e.topic == topics.TREINTA_Y_UNA_ROUND_CARD_DEALT and s["position"] == 0:
        return R.deal(rules, current, cards), 0
    if e.topic == topics.TREINTA_Y_UNA_ROUND_CARD_DRAWN:
        return R.carta(rules, current, s["player"]), 0
    if e.topic == topics.TREINTA_Y_UNA_ROUND_PLANTED:
        if s["for_absent"]:
            waited = int(s["waited_seconds"])
            return R.stand_for_absent(rules, current, s["player"], waited), waited
        return R.me_planto(rules, current, s["player"]), 0
    if e.topic == topics.TREINTA_Y_UNA_ROUND_SETTLED:
        return R.settle(rules, current), 0
    if e.topic == topics.TREINTA_Y_UNA_ROUND_CANCELLED:
        return R.cancel_round(rules, current), 0
    return None, 0


def _verdict(rid: str, stored: Sequence[StoredEvent],
             expected: Sequence[tuple[str, dict[str, Any]]]) -> RoundVerdict:
    """The round's stored events beside the replayed ones, one step each, in order."""
    steps: list[Step] = []
    for i in range(max(len(stored), len(expected))):
        got = stored[i] if i < len(stored) else None
        want = expected[i] if i < len(expected) else None
        if got is None or want is None:
            steps.append(Step(got.position if got else None,
                              topics.short(got.topic) if got else "",
                              topics.short(want[0]) if want else "", False,
                              "missing" if got is None else "not replayed"))
            continue
        fields = {k: v for k, v in got.state.items() if k not in _IGNORED}
        same = got.topic == want[0] and fields == want[1]
        detail = "" if same else _diff(fields, want[1])
        steps.append(Step(got.position, topics.short(got.topic), topics.short(want[0]), same,
                          detail))
    bad = [s for s in steps if not s.identical]
    detail = "" if not bad else (f"first difference at position {bad[0].position}: "
                                 f"{bad[0].stored} {bad[0].detail}")
    return RoundVerdict(rid, not bad, tuple(steps), detail)


def _diff(stored: dict[str, Any], replayed: dict[str, Any]) -> str:
    keys = sorted(set(stored) | set(replayed))
    return "; ".join(f"{k}: stored {stored.get(k)!r}, replayed {replayed.get(k)!r}"
                     for k in keys if stored.get(k) != replayed.get(k))


def replay(found: Any, opened: dict[str, Any], only: str | None) -> Any:
    """``RegulatorGame.replay``: the shoe's round (one deck, one round) replayed by
    ``replay_round``, one ``ReplayStep`` per stored event beside the replayed one."""
    from services.regulator.replay import ReplayStep
    from services.regulator.vocabulary import state

    def rounds(sabot: Any) -> Any:
        for rid, evs in found.coups.items():
            if only is not None and rid != only:
                continue
            stored = [StoredEvent(e.position, e.originator_id, e.version, e.topic, None,
                                  state(e)) for e in evs]
            seed = _seed_of(found, state)
            verdict = replay_round(stored, seed)
            yield ReplayStep(evs[0].position, "round", "identical" if verdict.identical
                             else "", "identical" if verdict.identical else verdict.detail)
            for step in verdict.steps:
                yield ReplayStep(step.position, f"{step.stored}",
                                 step.stored if step.identical else step.detail,
                                 step.replayed if step.identical else "")

    return rounds


def _seed_of(found: Any, state: Any) -> bytes:
    for e in found.shoe:
        if e.topic == topics.SHOE_CLOSED and state(e).get("seed"):
            return bytes.fromhex(state(e)["seed"])
    raise ValueError("the round's shoe is not closed")
