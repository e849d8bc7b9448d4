"""What the Treinta y Una ledger answers: plain frozen dataclasses (``services.ledger.views``'s
``to_dict``/``from_dict`` store and reload them with the request id).

Every answer of a command is stored with its request and read back by anyone who may read the
log: it carries face-down cards by position only (``SlotView.code`` is None until shown). The
holder's own view of his hand (``HandView`` from ``my_hand``, a query) is never stored.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True, slots=True)
class SlotView:
    """One card of a hand: its shoe position; a face-down card's face is None until shown."""

    position: int
    face_down: bool
    code: str | None
    commitment: str  # SABOT-HIDDEN-1, face-down cards only ("" for a face-up one)


@dataclasses.dataclass(frozen=True, slots=True)
class HandView:
    player: str
    slots: tuple[SlotView, ...]
    stood: bool
    out: bool  # over 31, lost at once
    total: int | None  # once shown (or for the holder himself)
    real: bool | None
    bust: bool | None


@dataclasses.dataclass(frozen=True, slots=True)
class RoundStakeView:
    player: str
    amount: int  # the stake
    held: int  # what the table holds of the player's for it (stake and cover)
    carried: bool  # a void game's stake, staying for this one


@dataclasses.dataclass(frozen=True, slots=True)
class ResultView:
    """A stake against the bank (``StakeSettled``)."""

    player: str
    outcome: str  # won | lost | void
    amount: int
    multiple: int
    paid: int
    short: int
    commission: int


@dataclasses.dataclass(frozen=True, slots=True)
class RoundMovementView:
    seq: int
    kind: str
    player: str
    amount: int
    debit_account: str
    credit_account: str


@dataclasses.dataclass(frozen=True, slots=True)
class RoundView:
    round_id: str
    table_id: str
    number: int
    shoe_id: str
    commitment: str
    phase: str  # betting | playing | showdown | settled
    seats: tuple[str, ...]
    banker: str
    banker_reason: str  # lot | kept_31 | passed_31 | kept | passed_to_mano
    lot_index: int | None  # the lot's draw (index in ``seats``), for the first game
    bank: int  # what the bank holds now
    mano: str
    whose_turn: str | None
    turn_since: str | None
    stakes: tuple[RoundStakeView, ...]
    hands: tuple[HandView, ...]  # in turn order, the banker's last
    results: tuple[ResultView, ...]
    moved: tuple[RoundMovementView, ...]  # the money this answer's command moved
    next_banker: str | None
    next_banker_reason: str | None
    carried: tuple[RoundStakeView, ...]
    currency: str = "EUR"
    preset: str = ""
    options: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, slots=True)
class RoundStep:
    """One recorded step of a round (recall): its version, topic's short name, time, data."""

    version: int
    event: str
    timestamp: str
    data: dict[str, object]


@dataclasses.dataclass(frozen=True, slots=True)
class RoundRecall:
    round: RoundView
    steps: tuple[RoundStep, ...]
