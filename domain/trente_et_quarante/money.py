"""Money arithmetic of the rule book: integer minor units only, never floats."""

from __future__ import annotations

from fractions import Fraction


def house_half(amount: int) -> int:
    """The house's half of a stake (partage, half withdrawal, move): ``amount // 2``; the
    rounding favours the player (RULES.md, Money)."""
    return amount // 2


def premium(amount: int, rate: Fraction) -> int:
    """The insurance premium: ``ceil(amount * rate)``, at least one minor unit."""
    return max(1, -((-amount * rate.numerator) // rate.denominator))
