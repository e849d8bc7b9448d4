"""House rules: every option of RULES.md §1 as validated data, and the three named presets.

API CONTRACT (implementation owned by the domain helper; keep these names and signatures).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction


class CutCardRule(StrEnum):
    VOID_COUP = "void_coup"
    FINISH_COUP = "finish_coup"


class ChanceSet(StrEnum):
    ALL = "all"
    NOIR_ROUGE = "noir_rouge"


class Refait31Rule(StrEnum):
    PARTAGE = "partage"
    PRISON = "prison"
    PLAYER_CHOICE = "player_choice"


class PrisonRefait31Rule(StrEnum):
    LOST = "lost"
    SECOND_PRISON = "second_prison"


class ColourChancesOnRefait31(StrEnum):
    LIKE_COLOURS = "like_colours"
    RETURNED = "returned"


@dataclass(frozen=True, slots=True)
class HouseRules:
    """A table's complete ruleset. Recorded whole in the table-opened event."""

    preset: str
    decks: int
    cut_card: CutCardRule
    chances: ChanceSet
    allow_opposed_stakes: bool
    refait31: Refait31Rule
    prison_refait31: PrisonRefait31Rule
    couleur_inverse_on_refait31: ColourChancesOnRefait31
    insurance_rate: Fraction  # 1/100 = 1 %; 0 disables insurance
    half_withdrawal: bool  # a stake in prison may be half withdrawn (seed 004)
    move_imprisoned: bool  # a stake in prison may be moved (seed 004)
    min_stake: int  # minor units
    max_stake: int  # minor units
    currency: str  # ISO 4217 code, e.g. "EUR"

    def options(self) -> dict[str, str]:
        """Every option as canonical text (stable keys), the form stored in events."""
        raise NotImplementedError

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> HouseRules:
        """Inverse of ``options()`` (used to rebuild from events). Raises InvalidArgument."""
        raise NotImplementedError


PRESET_NAMES = ("francaise", "espanola", "italiana")


def house_rules(preset: str = "francaise", overrides: Mapping[str, str] | None = None) -> HouseRules:
    """The preset with single options overridden (text values, as a CLI or an RPC gives them).

    Raises domain.errors.InvalidArgument naming the field (``preset`` or ``overrides.<option>``)
    for an unknown preset, an unknown option or a bad value (e.g. min_stake > max_stake).
    """
    raise NotImplementedError
