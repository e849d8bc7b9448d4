"""The layout: the stakes on the table and the betting commands that change them.

Every function is pure: it takes the rules and the layout and returns a ``Step`` (the new layout,
the money movements it causes in order, and what happened to each stake), or raises a
``domain.errors.RuleViolation`` naming the field at fault. The phase of the coup (betting open or
closed) is checked by the caller; balances are checked by the caller.

API CONTRACT (implementation owned by the domain helper; keep these names and signatures).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from domain.chances import Chance
from domain.rules import HouseRules


class StakeStatus(StrEnum):
    FREE = "free"
    PRISON = "prison"  # first prison
    SECOND_PRISON = "second_prison"


class Refait31Choice(StrEnum):
    PARTAGE = "partage"
    PRISON = "prison"


@dataclass(frozen=True, slots=True)
class Stake:
    stake_id: str
    player: str
    chance: Chance
    amount: int  # minor units, > 0
    status: StakeStatus = StakeStatus.FREE
    insured: bool = False  # insured for the current coup only
    choice: Refait31Choice | None = None  # under player_choice; None means prison
    awaiting_choice: bool = False  # imprisoned by a 31 refait, partage may still be chosen


@dataclass(frozen=True, slots=True)
class Layout:
    stakes: tuple[Stake, ...] = ()

    def get(self, stake_id: str) -> Stake:
        """The stake, or NotFound naming ``stake_id``."""
        raise NotImplementedError

    def of_player(self, player: str) -> tuple[Stake, ...]:
        raise NotImplementedError


class Role(StrEnum):
    """The accounts a movement names; the ledger maps them to the table's concrete accounts."""

    PLAYER = "player"  # the stake's player
    LAYOUT = "layout"  # stakes held on the table's layout
    BANK = "bank"  # the table's bank
    HOUSE_INSURANCE = "house_insurance"
    HOUSE_PARTAGE = "house_partage"
    HOUSE_PRISON = "house_prison"


class MovementKind(StrEnum):
    STAKE = "stake"  # player -> layout: placing, raising
    WITHDRAWAL = "withdrawal"  # layout -> player: withdrawing a free stake, or half of a prisoner
    PREMIUM = "premium"  # player -> house_insurance
    COLLECTION = "collection"  # layout -> bank: a losing stake
    RETURN = "return"  # layout -> player: a winner's own stake, a release, a returned stake
    PAYMENT = "payment"  # bank -> player: winnings at even money
    PARTAGE = "partage"  # layout -> house_partage: the house's half (refait 31, half withdrawal, move)
    PRISON_LOSS = "prison_loss"  # layout -> house_prison: an imprisoned stake lost


@dataclass(frozen=True, slots=True)
class Movement:
    kind: MovementKind
    stake_id: str
    player: str
    chance: Chance
    amount: int  # > 0
    source: Role
    destination: Role


class Fate(StrEnum):
    PLACED = "placed"
    RAISED = "raised"
    WITHDRAWN = "withdrawn"
    INSURED = "insured"
    CHOSEN = "chosen"  # partage or prison chosen
    WON = "won"
    LOST = "lost"
    VOID = "void"  # stays on the layout as it was (refait 32..40, void coup, insured on a 31)
    PARTAGE = "partage"  # half taken, half stays free on the layout
    IMPRISONED = "imprisoned"
    SECOND_PRISON = "second_prison"
    RELEASED = "released"  # out of prison, returned to the player without winnings
    BACK_TO_PRISON = "back_to_prison"  # second prison won once: back to first prison
    PRISON_LOST = "prison_lost"
    RETURNED = "returned"  # returned to the player (C/I on a 31 under `returned`, shoe end)
    HALF_WITHDRAWN = "half_withdrawn"
    MOVED = "moved"


@dataclass(frozen=True, slots=True)
class StakeFate:
    stake_id: str
    player: str
    chance: Chance  # after the step (a moved stake: its new chance)
    fate: Fate
    amount_before: int
    amount_after: int  # 0 when the stake left the layout
    status_after: StakeStatus | None  # None when the stake left the layout


@dataclass(frozen=True, slots=True)
class Step:
    layout: Layout
    movements: tuple[Movement, ...] = ()
    fates: tuple[StakeFate, ...] = ()


def place_stake(
    rules: HouseRules,
    layout: Layout,
    stake_id: str,
    player: str,
    chance: Chance,
    amount: int,
    choice: Refait31Choice | None = None,
) -> Step:
    """A new free stake. Checks: id unused (ALREADY_EXISTS is the caller's; here FailedPrecondition
    field stake_id), chance offered (rules.chances), amount within [min_stake, max_stake],
    opposed stakes (all of the player's stakes on the layout) unless allowed, choice only under
    player_choice."""
    raise NotImplementedError


def raise_stake(rules: HouseRules, layout: Layout, stake_id: str, amount: int) -> Step:
    """Add ``amount`` to a free stake; the new total stays within max_stake."""
    raise NotImplementedError


def withdraw_stake(rules: HouseRules, layout: Layout, stake_id: str) -> Step:
    """Take a free stake off the layout, whole."""
    raise NotImplementedError


def insure(rules: HouseRules, layout: Layout, stake_id: str) -> Step:
    """Buy insurance for the coup: premium ceil(amount * rate), at least 1 minor unit."""
    raise NotImplementedError


def choose_refait31(
    rules: HouseRules, layout: Layout, stake_id: str, choice: Refait31Choice
) -> Step:
    """Under player_choice: on a free stake, record the choice in advance; on a stake awaiting
    its choice after a 31, partage applies at once (half to the house, half free) and prison
    confirms the prison."""
    raise NotImplementedError


def half_withdraw(rules: HouseRules, layout: Layout, stake_id: str) -> Step:
    """Option half_withdrawal: an imprisoned stake; the house takes amount // 2, the player gets
    the rest back."""
    raise NotImplementedError


def move_imprisoned(rules: HouseRules, layout: Layout, stake_id: str, chance: Chance) -> Step:
    """Option move_imprisoned: the house takes amount // 2; the rest stays in the same prison,
    on ``chance``."""
    raise NotImplementedError


def close_betting(rules: HouseRules, layout: Layout) -> Step:
    """Stakes still awaiting a choice go to prison for good."""
    raise NotImplementedError


def end_of_shoe(layout: Layout) -> Step:
    """The shoe closes: free stakes go back to their players; imprisoned stakes stay."""
    raise NotImplementedError
