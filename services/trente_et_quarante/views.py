"""What Trente et Quarante's commands and queries answer (plain frozen dataclasses, as
``services.ledger.views``: stored with the request, read back for a retry, written by the
ledger socket by field). A stake on the layout (``StakeView``) and a movement
(``MovementView``) stay in the core's views: a table's and a shoe's answers hold them."""

from __future__ import annotations

import dataclasses
from typing import Any

from services.ledger.views import MovementView, StakeView, StepView

__all__ = ["CardView", "CoupSteps", "CoupView", "FateView", "StakeResult"]


@dataclasses.dataclass(frozen=True, slots=True)
class CardView:
    row: str  # noir | rouge
    code: str  # AS, TD, ...
    position: int  # sabot position
    running_total: int


@dataclasses.dataclass(frozen=True, slots=True)
class FateView:
    stake_id: str
    account_id: str
    chance: str
    fate: str  # domain.trente_et_quarante.layout.Fate value
    amount_before: int
    amount_after: int
    status_after: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class CoupView:
    coup_id: str
    table_id: str
    shoe_id: str
    number: int  # 1-based at the table
    number_in_shoe: int  # 1-based in the shoe
    phase: str  # betting | closed | dealt | settled
    start_position: int
    cards: tuple[CardView, ...]
    noir_total: int | None
    rouge_total: int | None
    result: str | None  # noir | rouge | refait | void (None until dealt)
    refait_total: int | None
    couleur: bool | None
    winning_chances: tuple[str, ...]
    announcement: str | None
    cut_card_reached: bool
    layout: tuple[StakeView, ...]  # the layout now (after settlement: what stays for next coup)
    movements: tuple[MovementView, ...]  # settlement movements, in RULES.md order
    fates: tuple[FateView, ...]  # settlement fates
    create_time: str | None = None  # opened for betting
    betting_close_time: str | None = None
    deal_time: str | None = None
    settle_time: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class CoupSteps:
    coup: CoupView
    steps: tuple[StepView, ...]
    dealt_by: dict[str, Any] | None = None  # the actor of the deal (None: not dealt yet)


@dataclasses.dataclass(frozen=True, slots=True)
class StakeResult:
    """The answer to a betting command."""

    coup_id: str
    stake: StakeView | None  # the stake after the command (None when it left the layout)
    movements: tuple[MovementView, ...]  # money moved by the command
    balance: int  # the player's balance after the command
