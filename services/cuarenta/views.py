"""What Cuarenta's commands and queries answer: plain frozen dataclasses (``services.ledger.views``
stores and reloads them with the request id).

Every answer a command gives is stored in the log with its request, so it is PUBLIC: it holds
no card in a hand (only how many each seat holds). A seat's own cards are answered by the query
``Cuarenta.hand`` to its holder only, and stored nowhere.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True, slots=True)
class MoveView:
    """One thing that happened in a match, as anyone may see it (history move by move).

    ``kind``: ``opened``, ``hand_begun``, ``dealt`` (the seat and how many cards, not which),
    ``ronda``, ``four_of_a_kind``, ``played``, ``captured``, ``hand_scored``, ``forfeited``,
    ``won``, ``money``."""

    kind: str
    hand: int = 0
    deal: int = 0
    turn: int = 0
    seat: int | None = None
    side: int | None = None
    card: str | None = None  # the card played (``played``, ``captured``)
    position: int | None = None  # its shoe position (``played``)
    taken: tuple[str, ...] = ()  # the table cards taken (``captured``), left (``hand_scored``)
    capture_kind: str | None = None  # capture | caida | limpia | caida_limpia
    points: int = 0
    withheld: int = 0
    total: int | None = None  # the side's points after
    totals: tuple[int, ...] = ()  # both sides' (``hand_scored``, ``won``); cards won, cartón…
    cards: tuple[int, ...] = ()  # ``hand_scored``: cards each side won; ``dealt``: (5,)
    carton: tuple[int, ...] = ()  # ``hand_scored``: each side's cartón
    reason: str | None = None  # ``forfeited``, ``won``
    amount: int = 0  # ``money``
    debit_account: str | None = None
    credit_account: str | None = None
    shoe_id: str | None = None  # ``hand_begun``
    commitment: str | None = None  # ``hand_begun``
    time: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class MatchView:
    """A match as a watcher sees it: everything face up, and of the hands only their sizes."""

    match_id: str
    table_id: str
    seats: tuple[str, ...]  # the players' accounts by seat (seat s plays for side s % 2)
    preset: str
    options: dict[str, str]
    currency: str
    stake: int  # each side's
    phase: str  # awaiting_deal | playing | over
    hand: int
    deal: int
    turn: int
    dealer: int
    to_act: int | None
    points: tuple[int, ...]  # side 0, side 1
    table: tuple[str, ...]  # face up, in the order they came
    last_played: str | None  # the card a capture by rank would take as a caída
    last_played_seat: int | None
    held: tuple[int, ...]  # how many cards each seat holds
    won: tuple[int, ...]  # how many cards each side has won this hand
    stock: int  # cards of the hand's pack not dealt yet
    winner: int | None
    end: str | None  # points | four_of_a_kind | forfeit
    shoe_id: str | None  # the hand's committed shoe
    hands: int  # hands begun
    stakes_account: str
    commission_account: str


@dataclasses.dataclass(frozen=True, slots=True)
class MatchStep:
    """A command's answer: the match after it and what it recorded, in order."""

    match: MatchView
    moves: tuple[MoveView, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class HeldCard:
    position: int  # in the hand's shoe
    card: str


@dataclasses.dataclass(frozen=True, slots=True)
class LegalPlay:
    card: str
    capture: tuple[str, ...]  # the table cards it takes (() : it stays on the table)
    kind: str | None  # capture | caida | limpia | caida_limpia (None: stays)
    points: int


@dataclasses.dataclass(frozen=True, slots=True)
class HandView:
    """A seat's own cards, for its holder only (never stored, streamed or logged)."""

    match_id: str
    seat: int
    hand: int
    cards: tuple[HeldCard, ...]
    to_act: bool
    legal: tuple[LegalPlay, ...]  # when it is the seat's turn
