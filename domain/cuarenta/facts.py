"""What the match's commands report: one frozen fact per thing that happened, in order.

A later phase records each as a ledger event; the names and fields are meant to carry over.
Facts that score carry the side, the points and the side's total after them (``Scoring``), so
a reader can follow the score without the state. ``Dealt`` is private: only its seat (and the
regulator) may see its cards; ``RondaScored`` does not say the rank (Pagat: the ronda is
announced, not shown).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from domain.cards import Card
from domain.cuarenta.captures import CaptureKind


class EndReason(StrEnum):
    POINTS = "points"  # the side reached 40
    FOUR_OF_A_KIND = "four_of_a_kind"  # four of a rank dealt (``four_of_a_kind = wins_match``)
    FORFEIT = "forfeit"  # the other side abandoned or ran out of time


class ForfeitReason(StrEnum):
    ABANDONED = "abandoned"
    TURN_TIME = "turn_time"  # did not play within ``turn_seconds``


@dataclass(frozen=True, slots=True)
class MatchOpened:
    players: int
    dealer: int  # the first hand's dealer (seat)
    options: dict[str, str]  # CuarentaRules.options()


@dataclass(frozen=True, slots=True)
class HandBegun:
    hand: int  # 1, 2, …
    dealer: int
    first: int  # the seat that plays first (the dealer's next)
    pack_digest: str  # SHUFFLE.md order digest of the hand's pack, in dealing order


@dataclass(frozen=True, slots=True)
class Dealt:
    """Five cards to one seat. PRIVATE: for that seat's eyes (and the regulator's)."""

    hand: int
    deal: int  # 1 … deals_per_hand
    seat: int
    cards: tuple[Card, ...]


@dataclass(frozen=True, slots=True)
class RondaScored:
    hand: int
    deal: int
    seat: int
    side: int
    points: int
    withheld: int  # what the 38-point rule withheld
    total: int  # the side's points after


@dataclass(frozen=True, slots=True)
class FourOfAKindDealt:
    hand: int
    deal: int
    seat: int
    side: int
    rank: str  # four of a rank: every card of the rank is in the hand, so shown


@dataclass(frozen=True, slots=True)
class CardPlayed:
    hand: int
    deal: int
    turn: int  # the play's number within the hand, 1 …
    seat: int
    card: Card
    captures: bool  # False: the card stays on the table


@dataclass(frozen=True, slots=True)
class CardsCaptured:
    hand: int
    deal: int
    turn: int
    seat: int
    side: int
    card: Card  # the card played
    taken: tuple[Card, ...]  # the table cards taken: the base, then the run
    kind: CaptureKind
    points: int
    withheld: int  # what the 38-point rule withheld
    total: int  # the side's points after


@dataclass(frozen=True, slots=True)
class HandScored:
    """The end of a hand: the cartón of each side (side 0, side 1)."""

    hand: int
    cards: tuple[int, int]  # cards each side won in the hand
    carton: tuple[int, int]  # the cartón points each side scored
    withheld: tuple[int, int]  # cartón points the 38-point rule withheld
    left_on_table: tuple[Card, ...]  # the cards left on the table after the last play
    left_to: int | None  # the side they went to (``table_at_hand_end``), None: to nobody
    totals: tuple[int, int]  # each side's points after


@dataclass(frozen=True, slots=True)
class Forfeited:
    seat: int
    side: int
    reason: ForfeitReason


@dataclass(frozen=True, slots=True)
class MatchWon:
    side: int
    reason: EndReason
    totals: tuple[int, int]


Fact = (
    MatchOpened
    | HandBegun
    | Dealt
    | RondaScored
    | FourOfAKindDealt
    | CardPlayed
    | CardsCaptured
    | HandScored
    | Forfeited
    | MatchWon
)


class Scoring(Protocol):
    """A fact that scores for one side."""

    @property
    def side(self) -> int: ...

    @property
    def points(self) -> int: ...

    @property
    def total(self) -> int: ...
