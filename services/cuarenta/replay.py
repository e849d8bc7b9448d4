"""The regulator's replay of a Cuarenta match: every recorded event beside its recomputation.

The match is played again by the rule book (``domain/cuarenta/match.py``) from what was
recorded: the options and the first dealer (``Opened``), each hand's shoe (its seed revealed in
``Shoe.Closed``, else opened from the escrow with the regulator's key, else the operator's
sealed seed with the seal key), and each command's input (the deal; a play's seat, card and
capture; a forfeit). Each fact the rule book then reports is compared with the event that
recorded it: a hand's commitment, every card dealt (its position and SABOT-HIDDEN-1
commitment), every card played (its position, face and salt), capture, points and total, the
cartón, the winner and every movement of money. ``services.regulator.replay.verdict`` turns the
steps into identical, or the first difference at its log position: a changed play is found
there (the rule book refuses it, or what it recomputes differs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from uuid import UUID

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from domain.cards import Card, DeckKind
from domain.cuarenta import facts as F
from domain.cuarenta import match as rulebook
from domain.cuarenta.rules import CuarentaRules
from domain.errors import FailedPrecondition, NotFound, RuleViolation
from domain.shuffle import commitment, load_sabot, order_digest
from services import topics as T
from services.ledger.hidden import card_commitment, card_salt
from services.regulator.escrow import EscrowError, open_sealed
from services.regulator.replay import ReplayStep
from services.regulator.source import EventTable, RawEvent
from services.regulator.vocabulary import state

DECK = DeckKind.FRENCH_40


class _Seeds:
    """Each hand's seed: revealed, else escrowed (regulator key), else sealed (seal key)."""

    def __init__(self, events: EventTable, regulator_key: X25519PrivateKey | None,
                 seal_key: bytes | None) -> None:
        self.events = events
        self.regulator_key = regulator_key
        self.seal_key = seal_key

    def __call__(self, shoe_id: str) -> bytes:
        sid = UUID(shoe_id)
        shuffled: dict[str, Any] = {}
        for e in self.events.by_originator(sid):
            s = state(e)
            if e.topic == T.SHOE_CLOSED and s.get("seed"):
                return bytes.fromhex(s["seed"])
            if e.topic == T.SHOE_SHUFFLED:
                shuffled = s
        if not shuffled:
            raise NotFound("shoe_id", "NO_SHOE", f"no shoe {shoe_id}")
        if self.regulator_key is not None and shuffled.get("escrowed_seed"):
            try:
                return open_sealed(bytes.fromhex(shuffled["escrowed_seed"]), sid,
                                   self.regulator_key)
            except EscrowError:
                pass
        if self.seal_key is not None:
            from services.ledger.seal import unseal

            return unseal(self.seal_key, shuffled["sealed_seed"], sid)
        raise FailedPrecondition(
            "shoe_id", "SEED_UNAVAILABLE",
            "the hand is in play: its seed needs the regulator's key (escrow) or the seal key")


def replay_match(events: EventTable, match_id: str, *,
                 regulator_key: X25519PrivateKey | None = None,
                 seal_key: bytes | None = None) -> Iterator[ReplayStep]:
    """Every step of the match ``match_id`` (NOT_FOUND ``NO_MATCH``)."""
    recorded = events.by_originator(UUID(match_id))
    if not recorded or recorded[0].topic != T.CUARENTA_MATCH_OPENED:
        raise NotFound("match_id", "NO_MATCH", f"no match {match_id}")
    yield from _Replay(recorded, _Seeds(events, regulator_key, seal_key)).steps()


class _Replay:
    def __init__(self, recorded: list[RawEvent], seeds: Callable[[str], bytes]) -> None:
        self.recorded = recorded
        self.seeds = seeds
        self.at = 0  # the next recorded event
        self.shoe = ""
        self.seed = b""
        self.pack: tuple[Card, ...] = ()
        self.seats: list[str] = []
        self.m: rulebook.Match | None = None

    def steps(self) -> Iterator[ReplayStep]:
        while self.at < len(self.recorded):
            e = self.recorded[self.at]
            s = state(e)
            if e.topic == T.CUARENTA_MATCH_HAND_BEGUN:  # the hand's seed (or SEED_UNAVAILABLE)
                self.shoe = str(s["shoe_id"])
                self.seed = self.seeds(self.shoe)
                self.pack = load_sabot(self.seed, UUID(self.shoe), DECK, 1, None).cards
            try:
                step = self._command(e.topic, s)
            except RuleViolation as exc:
                yield ReplayStep(e.position, f"{T.short(e.topic)}: the rule book", "accepted",
                                 f"refused: {exc.reason}: {exc.message}")
                return
            if step is None:  # an event no command starts: compared where its command is
                yield ReplayStep(e.position, f"{T.short(e.topic)}", "recorded",
                                 "no command of the rule book records it here")
                return
            for topic, fields in self._expected(step):
                if self.at >= len(self.recorded):
                    yield ReplayStep(None, T.short(topic), None, fields)
                    return
                got = self.recorded[self.at]
                mine = {k: state(got).get(k) for k in fields}
                yield ReplayStep(got.position, T.short(topic),
                                 {"topic": T.short(got.topic), **mine},
                                 {"topic": T.short(topic), **fields})
                self.at += 1
            self.m = step.match

    # --- the command behind each first event ------------------------------------------------

    def _command(self, topic: str, s: dict[str, Any]) -> rulebook.Step | None:
        m = self.m
        if topic == T.CUARENTA_MATCH_OPENED:
            self.seats = list(s["seats"])
            rules = CuarentaRules.from_options(s["options"])
            return rulebook.open_match(rules, int(s["dealer"]))
        if m is None:
            return None
        if topic == T.CUARENTA_MATCH_HAND_BEGUN:
            return rulebook.begin_hand(m, self.pack)
        if topic == T.CUARENTA_MATCH_DEALT:
            return rulebook.deal(m)
        if topic == T.CUARENTA_MATCH_PLAYED:
            return rulebook.play(m, int(s["seat"]), str(s["card"]), list(s["capture"]))
        if topic == T.CUARENTA_MATCH_FORFEITED:
            return rulebook.forfeit(m, int(s["seat"]), str(s["reason"]))
        return None

    # --- what the rule book's facts record ----------------------------------------------------

    def _expected(self, step: rulebook.Step) -> Iterator[tuple[str, dict[str, Any]]]:
        movements = list(step.movements)
        facts = list(step.facts)
        captured = {f.turn: f for f in facts if isinstance(f, F.CardsCaptured)}
        sid = UUID(self.shoe) if self.shoe else None
        for fact in facts:
            if isinstance(fact, F.MatchOpened):
                yield T.CUARENTA_MATCH_OPENED, {"players": fact.players, "dealer": fact.dealer,
                                                "options": fact.options}
                yield from self._money(movements)
            elif isinstance(fact, F.HandBegun):
                assert sid is not None
                yield T.CUARENTA_MATCH_HAND_BEGUN, {
                    "hand": fact.hand, "dealer": fact.dealer, "first": fact.first,
                    "commitment": commitment(self.seed, sid)}
            elif isinstance(fact, F.Dealt):
                assert sid is not None
                positions = [self.pack.index(c) for c in fact.cards]
                cards = [{"position": p, "holder": self.seats[fact.seat],
                          "commitment": card_commitment(card_salt(self.seed, sid, p), p,
                                                        self.pack[p].code)}
                         for p in positions]
                yield T.CUARENTA_MATCH_DEALT, {"hand": fact.hand, "deal": fact.deal,
                                               "seat": fact.seat, "cards": cards,
                                               "first": step.match.first}
            elif isinstance(fact, F.RondaScored):
                yield T.CUARENTA_MATCH_RONDA_SCORED, {
                    "hand": fact.hand, "seat": fact.seat, "points": fact.points,
                    "withheld": fact.withheld, "total": fact.total}
            elif isinstance(fact, F.FourOfAKindDealt):
                yield T.CUARENTA_MATCH_FOUR_DEALT, {"seat": fact.seat, "rank": fact.rank}
            elif isinstance(fact, F.CardPlayed):
                assert sid is not None
                p = self.pack.index(fact.card)
                took = captured.get(fact.turn)
                yield T.CUARENTA_MATCH_PLAYED, {
                    "hand": fact.hand, "deal": fact.deal, "turn": fact.turn, "seat": fact.seat,
                    "position": p, "card": fact.card.code,
                    "salt": card_salt(self.seed, sid, p).hex(), "captures": fact.captures,
                    "capture": [c.code for c in took.taken] if took else []}
            elif isinstance(fact, F.CardsCaptured):
                yield T.CUARENTA_MATCH_CAPTURED, {
                    "turn": fact.turn, "seat": fact.seat, "side": fact.side,
                    "card": fact.card.code, "taken": [c.code for c in fact.taken],
                    "kind": fact.kind.value, "points": fact.points,
                    "withheld": fact.withheld, "total": fact.total}
            elif isinstance(fact, F.HandScored):
                yield T.CUARENTA_MATCH_HAND_SCORED, {
                    "hand": fact.hand, "cards": list(fact.cards), "carton": list(fact.carton),
                    "withheld": list(fact.withheld),
                    "left_on_table": [c.code for c in fact.left_on_table],
                    "left_to": fact.left_to, "totals": list(fact.totals),
                    "order_digest": order_digest(self.pack)}
            elif isinstance(fact, F.Forfeited):
                yield T.CUARENTA_MATCH_FORFEITED, {"seat": fact.seat, "side": fact.side,
                                                   "reason": fact.reason.value}
            elif isinstance(fact, F.MatchWon):
                yield T.CUARENTA_MATCH_WON, {"side": fact.side, "reason": fact.reason.value,
                                             "totals": list(fact.totals)}
                yield from self._money(movements)

    def _money(self, movements: list[Any]) -> Iterator[tuple[str, dict[str, Any]]]:
        for mv in movements:
            yield T.CUARENTA_MATCH_MONEY_MOVED, {"kind": mv.kind.value, "seat": mv.seat,
                                                 "amount": mv.amount}
