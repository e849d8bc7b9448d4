"""House rules: every option of RULES.md §1 as validated data, and the three named presets.

API CONTRACT (implementation owned by the domain helper; keep these names and signatures).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import Any

from domain.cards import MAX_DECKS
from domain.errors import InvalidArgument
from domain.options import Option, OptionTable


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


class PrisonersAtClose(StrEnum):
    """What a table's closing does to the stakes left in prison *(choice)*."""

    HALF_RETURNED = "half_returned"  # settled as a partage: half to the house, half back
    RETURNED = "returned"  # given back whole


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
    min_stake: int  # minor units, per stake
    max_stake: int  # minor units: a player's total on one chance in one coup (RULES.md §1)
    currency: str  # ISO 4217 code, e.g. "EUR"
    prisoners_at_close: PrisonersAtClose  # what closing the table does to stakes in prison

    def options(self) -> dict[str, str]:
        """Every option as canonical text (stable keys), the form stored in events."""
        return OptionTable.text(self)

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> HouseRules:
        """Inverse of ``options()`` (used to rebuild from events). An option missing from
        ``options`` (a table recorded before the option existed) reads its default (the
        preset's, else RULES.md's). Raises InvalidArgument."""
        return TABLE.from_options(options)


PRESET_NAMES = ("francaise", "espanola", "italiana")
DEFAULT_PRESET = "francaise"

# The option defaults of RULES.md §1; a preset names only where it departs from them.
OPTION_DEFAULTS: dict[str, Any] = {
    "decks": 6,
    "cut_card": CutCardRule.VOID_COUP,
    "chances": ChanceSet.ALL,
    "allow_opposed_stakes": False,
    "refait31": Refait31Rule.PLAYER_CHOICE,
    "prison_refait31": PrisonRefait31Rule.SECOND_PRISON,
    "couleur_inverse_on_refait31": ColourChancesOnRefait31.RETURNED,
    "insurance_rate": Fraction(1, 100),
    "half_withdrawal": False,
    "move_imprisoned": False,
    "min_stake": 100,
    "max_stake": 1_000_000,
    "currency": "EUR",
    "prisoners_at_close": PrisonersAtClose.HALF_RETURNED,
}

# Each option is read by the kind of its default (domain/options.py: a whole number, an enum's
# value, true/false, a rate below 100 %, an ISO 4217 code).
OPTIONS: tuple[Option, ...] = tuple(Option(name, value) for name, value in OPTION_DEFAULTS.items())
OPTION_NAMES = tuple(OPTION_DEFAULTS)

PRESETS: dict[str, dict[str, Any]] = {
    "francaise": {  # seed 002
        "refait31": Refait31Rule.PLAYER_CHOICE,
        "couleur_inverse_on_refait31": ColourChancesOnRefait31.RETURNED,
        "prison_refait31": PrisonRefait31Rule.SECOND_PRISON,
        "insurance_rate": Fraction(1, 100),
    },
    "espanola": {  # seed 000
        "refait31": Refait31Rule.PARTAGE,
        "couleur_inverse_on_refait31": ColourChancesOnRefait31.LIKE_COLOURS,
        "insurance_rate": Fraction(1, 100),
        "cut_card": CutCardRule.VOID_COUP,
    },
    "italiana": {  # seed 004
        "refait31": Refait31Rule.PRISON,
        "couleur_inverse_on_refait31": ColourChancesOnRefait31.LIKE_COLOURS,
        "prison_refait31": PrisonRefait31Rule.SECOND_PRISON,
        "half_withdrawal": True,
        "move_imprisoned": True,
        "insurance_rate": Fraction(1, 100),
    },
}


def house_rules(
    preset: str = "francaise", overrides: Mapping[str, str] | None = None
) -> HouseRules:
    """The preset with single options overridden (text values, as a CLI or an RPC gives them).

    Raises domain.errors.InvalidArgument naming the field (``preset`` or ``overrides.<option>``)
    for an unknown preset, an unknown option or a bad value (e.g. min_stake > max_stake).
    """
    return TABLE.build(preset, overrides)


def _check(rules: HouseRules, given: Collection[str], prefix: str) -> None:
    def field(*names: str) -> str:
        for name in names:
            if name in given:
                return f"{prefix}.{name}"
        return f"{prefix}.{names[0]}"

    if not 1 <= rules.decks <= MAX_DECKS:
        raise InvalidArgument(
            field("decks"), "OUT_OF_RANGE", f"must be 1 to {MAX_DECKS}, got {rules.decks}"
        )
    if rules.min_stake < 1:
        raise InvalidArgument(
            field("min_stake"), "OUT_OF_RANGE", f"must be at least 1, got {rules.min_stake}"
        )
    if rules.max_stake < rules.min_stake:
        raise InvalidArgument(
            field("max_stake", "min_stake"),
            "OUT_OF_RANGE",
            f"max_stake {rules.max_stake} is below min_stake {rules.min_stake}",
        )


def with_options(rules: HouseRules, **changes: Any) -> HouseRules:
    """A copy with typed changes (for tests and tools); validated like an override."""
    return TABLE.with_options(rules, **changes)


TABLE: OptionTable[HouseRules] = OptionTable(HouseRules, OPTIONS, PRESETS, DEFAULT_PRESET, _check)
