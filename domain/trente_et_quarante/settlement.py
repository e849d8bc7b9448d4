"""Settlement of a coup: what each stake becomes and the ordered money movements.

Order (RULES.md, seed 000): what the house takes (collections, partage, prison losses) before
what it gives (returns, payments); within each, Couleur/Inverse before Rouge/Noir; then layout
order. The movements of a coup sum to zero between players and the house.

API CONTRACT (implementation owned by the domain helper; keep these names and signatures).
"""

from __future__ import annotations

from typing import Any

from domain.trente_et_quarante.chances import COLOUR_CHANCES, Chance
from domain.trente_et_quarante.layout import (
    HOUSE_GIVES,
    MOVEMENT_ROLES,
    Fate,
    Layout,
    Movement,
    MovementKind,
    Refait31Choice,
    Role,
    Stake,
    StakeFate,
    StakeStatus,
    Step,
    new_movement,
    new_stake,
    new_stake_fate,
    returned_on_refait31,
)
from domain.trente_et_quarante.money import house_half
from domain.trente_et_quarante.outcome import Outcome
from domain.trente_et_quarante.rules import (
    HouseRules,
    PrisonRefait31Rule,
    Refait31Rule,
)

FREE, PRISON, SECOND = StakeStatus.FREE, StakeStatus.PRISON, StakeStatus.SECOND_PRISON

# A decided coup (a row won): (status, the stake's chance won) -> fate.
DECIDED: dict[tuple[StakeStatus, bool], Fate] = {
    (FREE, True): Fate.WON,
    (FREE, False): Fate.LOST,
    (PRISON, True): Fate.RELEASED,
    (PRISON, False): Fate.PRISON_LOST,
    (SECOND, True): Fate.BACK_TO_PRISON,
    (SECOND, False): Fate.PRISON_LOST,
}

# A refait at 31, a free uninsured stake: (rule refait31, the stake's choice) -> fate.
FREE_ON_REFAIT31: dict[tuple[Refait31Rule, Refait31Choice | None], Fate] = {
    **{(Refait31Rule.PARTAGE, c): Fate.PARTAGE for c in (None, *Refait31Choice)},
    **{(Refait31Rule.PRISON, c): Fate.IMPRISONED for c in (None, *Refait31Choice)},
    (Refait31Rule.PLAYER_CHOICE, Refait31Choice.PARTAGE): Fate.PARTAGE,
    (Refait31Rule.PLAYER_CHOICE, Refait31Choice.PRISON): Fate.IMPRISONED,
    (Refait31Rule.PLAYER_CHOICE, None): Fate.IMPRISONED,  # awaiting the player's choice
}

# A refait at 31, an imprisoned uninsured stake: (status, rule prison_refait31) -> fate.
IMPRISONED_ON_REFAIT31: dict[tuple[StakeStatus, PrisonRefait31Rule], Fate] = {
    (PRISON, PrisonRefait31Rule.LOST): Fate.PRISON_LOST,
    (PRISON, PrisonRefait31Rule.SECOND_PRISON): Fate.SECOND_PRISON,
    (SECOND, PrisonRefait31Rule.LOST): Fate.PRISON_LOST,
    (SECOND, PrisonRefait31Rule.SECOND_PRISON): Fate.PRISON_LOST,
}

# A fate that takes the whole stake off the layout: its movements, in order, each of the whole
# amount.
LEAVES: dict[Fate, tuple[MovementKind, ...]] = {
    Fate.WON: (MovementKind.RETURN, MovementKind.PAYMENT),
    Fate.LOST: (MovementKind.COLLECTION,),
    Fate.RELEASED: (MovementKind.RETURN,),
    Fate.PRISON_LOST: (MovementKind.PRISON_LOSS,),
    Fate.RETURNED: (MovementKind.RETURN,),
}

# The status a fate leaves a stake in when it stays on the layout.
STAYS_AS: dict[Fate, StakeStatus] = {
    Fate.IMPRISONED: PRISON,
    Fate.SECOND_PRISON: SECOND,
    Fate.BACK_TO_PRISON: PRISON,
    Fate.PARTAGE: FREE,
}


# LEAVES with the roles of each movement and its queue: 0 takes C/I, 1 takes N/R, 2 gives C/I,
# 3 gives N/R (the seed-000 order, by appending, without sorting); per (fate, chance).
Plan = tuple[tuple[MovementKind, Role, Role, int], ...]
Verdicts = dict[StakeStatus, dict[Chance, tuple[Fate, Plan | None]]]
_LEAVING_PLAN: dict[tuple[Fate, Chance], Plan] = {
    (fate, chance): tuple(
        (
            kind,
            *MOVEMENT_ROLES[kind],
            (2 if kind in HOUSE_GIVES else 0) + (chance not in COLOUR_CHANCES),
        )
        for kind in kinds
    )
    for fate, kinds in LEAVES.items()
    for chance in Chance
}


def _verdicts(fate_of_stake: dict[tuple[StakeStatus, Chance], Fate]) -> Verdicts:
    """status -> chance -> (fate, its leaving plan or None when the stake stays)."""
    return {
        status: {
            chance: (
                fate_of_stake[status, chance],
                _LEAVING_PLAN.get((fate_of_stake[status, chance], chance)),
            )
            for chance in Chance
        }
        for status in StakeStatus
    }


def _decided_for(winners: frozenset[Chance]) -> Verdicts:
    """DECIDED spelt out for one set of winning chances."""
    return _verdicts(
        {
            (status, chance): DECIDED[status, chance in winners]
            for status in StakeStatus
            for chance in Chance
        }
    )


# The four possible sets of winners, prepared once (the hot path).
_DECIDED_FOR = {
    winners: _decided_for(winners)
    for row in (Chance.NOIR, Chance.ROUGE)
    for colour in (Chance.COULEUR, Chance.INVERSE)
    for winners in (frozenset({row, colour}),)
}


# Refait 32..40 and void coups: every stake stays, its coup-only flags cleared (see ``_stays``).
_VOID_VERDICTS: Verdicts = _verdicts(
    {(status, chance): Fate.VOID for status in StakeStatus for chance in Chance}
)

_PARTAGE_ROLES = MOVEMENT_ROLES[MovementKind.PARTAGE]


def fate_on_refait31(rules: HouseRules, stake: Stake) -> Fate:
    """What a refait at 31 does to one stake under the table's rules. A stake in prison follows
    ``prison_refait31`` whatever chance it lies on (moved onto Couleur/Inverse too); the
    Couleur/Inverse option is for free stakes (RULES.md §1)."""
    if stake.insured:
        return Fate.VOID  # insurance: for this stake the coup is void
    if stake.status is not FREE:
        return IMPRISONED_ON_REFAIT31[stake.status, rules.prison_refait31]
    if returned_on_refait31(rules, stake):
        return Fate.RETURNED
    return FREE_ON_REFAIT31[rules.refait31, stake.choice]


def _stays(stake: Stake, fate: Fate, awaiting: bool, takes: list[Movement]) -> Stake:
    """The stake as it stays on the layout after ``fate``; a partage's movement goes to
    ``takes`` (what the house takes, the stake's half of the queue)."""
    sid, player, chance, amount, choice = (
        stake.stake_id,
        stake.player,
        stake.chance,
        stake.amount,
        stake.choice,
    )
    if fate is Fate.VOID:
        if stake.insured or stake.awaiting_choice:  # both flags last one coup only
            return new_stake(sid, player, chance, amount, stake.status, False, choice, False)
        return stake
    if fate is Fate.PARTAGE:
        taken = house_half(amount)
        if taken:
            takes.append(
                new_movement(MovementKind.PARTAGE, sid, player, chance, taken, *_PARTAGE_ROLES)
            )
        return new_stake(sid, player, chance, amount - taken, FREE, False, choice, False)
    wait = fate is Fate.IMPRISONED and awaiting and choice is None
    return new_stake(sid, player, chance, amount, STAYS_AS[fate], False, choice, wait)


# --- the hot path -----------------------------------------------------------------------------
# A coup of 8 players x 4 chances makes some 80 objects (a movement or two and a fate for each
# stake leaving the layout). Even layout's fast constructors (``new_movement``...) cost a call of
# a Python ``__init__``; ``settle`` builds the leaving stakes' objects inline instead: an empty
# instance of a plain class (no ``__init__``) with exactly the frozen class's slots, every field
# set by ordinary assignment, then its class switched to the frozen class (layout's fillers' own
# technique, without the call; CPython refuses the switch unless the slot layouts are identical).
# The result is an ordinary ``Movement``/``StakeFate``/``Step``, equal to and hashing like the one
# its own constructor makes; tests/domain/test_settlement_fast.py checks ``settle`` against the
# plain rule-by-rule reference.


class _BlankMovement:
    __slots__ = Movement.__slots__
    kind: MovementKind
    stake_id: str
    player: str
    chance: Chance
    amount: int
    source: Role
    destination: Role


class _BlankStakeFate:
    __slots__ = StakeFate.__slots__
    stake_id: str
    player: str
    chance: Chance
    fate: Fate
    amount_before: int
    amount_after: int
    status_after: StakeStatus | None


class _BlankStep:
    __slots__ = Step.__slots__
    layout: Layout
    movements: tuple[Movement, ...]
    fates: tuple[StakeFate, ...]


def settle(rules: HouseRules, layout: Layout, outcome: Outcome) -> Step:
    """Settle every stake on the layout against the outcome; insurance ends with the coup."""
    verdicts: Verdicts | None  # None: a refait at 31, decided stake by stake
    if outcome.decided:
        winners = outcome.winning_chances
        verdicts = _DECIDED_FOR.get(winners) or _decided_for(winners)
    elif outcome.is_refait31:
        verdicts = None
    else:
        verdicts = _VOID_VERDICTS
    awaiting = rules.refait31 is Refait31Rule.PLAYER_CHOICE
    queues: tuple[list[Any], ...] = ([], [], [], [])  # of Movement (Any: the blanks go in)
    to_queue = tuple(q.append for q in queues)  # bound once: many appends per coup
    kept: list[Stake] = []
    fates: list[Any] = []  # of StakeFate
    fated = fates.append
    plan: Plan | None
    for stake in layout.stakes:
        chance = stake.chance
        if verdicts is not None:
            fate, plan = verdicts[stake.status][chance]
        else:
            fate = fate_on_refait31(rules, stake)
            plan = _LEAVING_PLAN.get((fate, chance))
        if plan is None:  # the stake stays on the layout
            after = _stays(stake, fate, awaiting, queues[chance not in COLOUR_CHANCES])
            kept.append(after)
            fated(
                new_stake_fate(
                    after.stake_id,
                    after.player,
                    after.chance,
                    fate,
                    stake.amount,
                    after.amount,
                    after.status,
                )
            )
            continue
        sid, player, amount = stake.stake_id, stake.player, stake.amount
        for kind, source, destination, queue in plan:
            # Movement(kind, sid, player, chance, amount, source, destination), inline
            m = _BlankMovement()
            m.kind = kind
            m.stake_id = sid
            m.player = player
            m.chance = chance
            m.amount = amount
            m.source = source
            m.destination = destination
            m.__class__ = Movement  # type: ignore[assignment]
            to_queue[queue](m)
        # StakeFate(sid, player, chance, fate, amount, 0, None), inline
        f = _BlankStakeFate()
        f.stake_id = sid
        f.player = player
        f.chance = chance
        f.fate = fate
        f.amount_before = amount
        f.amount_after = 0
        f.status_after = None
        f.__class__ = StakeFate  # type: ignore[assignment]
        fated(f)
    takes_ci, takes_nr, gives_ci, gives_nr = queues
    # Step(Layout(tuple(kept)), (*takes_ci, *takes_nr, *gives_ci, *gives_nr), tuple(fates)), inline
    step = _BlankStep()
    step.layout = Layout(tuple(kept))
    step.movements = (*takes_ci, *takes_nr, *gives_ci, *gives_nr)
    step.fates = tuple(fates)
    step.__class__ = Step  # type: ignore[assignment]
    return step  # type: ignore[return-value]
