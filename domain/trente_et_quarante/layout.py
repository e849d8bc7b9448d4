"""The layout: the stakes on the table and the betting commands that change them.

Every function is pure: it takes the rules and the layout and returns a ``Step`` (the new layout,
the money movements it causes in order, and what happened to each stake), or raises a
``domain.errors.RuleViolation`` naming the field at fault. The phase of the coup (betting open or
closed) is checked by the caller; balances are checked by the caller.

API CONTRACT (implementation owned by the domain helper; keep these names and signatures).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import NoReturn, Protocol, cast

from immutables import Map

from domain.errors import FailedPrecondition, InvalidArgument, NotFound
from domain.trente_et_quarante.chances import COLOUR_CHANCES, OPPOSITE, ROW_CHANCES, Chance
from domain.trente_et_quarante.money import house_half, premium
from domain.trente_et_quarante.rules import (
    ChanceSet,
    ColourChancesOnRefait31,
    HouseRules,
    PrisonersAtClose,
    Refait31Rule,
)


class StakeStatus(StrEnum):
    FREE = "free"
    PRISON = "prison"  # first prison
    SECOND_PRISON = "second_prison"


IMPRISONED = frozenset({StakeStatus.PRISON, StakeStatus.SECOND_PRISON})


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


_Pair = tuple[str, Chance]
_Held = tuple[int, int]  # how many stakes, what they add up to
_NOTHING: _Held = (0, 0)


class Layout:
    """The stakes on the table, in the order they came (``stakes``), and an index of them.

    Persistent: a step never changes a layout, it makes a new one (``put``) that shares the
    index of the old in O(log32 n) (``immutables.Map``, a hash array mapped trie): stake id ->
    slot, slot -> stake (slots in the order the stakes came), and for each (player, chance)
    how many stakes there are and what they add up to (what the table maximum bounds). So a
    decision on one stake costs the same whatever the coup already holds. ``stakes`` is made
    from the slots when first asked for and kept. A layout made from a tuple (``Layout(stakes)``)
    builds its index on first use; a tuple that holds an id twice gets none, and its steps work
    on the tuple (the first of the two is the one found and changed), as before the index.
    Equal (and hashing alike) when the stakes are; pickled as its stakes."""

    __slots__ = ("_end", "_ids", "_last", "_pairs", "_plain", "_slots", "_stakes")

    _stakes: tuple[Stake, ...] | None  # None: not made from the slots yet
    _ids: Map[str, int] | None  # None: no index (not built yet, or an id held twice)
    _slots: Map[int, Stake]
    _pairs: Map[_Pair, _Held]
    _end: int  # the next slot
    _plain: bool  # the stakes hold an id twice: no index
    _last: tuple[str, Stake | None, Layout] | None  # the last ``put`` and the layout it made

    def __init__(self, stakes: tuple[Stake, ...] = ()) -> None:
        self._stakes = stakes
        self._ids = None
        self._plain = False
        self._last = None

    @property
    def stakes(self) -> tuple[Stake, ...]:
        stakes = self._stakes
        if stakes is None:
            slots = self._slots
            stakes = self._stakes = tuple(slots[k] for k in sorted(slots))
        return stakes

    def _indexed(self) -> Map[str, int] | None:
        """The index of stake ids (built now if it has none); None when an id is held twice."""
        ids = self._ids
        if ids is not None or self._plain:
            return ids
        stakes = self.stakes
        found: dict[str, int] = {}
        pairs: dict[_Pair, _Held] = {}
        for i, s in enumerate(stakes):
            if s.stake_id in found:
                self._plain = True
                return None
            found[s.stake_id] = i
            key = (s.player, s.chance)
            n, total = pairs.get(key, _NOTHING)
            pairs[key] = (n + 1, total + s.amount)
        self._slots = Map(enumerate(stakes))
        self._pairs = Map(pairs)
        self._end = len(stakes)
        self._ids = ids = Map(found)
        return ids

    def held(self, player: str, chance: Chance) -> tuple[int, int]:
        """How many stakes ``player`` has on ``chance``, and what they add up to."""
        if self._indexed() is not None:
            return self._pairs.get((player, chance), _NOTHING)
        n = total = 0
        for s in self.stakes:
            if s.player == player and s.chance is chance:
                n += 1
                total += s.amount
        return n, total

    def total_on(self, player: str, chance: Chance) -> int:
        """What ``player`` has on ``chance`` in all, whatever the stakes' states (free, in
        prison, carried over): the amount the table maximum bounds."""
        return self.held(player, chance)[1]

    def get(self, stake_id: str) -> Stake:
        """The stake, or NotFound naming ``stake_id``."""
        stake = self.find(stake_id)
        if stake is None:
            raise NotFound("stake_id", "UNKNOWN_STAKE", f"no stake {stake_id!r} on the layout")
        return stake

    def find(self, stake_id: str) -> Stake | None:
        """The stake, or None."""
        ids = self._indexed()
        if ids is not None:
            slot = ids.get(stake_id)
            return None if slot is None else self._slots[slot]
        for s in self.stakes:
            if s.stake_id == stake_id:
                return s
        return None

    def position(self, stake_id: str) -> int | None:
        """Where the stake is in ``stakes`` (None: not on the layout). O(stakes)."""
        for i, s in enumerate(self.stakes):
            if s.stake_id == stake_id:
                return i
        return None

    def of_player(self, player: str) -> tuple[Stake, ...]:
        """The player's stakes, in layout order."""
        return tuple(s for s in self.stakes if s.player == player)

    def has(self, stake_id: str) -> bool:
        return self.find(stake_id) is not None

    @property
    def total(self) -> int:
        """Every stake's amount added up: what the layout account holds."""
        return sum(s.amount for s in self.stakes)

    def put(self, stake_id: str, stake: Stake | None) -> Layout:
        """The layout with the stake ``stake_id`` replaced by ``stake`` in its place, or taken
        off (``stake`` None), or, not there, ``stake`` added at the end. The same call again
        (the same id and the same ``Stake`` object) gives the same layout object: the coup
        that applies a step's events lands on the step's own layout."""
        last = self._last
        if last is not None and last[1] is stake and last[0] == stake_id:
            return last[2]
        made = self._put(stake_id, stake)
        self._last = (stake_id, stake, made)
        return made

    def _put(self, stake_id: str, stake: Stake | None) -> Layout:
        ids = self._indexed()
        if ids is None or (stake is not None and stake.stake_id != stake_id):
            return self._put_in_tuple(stake_id, stake)
        slot = ids.get(stake_id)
        slots, pairs = self._slots, self._pairs
        if slot is None:
            if stake is None:
                return self
            slot = self._end
            return _layout(ids.set(stake_id, slot), slots.set(slot, stake),
                           _count(pairs, stake, 1), slot + 1)
        old = slots[slot]
        if stake is None:
            return _layout(ids.delete(stake_id), slots.delete(slot), _count(pairs, old, -1),
                           self._end)
        if stake.player != old.player or stake.chance is not old.chance or (
                stake.amount != old.amount):
            pairs = _count(_count(pairs, old, -1), stake, 1)
        return _layout(ids, slots.set(slot, stake), pairs, self._end)

    def _put_in_tuple(self, stake_id: str, stake: Stake | None) -> Layout:
        """``put`` on the tuple (an id held twice, or a stake put under another's id)."""
        stakes = self.stakes
        for i, s in enumerate(stakes):
            if s.stake_id == stake_id:
                if stake is None:
                    return Layout(stakes[:i] + stakes[i + 1 :])
                return Layout((*stakes[:i], stake, *stakes[i + 1 :]))
        return self if stake is None else Layout((*stakes, stake))

    def append(self, stake: Stake) -> Layout:
        """``stake`` added at the end, even where its id is on the layout already."""
        if self.has(stake.stake_id):
            return Layout((*self.stakes, stake))
        return self.put(stake.stake_id, stake)

    def _index(self) -> tuple[dict[str, int], dict[_Pair, int], dict[_Pair, int]]:
        """The index as plain dicts: each stake id's position in ``stakes`` (its first), how
        many stakes each (player, chance) has, and what they add up to. O(stakes): for tests."""
        ids = self._indexed()
        if ids is None:
            positions: dict[str, int] = {}
            counts: dict[_Pair, int] = {}
            totals: dict[_Pair, int] = {}
            for i, s in enumerate(self.stakes):
                positions.setdefault(s.stake_id, i)
                key = (s.player, s.chance)
                counts[key] = counts.get(key, 0) + 1
                totals[key] = totals.get(key, 0) + s.amount
            return positions, counts, totals
        rank = {slot: i for i, slot in enumerate(sorted(self._slots))}
        return ({sid: rank[slot] for sid, slot in ids.items()},
                {key: n for key, (n, _) in self._pairs.items()},
                {key: total for key, (_, total) in self._pairs.items()})

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Layout):
            return NotImplemented
        return self is other or self.stakes == other.stakes

    def __hash__(self) -> int:
        return hash((self.stakes,))

    def __repr__(self) -> str:
        return f"Layout(stakes={self.stakes!r})"

    def __reduce__(self) -> tuple[type[Layout], tuple[tuple[Stake, ...]]]:
        return Layout, (self.stakes,)


def _layout(ids: Map[str, int], slots: Map[int, Stake], pairs: Map[_Pair, _Held], end: int
            ) -> Layout:
    """A layout given its index (its stakes made from the slots when asked for)."""
    layout = Layout.__new__(Layout)
    layout._stakes = None
    layout._ids = ids
    layout._slots = slots
    layout._pairs = pairs
    layout._end = end
    layout._plain = False
    layout._last = None
    return layout


def _count(pairs: Map[_Pair, _Held], stake: Stake, sign: int) -> Map[_Pair, _Held]:
    """``pairs`` with ``stake`` counted in (sign 1) or out of (sign -1) its (player, chance)."""
    key = (stake.player, stake.chance)
    n, total = pairs.get(key, _NOTHING)
    n += sign
    if n:
        return pairs.set(key, (n, total + sign * stake.amount))
    return pairs.delete(key)


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
    PARTAGE = "partage"  # layout -> house_partage: the house's half (31, half withdrawal, move)
    PRISON_LOSS = "prison_loss"  # layout -> house_prison: an imprisoned stake lost


# Where each kind of movement takes money from, and where it puts it.
MOVEMENT_ROLES: dict[MovementKind, tuple[Role, Role]] = {
    MovementKind.STAKE: (Role.PLAYER, Role.LAYOUT),
    MovementKind.WITHDRAWAL: (Role.LAYOUT, Role.PLAYER),
    MovementKind.PREMIUM: (Role.PLAYER, Role.HOUSE_INSURANCE),
    MovementKind.COLLECTION: (Role.LAYOUT, Role.BANK),
    MovementKind.RETURN: (Role.LAYOUT, Role.PLAYER),
    MovementKind.PAYMENT: (Role.BANK, Role.PLAYER),
    MovementKind.PARTAGE: (Role.LAYOUT, Role.HOUSE_PARTAGE),
    MovementKind.PRISON_LOSS: (Role.LAYOUT, Role.HOUSE_PRISON),
}

_STAKE_ROLES = MOVEMENT_ROLES[MovementKind.STAKE]

# What the house takes (settled first) and what it gives (settled after), seed 000.
HOUSE_TAKES = frozenset({MovementKind.COLLECTION, MovementKind.PARTAGE, MovementKind.PRISON_LOSS})
HOUSE_GIVES = frozenset({MovementKind.RETURN, MovementKind.PAYMENT})


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
    RETURNED = "returned"  # returned to the player (C/I on a 31 under `returned`, shoe end,
    # table close)
    HALF_RETURNED = "half_returned"  # table close, prisoners_at_close half_returned: settled as
    # a partage (half to the house, the rest back to the player)
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


# --- building blocks --------------------------------------------------------------------------


def movement(kind: MovementKind, stake: Stake, amount: int) -> Movement:
    """A movement of ``amount`` for ``stake``, between the roles its kind names."""
    source, destination = MOVEMENT_ROLES[kind]
    return Movement(kind, stake.stake_id, stake.player, stake.chance, amount, source, destination)


def fate_of(before: Stake, fate: Fate, after: Stake | None) -> StakeFate:
    """What happened to ``before``; ``after`` None when it left the layout."""
    if after is None:
        b = before
        return StakeFate(b.stake_id, b.player, b.chance, fate, b.amount, 0, None)
    return StakeFate(
        after.stake_id, after.player, after.chance, fate, before.amount, after.amount, after.status
    )


def _one(layout: Layout, before: Stake, fate: Fate, after: Stake | None, *moves: Movement) -> Step:
    return Step(layout.put(before.stake_id, after), moves, (fate_of(before, fate, after),))


def _check_chance(rules: HouseRules, chance: str) -> Chance:
    try:
        value = chance if type(chance) is Chance else Chance(chance)
    except ValueError:
        raise InvalidArgument(
            "chance", "UNKNOWN_CHANCE", f"unknown chance {chance!r} (noir, rouge, couleur, inverse)"
        ) from None
    if rules.chances is ChanceSet.NOIR_ROUGE and value in COLOUR_CHANCES:
        raise InvalidArgument(
            "chance", "CHANCE_NOT_OFFERED", f"{value.value} is not offered at this table"
        )
    return value


def _check_amount(amount: object, low: int, high: int, what: str) -> int:
    if not isinstance(amount, int) or isinstance(amount, bool):
        raise InvalidArgument("amount", "NOT_AN_INTEGER", "must be an integer of minor units")
    if not low <= amount <= high:
        raise InvalidArgument(
            "amount", "OUT_OF_RANGE", f"{what} must be {low} to {high} minor units, got {amount}"
        )
    return amount


def _check_maximum(
    rules: HouseRules, layout: Layout, player: str, chance: Chance, added: int, field: str
) -> None:
    """The table maximum per player and chance (RULES.md §1): what ``player`` has on ``chance``
    in this coup (new stakes, raises, stakes carried over, free or in prison) plus ``added`` must
    not exceed ``max_stake``. Stakes already above it (carried over from before the rule) stay;
    nothing may be added to them."""
    held = layout.held(player, chance)[1]
    if held + added > rules.max_stake:
        raise FailedPrecondition(
            field,
            "ABOVE_MAXIMUM",
            f"{player} would have {held + added} on {chance.value} in this coup "
            f"({held} there already), above the table maximum {rules.max_stake} "
            "(max_stake bounds a player's total on one chance in one coup)",
        )


def _check_not_opposed(
    rules: HouseRules, layout: Layout, player: str, chance: Chance, ignore: str | None = None
) -> None:
    """Refuse ``chance`` where ``player`` stakes its opposite (``ignore``: the stake that moves),
    naming the first such stake; the index answers alone unless there is one to name."""
    if rules.allow_opposed_stakes:
        return
    opposite = OPPOSITE[chance]
    count = layout.held(player, opposite)[0]
    if not count:
        return
    if count == 1 and ignore is not None:
        moving = layout.find(ignore)
        if moving is not None and moving.player == player and moving.chance is opposite:
            return
    for s in layout.stakes:
        if s.player == player and s.chance is opposite and s.stake_id != ignore:
            _refuse_opposed(player, chance, s)


def _refuse_opposed(player: str, chance: Chance, other: Stake) -> NoReturn:
    raise FailedPrecondition(
        "chance",
        "OPPOSED_STAKES",
        f"{player} already stakes {other.chance.value} ({other.stake_id}); "
        f"{chance.value} and {other.chance.value} may not both be staked",
    )


def _free(layout: Layout, stake_id: str, action: str) -> Stake:
    stake = layout.get(stake_id)
    if stake.status is not StakeStatus.FREE:
        raise FailedPrecondition(
            "stake_id",
            "STAKE_NOT_FREE",
            f"stake {stake_id!r} is in {stake.status.value}: only a free stake can be {action}",
        )
    return stake


def _imprisoned(layout: Layout, stake_id: str, action: str) -> Stake:
    stake = layout.get(stake_id)
    if stake.status not in IMPRISONED:
        raise FailedPrecondition(
            "stake_id",
            "STAKE_NOT_IMPRISONED",
            f"stake {stake_id!r} is not in prison: only an imprisoned stake can be {action}",
        )
    return stake


def _option_on(enabled: bool, option: str) -> None:
    if not enabled:
        raise FailedPrecondition(
            "stake_id", "OPTION_DISABLED", f"this table's rules do not allow it ({option} is off)"
        )


def _name(value: object, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidArgument(field, "EMPTY", "must be a non-empty string")
    return value


# --- the betting commands ---------------------------------------------------------------------


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
    field stake_id), chance offered (rules.chances), amount within [min_stake, max_stake]
    (InvalidArgument), the player's total on the chance within max_stake (FailedPrecondition field
    amount, ABOVE_MAXIMUM), opposed stakes (all of the player's stakes on the layout) unless
    allowed, choice only under player_choice."""
    _name(stake_id, "stake_id")
    _name(player, "player")
    chance = _check_chance(rules, chance)
    _check_amount(amount, rules.min_stake, rules.max_stake, "a stake")
    if choice is not None:
        choice = _check_choice(rules, choice)
    if layout.has(stake_id):
        raise FailedPrecondition(
            "stake_id", "DUPLICATE_STAKE", f"stake {stake_id!r} is already on the layout"
        )
    _check_not_opposed(rules, layout, player, chance)
    if layout.held(player, chance)[1]:
        _check_maximum(rules, layout, player, chance, amount, "amount")
    stake = new_stake(stake_id, player, chance, amount, StakeStatus.FREE, False, choice, False)
    return Step(
        layout.put(stake_id, stake),
        (new_movement(MovementKind.STAKE, stake_id, player, chance, amount, *_STAKE_ROLES),),
        (new_stake_fate(stake_id, player, chance, Fate.PLACED, 0, amount, StakeStatus.FREE),),
    )


def raise_stake(rules: HouseRules, layout: Layout, stake_id: str, amount: int) -> Step:
    """Add ``amount`` to a free stake; the player's total on the chance stays within max_stake
    (FailedPrecondition field amount, ABOVE_MAXIMUM). An insured stake cannot be raised (its
    premium covers the amount insured): FailedPrecondition."""
    _check_amount(amount, 1, rules.max_stake, "a raise")
    stake = _free(layout, stake_id, "raised")
    if stake.insured:
        raise FailedPrecondition(
            "stake_id",
            "STAKE_INSURED",
            f"stake {stake_id!r} is insured for this coup: raise it before insuring it",
        )
    _check_maximum(rules, layout, stake.player, stake.chance, amount, "amount")
    after = replace(stake, amount=stake.amount + amount)
    return _one(layout, stake, Fate.RAISED, after, movement(MovementKind.STAKE, stake, amount))


def withdraw_stake(rules: HouseRules, layout: Layout, stake_id: str) -> Step:
    """Take a free stake off the layout, whole."""
    stake = _free(layout, stake_id, "withdrawn")
    return _one(
        layout, stake, Fate.WITHDRAWN, None, movement(MovementKind.WITHDRAWAL, stake, stake.amount)
    )


def returned_on_refait31(rules: HouseRules, stake: Stake) -> bool:
    """Whether a refait at 31 simply returns the stake (a free Couleur/Inverse stake under
    ``couleur_inverse_on_refait31 = returned``): it has nothing to lose on a 31. A stake in
    prison follows ``prison_refait31`` whatever chance it lies on (RULES.md §1)."""
    return (
        stake.status is StakeStatus.FREE
        and stake.chance in COLOUR_CHANCES
        and rules.couleur_inverse_on_refait31 is ColourChancesOnRefait31.RETURNED
    )


def insure(rules: HouseRules, layout: Layout, stake_id: str) -> Step:
    """Buy insurance for the coup: premium ceil(amount * rate), at least 1 minor unit. Sold only
    on a stake a refait at 31 would touch (RULES.md §1): refused (FailedPrecondition field
    stake_id, NOTHING_TO_INSURE) where the 31 returns it anyway."""
    stake = layout.get(stake_id)
    if rules.insurance_rate == 0:
        raise FailedPrecondition(
            "stake_id", "INSURANCE_DISABLED", "this table offers no insurance (insurance_rate 0)"
        )
    if stake.insured:
        raise FailedPrecondition(
            "stake_id", "ALREADY_INSURED", f"stake {stake_id!r} is already insured for this coup"
        )
    if returned_on_refait31(rules, stake):
        raise FailedPrecondition(
            "stake_id",
            "NOTHING_TO_INSURE",
            f"a refait at 31 returns a free {stake.chance.value} stake at this table "
            "(couleur_inverse_on_refait31 = returned): insurance is sold only on a stake "
            "a refait at 31 would touch",
        )
    after = replace(stake, insured=True)
    cost = premium(stake.amount, rules.insurance_rate)
    return _one(layout, stake, Fate.INSURED, after, movement(MovementKind.PREMIUM, stake, cost))


def _check_choice(rules: HouseRules, choice: str) -> Refait31Choice:
    if rules.refait31 is not Refait31Rule.PLAYER_CHOICE:
        raise InvalidArgument(
            "choice",
            "NO_CHOICE_AT_THIS_TABLE",
            f"refait31 is {rules.refait31.value} at this table: the player has no choice",
        )
    try:
        return Refait31Choice(choice)
    except ValueError:
        raise InvalidArgument(
            "choice", "UNKNOWN_CHOICE", f"unknown choice {choice!r} (partage or prison)"
        ) from None


def choose_refait31(
    rules: HouseRules, layout: Layout, stake_id: str, choice: Refait31Choice
) -> Step:
    """Under player_choice: on a free stake, record the choice in advance; on a stake awaiting
    its choice after a 31, partage applies at once (half to the house, half free) and prison
    confirms the prison. The choice stays recorded on the stake for later 31s."""
    choice = _check_choice(rules, choice)
    stake = layout.get(stake_id)
    if stake.status is StakeStatus.FREE:
        return _one(layout, stake, Fate.CHOSEN, replace(stake, choice=choice))
    if not stake.awaiting_choice:
        raise FailedPrecondition(
            "stake_id",
            "CHOICE_CLOSED",
            f"stake {stake_id!r} is in {stake.status.value} and no longer awaits a choice",
        )
    if choice is Refait31Choice.PRISON:
        after = replace(stake, choice=choice, awaiting_choice=False)
        return _one(layout, stake, Fate.IMPRISONED, after)
    taken = house_half(stake.amount)
    after = Stake(
        stake.stake_id,
        stake.player,
        stake.chance,
        stake.amount - taken,
        insured=stake.insured,
        choice=choice,
    )
    moves = (movement(MovementKind.PARTAGE, stake, taken),) if taken else ()
    return _one(layout, stake, Fate.PARTAGE, after, *moves)


def half_withdraw(rules: HouseRules, layout: Layout, stake_id: str) -> Step:
    """Option half_withdrawal: an imprisoned stake; the house takes amount // 2, the player gets
    the rest back. A stake of 1 gives the house 0: no movement of 0 is emitted."""
    _option_on(rules.half_withdrawal, "half_withdrawal")
    stake = _imprisoned(layout, stake_id, "half withdrawn")
    taken = house_half(stake.amount)
    moves = [movement(MovementKind.PARTAGE, stake, taken)] if taken else []
    moves.append(movement(MovementKind.WITHDRAWAL, stake, stake.amount - taken))
    return _one(layout, stake, Fate.HALF_WITHDRAWN, None, *moves)


def move_imprisoned(rules: HouseRules, layout: Layout, stake_id: str, chance: Chance) -> Step:
    """Option move_imprisoned: the house takes amount // 2; the rest stays in the same prison,
    on ``chance``, where it follows ``prison_refait31`` like any prisoner. A stake of 1 gives the
    house 0: no movement of 0 is emitted. The player's total on ``chance`` stays within
    max_stake (FailedPrecondition field chance, ABOVE_MAXIMUM)."""
    _option_on(rules.move_imprisoned, "move_imprisoned")
    chance = _check_chance(rules, chance)
    stake = _imprisoned(layout, stake_id, "moved")
    if chance is stake.chance:
        raise InvalidArgument(
            "chance", "SAME_CHANCE", f"stake {stake_id!r} is already on {chance.value}"
        )
    _check_not_opposed(rules, layout, stake.player, chance, ignore=stake_id)
    taken = house_half(stake.amount)
    _check_maximum(rules, layout, stake.player, chance, stake.amount - taken, "chance")
    after = replace(stake, chance=chance, amount=stake.amount - taken, awaiting_choice=False)
    moves = (movement(MovementKind.PARTAGE, stake, taken),) if taken else ()
    return _one(layout, stake, Fate.MOVED, after, *moves)


def close_betting(rules: HouseRules, layout: Layout) -> Step:
    """Stakes still awaiting a choice go to prison for good."""
    if not any(s.awaiting_choice for s in layout.stakes):
        return Step(layout)
    stakes: list[Stake] = []
    fates: list[StakeFate] = []
    for s in layout.stakes:
        if s.awaiting_choice:
            after = replace(s, awaiting_choice=False)
            fates.append(fate_of(s, Fate.IMPRISONED, after))
            s = after
        stakes.append(s)
    return Step(Layout(tuple(stakes)), (), tuple(fates))


def end_of_shoe(layout: Layout) -> Step:
    """The shoe closes: free stakes go back to their players; imprisoned stakes stay."""
    kept: list[Stake] = []
    moves: list[Movement] = []
    fates: list[StakeFate] = []
    for s in layout.stakes:
        if s.status is StakeStatus.FREE:
            moves.append(movement(MovementKind.RETURN, s, s.amount))
            fates.append(fate_of(s, Fate.RETURNED, None))
        else:
            kept.append(s)
    return Step(Layout(tuple(kept)), tuple(moves), tuple(fates))


def close_table(rules: HouseRules, layout: Layout) -> Step:
    """The table closes for good: every stake leaves the layout. A free stake goes back whole
    (``returned``); a stake in prison is settled per ``prisoners_at_close``: ``half_returned``
    (as a partage: the house takes amount // 2, the rest goes back; a stake of 1 gives the house
    nothing and no movement of 0 is emitted) or ``returned`` (whole). Movements in the order of
    settlement (seed 000): what the house takes before what it gives, Couleur/Inverse before
    Rouge/Noir, then layout order."""
    halve = rules.prisoners_at_close is PrisonersAtClose.HALF_RETURNED
    queues: tuple[list[Movement], ...] = ([], [], [], [])  # takes C/I, N/R; gives C/I, N/R
    fates: list[StakeFate] = []
    for s in layout.stakes:
        row = s.chance in ROW_CHANCES
        back = s.amount
        if s.status in IMPRISONED and halve:
            taken = house_half(s.amount)
            back -= taken
            if taken:
                queues[row].append(movement(MovementKind.PARTAGE, s, taken))
            fates.append(fate_of(s, Fate.HALF_RETURNED, None))
        else:
            fates.append(fate_of(s, Fate.RETURNED, None))
        queues[2 + row].append(movement(MovementKind.RETURN, s, back))
    return Step(Layout(), tuple(m for q in queues for m in q), tuple(fates))


# --- fast constructors for the hot path (deal and settle many coups a second) -----------------
# A frozen dataclass's generated __init__ sets each field through object.__setattr__, about 1 us
# a movement. Each "filler" below is a plain class with exactly the same slots: its __init__ sets
# them by ordinary assignment, then turns the object into the frozen class (CPython allows a
# __class__ change between classes of identical slot layout). The result is an ordinary frozen
# instance, equal to (and hashing like) the one the class's own constructor makes, in about a
# quarter of the time. Every field is set, in declaration order; tests check each equals the
# class's own constructor.


class _MovementFiller:
    __slots__ = (  # noqa: RUF023 - the frozen class's field order
        "kind",
        "stake_id",
        "player",
        "chance",
        "amount",
        "source",
        "destination",
    )

    def __init__(
        self,
        kind: MovementKind,
        stake_id: str,
        player: str,
        chance: Chance,
        amount: int,
        source: Role,
        destination: Role,
    ) -> None:
        self.kind = kind
        self.stake_id = stake_id
        self.player = player
        self.chance = chance
        self.amount = amount
        self.source = source
        self.destination = destination
        self.__class__ = Movement  # type: ignore[assignment]


class _StakeFateFiller:
    __slots__ = (  # noqa: RUF023 - the frozen class's field order
        "stake_id",
        "player",
        "chance",
        "fate",
        "amount_before",
        "amount_after",
        "status_after",
    )

    def __init__(
        self,
        stake_id: str,
        player: str,
        chance: Chance,
        fate: Fate,
        amount_before: int,
        amount_after: int,
        status_after: StakeStatus | None,
    ) -> None:
        self.stake_id = stake_id
        self.player = player
        self.chance = chance
        self.fate = fate
        self.amount_before = amount_before
        self.amount_after = amount_after
        self.status_after = status_after
        self.__class__ = StakeFate  # type: ignore[assignment]


class _StakeFiller:
    __slots__ = (  # noqa: RUF023 - the frozen class's field order
        "stake_id",
        "player",
        "chance",
        "amount",
        "status",
        "insured",
        "choice",
        "awaiting_choice",
    )

    def __init__(
        self,
        stake_id: str,
        player: str,
        chance: Chance,
        amount: int,
        status: StakeStatus,
        insured: bool,
        choice: Refait31Choice | None,
        awaiting_choice: bool,
    ) -> None:
        self.stake_id = stake_id
        self.player = player
        self.chance = chance
        self.amount = amount
        self.status = status
        self.insured = insured
        self.choice = choice
        self.awaiting_choice = awaiting_choice
        self.__class__ = Stake  # type: ignore[assignment]


# The fillers' slots must be the frozen classes' slots, in the same order (checked at import).
for _filler, _frozen in (
    (_MovementFiller, Movement),
    (_StakeFateFiller, StakeFate),
    (_StakeFiller, Stake),
):
    if _filler.__slots__ != _frozen.__slots__:  # pragma: no cover - a field was added or moved
        raise TypeError(f"{_filler.__name__} does not match {_frozen.__name__}'s fields")


class _NewMovement(Protocol):
    def __call__(
        self,
        kind: MovementKind,
        stake_id: str,
        player: str,
        chance: Chance,
        amount: int,
        source: Role,
        destination: Role,
    ) -> Movement: ...


class _NewStakeFate(Protocol):
    def __call__(
        self,
        stake_id: str,
        player: str,
        chance: Chance,
        fate: Fate,
        amount_before: int,
        amount_after: int,
        status_after: StakeStatus | None,
    ) -> StakeFate: ...


class _NewStake(Protocol):
    def __call__(
        self,
        stake_id: str,
        player: str,
        chance: Chance,
        amount: int,
        status: StakeStatus,
        insured: bool,
        choice: Refait31Choice | None,
        awaiting_choice: bool,
    ) -> Stake: ...


# The public names are the fillers themselves: no wrapper call on the hot path.
new_movement: _NewMovement = cast(_NewMovement, _MovementFiller)
"""``Movement(...)``, faster."""
new_stake_fate: _NewStakeFate = cast(_NewStakeFate, _StakeFateFiller)
"""``StakeFate(...)``, faster."""
new_stake: _NewStake = cast(_NewStake, _StakeFiller)
"""``Stake(...)`` with every field given, faster."""
