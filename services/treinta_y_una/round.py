"""The ``TreintaYUnaRound`` aggregate: one game (juego) of Treinta y Una at a table.

Its events record what the rule book (``domain/treinta_y_una/round.py``) decided, fact for fact,
in its order, and the money each fact moved (``MoneyMoved``, with the double entries on the
accounts). Each round has a shoe of its own (one SPANISH-40 deck shuffled by SABOT-SHUFFLE-1,
sealed and escrowed like every shoe, not cut), opened with the round and closed (its seed
revealed) when the round ends.

Secrecy (``services/ledger/hidden.py``): a card dealt face down is recorded by its shoe position,
its holder and a commitment (``CardDealt``), never its face; its face is in no event until its
hand is shown (``HandShown`` at the showdown, ``HandBust`` when a hand over 31 loses at once),
with the salt that opens the commitment. "Carta" cards are face up (``CardDrawn.code``).

The aggregate keeps the public state and the commands' inputs (``inputs``): with the shoe's
cards (derived from its sealed seed, by the ledger only) they rebuild the rule book's ``Round``
(``services/treinta_y_una/commands.py``), which decides the next command. Nothing the aggregate
holds names a face-down card before it is shown, so its state (and any snapshot) is public.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from eventsourcing.domain import Aggregate
from eventsourcing.utils import register_topic

from services.ledger.derived import Derived
from services.ledger.table import Table
from services.ledger.turns import no_turn, turn_began

ROUND_IDS = "round_ids"  # the table's rounds, in the order they opened (``Table.rounds``)


class RoundStarted(Table.Event):
    """A Treinta y Una round opened at the table (its latest: ``round_id``): the game's round
    of the table, kept by the core's neutral ``Table.round_started`` under ``round_ids`` (the
    key this event's ``apply`` always filled: its topic, its field and stored events are
    unchanged, class version 1)."""

    TOPIC = "sabot.ledger:Table.RoundStarted"
    class_version = 1
    round_id: str

    def apply(self, agg: Table) -> None:
        agg.round_started(ROUND_IDS, self.round_id)


register_topic(RoundStarted.TOPIC, RoundStarted)  # an event of the core's Table, declared here


def round_ids(table: Table) -> list[str]:
    """The Treinta y Una rounds opened at ``table``, in order."""
    return table.rounds(ROUND_IDS)


def _hand(agg: TreintaYUnaRound, player: str) -> dict[str, Any]:
    for hand in agg.hands:
        if hand["player"] == player:
            return hand
    raise KeyError(player)


class TreintaYUnaRound(Aggregate):
    TOPIC = "sabot.ledger:TreintaYUnaRound"

    if TYPE_CHECKING:
        table_id: str
        number: int
        shoe_id: str
        commitment: str
        preset: str
        options: dict[str, str]
        currency: str
        seats: list[str]
        banker: str
        banker_reason: str
        lot: dict[str, Any] | None
        bank: int
        bank_put_up: int
        mano: str
        phase: str
        stakes: list[dict[str, Any]]
        hands: list[dict[str, Any]]
        whose_turn: str | None
        turn_since: datetime | None
        turn_version: int | None  # the turn's number: the version of the event that began it
        next_position: int
        inputs: list[list[Any]]
        movement_seq: int
        results: list[dict[str, Any]]
        next_banker: str | None
        next_banker_reason: str | None
        carried: list[list[Any]]
        derived: Derived

    class Event(Aggregate.Event):
        TOPIC = "sabot.ledger:TreintaYUnaRound.Event"

    class Opened(Aggregate.Created):
        """The round opened: the table's ruleset (``TableRules.options()``), its shoe (its
        commitment public, its seed sealed), the seats counter-clockwise, the banker (and why:
        ``lot`` holds the lot's nonce, seats and index when drawn) and his bank, the mano, and
        the stakes of a void game offered to this one (``carried``: ``[player, amount, held]``)."""

        TOPIC = "sabot.ledger:TreintaYUnaRound.Opened"
        class_version = 1
        table_id: str
        number: int
        shoe_id: str
        commitment: str
        preset: str
        options: dict[str, str]
        currency: str
        seats: list[str]
        banker: str
        banker_reason: str
        lot: dict[str, Any] | None
        bank: int
        mano: str
        carried: list[list[Any]]

        def apply(self, agg: TreintaYUnaRound) -> None:
            agg.table_id = self.table_id
            agg.number = self.number
            agg.shoe_id = self.shoe_id
            agg.commitment = self.commitment
            agg.preset = self.preset
            agg.options = dict(self.options)
            agg.currency = self.currency
            agg.seats = list(self.seats)
            agg.banker = self.banker
            agg.banker_reason = self.banker_reason
            agg.lot = dict(self.lot) if self.lot is not None else None
            agg.bank = 0  # the bank_put_up movement fills it
            agg.bank_put_up = self.bank
            agg.mano = self.mano
            agg.phase = "betting"
            agg.stakes = []
            agg.hands = []
            agg.whose_turn = None
            no_turn(agg)
            agg.next_position = 0
            agg.inputs = [["open", [list(c) for c in self.carried], self.bank]]
            agg.movement_seq = 0
            agg.results = []
            agg.next_banker = None
            agg.next_banker_reason = None
            agg.carried = []
            agg.derived = Derived()

    class StakeCarried(Event):
        """A stake of the last (void) game stays for this one."""

        TOPIC = "sabot.ledger:TreintaYUnaRound.StakeCarried"
        class_version = 1
        player: str
        amount: int
        held: int

        def apply(self, agg: TreintaYUnaRound) -> None:
            agg.stakes.append({"player": self.player, "amount": self.amount, "held": self.held,
                               "carried": True})

    class CarriedStakeReturned(Event):
        TOPIC = "sabot.ledger:TreintaYUnaRound.CarriedStakeReturned"
        class_version = 1
        player: str
        amount: int
        reason: str

    class StakePlaced(Event):
        TOPIC = "sabot.ledger:TreintaYUnaRound.StakePlaced"
        class_version = 1
        player: str
        amount: int
        held: int  # the stake and its cover

        def apply(self, agg: TreintaYUnaRound) -> None:
            agg.stakes.append({"player": self.player, "amount": self.amount, "held": self.held,
                               "carried": False})
            agg.inputs.append(["stake", self.player, self.amount])

    class StakeReturned(Event):
        """The round was called off before the deal: the stake and its cover go back."""

        TOPIC = "sabot.ledger:TreintaYUnaRound.StakeReturned"
        class_version = 1
        player: str
        amount: int

    class Cancelled(Event):
        """Called off before the deal; the banker keeps the bank for the next game."""

        TOPIC = "sabot.ledger:TreintaYUnaRound.Cancelled"
        class_version = 1
        next_banker: str
        reason: str

        def apply(self, agg: TreintaYUnaRound) -> None:
            agg.phase = "settled"
            agg.bank = 0
            agg.next_banker = self.next_banker
            agg.next_banker_reason = self.reason
            agg.inputs.append(["cancel"])

    class CardDealt(Event):
        """A card dealt face down: its shoe position, its holder and the commitment of its face
        (SABOT-HIDDEN-1); never the face."""

        TOPIC = "sabot.ledger:TreintaYUnaRound.CardDealt"
        class_version = 1
        player: str
        position: int
        commitment: str

        def apply(self, agg: TreintaYUnaRound) -> None:
            if self.position == 0:
                agg.phase = "playing"
                agg.inputs.append(["deal"])
            try:
                hand = _hand(agg, self.player)
            except KeyError:
                hand = {"player": self.player, "slots": [], "stood": False, "out": False}
                agg.hands.append(hand)
            hand["slots"].append({"position": self.position, "face_down": True, "code": None,
                                  "commitment": self.commitment})
            agg.next_position = max(agg.next_position, self.position + 1)

    class TurnBegan(Event):
        TOPIC = "sabot.ledger:TreintaYUnaRound.TurnBegan"
        class_version = 1
        player: str

        def apply(self, agg: TreintaYUnaRound) -> None:
            agg.whose_turn = self.player
            turn_began(agg, self)

    class CardDrawn(Event):
        """'Carta': a card dealt face up. The player acted: his turn time starts again."""

        TOPIC = "sabot.ledger:TreintaYUnaRound.CardDrawn"
        class_version = 1
        player: str
        position: int
        code: str

        def apply(self, agg: TreintaYUnaRound) -> None:
            _hand(agg, self.player)["slots"].append(
                {"position": self.position, "face_down": False, "code": self.code,
                 "commitment": ""})
            agg.next_position = self.position + 1
            turn_began(agg, self)
            agg.inputs.append(["carta", self.player])

    class Planted(Event):
        """'Me planto', said by the player or, past the turn time, by the croupier for him
        (``for_absent``, ``waited_seconds`` by the ledger's clock since his turn began)."""

        TOPIC = "sabot.ledger:TreintaYUnaRound.Planted"
        class_version = 1
        player: str
        for_absent: bool
        waited_seconds: int

        def apply(self, agg: TreintaYUnaRound) -> None:
            _hand(agg, self.player)["stood"] = True
            if self.for_absent:
                agg.inputs.append(["absent", self.player, self.waited_seconds])
            else:
                agg.inputs.append(["planto", self.player])

    class HandBust(Event):
        """A hand over 31 (bust = loses_at_once): shown at once, out of the game. ``shown``:
        its face-down cards with their salts (``hidden.ShownCard.to_dict``)."""

        TOPIC = "sabot.ledger:TreintaYUnaRound.HandBust"
        class_version = 1
        player: str
        shown: list[dict[str, Any]]
        cards: list[str]
        total: int

        def apply(self, agg: TreintaYUnaRound) -> None:
            hand = _hand(agg, self.player)
            hand["out"] = True
            _show(hand, self.shown)
            hand["total"] = self.total

    class ShowdownDue(Event):
        """Every turn is over: the croupier settles."""

        TOPIC = "sabot.ledger:TreintaYUnaRound.ShowdownDue"
        class_version = 1

        def apply(self, agg: TreintaYUnaRound) -> None:
            agg.phase = "showdown"
            agg.whose_turn = None
            no_turn(agg)

    class HandShown(Event):
        """At the showdown the banker "descubre sus cartas y el resto de los jugadores las
        suyas": the face-down cards with their salts, the hand's cards, total, real, bust."""

        TOPIC = "sabot.ledger:TreintaYUnaRound.HandShown"
        class_version = 1
        player: str
        shown: list[dict[str, Any]]
        cards: list[str]
        total: int
        real: bool
        bust: bool

        def apply(self, agg: TreintaYUnaRound) -> None:
            hand = _hand(agg, self.player)
            _show(hand, self.shown)
            hand["total"] = self.total
            hand["real"] = self.real
            hand["bust"] = self.bust

    class StakeSettled(Event):
        TOPIC = "sabot.ledger:TreintaYUnaRound.StakeSettled"
        class_version = 1
        player: str
        outcome: str
        amount: int
        multiple: int
        paid: int
        short: int
        commission: int

        def apply(self, agg: TreintaYUnaRound) -> None:
            agg.results.append({
                "player": self.player, "outcome": self.outcome, "amount": self.amount,
                "multiple": self.multiple, "paid": self.paid, "short": self.short,
                "commission": self.commission,
            })

    class MoneyMoved(Event):
        """One movement of the rule book, as posted: ``amount`` from ``debit_account`` to
        ``credit_account`` (``kind``: ``domain.treinta_y_una.movements.MovementKind``)."""

        TOPIC = "sabot.ledger:TreintaYUnaRound.MoneyMoved"
        class_version = 1
        seq: int
        kind: str
        player: str
        amount: int
        debit_account: str
        credit_account: str

        def apply(self, agg: TreintaYUnaRound) -> None:
            agg.movement_seq = self.seq
            if self.kind in ("bank_put_up", "collection"):
                agg.bank += self.amount
            elif self.kind in ("payment", "bank_commission", "bank_returned"):
                agg.bank -= self.amount

    class Settled(Event):
        """The round's end: who holds the bank next (and why), the stakes staying for the next
        game (``carried``: ``[player, amount, held]``)."""

        TOPIC = "sabot.ledger:TreintaYUnaRound.Settled"
        class_version = 1
        next_banker: str
        reason: str
        carried: list[list[Any]]

        def apply(self, agg: TreintaYUnaRound) -> None:
            agg.phase = "settled"
            agg.next_banker = self.next_banker
            agg.next_banker_reason = self.reason
            agg.carried = [list(c) for c in self.carried]
            agg.inputs.append(["settle"])


def _show(hand: dict[str, Any], shown: list[dict[str, Any]]) -> None:
    faces = {int(s["position"]): str(s["code"]) for s in shown}
    for slot in hand["slots"]:
        if slot["face_down"] and slot["position"] in faces:
            slot["code"] = faces[slot["position"]]
