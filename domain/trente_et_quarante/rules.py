"""House rules: every option of RULES.md §1 as validated data, and the three named presets.

API CONTRACT (implementation owned by the domain helper; keep these names and signatures).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from fractions import Fraction
from typing import Any

from domain.cards import MAX_DECKS
from domain.currency import MINOR_UNITS
from domain.errors import InvalidArgument


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
        return {f.name: _format(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> HouseRules:
        """Inverse of ``options()`` (used to rebuild from events). An option missing from
        ``options`` (a table recorded before the option existed) reads its default (the
        preset's, else RULES.md's). Raises InvalidArgument."""
        rest = dict(options)
        preset = rest.pop("preset", DEFAULT_PRESET)
        return _build(preset, rest, "options")


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
    return _build(preset, dict(overrides or {}), "overrides")


# --- parsing and formatting of option text -------------------------------------------------

_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})
_CURRENCY = re.compile(r"[A-Z]{3}")


def _parse_bool(text: str) -> bool:
    low = text.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ValueError("must be true or false")


def _parse_int(text: str) -> int:
    t = text.strip().replace("_", "")
    if not re.fullmatch(r"[+-]?\d+", t):
        raise ValueError("must be an integer")
    return int(t)


def _parse_rate(text: str) -> Fraction:
    """``1%``, ``0.5%``, ``1/100``, ``0.01`` or ``0``: exact, never through a float."""
    t = text.strip()
    try:
        if t.endswith("%"):
            rate = Fraction(Decimal(t[:-1].strip())) / 100
        elif "/" in t:
            num, den = t.split("/", 1)
            rate = Fraction(_parse_int(num), _parse_int(den))
        else:
            rate = Fraction(Decimal(t))
    except (InvalidOperation, ValueError, ZeroDivisionError):
        raise ValueError("must be a rate such as 1%, 0.5%, 1/100 or 0") from None
    if not 0 <= rate < 1:
        raise ValueError("must be at least 0 and below 100%")
    return rate


def _parse_currency(text: str) -> str:
    t = text.strip()
    if not _CURRENCY.fullmatch(t) or t not in MINOR_UNITS:
        raise ValueError("must be an ISO 4217 currency code (three upper-case letters), e.g. EUR")
    return t


def _enum(cls: type[StrEnum]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            return cls(text.strip().lower())
        except ValueError:
            raise ValueError("must be one of " + ", ".join(m.value for m in cls)) from None

    return parse


_PARSERS: dict[str, Callable[[str], Any]] = {
    "decks": _parse_int,
    "cut_card": _enum(CutCardRule),
    "chances": _enum(ChanceSet),
    "allow_opposed_stakes": _parse_bool,
    "refait31": _enum(Refait31Rule),
    "prison_refait31": _enum(PrisonRefait31Rule),
    "couleur_inverse_on_refait31": _enum(ColourChancesOnRefait31),
    "insurance_rate": _parse_rate,
    "half_withdrawal": _parse_bool,
    "move_imprisoned": _parse_bool,
    "min_stake": _parse_int,
    "max_stake": _parse_int,
    "currency": _parse_currency,
    "prisoners_at_close": _enum(PrisonersAtClose),
}

OPTION_NAMES = tuple(_PARSERS)


def _format(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Fraction):
        return str(value)  # "1/100", "0", "1/200"
    return str(value)


def _build(preset: str, overrides: dict[str, str], prefix: str) -> HouseRules:
    if preset not in PRESETS:
        raise InvalidArgument(
            "preset", "UNKNOWN_PRESET", f"unknown preset {preset!r} (one of {', '.join(PRESETS)})"
        )
    values: dict[str, Any] = {**OPTION_DEFAULTS, **PRESETS[preset]}
    for name, text in overrides.items():
        field = f"{prefix}.{name}"
        parser = _PARSERS.get(name)
        if parser is None:
            raise InvalidArgument(
                field, "UNKNOWN_OPTION", f"unknown option (one of {', '.join(OPTION_NAMES)})"
            )
        if not isinstance(text, str):
            raise InvalidArgument(field, "BAD_VALUE", "must be text")
        try:
            values[name] = parser(text)
        except ValueError as exc:
            raise InvalidArgument(field, "BAD_VALUE", f"{exc}, got {text!r}") from None
    rules = HouseRules(preset=preset, **values)
    _check(rules, overrides, prefix)
    return rules


def _check(rules: HouseRules, overrides: Mapping[str, str], prefix: str) -> None:
    def field(*names: str) -> str:
        for name in names:
            if name in overrides:
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
    changed = replace(rules, **changes)
    _check(changed, {k: "" for k in changes}, "overrides")
    return changed
