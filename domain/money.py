"""Money arithmetic every rule book shares: integer minor units only, never floats.

Each game decides its movements with roles of its own (``Role``: the accounts a movement names,
which the ledger maps to concrete accounts); every game calls the player's own account
``player``. A game's own arithmetic (Trente et Quarante's partage and insurance premium) stays in
its package.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from typing import Protocol

PLAYER = "player"  # the role of a player's own account, in every game


def commission(amount: int, rate: Fraction) -> int:
    """The house's commission on ``amount``: ``floor(amount * rate)``, the rounding in the
    players' favour (RULES.md, Money)."""
    return amount * rate.numerator // rate.denominator


class PlayerMovement(Protocol):
    """A movement that names its player: ``amount`` from ``source`` to ``destination``."""

    @property
    def player(self) -> str: ...

    @property
    def amount(self) -> int: ...

    @property
    def source(self) -> str: ...

    @property
    def destination(self) -> str: ...


def players_net(movements: Iterable[PlayerMovement]) -> dict[str, int]:
    """What each player named by ``movements`` got back minus what he paid (minor units)."""
    net: dict[str, int] = {}
    for m in movements:
        if m.destination == PLAYER:
            net[m.player] = net.get(m.player, 0) + m.amount
        elif m.source == PLAYER:
            net[m.player] = net.get(m.player, 0) - m.amount
    return net
