"""Treinta y Una's commands and queries on the ledger: each decided by the rule book
(``domain/treinta_y_una/round.py``) inside the ledger's single writer, its facts recorded as
``TreintaYUnaRound`` events and its movements as double-entry postings between the players'
accounts and the table's (``table:<id>:stakes``, ``:bank``, ``:house``).

The rules are never restated here: the round's state is rebuilt by replaying the round's
recorded inputs through the rule book on the round's shoe (its cards derived from the sealed
seed, ``services/ledger/hidden.py``), and the next command is the rule book's. A refused
command raises before anything is triggered: nothing is stored.

Who acts (``Actor``): a player acts on its own seat only (PERMISSION_DENIED ``player``
``NOT_YOUR_SEAT``); the rule book then refuses a player out of turn (FAILED_PRECONDITION
``player`` ``NOT_YOUR_TURN``: "it is X's turn, not Y's"; a player reads "another player" for
every name but its own, as the round's views hide them from it). The croupier opens, deals,
stands for an absent player (after the turn time, by the ledger's clock) and settles. A
player's "carta" or "me planto" after his turn time, by the ledger's clock, is refused
(``TURN_TIME_OVER``) and the "me planto" for the absent player recorded with the refusal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

from domain.cards import DeckKind
from domain.errors import FailedPrecondition, InvalidArgument, NotFound, RuleViolation
from domain.treinta_y_una import facts as F
from domain.treinta_y_una import round as R
from domain.treinta_y_una.banker import BankerChoice, BankerReason, BankLot, draw_banker
from domain.treinta_y_una.hand import evaluate
from domain.treinta_y_una.movements import Movement
from domain.treinta_y_una.rules import RULING, TableRules
from domain.treinta_y_una.stakes import Stake
from services import topics
from services.api.roles import Role as Caller
from services.ledger.account import Account
from services.ledger.actor import SYSTEM, Actor
from services.ledger.core import Core, Transfer
from services.ledger.errors import PermissionDenied
from services.ledger.game import GameCommands
from services.ledger.hidden import Faces, HiddenCard, ShownCard
from services.ledger.ids import check_name, movement_account, table_uuid
from services.ledger.methods import Face, command, query
from services.ledger.refused import Consequence, Refused, unnamed
from services.ledger.seal import unseal
from services.ledger.shoe import Shoe
from services.ledger.table import Table
from services.ledger.turns import check_turn
from services.ledger.views import TurnView
from services.ledger.writer import UnitOfWork
from services.projections.games import META
from services.treinta_y_una.reconcile import DayReconciliation, reconcile
from services.treinta_y_una.round import ROUND_IDS, RoundStarted, TreintaYUnaRound, round_ids
from services.treinta_y_una.views import (
    HandView,
    ResultView,
    RoundMovementView,
    RoundRecall,
    RoundStakeView,
    RoundStep,
    RoundView,
    SlotView,
)

T = TypeVar("T")
DECK = DeckKind.SPANISH_40
ROLES = ("stakes", "bank", "house")  # the table's accounts (``table:<id>:<role>``)
MAX_BANK = 10**15


GAME = "treinta-y-una"  # its name (``Table.Opened.game``)


def rules_of(options: dict[str, str]) -> TableRules:
    return TableRules.from_options(options)


class TreintaYUna(GameCommands):
    """The game's commands and queries over the ledger's ``Core``: ``core.run`` (a command:
    decided in the single writer, stored with its request and actor), ``core.read`` (a query
    on committed state), the accounts and postings. Each method is also the ledger's own
    under its ``tyu_`` name (``services/treinta_y_una/game.py`` declares them)."""

    def __init__(self, core: Core) -> None:
        super().__init__(core)
        self._run = core.run
        self._read = core.read
        self.config = core.config
        self.faces = Faces(core.config.seal_key)

    # --- the core's table -------------------------------------------------------------------

    def table_rounds(self, table: Table) -> tuple[str | None, int]:
        """What a table view shows of its rounds (``services.ledger.api``): its latest round
        (None: none) and how many opened at it."""
        return table.latest_round(ROUND_IDS)

    # --- plumbing ---------------------------------------------------------------------------

    def _table(self, unit: UnitOfWork, table_id: str) -> Table:
        table = self.core.table(unit, table_id, game=GAME)
        if table.closed:
            raise FailedPrecondition("table_id", "TABLE_CLOSED", f"table {table_id!r} is closed")
        return table

    def _round(self, unit: UnitOfWork, round_id: str) -> TreintaYUnaRound:
        return self.core.get(unit, TreintaYUnaRound, round_id, "round")

    def _shoe(self, unit: UnitOfWork, agg: TreintaYUnaRound) -> Shoe:
        return self.core.shoe(unit, agg.shoe_id)

    def _account(self, unit: UnitOfWork, name: str, field: str = "player") -> Account:
        return self.core.account(unit, name, field)

    def _derive(self, unit: UnitOfWork, agg: TreintaYUnaRound) -> R.Round:
        """The rule book's round: the recorded inputs replayed on the round's shoe."""
        held = agg.derived
        if held.value is not None and held.version == agg.version:
            found: R.Round = held.value
            return found
        rules = rules_of(agg.options)
        cards = self.faces.order(self._shoe(unit, agg))
        state: R.Round | None = None
        for item in agg.inputs:
            kind = item[0]
            if kind == "open":
                carried = [Stake(str(p), int(a), int(h)) for p, a, h in item[1]]
                step = R.open_round(rules, agg.seats, _choice(agg), int(item[2]), carried)
            else:
                assert state is not None
                if kind == "stake":
                    step = R.place_stake(rules, state, item[1], int(item[2]))
                elif kind == "deal":
                    step = R.deal(rules, state, cards)
                elif kind == "carta":
                    step = R.carta(rules, state, item[1])
                elif kind == "planto":
                    step = R.me_planto(rules, state, item[1])
                elif kind == "absent":
                    step = R.stand_for_absent(rules, state, item[1], int(item[2]))
                elif kind == "settle":
                    step = R.settle(rules, state)
                else:
                    step = R.cancel_round(rules, state)
            state = step.round
        assert state is not None
        held.value, held.version = state, agg.version
        return state

    def _movement_accounts(self, table_id: str, m: Movement) -> tuple[str, str]:
        return (movement_account(table_id, m.source, m.player),
                movement_account(table_id, m.destination, m.player))

    def _check_funds(self, unit: UnitOfWork, movements: Sequence[Movement], currency: str,
                     field: str) -> None:
        self.core.check_movements(unit, movements, currency, field)

    def _player(self, unit: UnitOfWork, player: str, currency: str,
                field: str = "player") -> Account:
        return self.core.player(unit, player, currency, field)

    def _move(self, unit: UnitOfWork, agg: TreintaYUnaRound, movements: Sequence[Movement],
              ts: datetime) -> list[RoundMovementView]:
        """The ledger's money step (``Core.transfer``): each movement a ``MoneyMoved`` on the
        round and its two entries on the accounts."""
        moved: list[RoundMovementView] = []
        transfers: list[Transfer[Movement]] = []
        for m in movements:
            debit_name, credit_name = self._movement_accounts(agg.table_id, m)
            transfers.append(Transfer(self._account(unit, debit_name),
                                      self._account(unit, credit_name),
                                      m.amount, m.kind.value, None, m))

        def record(t: Transfer[Movement]) -> None:
            assert t.movement is not None
            seq = agg.movement_seq + 1
            player, debit, credit = t.movement.player, t.debit.account_id, t.credit.account_id
            agg.trigger_event(
                TreintaYUnaRound.MoneyMoved, timestamp=ts, seq=seq, kind=t.kind,
                player=player, amount=t.amount, debit_account=debit, credit_account=credit,
            )
            moved.append(RoundMovementView(seq, t.kind, player, t.amount, debit, credit))

        self.core.transfer(transfers, str(agg.id), ts, record)
        return moved

    def _record(self, unit: UnitOfWork, agg: TreintaYUnaRound, step: R.Step,
                waited: int = 0) -> list[RoundMovementView]:
        """The step's facts as events (the round's closing fact last, after the money), its
        movements as postings; the rule book's round kept as the aggregate's derived state."""
        ts = unit.now
        shoe = self._shoe(unit, agg)
        closing: list[F.Fact] = []
        for fact in step.facts:
            if isinstance(fact, F.RoundSettled | F.RoundCancelled):
                closing.append(fact)
                continue
            self._fact(agg, shoe, step, fact, ts, waited)
        moved = self._move(unit, agg, step.movements, ts)
        for fact in closing:
            self._fact(agg, shoe, step, fact, ts, waited)
            self._close_shoe(unit, agg, shoe, ts)
        agg.derived.value, agg.derived.version = step.round, agg.version
        return moved

    def _fact(self, agg: TreintaYUnaRound, shoe: Shoe, step: R.Step, fact: F.Fact,
              ts: datetime, waited: int) -> None:
        found = fact_event(
            fact, step, waited,
            lambda p, who: self.faces.hide(shoe, p, who).commitment,
            lambda p, who: self.faces.show(shoe, HiddenCard(p, who, "")).to_dict(),
        )
        if found is not None:
            agg.trigger_event(found[0], timestamp=ts, **found[1])

    def _hidden(self, agg: TreintaYUnaRound, player: str) -> list[HiddenCard]:
        for hand in agg.hands:
            if hand["player"] == player:
                return [HiddenCard(s["position"], player, s["commitment"])
                        for s in hand["slots"] if s["face_down"]]
        return []

    def _shown(self, agg: TreintaYUnaRound, shoe: Shoe, player: str) -> list[dict[str, Any]]:
        return [self.faces.show(shoe, h).to_dict() for h in self._hidden(agg, player)]

    def _new_shoe(self, unit: UnitOfWork, table: Table) -> tuple[Shoe, bytes]:
        """The round's own shoe: one SPANISH-40 deck, a fresh seed sealed (and escrowed to the
        regulator when keyed), its commitment public; not cut. Shuffled aside (a unit of work
        of its own, nothing of ``unit`` touched): the banker drawn by lot from its seed must
        still be found to cover the bank, and a refusal stores nothing (``_start_shoe``
        stores it with the round)."""
        aside = UnitOfWork(unit.app, unit.cache)
        aside.now = unit.now
        shoe = self.core.shuffle(aside, table.table_id, DECK)
        return shoe, unseal(self.config.seal_key, shoe.sealed_seed, shoe.id)

    def _start_shoe(self, unit: UnitOfWork, table: Table, shoe: Shoe) -> None:
        """The shoe of ``_new_shoe`` stored with the round, started at the table (as
        ``Core.start_shoe``)."""
        unit.add(shoe)
        table.trigger_event(Table.ShoeStarted, timestamp=unit.now, shoe_id=str(shoe.id))

    def _close_shoe(self, unit: UnitOfWork, agg: TreintaYUnaRound, shoe: Shoe,
                    ts: datetime) -> None:
        """The round is over: its shoe's seed revealed, so anyone can check every card."""
        table = unit.get(Table, table_uuid(agg.table_id))
        assert table is not None
        self.core.close_shoe(shoe, ts, self.faces.order(shoe), table)

    def view(self, unit: UnitOfWork, agg: TreintaYUnaRound,
             moved: Sequence[RoundMovementView] = ()) -> RoundView:
        """The round as everyone may see it: face-down cards by position until shown."""
        lot = agg.lot
        return RoundView(
            round_id=str(agg.id), table_id=agg.table_id, number=agg.number,
            shoe_id=agg.shoe_id, commitment=agg.commitment, phase=agg.phase,
            seats=tuple(agg.seats), banker=agg.banker, banker_reason=agg.banker_reason,
            lot_index=int(lot["index"]) if lot is not None else None, bank=agg.bank,
            mano=agg.mano, whose_turn=agg.whose_turn,
            turn_since=agg.turn_since.isoformat() if agg.turn_since is not None else None,
            stakes=tuple(RoundStakeView(s["player"], s["amount"], s["held"], s["carried"])
                         for s in agg.stakes),
            hands=tuple(_hand_view(h) for h in agg.hands),
            results=tuple(ResultView(**r) for r in agg.results),
            moved=tuple(moved), next_banker=agg.next_banker,
            next_banker_reason=agg.next_banker_reason,
            carried=tuple(RoundStakeView(str(p), int(a), int(h), True)
                          for p, a, h in agg.carried),
            currency=agg.currency, preset=agg.preset, options=dict(agg.options),
        )

    def _seat_of(self, actor: Actor, player: str) -> None:
        if not isinstance(player, str) or not player:
            raise InvalidArgument("player", "BAD_PLAYER", "must name a player")
        if not actor.acts_for(player):
            raise PermissionDenied("player", "NOT_YOUR_SEAT",
                                   "a player acts on its own hand only")

    # --- commands -----------------------------------------------------------------------------

    def open_round(self, request_id: str, table_id: str, seats: str, bank: int,
                   round_id: str | None = None, *, actor: Actor = SYSTEM) -> RoundView:
        """Open the table's next game: ``seats`` (comma-separated account ids, counter-clockwise
        seen from above); the banker drawn by lot for the table's first game (or when the last
        game's next banker left), else the last game's next banker; ``bank``: what he puts up.
        The last game's void stakes are offered to this one."""

        def decide(unit: UnitOfWork) -> RoundView:
            table = self._table(unit, table_id)
            # the round records the table's rules, under the latest rulings for a table
            # recorded before they existed (its earlier rounds keep theirs: ``from_options``)
            rules = rules_of({"ruling": str(RULING), **table.options})
            names = _seats(seats)
            if not isinstance(bank, int) or isinstance(bank, bool) or not 0 < bank <= MAX_BANK:
                raise InvalidArgument("bank", "BAD_AMOUNT", "must be whole minor units above 0")
            for i, name in enumerate(names):
                self._player(unit, name, rules.currency, f"seats[{i}]")
            previous = round_ids(table)
            last = self._round(unit, previous[-1]) if previous else None
            if last is not None and last.phase != "settled":
                raise FailedPrecondition("table_id", "ROUND_IN_PROGRESS",
                                         f"round {last.id} is not settled yet")
            rid = self.core.id_for(unit, TreintaYUnaRound, round_id, "round")
            carried = [] if last is None else [list(c) for c in last.carried]
            shoe, seed = self._new_shoe(unit, table)  # not stored unless the round opens
            if last is not None and last.next_banker in names:
                assert last.next_banker is not None and last.next_banker_reason is not None
                choice = BankerChoice(last.next_banker, BankerReason(last.next_banker_reason))
            else:
                choice = draw_banker(seed, shoe.id, names)
            step = R.open_round(rules, names, choice,
                                bank, [Stake(str(p), int(a), int(h)) for p, a, h in carried])
            self._check_funds(unit, step.movements, rules.currency, "bank")
            self._start_shoe(unit, table, shoe)
            lot = None if choice.lot is None else {
                "nonce": str(choice.lot.nonce), "seats": list(choice.lot.seats),
                "index": choice.lot.index}
            opened = next(f for f in step.facts if isinstance(f, F.RoundOpened))
            agg = TreintaYUnaRound._create(
                TreintaYUnaRound.Opened, id=rid, timestamp=unit.now, table_id=table.table_id,
                number=table.round_count(ROUND_IDS) + 1, shoe_id=str(shoe.id),
                commitment=shoe.commitment,
                preset=rules.preset, options=rules.options(), currency=rules.currency,
                seats=list(names), banker=choice.player, banker_reason=choice.reason.value,
                lot=lot, bank=bank, mano=opened.mano, carried=carried,
            )
            unit.add(agg)
            table.trigger_event(RoundStarted, timestamp=unit.now, round_id=str(rid))
            moved = self._record(unit, agg, step)
            return self.view(unit, agg, moved)

        args = {"table_id": table_id, "seats": seats, "bank": bank, "round_id": round_id}
        result: RoundView = self._run(TreintaYUnaLedger.open_round.stored, request_id, args,
                                      decide, RoundView,
                                      actor)
        return result

    def _step(self, name: str, request_id: str, args: dict[str, Any], round_id: str,
              actor: Actor, step_of: Callable[[UnitOfWork, TreintaYUnaRound, TableRules,
                                               R.Round], tuple[R.Step, int]],
              player: str | None = None, timed: bool = False) -> RoundView:
        """Run a command on a round: ``step_of`` decides it; ``player``: the hand it acts on
        (the actor's own, for a player); ``timed``: the player's own move in its turn ("carta",
        "me planto"), refused after its turn time (``_on_time``). A refusal to a player names
        no other player (``refused.unnamed``: the round's views hide them from it)."""

        def decide(unit: UnitOfWork) -> RoundView:
            if player is not None:
                self._seat_of(actor, player)
            agg = self._round(unit, round_id)
            try:
                rules = rules_of(agg.options)
                state = self._derive(unit, agg)
                if timed and player is not None:
                    self._on_time(unit, agg, rules, state, player)
                step, waited = step_of(unit, agg, rules, state)
                self._check_funds(unit, step.movements, rules.currency, "amount")
            except RuleViolation as exc:
                if not actor.is_player:
                    raise
                raise unnamed(exc, agg.seats, actor.account) from None  # no other's name
            moved = self._record(unit, agg, step, waited)
            return self.view(unit, agg, moved)

        result: RoundView = self._run(name, request_id, args, decide, RoundView, actor)
        return result

    def _on_time(self, unit: UnitOfWork, agg: TreintaYUnaRound, rules: TableRules,
                 state: R.Round, player: str) -> None:
        """A "carta" or "me planto" by the player whose turn it is after the table's turn
        time, by the ledger's clock when it is decided (``unit.now`` since his turn began or
        his last "carta"): the croupier's "me planto" for an absent player (RULES.md §2) is
        recorded now, ``for_absent``, as the ledger's own ``tyu_stand_for_absent`` (by
        ``SYSTEM``), and the move is refused, FAILED_PRECONDITION ``player`` ``TURN_TIME_OVER``
        (``services/ledger/refused.py``: the two stored together; a retry gets the refusal
        again). Whether the turn clock claimed the turn yet or not."""
        since = agg.turn_since
        if (rules.turn_seconds == 0 or state.phase is not R.Phase.PLAYING
                or state.whose_turn != player or since is None):
            return
        elapsed = (unit.now - since).total_seconds()
        if elapsed < rules.turn_seconds:
            return
        waited, turn = int(elapsed), agg.turn_version
        moved = self._record(unit, agg, R.stand_for_absent(rules, state, player, waited), waited)
        # recorded as the ledger's own stand for the absent player: what stand_for_absent stores
        stood = {"round_id": str(agg.id), "player": player, "turn": turn}
        raise Refused(FailedPrecondition(
            "player", "TURN_TIME_OVER",
            f"the turn time ({rules.turn_seconds} s) ran out {elapsed:.2f} s after the turn "
            "began, by the ledger's clock: refused, and \"me planto\" is recorded for the "
            "absent player"), Consequence(TreintaYUnaLedger.stand_for_absent.stored, stood,
                                          self.view(unit, agg, moved)))

    def place_stake(self, request_id: str, round_id: str, player: str, amount: int, *,
                    actor: Actor = SYSTEM) -> RoundView:
        """A punter's stake (and its cover) before the deal, within the table's limits and the
        bank's cover (FAILED_PRECONDITION ``amount`` ``BANK_CANNOT_COVER``)."""
        return self._step(
            TreintaYUnaLedger.place_stake.stored, request_id,
            {"round_id": round_id, "player": player, "amount": amount}, round_id, actor,
            lambda u, a, rules, s: (R.place_stake(rules, s, player, amount), 0), player)

    def deal(self, request_id: str, round_id: str, *, actor: Actor = SYSTEM) -> RoundView:
        """Three cards face down to each hand, one at a time, right to left (by position)."""

        def step_of(unit: UnitOfWork, agg: TreintaYUnaRound, rules: TableRules,
                    state: R.Round) -> tuple[R.Step, int]:
            return R.deal(rules, state, self.faces.order(self._shoe(unit, agg))), 0

        return self._step(TreintaYUnaLedger.deal.stored, request_id, {"round_id": round_id},
                          round_id, actor,
                          step_of)

    def carta(self, request_id: str, round_id: str, player: str, *,
              actor: Actor = SYSTEM) -> RoundView:
        return self._step(
            TreintaYUnaLedger.carta.stored, request_id, {"round_id": round_id, "player": player},
            round_id, actor,
            lambda u, a, rules, s: (R.carta(rules, s, player), 0), player, timed=True)

    def me_planto(self, request_id: str, round_id: str, player: str, *,
                  actor: Actor = SYSTEM) -> RoundView:
        return self._step(
            TreintaYUnaLedger.me_planto.stored, request_id,
            {"round_id": round_id, "player": player}, round_id,
            actor, lambda u, a, rules, s: (R.me_planto(rules, s, player), 0), player,
            timed=True)

    def stand_for_absent(self, request_id: str, round_id: str, player: str,
                         turn: int | None = None, *, actor: Actor = SYSTEM) -> RoundView:
        """The croupier says "me planto" for the player whose turn it is, once the table's turn
        time has passed since his turn began or his last "carta" (by the ledger's clock).
        ``turn``: the turn the claim is about (``TurnView.turn``, as the turn clock names it):
        FAILED_PRECONDITION ``turn`` ``TURN_MOVED`` once the round moved on (he acted)."""

        def step_of(unit: UnitOfWork, agg: TreintaYUnaRound, rules: TableRules,
                    state: R.Round) -> tuple[R.Step, int]:
            if turn is not None:
                check_turn(turn, agg.turn_version, agg.whose_turn == player,
                           "the round")
            since = agg.turn_since
            waited = 0 if since is None else max(int((unit.now - since).total_seconds()), 0)
            return R.stand_for_absent(rules, state, player, waited), waited

        args: dict[str, Any] = {"round_id": round_id, "player": player}
        if turn is not None:  # (absent: the arguments stored before the turn clock)
            args["turn"] = turn
        return self._step(TreintaYUnaLedger.stand_for_absent.stored, request_id, args, round_id,
                          actor, step_of)

    def settle(self, request_id: str, round_id: str, *, actor: Actor = SYSTEM) -> RoundView:
        """The showdown: every hand shown (with the proofs of its face-down cards), the bank
        collects then pays, the commission to the house, the bank back to the banker, the
        round's shoe closed (its seed revealed)."""
        return self._step(TreintaYUnaLedger.settle.stored, request_id, {"round_id": round_id},
                          round_id, actor,
                          lambda u, a, rules, s: (R.settle(rules, s), 0))

    def cancel_round(self, request_id: str, round_id: str, *,
                     actor: Actor = SYSTEM) -> RoundView:
        return self._step(TreintaYUnaLedger.cancel_round.stored, request_id,
                          {"round_id": round_id}, round_id,
                          actor, lambda u, a, rules, s: (R.cancel_round(rules, s), 0))

    # --- queries ------------------------------------------------------------------------------

    def turn(self, round_id: str) -> TurnView:
        """The turn the round waits on (the turn clock's query): whose, since when, the
        table's turn time; ``turn`` None when no turn runs (betting, showdown, settled)."""

        def read(unit: UnitOfWork) -> TurnView:
            agg = self._round(unit, round_id)
            since, who = agg.turn_since, agg.whose_turn
            running = agg.phase == "playing" and who is not None and since is not None
            return TurnView(
                GAME, str(agg.id), agg.table_id,
                agg.turn_version if running else None, None,
                who if running else None,
                since.isoformat() if running and since is not None else None,
                rules_of(agg.options).turn_seconds)

        return self._read(read)

    def get_round(self, round_id: str) -> RoundView:
        return self._read(lambda u: self.view(u, self._round(u, round_id)))

    def latest_round(self, table_id: str) -> RoundView | None:
        def read(unit: UnitOfWork) -> RoundView | None:
            ids = round_ids(self._table(unit, table_id))
            return self.view(unit, self._round(unit, ids[-1])) if ids else None

        return self._read(read)

    def list_rounds(self, table_id: str) -> list[str]:
        return self._read(lambda u: self.core.all_rounds(
            self._table(u, table_id), ROUND_IDS, RoundStarted.TOPIC, "round_id"))

    def my_hand(self, round_id: str, player: str, actor: Actor) -> HandView:
        """The holder's own hand, his face-down cards' faces filled in: for the player's own
        principal only (PERMISSION_DENIED ``player`` ``NOT_YOUR_HAND`` for anyone else). Never
        stored, never streamed."""

        def read(unit: UnitOfWork) -> HandView:
            agg = self._round(unit, round_id)
            shoe = self._shoe(unit, agg)
            hand = next((h for h in agg.hands if h["player"] == player), None)
            if hand is None:
                if not actor.acts_for(player) or not actor.is_player:
                    raise PermissionDenied("player", "NOT_YOUR_HAND",
                                           "a face-down card is shown to its holder only")
                raise NotFound("player", "NO_HAND", f"{player!r} has no hand in this round")
            own = self.faces.for_holder(shoe, self._hidden(agg, player), actor, player)
            faces = {s.position: s.code for s in own}
            slots = tuple(
                SlotView(s["position"], s["face_down"], s["code"] or faces.get(s["position"]),
                         s["commitment"]) for s in hand["slots"])
            cards = tuple(self.faces.card(shoe, s.position) for s in slots)
            value = evaluate(cards)
            return HandView(player, slots, hand["stood"], hand["out"], value.total,
                            value.real, value.bust)

        return self._read(read)

    def own_proofs(self, round_id: str, player: str, actor: Actor) -> tuple[ShownCard, ...]:
        """The holder's face-down cards with their salts (he can check each commitment)."""

        def read(unit: UnitOfWork) -> tuple[ShownCard, ...]:
            agg = self._round(unit, round_id)
            return self.faces.for_holder(self._shoe(unit, agg), self._hidden(agg, player),
                                         actor, player)

        return self._read(read)

    def recall(self, round_id: str) -> RoundRecall:
        """The round and every recorded step in order (public: positions until shown)."""

        def read(unit: UnitOfWork) -> RoundRecall:
            agg = self._round(unit, round_id)
            steps = tuple(map(round_step, unit.app.events.get(agg.id)))
            return RoundRecall(self.view(unit, agg), steps)

        return self._read(read)

    def reconcile(self, table_id: str) -> list[DayReconciliation]:
        """The table's reconciliation per gaming day (``reconcile.py``), from the log."""
        check_name(table_id, "table_id")
        events = self.core.logged(topics.TREINTA_Y_UNA_ROUND + ".")
        return reconcile(events, table_id)


_RPC = "/sabot.treinta_y_una.v1.TreintaYUnaService/"  # the RPCs that call its commands
_CROUPIER, _PLAYER = (Caller.CROUPIER,), (Caller.PLAYER,)


class TreintaYUnaLedger(Face):
    """The game's commands and queries as the ledger declares them, each once: its stored name
    (the ledger's method, the socket's: frozen) and the method above that decides it (its
    arguments and answer: ``services.ledger.methods``), and for a command who may call it
    through which RPCs (the role table's rows: ``services.api.roles.role_table``). Servicers,
    the CLI and the turn clock call them through ``ledger.game(TreintaYUnaLedger)``."""

    # the croupier opens, deals, stands for an absent player and settles; a player stakes and
    # says "carta" or "me planto" (its own hand, in its turn: the ledger decides)
    open_round = command("tyu_open_round", TreintaYUna.open_round, roles=_CROUPIER,
                         rpcs=(_RPC + "OpenRound",))
    place_stake = command("tyu_place_stake", TreintaYUna.place_stake, roles=_PLAYER,
                          rpcs=(_RPC + "PlaceStake",))
    deal = command("tyu_deal", TreintaYUna.deal, roles=_CROUPIER, rpcs=(_RPC + "Deal",))
    carta = command("tyu_carta", TreintaYUna.carta, roles=_PLAYER, rpcs=(_RPC + "Carta",))
    me_planto = command("tyu_me_planto", TreintaYUna.me_planto, roles=_PLAYER,
                        rpcs=(_RPC + "MePlanto",))
    stand_for_absent = command("tyu_stand_for_absent", TreintaYUna.stand_for_absent,
                               roles=_CROUPIER, rpcs=(_RPC + "StandForAbsent",))
    turn = query("tyu_turn", TreintaYUna.turn)
    settle = command("tyu_settle", TreintaYUna.settle, roles=_CROUPIER,
                     rpcs=(_RPC + "SettleRound",))
    cancel_round = command("tyu_cancel_round", TreintaYUna.cancel_round, roles=_CROUPIER,
                           rpcs=(_RPC + "CancelRound",))
    get_round = query("tyu_get_round", TreintaYUna.get_round)
    latest_round = query("tyu_latest_round", TreintaYUna.latest_round)
    list_rounds = query("tyu_list_rounds", TreintaYUna.list_rounds)
    my_hand = query("tyu_my_hand", TreintaYUna.my_hand)
    recall = query("tyu_recall", TreintaYUna.recall)
    reconcile = query("tyu_reconcile", TreintaYUna.reconcile)

Commit = Callable[[int, str], str]  # (position, holder) -> the commitment of its face
Show = Callable[[int, str], dict[str, Any]]  # (position, holder) -> the shown card's record


def fact_event(fact: F.Fact, step: R.Step, waited: int, commit: Commit, show: Show
               ) -> tuple[type[TreintaYUnaRound.Event], dict[str, Any]] | None:
    """The event (class and fields) that records a fact of the rule book (None: the round's
    opening, made by ``open_round`` itself); the ledger and the regulator's replay both use
    it. ``step``: the step the fact belongs to (for a stake's cover, a hand's face-down
    positions, the stakes carried)."""
    E = TreintaYUnaRound

    def shown(player: str) -> list[dict[str, Any]]:
        hand = step.round.hand_of(player)
        return [show(p, player) for p in hand.positions[:R.CARDS_DEALT]]

    if isinstance(fact, F.RoundOpened):
        return None
    if isinstance(fact, F.StakeCarried):
        stake = step.round.stake_of(fact.player)
        assert stake is not None
        return E.StakeCarried, {"player": fact.player, "amount": fact.amount,
                                "held": stake.held}
    if isinstance(fact, F.CarriedStakeReturned):
        return E.CarriedStakeReturned, {"player": fact.player, "amount": fact.amount,
                                        "reason": fact.reason.value}
    if isinstance(fact, F.StakePlaced):
        return E.StakePlaced, {"player": fact.player, "amount": fact.amount, "held": fact.held}
    if isinstance(fact, F.StakeReturned):
        return E.StakeReturned, {"player": fact.player, "amount": fact.amount}
    if isinstance(fact, F.RoundCancelled):
        return E.Cancelled, {"next_banker": fact.next_banker.player,
                             "reason": fact.next_banker.reason.value}
    if isinstance(fact, F.CardDealt):
        return E.CardDealt, {"player": fact.player, "position": fact.position,
                             "commitment": commit(fact.position, fact.player)}
    if isinstance(fact, F.TurnBegan):
        return E.TurnBegan, {"player": fact.player}
    if isinstance(fact, F.CardDrawn):
        return E.CardDrawn, {"player": fact.player, "position": fact.position,
                             "code": fact.card.code}
    if isinstance(fact, F.Planted):
        return E.Planted, {"player": fact.player, "for_absent": fact.for_absent,
                           "waited_seconds": waited if fact.for_absent else 0}
    if isinstance(fact, F.HandBust):
        return E.HandBust, {"player": fact.player, "shown": shown(fact.player),
                            "cards": [c.code for c in fact.cards], "total": fact.total}
    if isinstance(fact, F.ShowdownDue):
        return E.ShowdownDue, {}
    if isinstance(fact, F.HandShown):
        return E.HandShown, {"player": fact.player, "shown": shown(fact.player),
                             "cards": [c.code for c in fact.cards], "total": fact.total,
                             "real": fact.real, "bust": fact.bust}
    if isinstance(fact, F.StakeSettled):
        return E.StakeSettled, {"player": fact.player, "outcome": fact.outcome.value,
                                "amount": fact.amount, "multiple": fact.multiple,
                                "paid": fact.paid, "short": fact.short,
                                "commission": fact.commission}
    if isinstance(fact, F.RoundSettled):
        carried = [[c.player, c.amount, c.held] for c in step.round.carried]
        return E.Settled, {"next_banker": fact.next_banker.player,
                           "reason": fact.next_banker.reason.value, "carried": carried}
    raise AssertionError(f"unmapped fact {fact!r}")  # pragma: no cover


def round_step(event: Any) -> RoundStep:
    """A stored event of a round as a step of its recall (its data as recorded: public, a
    face-down card by its position and commitment until its hand is shown); the ledger's
    ``recall`` and the read model (``projection.py``) both use it."""
    data = {k: v for k, v in event.__dict__.items() if k not in META}
    return RoundStep(event.originator_version, type(event).__qualname__,
                     event.timestamp.isoformat(), _json_ready(data))


def _json_ready(value: Any) -> Any:
    """An event's data as JSON-ready values (times and ids as text)."""
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_ready(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    return value


def _seats(text: str) -> list[str]:
    if not isinstance(text, str) or not text:
        raise InvalidArgument("seats", "OUT_OF_RANGE", "name the players, comma-separated")
    names = [s.strip() for s in text.split(",")]
    for i, name in enumerate(names):
        check_name(name, f"seats[{i}]")
    return names


def _choice(agg: TreintaYUnaRound) -> BankerChoice:
    lot = agg.lot
    return BankerChoice(
        agg.banker, BankerReason(agg.banker_reason),
        None if lot is None else BankLot(UUID(lot["nonce"]), tuple(lot["seats"]),
                                         int(lot["index"])),
    )


def _hand_view(hand: dict[str, Any]) -> HandView:
    return HandView(
        hand["player"],
        tuple(SlotView(s["position"], s["face_down"], s["code"], s["commitment"])
              for s in hand["slots"]),
        hand["stood"], hand["out"], hand.get("total"), hand.get("real"), hand.get("bust"),
    )
