"""The Coup aggregate: the layout while the coup runs, its cards, its outcome, its settlement.

The layout is table-level in the rules (stakes survive coups); the ledger keeps it in the
table's latest coup and carries it over, stake by stake, into the next coup it opens.
Every event that changes a stake carries the stake as it is afterwards (None: it left).

``CoupStarted`` is the game's event of the core's ``Table``: a coup opened at the table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from eventsourcing.domain import Aggregate
from eventsourcing.utils import register_topic

from domain.trente_et_quarante.layout import Fate, Layout, Stake
from services.ledger.table import Table
from services.ledger.trigger import FastTrigger

COUP_IDS = "coup_ids"  # the table's coups, in the order they opened (``Table.rounds``)


class CoupStarted(Table.Event):
    """A coup opened at the table (its latest now: ``coup_id``): Trente et Quarante's round
    of the table. Declared in ``Table`` itself until issue 13 made the core game-neutral; its
    topic, its one field and its meaning are the same as they always were, and stored events
    load unchanged (class version 1)."""

    TOPIC = "sabot.ledger:Table.CoupStarted"
    class_version = 1
    coup_id: str

    def apply(self, agg: Table) -> None:
        agg.round_started(COUP_IDS, self.coup_id)


register_topic(CoupStarted.TOPIC, CoupStarted)  # an event of the core's Table, declared here


def coup_ids(table: Table) -> list[str]:
    """The coups opened at ``table``, in order."""
    return table.rounds(COUP_IDS)


def last_coup_id(table: Table) -> str | None:
    """The table's latest coup (open or finished), if any."""
    ids = coup_ids(table)
    return ids[-1] if ids else None


class Phase:
    BETTING = "betting"
    CLOSED = "closed"
    DEALT = "dealt"
    SETTLED = "settled"


def _board_of(agg: Any) -> Layout:
    """The layout ``agg`` holds: a coup's own (``board``), else one made of its ``layout``."""
    board = getattr(agg, "board", None)
    return board if isinstance(board, Layout) else Layout(tuple(agg.layout))


def _put(agg: Any, stake_id: str, stake: Stake | None) -> None:
    """Put ``stake`` in the layout in place of the stake ``stake_id`` (None: take it off); a
    new stake goes at the end (``Layout.put``: O(log n), whatever the coup holds already; the
    step's own layout when the coup applies the events of a step made from its layout). A coup
    keeps the layout as a domain ``Layout`` (``board``); any other holder of a ``layout`` tuple
    and its ``stake_ids`` gets them made anew."""
    board = getattr(agg, "board", None)
    if isinstance(board, Layout):
        agg.board = board.put(stake_id, stake)
        return
    layout = Layout(tuple(agg.layout)).put(stake_id, stake)
    agg.layout = layout.stakes
    agg.stake_ids = dict.fromkeys(s.stake_id for s in layout.stakes)


def _restate(agg: Any, layout: tuple[Stake, ...]) -> None:
    if isinstance(getattr(agg, "board", None), Layout):
        agg.board = Layout(layout)
        return
    agg.layout = layout
    agg.stake_ids = dict.fromkeys(s.stake_id for s in layout)


class Coup(FastTrigger, Aggregate):
    TOPIC = "sabot.ledger:Coup"

    if TYPE_CHECKING:
        table_id: str
        shoe_id: str
        number: int
        number_in_shoe: int
        start_position: int
        phase: str
        owners: dict[str, str]  # every stake ever on the coup -> its account (derived)
        board: Layout  # the layout (a persistent domain Layout: steps share its index)
        cards: list[tuple[str, str, int, int]]
        noir_total: int | None
        rouge_total: int | None
        result: str | None
        refait_total: int | None
        couleur: bool | None
        winning_chances: tuple[str, ...]
        announcement: str | None
        cut_card_reached: bool
        movements: list[dict[str, Any]]
        fates: list[dict[str, Any]]
        movement_seq: int

    class Event(Aggregate.Event):
        TOPIC = "sabot.ledger:Coup.Event"

    class Opened(Aggregate.Created):
        TOPIC = "sabot.ledger:Coup.Opened"
        class_version = 1
        table_id: str
        shoe_id: str
        number: int
        number_in_shoe: int
        start_position: int

        def apply(self, agg: Coup) -> None:
            agg.table_id = self.table_id
            agg.shoe_id = self.shoe_id
            agg.number = self.number
            agg.number_in_shoe = self.number_in_shoe
            agg.start_position = self.start_position
            agg.phase = Phase.BETTING
            agg.board = Layout()
            agg.owners = {}
            agg.cards = []
            agg.noir_total = None
            agg.rouge_total = None
            agg.result = None
            agg.refait_total = None
            agg.couleur = None
            agg.winning_chances = ()
            agg.announcement = None
            agg.cut_card_reached = False
            agg.movements = []
            agg.fates = []
            agg.movement_seq = 0

    class StakeCarriedOver(Event):
        """A stake left on the layout by the previous coup (void, partage, prison, kept)."""

        TOPIC = "sabot.ledger:Coup.StakeCarriedOver"
        class_version = 1
        from_coup_id: str
        stake: Stake

        def apply(self, agg: Coup) -> None:
            agg.board = agg.board.append(self.stake)
            agg.owners[self.stake.stake_id] = self.stake.player

    class StakeChanged(Event):
        """Base of every stake event: what the stake was and is (``stake`` None: it left)."""

        TOPIC = "sabot.ledger:Coup.StakeChanged"
        class_version = 1
        stake_id: str
        account_id: str
        chance: str
        fate: str
        amount_before: int
        amount_after: int
        status_after: str | None
        stake: Stake | None

        def apply(self, agg: Coup) -> None:
            _put(agg, self.stake_id, self.stake)
            if agg.phase in (Phase.DEALT, Phase.SETTLED):
                agg.fates.append(
                    {
                        "stake_id": self.stake_id,
                        "account_id": self.account_id,
                        "chance": self.chance,
                        "fate": self.fate,
                        "amount_before": self.amount_before,
                        "amount_after": self.amount_after,
                        "status_after": self.status_after,
                    }
                )

    class StakePlaced(StakeChanged):
        TOPIC = "sabot.ledger:Coup.StakePlaced"

        def apply(self, agg: Coup) -> None:
            agg.owners[self.stake_id] = self.account_id
            super().apply(agg)

    class StakeRaised(StakeChanged):
        TOPIC = "sabot.ledger:Coup.StakeRaised"

    class StakeWithdrawn(StakeChanged):
        TOPIC = "sabot.ledger:Coup.StakeWithdrawn"

    class InsuranceBought(StakeChanged):
        """Insurance for this coup; the premium went to the table's house insurance account."""

        TOPIC = "sabot.ledger:Coup.InsuranceBought"
        premium: int

    class Refait31Chosen(StakeChanged):
        """Partage or prison chosen for a stake (in advance, or after a refait at 31); ``fate``
        tells what it did (chosen: recorded for later, partage: half taken, imprisoned)."""

        TOPIC = "sabot.ledger:Coup.Refait31Chosen"

    class StakeHalfWithdrawn(StakeChanged):
        TOPIC = "sabot.ledger:Coup.StakeHalfWithdrawn"

    class StakeMoved(StakeChanged):
        TOPIC = "sabot.ledger:Coup.StakeMoved"

    class StakeWon(StakeChanged):
        TOPIC = "sabot.ledger:Coup.StakeWon"

    class StakeLost(StakeChanged):
        TOPIC = "sabot.ledger:Coup.StakeLost"

    class StakeVoided(StakeChanged):
        TOPIC = "sabot.ledger:Coup.StakeVoided"

    class StakePartaged(StakeChanged):
        TOPIC = "sabot.ledger:Coup.StakePartaged"

    class StakeImprisoned(StakeChanged):
        TOPIC = "sabot.ledger:Coup.StakeImprisoned"

    class StakeSecondPrison(StakeChanged):
        TOPIC = "sabot.ledger:Coup.StakeSecondPrison"

    class StakeReleased(StakeChanged):
        TOPIC = "sabot.ledger:Coup.StakeReleased"

    class StakeBackToPrison(StakeChanged):
        TOPIC = "sabot.ledger:Coup.StakeBackToPrison"

    class StakePrisonLost(StakeChanged):
        TOPIC = "sabot.ledger:Coup.StakePrisonLost"

    class StakeReturned(StakeChanged):
        TOPIC = "sabot.ledger:Coup.StakeReturned"

    class StakeHalfReturned(StakeChanged):
        """The table closed with the stake in prison, under ``prisoners_at_close =
        half_returned``: settled as a partage (half to the house, the rest back)."""

        TOPIC = "sabot.ledger:Coup.StakeHalfReturned"

    class LayoutRestated(Event):
        """The layout as the rules give it after a step, when stake events alone differ."""

        TOPIC = "sabot.ledger:Coup.LayoutRestated"
        class_version = 1
        stakes: tuple[Stake, ...]

        def apply(self, agg: Coup) -> None:
            _restate(agg, tuple(self.stakes))

    class MoneyMoved(Event):
        """One movement of a settlement (or of the shoe's end, or of the table's close), in the
        order of RULES.md."""

        TOPIC = "sabot.ledger:Coup.MoneyMoved"
        class_version = 1
        seq: int
        kind: str
        stake_id: str
        account_id: str
        chance: str
        amount: int
        debit_account: str
        credit_account: str

        def apply(self, agg: Coup) -> None:
            agg.movement_seq = self.seq
            agg.movements.append(
                {
                    "seq": self.seq,
                    "kind": self.kind,
                    "stake_id": self.stake_id,
                    "account_id": self.account_id,
                    "chance": self.chance,
                    "amount": self.amount,
                    "debit_account": self.debit_account,
                    "credit_account": self.credit_account,
                }
            )

    class BettingClosed(Event):
        TOPIC = "sabot.ledger:Coup.BettingClosed"
        class_version = 1

        def apply(self, agg: Coup) -> None:
            agg.phase = Phase.CLOSED

    class CardDealt(Event):
        TOPIC = "sabot.ledger:Coup.CardDealt"
        class_version = 1
        row: str
        code: str
        position: int
        running_total: int

        def apply(self, agg: Coup) -> None:
            agg.cards.append((self.row, self.code, self.position, self.running_total))

    class Resolved(Event):
        """The coup resolved: the totals, the outcome and the croupier's announcement."""

        TOPIC = "sabot.ledger:Coup.Resolved"
        class_version = 1
        noir_total: int | None
        rouge_total: int | None
        result: str
        refait_total: int | None
        couleur: bool | None
        winning_chances: tuple[str, ...]
        announcement: str
        cut_card_reached: bool
        next_position: int

        def apply(self, agg: Coup) -> None:
            agg.noir_total = self.noir_total
            agg.rouge_total = self.rouge_total
            agg.result = self.result
            agg.refait_total = self.refait_total
            agg.couleur = self.couleur
            agg.winning_chances = tuple(self.winning_chances)
            agg.announcement = self.announcement
            agg.cut_card_reached = self.cut_card_reached
            agg.phase = Phase.DEALT

    class Settled(Event):
        TOPIC = "sabot.ledger:Coup.Settled"
        class_version = 1

        def apply(self, agg: Coup) -> None:
            agg.phase = Phase.SETTLED

    def owner(self, stake_id: str) -> str | None:
        """The account of a stake that is or was on this coup (a stake's owner never changes);
        None if it never was on it."""
        return self.owners.get(stake_id)

    @property
    def layout(self) -> tuple[Stake, ...]:
        """The stakes on the layout now, in order."""
        return self.board.stakes

    def stake(self, stake_id: str) -> Stake | None:
        return _board_of(self).find(stake_id)

    def domain_layout(self) -> Layout:
        """The layout as a domain ``Layout`` (persistent: a step made from it shares its index)."""
        return self.board

    def adopt(self, layout: Layout) -> None:
        """Keep ``layout`` as the coup's own. The caller has checked that its stakes equal the
        coup's layout (a step whose events the coup has just applied)."""
        self.board = layout


FATE_EVENTS: dict[Fate, type[Coup.StakeChanged]] = {
    Fate.PLACED: Coup.StakePlaced,
    Fate.RAISED: Coup.StakeRaised,
    Fate.WITHDRAWN: Coup.StakeWithdrawn,
    Fate.INSURED: Coup.InsuranceBought,
    Fate.CHOSEN: Coup.Refait31Chosen,
    Fate.HALF_WITHDRAWN: Coup.StakeHalfWithdrawn,
    Fate.MOVED: Coup.StakeMoved,
    Fate.WON: Coup.StakeWon,
    Fate.LOST: Coup.StakeLost,
    Fate.VOID: Coup.StakeVoided,
    Fate.PARTAGE: Coup.StakePartaged,
    Fate.IMPRISONED: Coup.StakeImprisoned,
    Fate.SECOND_PRISON: Coup.StakeSecondPrison,
    Fate.RELEASED: Coup.StakeReleased,
    Fate.BACK_TO_PRISON: Coup.StakeBackToPrison,
    Fate.PRISON_LOST: Coup.StakePrisonLost,
    Fate.RETURNED: Coup.StakeReturned,
    Fate.HALF_RETURNED: Coup.StakeHalfReturned,
}
