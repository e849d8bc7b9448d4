"""Cuarenta's commands and queries, run by the ledger's single writer.

Each command decides against the rule book (``domain/cuarenta/match.py``): the rule book's
``Match`` is rebuilt from the aggregate's inputs and the hands' packs, the command is applied,
and each fact it reports becomes an event, in its order; its money movements become
``MoneyMoved`` events on the match with their double entries on the accounts, in the same
command (one transaction). A refused command raises the rule book's ``RuleViolation`` before
anything is triggered: nothing is stored.

Money: each side's stake goes from its players' accounts to the table's stakes account
(``table:<table>:stakes``) when the match opens; when it ends the table pays the house's
commission (``table:<table>:commission``), then the winning side's players. Both accounts are
opened with the first match at the table.

Cards: every hand has its own committed shoe (a core ``Shoe``: one FRENCH-40 deck, its seed
sealed and escrowed, its commitment published in ``HandBegun`` before the deal), shuffled when
the previous hand ends (or the match opens); the seed is revealed (``Shoe.Closed``) when the
hand ends, or the match (every card of a hand is played by then, or the match is over). A card
in a hand is recorded by its position in that shoe; its face only in ``Played``.

The core services come through the ledger's ``services.ledger.core.Core``; the game is
registered in ``services/cuarenta/game.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from domain.cards import Card, DeckKind
from domain.cuarenta import facts as F
from domain.cuarenta import match as rulebook
from domain.cuarenta.rules import CuarentaRules, cuarenta_rules
from domain.cuarenta.stakes import Movement, Role
from domain.errors import FailedPrecondition, InvalidArgument
from services import topics
from services.api.roles import Role as Caller
from services.cuarenta.match import CuarentaMatch
from services.cuarenta.reconcile import Reconciliation, reconcile
from services.cuarenta.views import (
    HandView,
    HeldCard,
    LegalPlay,
    MatchStep,
    MatchView,
    MoveView,
)
from services.ledger.account import Account
from services.ledger.actor import SYSTEM, Actor
from services.ledger.core import Core, Transfer
from services.ledger.errors import PermissionDenied
from services.ledger.game import GameCommands
from services.ledger.hidden import Faces, HiddenCard
from services.ledger.ids import check_name, table_account
from services.ledger.methods import Face, command, query
from services.ledger.refused import Consequence, Refused
from services.ledger.shoe import Shoe
from services.ledger.turns import check_turn
from services.ledger.views import TurnView
from services.ledger.writer import UnitOfWork

T = TypeVar("T")

DECK = DeckKind.FRENCH_40
# The table's accounts (role = kind, id ``table:<table>:<role>``): the stakes of its matches
# while they run, and the house's commission on them.
STAKES = "stakes"
COMMISSION = "house_commission"
TABLE_ACCOUNTS = (STAKES, COMMISSION)
GAME_NAME = "cuarenta"  # its name (``Table.Opened.game``)
_SET_BY = {"players": "seats", "stake": "stake", "currency": "table's"}
MAX_STAKE = 10**15


def stakes_account(table_id: str) -> str:
    return table_account(table_id, STAKES)


def commission_account(table_id: str) -> str:
    return table_account(table_id, COMMISSION)


class Cuarenta(GameCommands):
    """Cuarenta's commands and queries on a ledger's core: ``Cuarenta(core).open_match(...)``
    (each also under its ledger-wide name, ``cuarenta_open_match`` …: ``METHODS``)."""

    def __init__(self, core: Core) -> None:
        super().__init__(core)
        self.config = core.config
        self.faces = Faces(self.config.seal_key)

    # --- plumbing -------------------------------------------------------------------------

    def read(self, fn: Callable[[UnitOfWork], T]) -> T:
        return self.core.read(fn)

    def _match(self, unit: UnitOfWork, match_id: str) -> CuarentaMatch:
        return self.core.get(unit, CuarentaMatch, match_id, "match")

    def _shoe(self, unit: UnitOfWork, shoe_id: str) -> Shoe:
        return self.core.shoe(unit, shoe_id)  # every hand's shoe is stored with it

    def pack(self, unit: UnitOfWork, shoe_id: str) -> tuple[Card, ...]:
        """The hand's pack in dealing order (position p is ``pack[p]``), from the shoe's sealed
        seed (``hidden.Faces``): for the rules alone."""
        return self.faces.order(self._shoe(unit, shoe_id))

    def state(self, unit: UnitOfWork, agg: CuarentaMatch) -> rulebook.Match:
        """The rule book's match as of the aggregate's version: its inputs replayed."""
        derived = agg.derived
        if derived.value is not None and derived.version == agg.version:
            kept: rulebook.Match = derived.value
            return kept
        m = rebuild(agg.options, agg.first_dealer, agg.inputs, lambda s: self.pack(unit, s))
        derived.value, derived.version = m, agg.version
        return m

    def _keep(self, agg: CuarentaMatch, m: rulebook.Match) -> None:
        agg.derived.value, agg.derived.version = m, agg.version

    # --- commands -------------------------------------------------------------------------

    def open_match(
        self,
        request_id: str,
        table_id: str,
        seats: Sequence[str] | str,
        stake: int | None = None,
        preset: str | None = None,
        overrides: Mapping[str, str] | None = None,
        dealer: int | None = None,
        match_id: str | None = None,
        *,
        actor: Actor = SYSTEM,
    ) -> MatchStep:
        """A match at ``table_id`` between the players ``seats`` (two, or four: seats 0 and 2
        against 1 and 3; a list, or one text of account ids), each side staking ``stake``
        (minor units; None: 0), under ``preset`` (None: ``seed``) with ``overrides``. The
        stakes are held on the table; the first hand's shoe is shuffled and committed.
        FAILED_PRECONDITION ``INSUFFICIENT_FUNDS`` when a player cannot stake."""
        seat_list = _words(seats)
        over = dict(overrides or {})

        def decide(unit: UnitOfWork) -> MatchStep:
            table = self.core.table(unit, table_id, game=GAME_NAME)
            accounts = _seats(seat_list)
            for key in ("players", "stake", "currency"):
                if key in over:
                    raise InvalidArgument(
                        f"overrides.{key}", "SET_BY_THE_MATCH",
                        f"{key} is the match's {_SET_BY[key]}, not an option")
            base: CuarentaRules = self.core.rules(table)
            amount = _stake(base.stake if stake is None else stake)
            options = {k: v for k, v in table.options.items() if k != "preset"}
            if preset is not None:  # another preset: its options, not the table's
                options = {"currency": base.currency}
            rules = cuarenta_rules(
                base.preset if preset is None else preset,
                {**options, **over, "players": str(len(accounts)), "stake": str(amount)})
            for i, account in enumerate(accounts):
                self.core.player(unit, account, rules.currency, f"seats[{i}]")
            mid = self.core.id_for(unit, CuarentaMatch, match_id, "match")
            step = rulebook.open_match(rules, dealer)
            self._check_funds(unit, accounts, step.movements, rules.currency)
            ts = unit.now
            house = self._house(unit, table_id)
            agg = CuarentaMatch._create(
                CuarentaMatch.Opened, id=mid, timestamp=ts, table_id=table_id,
                seats=accounts, players=rules.players, preset=rules.preset,
                options=rules.options(), currency=rules.currency, stake=amount,
                dealer=step.match.dealer,
            )
            unit.add(agg)
            moves = [MoveView("opened", totals=(0, 0), time=ts.isoformat())]
            moves += self._move_money(unit, agg, house, step.movements, ts)
            m = self._begin_hand(unit, agg, step.match, ts, moves)
            return self._step(unit, agg, m, moves)

        args = {"table_id": table_id, "seats": list(seat_list), "stake": stake,
                "preset": preset, "overrides": over, "dealer": dealer, "match_id": match_id}
        return self.core.run(CuarentaLedger.open_match.stored, request_id, args, decide, MatchStep,
                                actor)

    def deal(self, request_id: str, match_id: str, *, actor: Actor = SYSTEM) -> MatchStep:
        """Five cards to each seat from the hand's shoe (by position), then the rondas."""

        def decide(unit: UnitOfWork) -> MatchStep:
            agg = self._match(unit, match_id)
            m = self.state(unit, agg)
            step = rulebook.deal(m)
            return self._record(unit, agg, step, unit.now)

        return self.core.run(CuarentaLedger.deal.stored, request_id, {"match_id": match_id}, decide,
                                MatchStep, actor)

    def play(
        self,
        request_id: str,
        match_id: str,
        seat: int,
        card: str,
        capture: Sequence[str] | str | None = None,
        *,
        actor: Actor = SYSTEM,
    ) -> MatchStep:
        """``seat`` plays ``card`` (a code from its hand), taking ``capture`` (the table cards,
        base and run; None: what it takes when there is no choice; []: nothing). A player plays
        its own seat only (PERMISSION_DENIED ``NOT_YOUR_SEAT``); the rule book refuses a play
        out of turn, of a card not held, or an illegal capture (FAILED_PRECONDITION naming the
        rule), and nothing is stored. A play after the seat's turn time (by the ledger's clock)
        is refused, ``TURN_TIME_OVER``, and the side's forfeit recorded (``_on_time``)."""
        named = None if capture is None else _words(capture)

        def decide(unit: UnitOfWork) -> MatchStep:
            agg = self._match(unit, match_id)
            s = self._seat(agg, seat)
            if not _plays_for(actor, agg.seats[s]):
                raise PermissionDenied("seat", "NOT_YOUR_SEAT", "a player plays its own seat")
            m = self.state(unit, agg)
            self._on_time(unit, agg, m, s)
            step = rulebook.play(m, s, card, named)
            return self._record(unit, agg, step, unit.now)

        args: dict[str, Any] = {"match_id": match_id, "seat": seat, "card": card,
                                "capture": named}
        return self.core.run(CuarentaLedger.play.stored, request_id, args, decide, MatchStep, actor)

    def forfeit(self, request_id: str, match_id: str, seat: int, reason: str = "abandoned",
                turn: int | None = None, *, actor: Actor = SYSTEM) -> MatchStep:
        """``seat``'s side forfeits: ``abandoned`` (a player abandons for its own seat only),
        or ``turn_time`` (the seat to play let the table's ``turn_seconds`` pass: measured by
        the ledger from the turn's start; FAILED_PRECONDITION ``TURN_NOT_EXPIRED`` before; an
        opponent or the house may claim it). The other side is paid. ``turn``: the turn the
        claim is about (``TurnView.turn``, as the turn clock names it): FAILED_PRECONDITION
        ``turn`` ``TURN_MOVED`` once the match moved on (the player played meanwhile)."""

        def decide(unit: UnitOfWork) -> MatchStep:
            agg = self._match(unit, match_id)
            s = self._seat(agg, seat)
            m = self.state(unit, agg)
            why = _reason(reason)
            if turn is not None:
                check_turn(turn, agg.turn_version, agg.to_act == s, "the match")
            elapsed: float | None = None
            if why is F.ForfeitReason.ABANDONED:
                if not _plays_for(actor, agg.seats[s]):
                    raise PermissionDenied(
                        "seat", "NOT_YOUR_SEAT", "a player abandons for its own seat only")
            else:
                if actor.is_player and actor.account not in {
                        a for i, a in enumerate(agg.seats) if i % 2 != s % 2}:
                    raise PermissionDenied(
                        "seat", "NOT_AN_OPPONENT",
                        "the turn time is claimed by the house or an opponent seated at the "
                        "match")
                if m.phase is rulebook.Phase.PLAYING and m.to_act == s:
                    since = agg.turn_since
                    elapsed = 0.0 if since is None else (unit.now - since).total_seconds()
                    if not rulebook.turn_expired(m.rules, elapsed):
                        raise FailedPrecondition(
                            "seat", "TURN_NOT_EXPIRED",
                            f"seat {s} has had the turn {elapsed:.0f} s of "
                            f"{m.rules.turn_seconds} s")
            step = rulebook.forfeit(m, s, why)
            return self._record(unit, agg, step, unit.now, elapsed)

        args: dict[str, Any] = {"match_id": match_id, "seat": seat, "reason": reason}
        if turn is not None:  # (absent: the arguments stored before the turn clock)
            args["turn"] = turn
        return self.core.run(CuarentaLedger.forfeit.stored, request_id, args, decide, MatchStep,
                             actor)

    def _on_time(self, unit: UnitOfWork, agg: CuarentaMatch, m: rulebook.Match,
                 seat: int) -> None:
        """A play by the seat to play after its turn time, by the ledger's clock when the
        play is decided (``unit.now`` since the turn began; ``rulebook.turn_expired``): the
        side forfeits (RULES.md §3), recorded now as the ledger's own ``cuarenta_forfeit``
        (reason ``turn_time``, by ``SYSTEM``), and the play is refused, FAILED_PRECONDITION
        ``seat`` ``TURN_TIME_OVER`` (``services/ledger/refused.py``: the two stored together; a
        retry gets the refusal again). Whether the turn clock claimed the turn yet or not (it
        only claims turns nobody acts on)."""
        since = agg.turn_since
        if m.phase is not rulebook.Phase.PLAYING or m.to_act != seat or since is None:
            return
        elapsed = (unit.now - since).total_seconds()
        if not rulebook.turn_expired(m.rules, elapsed):
            return
        turn = agg.turn_version
        step = rulebook.forfeit(m, seat, F.ForfeitReason.TURN_TIME)
        done = self._record(unit, agg, step, unit.now, elapsed)
        # recorded as the ledger's own turn-time claim: what cuarenta_forfeit stores
        claim = {"match_id": str(agg.id), "seat": seat, "reason": F.ForfeitReason.TURN_TIME.value,
                 "turn": turn}
        raise Refused(FailedPrecondition(
            "seat", "TURN_TIME_OVER",
            f"seat {seat}'s turn time ({m.rules.turn_seconds} s) ran out {elapsed:.2f} s after "
            "its turn began, by the ledger's clock: the play is refused and the side "
            "forfeits the match"), Consequence(CuarentaLedger.forfeit.stored, claim, done))

    # --- queries --------------------------------------------------------------------------

    def turn(self, match_id: str) -> TurnView:
        """The turn the match waits on (the turn clock's query): the seat to play, since when,
        the table's turn time; ``turn`` None when no turn runs (before a deal, when over)."""

        def read(unit: UnitOfWork) -> TurnView:
            agg = self._match(unit, match_id)
            seat = agg.to_act
            running = seat is not None and not agg.over and agg.turn_since is not None
            since = agg.turn_since
            return TurnView(
                GAME_NAME, str(agg.id), agg.table_id,
                agg.turn_version if running else None,
                seat if running else None,
                agg.seats[seat] if running and seat is not None else None,
                since.isoformat() if running and since is not None else None,
                int(agg.options.get("turn_seconds", "0")))

        return self.read(read)

    def get_match(self, match_id: str) -> MatchView:
        def read(unit: UnitOfWork) -> MatchView:
            agg = self._match(unit, match_id)
            return self._view(agg, self.state(unit, agg))

        return self.read(read)

    def hand(self, match_id: str, seat: int, actor: Actor = SYSTEM) -> HandView:
        """The seat's own cards (with their positions) and, on its turn, its legal plays: for
        the seat's player only (``hidden.Faces.for_holder``: PERMISSION_DENIED
        ``NOT_YOUR_HAND`` for anyone else, the house's staff included)."""

        def read(unit: UnitOfWork) -> HandView:
            agg = self._match(unit, match_id)
            s = self._seat(agg, seat)
            holder = agg.seats[s]
            if not (actor.is_player and actor.account == holder):
                raise PermissionDenied("seat", "NOT_YOUR_HAND",
                                       "a hand is shown to its holder only")
            m = self.state(unit, agg)
            cards: tuple[HeldCard, ...] = ()
            if agg.shoe_id and agg.hands[s]:
                shoe = self._shoe(unit, agg.shoe_id)
                held = [HiddenCard(p, holder, "") for p in agg.hands[s]]
                cards = tuple(HeldCard(c.position, c.code)
                              for c in self.faces.for_holder(shoe, held, actor, holder))
            legal: tuple[LegalPlay, ...] = ()
            if m.phase is rulebook.Phase.PLAYING and m.to_act == s:
                legal = tuple(
                    LegalPlay(p.card.code, p.codes,
                              p.capture.kind.value if p.capture else None,
                              p.capture.points if p.capture else 0)
                    for p in rulebook.legal_plays(m))
            return HandView(str(agg.id), s, agg.hand, cards, m.to_act == s, legal)

        return self.read(read)

    def history(self, match_id: str) -> list[MoveView]:
        """Every move of the match, in order, as anyone may see it (no card in a hand)."""

        def read(unit: UnitOfWork) -> list[MoveView]:
            agg = self._match(unit, match_id)
            return [m for e in self.core.app.events.get(agg.id) for m in moves_of(e)]

        return self.read(read)

    # --- recording ------------------------------------------------------------------------

    def _seat(self, agg: CuarentaMatch, seat: object) -> int:
        if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < agg.players:
            raise InvalidArgument(
                "seat", "UNKNOWN_SEAT", f"must be a seat 0 to {agg.players - 1}, got {seat!r}")
        return seat

    def _check_funds(self, unit: UnitOfWork, accounts: list[str],
                     movements: tuple[Movement, ...], currency: str) -> None:
        """The seats' stakes against their balances (``Core.check_balances``: FAILED_PRECONDITION
        ``stake`` ``INSUFFICIENT_FUNDS``)."""
        net: dict[str, int] = {}
        for mv in movements:
            if mv.source is Role.PLAYER and mv.seat is not None:
                net[accounts[mv.seat]] = net.get(accounts[mv.seat], 0) - mv.amount
        self.core.check_balances(unit, net, currency, "stake")

    def _move_money(self, unit: UnitOfWork, agg: CuarentaMatch, house: dict[Role, Account],
                    movements: tuple[Movement, ...], ts: datetime) -> list[MoveView]:
        """The ledger's money step (``Core.transfer``): each movement a ``MoneyMoved`` on the
        match and its two entries (kind ``cuarenta_<kind>``) on the accounts."""
        moves: list[MoveView] = []
        transfers = [
            Transfer(self._role(unit, agg, house, mv.source, mv.seat),
                     self._role(unit, agg, house, mv.destination, mv.seat),
                     mv.amount, "cuarenta_" + mv.kind.value, None, mv)
            for mv in movements
        ]

        def record(t: Transfer[Movement]) -> None:
            mv = t.movement
            assert mv is not None
            seq = agg.movement_seq + 1
            debit, credit = t.debit.account_id, t.credit.account_id
            agg.trigger_event(
                CuarentaMatch.MoneyMoved, timestamp=ts, seq=seq, kind=mv.kind.value,
                seat=mv.seat, amount=t.amount, debit_account=debit, credit_account=credit)
            moves.append(MoveView("money", seat=mv.seat, reason=mv.kind.value, amount=t.amount,
                                  debit_account=debit, credit_account=credit,
                                  time=ts.isoformat()))

        self.core.transfer(transfers, str(agg.id), ts, record)
        return moves

    def _role(self, unit: UnitOfWork, agg: CuarentaMatch, house: dict[Role, Account],
              role: Role, seat: int | None) -> Account:
        if role is Role.PLAYER:
            assert seat is not None
            return self.core.account(unit, agg.seats[seat])
        return house[role]

    def _house(self, unit: UnitOfWork, table_id: str) -> dict[Role, Account]:
        """The table's accounts (opened with it: ``TABLE_ACCOUNTS``)."""
        return {Role.TABLE: self.core.table_account(unit, table_id, STAKES),
                Role.HOUSE: self.core.table_account(unit, table_id, COMMISSION)}

    def _begin_hand(self, unit: UnitOfWork, agg: CuarentaMatch, m: rulebook.Match,
                    ts: datetime, moves: list[MoveView]) -> rulebook.Match:
        """A new committed shoe for the next hand, and the hand begun on it."""
        shoe = self.core.shuffle(unit, agg.table_id, DECK, timestamp=ts)
        sid = shoe.id
        step = rulebook.begin_hand(m, self.faces.order(shoe))
        begun = next(f for f in step.facts if isinstance(f, F.HandBegun))
        agg.trigger_event(
            CuarentaMatch.HandBegun, timestamp=ts, hand=begun.hand, shoe_id=str(sid),
            commitment=shoe.commitment, dealer=begun.dealer, first=begun.first)
        moves.append(MoveView("hand_begun", hand=begun.hand, seat=begun.dealer,
                              shoe_id=str(sid), commitment=shoe.commitment,
                              time=ts.isoformat()))
        self._keep(agg, step.match)
        return step.match

    def _close_shoe(self, unit: UnitOfWork, agg: CuarentaMatch, ts: datetime) -> str:
        """The hand's shoe closed, its seed revealed; the pack's order digest."""
        assert agg.shoe_id is not None
        shoe = self._shoe(unit, agg.shoe_id)
        _, digest = self.core.close_shoe(shoe, ts, self.faces.order(shoe))
        assert digest is not None
        return digest

    def _record(self, unit: UnitOfWork, agg: CuarentaMatch, step: rulebook.Step,
                ts: datetime, elapsed: float | None = None) -> MatchStep:
        """Each fact of the step as its event, in order; the movements after ``MatchWon``."""
        pack = self.pack(unit, agg.shoe_id) if agg.shoe_id else ()
        moves: list[MoveView] = []
        facts = list(step.facts)
        captured = {f.turn: f for f in facts if isinstance(f, F.CardsCaptured)}
        for fact in facts:
            if isinstance(fact, F.Dealt | F.RondaScored | F.FourOfAKindDealt):
                moves.append(self._dealing(unit, agg, step, fact, pack, ts))
            elif isinstance(fact, F.CardPlayed | F.CardsCaptured):
                moves.append(self._playing(unit, agg, fact, captured, pack, ts))
            elif isinstance(fact, F.HandScored | F.Forfeited):
                moves.append(self._ending(unit, agg, fact, ts, elapsed))
            elif isinstance(fact, F.MatchWon):
                moves += self._won(unit, agg, step, fact, ts)
        self._keep(agg, step.match)
        m = step.match
        if m.phase is rulebook.Phase.AWAITING_PACK:
            m = self._begin_hand(unit, agg, m, ts, moves)
        return self._step(unit, agg, m, moves)

    def _dealing(self, unit: UnitOfWork, agg: CuarentaMatch, step: rulebook.Step,
                 fact: F.Dealt | F.RondaScored | F.FourOfAKindDealt, pack: Sequence[Card],
                 ts: datetime) -> MoveView:
        """A deal's facts: a hand's cards dealt (face down), a ronda, four of a kind."""
        when = ts.isoformat()
        if isinstance(fact, F.Dealt):
            positions = [pack.index(c) for c in fact.cards]
            shoe = self._shoe(unit, str(agg.shoe_id))
            holder = agg.seats[fact.seat]
            hidden = [self.faces.hide(shoe, p, holder).to_dict() for p in positions]
            agg.trigger_event(CuarentaMatch.Dealt, timestamp=ts, hand=fact.hand,
                              deal=fact.deal, seat=fact.seat, cards=hidden,
                              first=step.match.first)
            return MoveView("dealt", hand=fact.hand, deal=fact.deal, seat=fact.seat,
                            cards=(len(positions),), time=when)
        elif isinstance(fact, F.RondaScored):
            agg.trigger_event(CuarentaMatch.RondaScored, timestamp=ts, hand=fact.hand,
                              deal=fact.deal, seat=fact.seat, side=fact.side,
                              points=fact.points, withheld=fact.withheld, total=fact.total)
            return MoveView("ronda", hand=fact.hand, deal=fact.deal, seat=fact.seat,
                            side=fact.side, points=fact.points,
                            withheld=fact.withheld, total=fact.total, time=when)
        else:  # F.FourOfAKindDealt
            agg.trigger_event(CuarentaMatch.FourDealt, timestamp=ts, hand=fact.hand,
                              deal=fact.deal, seat=fact.seat, side=fact.side,
                              rank=fact.rank)
            return MoveView("four_of_a_kind", hand=fact.hand, deal=fact.deal,
                            seat=fact.seat, side=fact.side, card=fact.rank,
                            time=when)

    def _playing(self, unit: UnitOfWork, agg: CuarentaMatch, fact: F.CardPlayed | F.CardsCaptured,
                 captured: Mapping[int, F.CardsCaptured], pack: Sequence[Card], ts: datetime
                 ) -> MoveView:
        """A turn's facts: the card played (shown), what it captured."""
        when = ts.isoformat()
        if isinstance(fact, F.CardPlayed):
            took = captured.get(fact.turn)
            taken = [c.code for c in took.taken] if took is not None else []
            position = pack.index(fact.card)
            shown = self.faces.show(self._shoe(unit, str(agg.shoe_id)),
                                    HiddenCard(position, agg.seats[fact.seat], ""))
            agg.trigger_event(CuarentaMatch.Played, timestamp=ts, hand=fact.hand,
                              deal=fact.deal, turn=fact.turn, seat=fact.seat,
                              position=position, card=shown.code, salt=shown.salt,
                              captures=fact.captures, capture=taken)
            return MoveView("played", hand=fact.hand, deal=fact.deal, turn=fact.turn,
                            seat=fact.seat, card=fact.card.code, position=position,
                            time=when)
        else:  # F.CardsCaptured
            taken = [c.code for c in fact.taken]
            agg.trigger_event(CuarentaMatch.Captured, timestamp=ts, hand=fact.hand,
                              deal=fact.deal, turn=fact.turn, seat=fact.seat,
                              side=fact.side, card=fact.card.code, taken=taken,
                              kind=fact.kind.value, points=fact.points,
                              withheld=fact.withheld, total=fact.total)
            return MoveView("captured", hand=fact.hand, deal=fact.deal,
                            turn=fact.turn, seat=fact.seat, side=fact.side,
                            card=fact.card.code, taken=tuple(taken),
                            capture_kind=fact.kind.value, points=fact.points,
                            withheld=fact.withheld, total=fact.total, time=when)

    def _ending(self, unit: UnitOfWork, agg: CuarentaMatch, fact: F.HandScored | F.Forfeited,
                ts: datetime, elapsed: float | None) -> MoveView:
        """A hand scored (its shoe closed), or a side's forfeit."""
        when = ts.isoformat()
        if isinstance(fact, F.HandScored):
            digest = self._close_shoe(unit, agg, ts)
            left = [c.code for c in fact.left_on_table]
            agg.trigger_event(CuarentaMatch.HandScored, timestamp=ts, hand=fact.hand,
                              cards=list(fact.cards), carton=list(fact.carton),
                              withheld=list(fact.withheld), left_on_table=left,
                              left_to=fact.left_to, totals=list(fact.totals),
                              order_digest=digest)
            return MoveView("hand_scored", hand=fact.hand, side=fact.left_to,
                            taken=tuple(left), totals=fact.totals, cards=fact.cards,
                            carton=fact.carton, withheld=sum(fact.withheld),
                            time=when)
        else:  # F.Forfeited
            agg.trigger_event(CuarentaMatch.Forfeited, timestamp=ts, seat=fact.seat,
                              side=fact.side, reason=fact.reason.value,
                              elapsed_seconds=elapsed)
            return MoveView("forfeited", seat=fact.seat, side=fact.side,
                            reason=fact.reason.value, time=when)

    def _won(self, unit: UnitOfWork, agg: CuarentaMatch, step: rulebook.Step, fact: F.MatchWon,
             ts: datetime) -> list[MoveView]:
        """The match won (its last shoe closed), then the pot's movements."""
        when = ts.isoformat()
        if agg.shoe_id and not self._shoe(unit, agg.shoe_id).closed:
            self._close_shoe(unit, agg, ts)
        agg.trigger_event(CuarentaMatch.Won, timestamp=ts, side=fact.side,
                          reason=fact.reason.value, totals=list(fact.totals))
        won = MoveView("won", side=fact.side, reason=fact.reason.value, totals=fact.totals,
                       time=when)
        house = self._house(unit, agg.table_id)
        return [won, *self._move_money(unit, agg, house, step.movements, ts)]

    def _step(self, unit: UnitOfWork, agg: CuarentaMatch, m: rulebook.Match,
              moves: list[MoveView]) -> MatchStep:
        return MatchStep(self._view(agg, m), tuple(moves))

    def _view(self, agg: CuarentaMatch, m: rulebook.Match) -> MatchView:
        v = rulebook.view(m)
        last = v.last_played
        return MatchView(
            match_id=str(agg.id), table_id=agg.table_id, seats=tuple(agg.seats),
            preset=agg.preset, options=dict(agg.options), currency=agg.currency,
            stake=agg.stake, phase=v.phase.value, hand=v.hand, deal=v.deal, turn=m.turn,
            dealer=v.dealer, to_act=v.to_act, points=v.points,
            table=tuple(c.code for c in v.table),
            last_played=last.card.code if last else None,
            last_played_seat=last.seat if last else None, held=v.held, won=v.won,
            stock=v.stock, winner=v.winner, end=m.end.value if m.end else None,
            shoe_id=agg.shoe_id, hands=len(agg.shoe_ids),
            stakes_account=stakes_account(agg.table_id),
            commission_account=commission_account(agg.table_id),
        )

    def reconcile(self, table_id: str) -> Reconciliation:
        """The table's reconciliation (``reconcile.py``), folded from the log."""
        check_name(table_id, "table_id")
        events = self.core.logged((topics.CUARENTA_MATCH + ".", topics.ACCOUNT + "."))
        return reconcile(events, table_id)


_RPC = "/sabot.cuarenta.v1.CuarentaService/"  # the RPCs that call its commands
_CROUPIER = (Caller.CROUPIER,)


class CuarentaLedger(Face):
    """The game's commands and queries as the ledger declares them, each once: its stored name
    (the ledger's method, the socket's: frozen) and the method above that decides it (its
    arguments and answer: ``services.ledger.methods``), and for a command who may call it
    through which RPCs (the role table's rows: ``services.api.roles.role_table``). Servicers,
    the CLI and the turn clock call them through ``ledger.game(CuarentaLedger)``."""

    # the croupier opens and deals; a player plays (its own seat: the ledger decides) and
    # abandons; the croupier or an opponent claims the turn time
    open_match = command("cuarenta_open_match", Cuarenta.open_match, roles=_CROUPIER,
                         rpcs=(_RPC + "OpenMatch",))
    deal = command("cuarenta_deal", Cuarenta.deal, roles=_CROUPIER, rpcs=(_RPC + "Deal",))
    play = command("cuarenta_play", Cuarenta.play, roles=(Caller.PLAYER,),
                   rpcs=(_RPC + "PlayCard",))
    forfeit = command("cuarenta_forfeit", Cuarenta.forfeit,
                      roles=(Caller.CROUPIER, Caller.PLAYER), rpcs=(_RPC + "Forfeit",))
    turn = query("cuarenta_turn", Cuarenta.turn)
    get_match = query("cuarenta_match", Cuarenta.get_match)
    hand = query("cuarenta_hand", Cuarenta.hand)
    history = query("cuarenta_moves", Cuarenta.history)
    reconcile = query("cuarenta_reconcile", Cuarenta.reconcile)

# --- the rule book's match, from the inputs ---------------------------------------------------


def rebuild(options: Mapping[str, str], dealer: int, inputs: Sequence[Sequence[Any]],
            packs: Callable[[str], Sequence[Card]]) -> rulebook.Match:
    """The rule book's match after ``inputs`` (``CuarentaMatch.inputs``), each hand's pack
    from ``packs(shoe_id)``: what the regulator's replay does with the revealed seeds too."""
    m = rulebook.open_match(CuarentaRules.from_options(options), dealer).match
    for item in inputs:
        kind = item[0]
        if kind == "hand":
            m = rulebook.begin_hand(m, packs(str(item[1]))).match
        elif kind == "deal":
            m = rulebook.deal(m).match
        elif kind == "play":
            m = rulebook.play(m, int(item[1]), str(item[2]), list(item[3])).match
        elif kind == "forfeit":
            m = rulebook.forfeit(m, int(item[1]), str(item[2])).match
        else:  # pragma: no cover - the aggregate records only these
            raise ValueError(f"unknown input {kind!r}")
    return m


def moves_of(event: Any) -> list[MoveView]:
    """The public moves of one stored event of a match (a ``Dealt``: its seat and how many)."""
    C = CuarentaMatch
    when = event.timestamp.isoformat()
    if isinstance(event, C.Opened):
        return [MoveView("opened", totals=(0, 0), time=when)]
    if isinstance(event, C.HandBegun):
        return [MoveView("hand_begun", hand=event.hand, seat=event.dealer,
                         shoe_id=event.shoe_id, commitment=event.commitment, time=when)]
    if isinstance(event, C.Dealt):
        return [MoveView("dealt", hand=event.hand, deal=event.deal, seat=event.seat,
                         cards=(len(event.positions),), time=when)]
    if isinstance(event, C.RondaScored):
        return [MoveView("ronda", hand=event.hand, deal=event.deal, seat=event.seat,
                         side=event.side, points=event.points, withheld=event.withheld,
                         total=event.total, time=when)]
    if isinstance(event, C.FourDealt):
        return [MoveView("four_of_a_kind", hand=event.hand, deal=event.deal, seat=event.seat,
                         side=event.side, card=event.rank, time=when)]
    if isinstance(event, C.Played):
        return [MoveView("played", hand=event.hand, deal=event.deal, turn=event.turn,
                         seat=event.seat, card=event.card, position=event.position, time=when)]
    if isinstance(event, C.Captured):
        return [MoveView("captured", hand=event.hand, deal=event.deal, turn=event.turn,
                         seat=event.seat, side=event.side, card=event.card,
                         taken=tuple(event.taken), capture_kind=event.kind,
                         points=event.points, withheld=event.withheld, total=event.total,
                         time=when)]
    if isinstance(event, C.HandScored):
        return [MoveView("hand_scored", hand=event.hand, side=event.left_to,
                         taken=tuple(event.left_on_table), totals=tuple(event.totals),
                         cards=tuple(event.cards), carton=tuple(event.carton),
                         withheld=sum(event.withheld), time=when)]
    if isinstance(event, C.Forfeited):
        return [MoveView("forfeited", seat=event.seat, side=event.side, reason=event.reason,
                         time=when)]
    if isinstance(event, C.Won):
        return [MoveView("won", side=event.side, reason=event.reason,
                         totals=tuple(event.totals), time=when)]
    if isinstance(event, C.MoneyMoved):
        return [MoveView("money", seat=event.seat, reason=event.kind, amount=event.amount,
                         debit_account=event.debit_account, credit_account=event.credit_account,
                         time=when)]
    return []


# --- inputs -----------------------------------------------------------------------------------


def _words(value: object) -> Any:
    """A list of words given as a list (as the ledger's socket carries them), or as one text
    of words (the form it carried before, still accepted): ``"ana beto"``, ``"2C 3D"``;
    anything else is left for the checks to refuse."""
    if isinstance(value, str):
        return value.replace(",", " ").split()
    if isinstance(value, list | tuple):
        return list(value)
    return value



def _seats(seats: object) -> list[str]:
    if not isinstance(seats, list | tuple) or len(seats) not in (2, 4):
        raise InvalidArgument("seats", "BAD_SEATS",
                              "two players, or four (two teams: seats 0 and 2 against 1 and 3)")
    out = [check_name(s, f"seats[{i}]") for i, s in enumerate(seats)]
    if len(set(out)) != len(out):
        raise InvalidArgument("seats", "DUPLICATE_SEAT", "a player sits once")
    return out


def _stake(stake: object) -> int:
    if isinstance(stake, bool) or not isinstance(stake, int) or not 0 <= stake <= MAX_STAKE:
        raise InvalidArgument("stake", "BAD_AMOUNT", f"must be 0 to {MAX_STAKE} minor units")
    return stake


def _reason(reason: object) -> F.ForfeitReason:
    try:
        return F.ForfeitReason(str(reason))
    except ValueError:
        names = ", ".join(r.value for r in F.ForfeitReason)
        raise InvalidArgument("reason", "UNKNOWN_REASON",
                              f"unknown reason {reason!r} (one of {names})") from None


def _plays_for(actor: Actor, account: str) -> bool:
    """A player acts for its own seat only; the house's staff for any."""
    return actor.acts_for(account)
