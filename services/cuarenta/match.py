"""The ``CuarentaMatch`` aggregate: one match of Cuarenta, from its stakes to its winner.

Its events record what the rule book (``domain/cuarenta/match.py``) decided, fact for fact, in
its order. A card in a hand is recorded by its shoe position only (``Dealt.positions``: the
hand's committed shoe, a ``Shoe`` of the core, one per hand); its face is in no event until it
is played (``Played.card``). Four of a rank dealt shows its rank (it wins at once, every card of
the rank being in the hand); a ronda does not (Pagat: it is announced, not shown).

The aggregate keeps the public state and the commands' inputs (``inputs``): with the hands'
packs (derived from each shoe's sealed seed, by the ledger only) they rebuild the rule book's
``Match`` (``services/cuarenta/commands.py``), which decides the next command.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from eventsourcing.domain import Aggregate

from services.ledger.derived import Derived
from services.ledger.turns import no_turn, turn_began


class CuarentaMatch(Aggregate):
    TOPIC = "sabot.ledger:CuarentaMatch"

    if TYPE_CHECKING:
        table_id: str
        seats: list[str]
        players: int
        preset: str
        options: dict[str, str]
        currency: str
        stake: int
        first_dealer: int
        dealer: int
        hand: int
        deal: int
        turn: int
        shoe_id: str | None
        shoe_ids: list[str]
        hands: list[list[int]]
        to_act: int | None
        turn_since: datetime | None
        turn_version: int | None  # the turn's number: the version of the event that began it
        points: list[int]
        table: list[str]
        inputs: list[list[Any]]
        movement_seq: int
        winner: int | None
        end: str | None
        forfeited: int | None
        derived: Derived

    class Event(Aggregate.Event):
        TOPIC = "sabot.ledger:CuarentaMatch.Event"

    class Opened(Aggregate.Created):
        """The match opened at ``table_id``: its players by seat (seat ``s`` plays for side
        ``s % 2``), the whole ruleset (``CuarentaRules.options()``), the first hand's dealer."""

        TOPIC = "sabot.ledger:CuarentaMatch.Opened"
        class_version = 1
        table_id: str
        seats: list[str]
        players: int
        preset: str
        options: dict[str, str]
        currency: str
        stake: int
        dealer: int

        def apply(self, agg: CuarentaMatch) -> None:
            agg.table_id = self.table_id
            agg.seats = list(self.seats)
            agg.players = self.players
            agg.preset = self.preset
            agg.options = dict(self.options)
            agg.currency = self.currency
            agg.stake = self.stake
            agg.first_dealer = self.dealer
            agg.dealer = self.dealer
            agg.hand = 0
            agg.deal = 0
            agg.turn = 0
            agg.shoe_id = None
            agg.shoe_ids = []
            agg.hands = [[] for _ in range(self.players)]
            agg.to_act = None
            no_turn(agg)
            agg.points = [0, 0]
            agg.table = []
            agg.inputs = []
            agg.movement_seq = 0
            agg.winner = None
            agg.end = None
            agg.forfeited = None
            agg.derived = Derived()

    class HandBegun(Event):
        """A hand begins with its own committed shoe (``shoe_id``: one FRENCH-40 deck shuffled
        by SABOT-SHUFFLE-1, its commitment published here, not cut); the table is empty."""

        TOPIC = "sabot.ledger:CuarentaMatch.HandBegun"
        class_version = 1
        hand: int
        shoe_id: str
        commitment: str
        dealer: int
        first: int

        def apply(self, agg: CuarentaMatch) -> None:
            agg.hand = self.hand
            agg.deal = 0
            agg.turn = 0
            agg.dealer = self.dealer
            agg.shoe_id = self.shoe_id
            agg.shoe_ids.append(self.shoe_id)
            agg.hands = [[] for _ in range(agg.players)]
            agg.table = []
            agg.to_act = None
            agg.inputs.append(["hand", self.shoe_id])

    class Dealt(Event):
        """Five cards to ``seat``, face down: by their shoe positions only (0-based, in dealing
        order), each with its holder (the seat's account) and the commitment binding its face
        (``services/ledger/hidden.py``, SABOT-HIDDEN-1). The faces are the seat's, derived by
        the ledger from the shoe's sealed seed."""

        TOPIC = "sabot.ledger:CuarentaMatch.Dealt"
        class_version = 1
        hand: int
        deal: int
        seat: int
        cards: list[dict[str, Any]]  # HiddenCard.to_dict(): position, holder, commitment
        first: int  # the seat to play first in the deal

        @property
        def positions(self) -> list[int]:
            return [int(c["position"]) for c in self.cards]

        def apply(self, agg: CuarentaMatch) -> None:
            if agg.deal != self.deal:
                agg.deal = self.deal
                agg.inputs.append(["deal"])
            agg.hands[self.seat] = self.positions
            agg.to_act = self.first
            turn_began(agg, self)

    class RondaScored(Event):
        """Three of a rank among a seat's five (the rank is not shown)."""

        TOPIC = "sabot.ledger:CuarentaMatch.RondaScored"
        class_version = 1
        hand: int
        deal: int
        seat: int
        side: int
        points: int
        withheld: int
        total: int

        def apply(self, agg: CuarentaMatch) -> None:
            agg.points[self.side] = self.total

    class FourDealt(Event):
        """Four of ``rank`` in a seat's five: the match is won at once (``four_of_a_kind``)."""

        TOPIC = "sabot.ledger:CuarentaMatch.FourDealt"
        class_version = 1
        hand: int
        deal: int
        seat: int
        side: int
        rank: str

        def apply(self, agg: CuarentaMatch) -> None:
            pass

    class Played(Event):
        """``seat`` played the card at shoe ``position``: its face, public from now on, and the
        salt that opens the commitment recorded at the deal (``hidden.ShownCard``: anyone can
        check the face against it without the seed)."""

        TOPIC = "sabot.ledger:CuarentaMatch.Played"
        class_version = 1
        hand: int
        deal: int
        turn: int
        seat: int
        position: int
        card: str
        salt: str  # hex
        captures: bool
        capture: list[str]  # the table cards it takes ([] : it stays on the table)

        def apply(self, agg: CuarentaMatch) -> None:
            agg.turn = self.turn
            agg.hands[self.seat] = [p for p in agg.hands[self.seat] if p != self.position]
            if not self.captures:
                agg.table.append(self.card)
            agg.to_act = (self.seat + 1) % agg.players if any(agg.hands) else None
            turn_began(agg, self)
            agg.inputs.append(["play", self.seat, self.card, list(self.capture)])

    class Captured(Event):
        """What the card played took: the table cards (the base, then the run), the kind
        (``capture``, ``caida``, ``limpia``, ``caida_limpia``), the points and the total."""

        TOPIC = "sabot.ledger:CuarentaMatch.Captured"
        class_version = 1
        hand: int
        deal: int
        turn: int
        seat: int
        side: int
        card: str
        taken: list[str]
        kind: str
        points: int
        withheld: int
        total: int

        def apply(self, agg: CuarentaMatch) -> None:
            taken = set(self.taken)
            agg.table = [c for c in agg.table if c not in taken]
            agg.points[self.side] = self.total

    class HandScored(Event):
        """The hand's end: each side's cards won and cartón, the cards left on the table and
        to whom, the totals; ``order_digest``: the hand's pack (SHUFFLE.md), to check it
        against the shoe's revealed seed."""

        TOPIC = "sabot.ledger:CuarentaMatch.HandScored"
        class_version = 1
        hand: int
        cards: list[int]
        carton: list[int]
        withheld: list[int]
        left_on_table: list[str]
        left_to: int | None
        totals: list[int]
        order_digest: str

        def apply(self, agg: CuarentaMatch) -> None:
            agg.points = list(self.totals)
            agg.table = []
            agg.to_act = None
            no_turn(agg)

    class Forfeited(Event):
        """``seat``'s side forfeits: ``abandoned`` or ``turn_time``."""

        TOPIC = "sabot.ledger:CuarentaMatch.Forfeited"
        class_version = 1
        seat: int
        side: int
        reason: str
        elapsed_seconds: float | None  # the turn's time, for ``turn_time``

        def apply(self, agg: CuarentaMatch) -> None:
            agg.forfeited = self.seat
            agg.inputs.append(["forfeit", self.seat, self.reason])

    class Won(Event):
        """The match's end: the winning side, why (``points``, ``four_of_a_kind``,
        ``forfeit``) and the totals. The pot's movements follow."""

        TOPIC = "sabot.ledger:CuarentaMatch.Won"
        class_version = 1
        side: int
        reason: str
        totals: list[int]

        def apply(self, agg: CuarentaMatch) -> None:
            agg.winner = self.side
            agg.end = self.reason
            agg.points = list(self.totals)
            agg.to_act = None
            no_turn(agg)

    class MoneyMoved(Event):
        """One movement of the match's money (``stake``: player -> table; ``commission``:
        table -> house; ``payout``: table -> the winning side's player), posted double-entry
        on the two accounts in the same command."""

        TOPIC = "sabot.ledger:CuarentaMatch.MoneyMoved"
        class_version = 1
        seq: int
        kind: str
        seat: int | None
        amount: int
        debit_account: str
        credit_account: str

        def apply(self, agg: CuarentaMatch) -> None:
            agg.movement_seq = self.seq

    @property
    def over(self) -> bool:
        return self.winner is not None

    def side_of(self, seat: int) -> int:
        return seat % 2
