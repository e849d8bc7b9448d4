"""The showdown: each punter's hand against the banker's, and the money it moves.

Seed 003: "El banquero le gana a todos los jugadores que tienen menor o igual puntaje que él, y
pierde ante los que tienen más" (option ``tie``); "Quien suma 31 puntos se lleva iguales tantos
de los que apostó" (even money); "Quien hace la llamada treinta y una real ... se lleva el doble
de lo que apostó; pero si es el banquero, recibe de los jugadores el doble de lo que cada uno de
ellos apostó"; "procediendo al cobro y pago de tantos": the bank collects first, then pays.

Order of the movements: the collections (cobro) of the losing stakes in turn order, then the
payments (pago) of the winners in turn order, then the bank returned to the banker. A commission
is charged on each winning payout (``commission``, rounded down), right after it: from the
winner's account for a punter, from the bank for a collection. Under ruling 2 (``rules.ruling``,
issue 22 item 9) a "winning payout" is all that one winner collects from one counterparty in the
round: a stake lost at once by a hand over 31 and the rest of it collected at the showdown (a
banker's real) are one payout, its commission rounded down once (the part charged at once is
deducted from the showdown's); under ruling 1 (rounds recorded before) each collection is
charged on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from domain import money
from domain.treinta_y_una.facts import Outcome, StakeSettled
from domain.treinta_y_una.hand import HandValue
from domain.treinta_y_una.movements import Movement, MovementKind, movement
from domain.treinta_y_una.rules import TableRules, TieRule
from domain.treinta_y_una.stakes import REAL_MULTIPLE, Stake

Rank = tuple[int, int, int]


def rank(rules: TableRules, hand: HandValue) -> Rank:
    """What a hand is worth at the showdown: over 31 is below everything (all such hands equal);
    then the total; then, under ``real_outranks_plain``, a real above a plain 31."""
    if hand.bust:
        return (0, 0, 0)
    return (1, hand.total, int(hand.real and rules.real_outranks_plain))


def judge(rules: TableRules, punter: HandValue, banker: HandValue) -> Outcome:
    """The punter's outcome: more than the banker wins; lower loses; equal: the ``tie`` rule."""
    mine, his = rank(rules, punter), rank(rules, banker)
    if mine > his:
        return Outcome.WON
    if mine < his or rules.tie is TieRule.BANKER_WINS:
        return Outcome.LOST
    return Outcome.VOID


def commission_on(rules: TableRules, payout: int) -> int:
    """The house's share of a winning payout, rounded down."""
    return money.commission(payout, rules.commission)


@dataclass(frozen=True, slots=True)
class Entry:
    """A punter at the showdown: his stake and his hand's value."""

    stake: Stake
    hand: HandValue


@dataclass(frozen=True, slots=True)
class Settlement:
    facts: tuple[StakeSettled, ...]
    movements: tuple[Movement, ...]
    carried: tuple[Stake, ...]  # void stakes, staying in STAKES for the next game
    bank_left: int  # what went back to the banker


def collect_at_once(
    rules: TableRules, banker: str, stake: Stake
) -> tuple[Stake, tuple[Movement, ...], int]:
    """A punter over 31 under bust = loses_at_once: his stake goes to the bank now (its
    cover stays held until the showdown, for a banker's real). The stake after, the movements,
    and the commission."""
    commission = commission_on(rules, stake.amount)
    moves = movement(MovementKind.COLLECTION, stake.player, stake.amount) + movement(
        MovementKind.BANK_COMMISSION, banker, commission
    )
    after = Stake(stake.player, stake.amount, stake.held - stake.amount, lost_at_once=True)
    return after, moves, commission


def settle_stakes(
    rules: TableRules,
    banker: str,
    bank: int,
    banker_hand: HandValue,
    entries: Sequence[Entry],
) -> Settlement:
    """Settle every punter (``entries`` in turn order) against the banker's hand; ``bank`` is
    what the bank holds now. The bank never pays more than it holds."""
    collections: list[Movement] = []
    payments: list[Movement] = []
    lost: list[StakeSettled] = []
    won: list[StakeSettled] = []
    void: list[StakeSettled] = []
    carried: list[Stake] = []
    outcomes = [
        Outcome.LOST if e.stake.lost_at_once else judge(rules, e.hand, banker_hand) for e in entries
    ]
    for e, outcome in zip(entries, outcomes, strict=True):  # cobro
        if outcome is not Outcome.LOST:
            continue
        s = e.stake
        multiple = REAL_MULTIPLE if banker_hand.real else 1
        already = s.amount if s.lost_at_once else 0
        take = s.amount * multiple - already
        earlier = commission_on(rules, already)  # charged at once (``collect_at_once``)
        if rules.ruling >= 2:  # one payout from this punter to the bank: rounded down once
            commission = commission_on(rules, take + already) - earlier
        else:
            commission = commission_on(rules, take)
        collections += movement(MovementKind.COLLECTION, s.player, take)
        collections += movement(MovementKind.BANK_COMMISSION, banker, commission)
        collections += movement(MovementKind.RETURN, s.player, s.held - take)
        bank += take - commission
        lost.append(
            StakeSettled(
                s.player, outcome, s.amount, multiple, take + already, 0, commission + earlier
            )
        )
    for e, outcome in zip(entries, outcomes, strict=True):  # pago
        s = e.stake
        if outcome is Outcome.VOID:
            carried.append(s)
            void.append(StakeSettled(s.player, outcome, s.amount, 0, 0))
            continue
        if outcome is not Outcome.WON:
            continue
        multiple = REAL_MULTIPLE if e.hand.real else 1
        due = s.amount * multiple
        paid = min(due, bank)
        commission = commission_on(rules, paid)
        payments += movement(MovementKind.RETURN, s.player, s.held)
        payments += movement(MovementKind.PAYMENT, s.player, paid)
        payments += movement(MovementKind.COMMISSION, s.player, commission)
        bank -= paid
        won.append(
            StakeSettled(s.player, outcome, s.amount, multiple, paid, due - paid, commission)
        )
    closing = movement(MovementKind.BANK_RETURNED, banker, bank)
    return Settlement(
        tuple(lost + won + void),
        tuple(collections + payments + list(closing)),
        tuple(carried),
        bank,
    )
