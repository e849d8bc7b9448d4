"""What happened in a game, fact by fact, in the croupier's order.

Every fact is safe to publish as it is: a face-down card appears in a fact only by its position
in the shoe (``CardDealt``) until its hand is shown (``HandShown`` at the showdown, or
``HandBust`` when a hand over 31 loses at once). A face-up card ("carta") is named when drawn.
What a player may see of his own hand is read from the round (``Round.hand_of``), not from the
facts.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from domain.cards import Card
from domain.treinta_y_una.banker import BankerChoice


class Outcome(StrEnum):
    WON = "won"
    LOST = "lost"
    VOID = "void"  # a tie under tie = void_carry_over: the stake stays for the next game


class ReturnReason(StrEnum):
    NOT_SEATED = "not_seated"  # the player left the table
    BANKER = "banker"  # the player now holds the bank
    BANK_CANNOT_COVER = "bank_cannot_cover"  # the new bank does not cover it


@dataclass(frozen=True, slots=True)
class Fact:
    """The base of every fact."""


@dataclass(frozen=True, slots=True)
class RoundOpened(Fact):
    seats: tuple[str, ...]  # counter-clockwise: each seat's next sits at its right
    banker: BankerChoice  # who holds the bank, and why (the lot, when drawn)
    bank: int  # what the banker put up
    mano: str  # the first to the banker's right


@dataclass(frozen=True, slots=True)
class StakeCarried(Fact):
    """A stake of a void game stays for this one."""

    player: str
    amount: int


@dataclass(frozen=True, slots=True)
class CarriedStakeReturned(Fact):
    player: str
    amount: int
    reason: ReturnReason


@dataclass(frozen=True, slots=True)
class StakePlaced(Fact):
    player: str
    amount: int
    held: int  # the stake and its cover


@dataclass(frozen=True, slots=True)
class StakeReturned(Fact):
    """The game was called off before the deal: the stake and its cover go back."""

    player: str
    amount: int


@dataclass(frozen=True, slots=True)
class RoundCancelled(Fact):
    """The game was called off before the deal; the banker keeps the bank."""

    next_banker: BankerChoice


@dataclass(frozen=True, slots=True)
class CardDealt(Fact):
    """A card dealt face down: by its position only."""

    player: str
    position: int


@dataclass(frozen=True, slots=True)
class TurnBegan(Fact):
    player: str


@dataclass(frozen=True, slots=True)
class CardDrawn(Fact):
    """'Carta': a card dealt face up."""

    player: str
    position: int
    card: Card


@dataclass(frozen=True, slots=True)
class Planted(Fact):
    """'Me planto', said by the player or, past the turn time, by the croupier for him."""

    player: str
    for_absent: bool = False


@dataclass(frozen=True, slots=True)
class HandBust(Fact):
    """A hand over 31 under bust = loses_at_once: shown at once, out of the game."""

    player: str
    cards: tuple[Card, ...]
    total: int


@dataclass(frozen=True, slots=True)
class ShowdownDue(Fact):
    """Every turn is over (the banker stood, or went over 31): the croupier settles."""


@dataclass(frozen=True, slots=True)
class HandShown(Fact):
    """At the showdown: the banker "descubre sus cartas y el resto de los jugadores las suyas"."""

    player: str
    cards: tuple[Card, ...]
    total: int
    real: bool
    bust: bool


@dataclass(frozen=True, slots=True)
class StakeSettled(Fact):
    """A punter's stake against the bank. ``paid``: what moved between the punter and the bank
    (to him if won, from him if lost, a bust's stake collected at once included); ``short``:
    what a bank that ran out (bank_cover = even_money) could not pay; ``commission``: the
    house's share of the winner's payout."""

    player: str
    outcome: Outcome
    amount: int
    multiple: int  # 1 even money, 2 a real; 0 void
    paid: int
    short: int = 0
    commission: int = 0


@dataclass(frozen=True, slots=True)
class RoundSettled(Fact):
    next_banker: BankerChoice
    carried: tuple[tuple[str, int], ...]  # (player, stake) staying for the next game
