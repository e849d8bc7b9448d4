"""Settlement of a coup: what each stake becomes and the ordered money movements.

Order (RULES.md, seed 000): what the house takes (collections, partage, prison losses) before
what it gives (returns, payments); within each, Couleur/Inverse before Rouge/Noir; then layout
order. The movements of a coup sum to zero between players and the house.

API CONTRACT (implementation owned by the domain helper; keep these names and signatures).
"""

from __future__ import annotations

from dataclasses import replace

from domain.chances import COLOUR_CHANCES, Chance
from domain.layout import (
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
    fate_of,
    movement,
    new_movement,
    new_stake,
    new_stake_fate,
)
from domain.money import house_half
from domain.outcome import Outcome
from domain.rules import (
    ColourChancesOnRefait31,
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


def fate_on_refait31(rules: HouseRules, stake: Stake) -> Fate:
    """What a refait at 31 does to one stake under the table's rules."""
    if stake.insured:
        return Fate.VOID  # insurance: for this stake the coup is void
    if stake.status is not FREE:
        return IMPRISONED_ON_REFAIT31[stake.status, rules.prison_refait31]
    if (
        stake.chance in COLOUR_CHANCES
        and rules.couleur_inverse_on_refait31 is ColourChancesOnRefait31.RETURNED
    ):
        return Fate.RETURNED
    return FREE_ON_REFAIT31[rules.refait31, stake.choice]


def _stays(stake: Stake, fate: Fate, awaiting: bool, takes: list[Movement]) -> Stake:
    """The stake as it stays on the layout after ``fate``; a partage's movement goes to
    ``takes`` (what the house takes, the stake's half of the queue)."""
    if fate is Fate.VOID:
        if stake.insured or stake.awaiting_choice:
            return replace(stake, insured=False, awaiting_choice=False)
        return stake
    sid, player, chance, amount, choice = (
        stake.stake_id,
        stake.player,
        stake.chance,
        stake.amount,
        stake.choice,
    )
    if fate is Fate.PARTAGE:
        taken = house_half(amount)
        if taken:
            takes.append(movement(MovementKind.PARTAGE, stake, taken))
        return new_stake(sid, player, chance, amount - taken, FREE, False, choice, False)
    wait = fate is Fate.IMPRISONED and awaiting and choice is None
    return new_stake(sid, player, chance, amount, STAYS_AS[fate], False, choice, wait)


def settle(rules: HouseRules, layout: Layout, outcome: Outcome) -> Step:
    """Settle every stake on the layout against the outcome; insurance ends with the coup."""
    decided: Verdicts | None = None
    if outcome.decided:
        winners = outcome.winning_chances
        decided = _DECIDED_FOR.get(winners) or _decided_for(winners)
    refait31 = outcome.is_refait31
    awaiting = rules.refait31 is Refait31Rule.PLAYER_CHOICE
    queues: tuple[list[Movement], ...] = ([], [], [], [])
    to_queue = tuple(q.append for q in queues)  # bound once: many appends per coup
    kept: list[Stake] = []
    fates: list[StakeFate] = []
    fated = fates.append
    plan: Plan | None
    for stake in layout.stakes:
        chance = stake.chance
        if decided is not None:
            fate, plan = decided[stake.status][chance]
        else:
            fate = fate_on_refait31(rules, stake) if refait31 else Fate.VOID
            plan = _LEAVING_PLAN.get((fate, chance))
        if plan is None:  # the stake stays on the layout
            after = _stays(stake, fate, awaiting, queues[chance not in COLOUR_CHANCES])
            kept.append(after)
            fated(fate_of(stake, fate, after))
            continue
        sid, player, amount = stake.stake_id, stake.player, stake.amount
        for kind, source, destination, queue in plan:
            to_queue[queue](new_movement(kind, sid, player, chance, amount, source, destination))
        fated(new_stake_fate(sid, player, chance, fate, amount, 0, None))
    takes_ci, takes_nr, gives_ci, gives_nr = queues
    return Step(Layout(tuple(kept)), (*takes_ci, *takes_nr, *gives_ci, *gives_nr), tuple(fates))
