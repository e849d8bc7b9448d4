"""Options as data: what every rule book's table of options shares.

A game's rules are a frozen dataclass: ``preset`` and one field per option. The rule book lists
its options as ``Option`` rows (name, default, where the default comes from, and how the option's
text is read), names its presets (each only where it departs from the defaults) and says which
bounds hold between options (its ``check``). ``OptionTable`` does the rest, the same for every
game: a preset with single options overridden by text (as a CLI or an RPC gives them), the
canonical text of every option (the form a table-opened event stores) and back.

Errors are ``InvalidArgument`` naming the field: ``preset`` (``UNKNOWN_PRESET``),
``<prefix>.<option>`` (``UNKNOWN_OPTION``, ``BAD_VALUE``; the game's check adds
``OUT_OF_RANGE``), where the prefix is ``overrides`` for a preset's overrides and ``options``
for a stored ruleset read back.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from domain.currency import MINOR_UNITS
from domain.errors import InvalidArgument

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

R = TypeVar("R", bound="DataclassInstance")

# --- reading one option's text ----------------------------------------------------------------

TRUE_WORDS = frozenset({"true", "yes", "on", "1"})
FALSE_WORDS = frozenset({"false", "no", "off", "0"})
_INTEGER = re.compile(r"[+-]?\d+")
_CURRENCY = re.compile(r"[A-Z]{3}")


def parse_bool(text: str) -> bool:
    """``true``/``yes``/``on``/``1`` or ``false``/``no``/``off``/``0``, any case."""
    low = text.strip().lower()
    if low in TRUE_WORDS:
        return True
    if low in FALSE_WORDS:
        return False
    raise ValueError("must be true or false")


def parse_int(text: str) -> int:
    """A whole number in decimal, ``_`` allowed between digits (``1_000``)."""
    t = text.strip().replace("_", "")
    if not _INTEGER.fullmatch(t):
        raise ValueError("must be an integer")
    return int(t)


def parse_fraction(text: str) -> Fraction:
    """``1%``, ``0.5%``, ``1/100``, ``0.01`` or ``0``: exact, never through a float; any sign
    and size (the rule book's check bounds it)."""
    t = text.strip()
    try:
        if t.endswith("%"):
            return Fraction(Decimal(t[:-1].strip())) / 100
        if "/" in t:
            num, den = t.split("/", 1)
            return Fraction(parse_int(num), parse_int(den))
        return Fraction(Decimal(t))
    except (InvalidOperation, ValueError, ZeroDivisionError):
        raise ValueError("must be a rate such as 1%, 0.5%, 1/100 or 0") from None


def parse_rate(text: str) -> Fraction:
    """A share of an amount, as ``parse_fraction`` reads it, at least 0 and below 1."""
    rate = parse_fraction(text)
    if not 0 <= rate < 1:
        raise ValueError("must be at least 0 and below 100%")
    return rate


def parse_currency(text: str) -> str:
    """An ISO 4217 code the ledger keeps accounts in (``domain.currency``)."""
    t = text.strip()
    if not _CURRENCY.fullmatch(t) or t not in MINOR_UNITS:
        raise ValueError("must be an ISO 4217 currency code (three upper-case letters), e.g. EUR")
    return t


def enum_parser(cls: type[StrEnum]) -> Callable[[str], Any]:
    """A reader of one of ``cls``'s values, any case."""

    def parse(text: str) -> Any:
        try:
            return cls(text.strip().lower())
        except ValueError:
            raise ValueError("must be one of " + ", ".join(m.value for m in cls)) from None

    return parse


def parser_for(default: object) -> Callable[[str], Any]:
    """How an option is read when its row names no parser: by the kind of its default (an enum,
    a yes/no, a whole number, a rate below 1, a currency)."""
    if isinstance(default, StrEnum):
        return enum_parser(type(default))
    if isinstance(default, bool):
        return parse_bool
    if isinstance(default, int):
        return parse_int
    if isinstance(default, Fraction):
        return parse_rate
    if isinstance(default, str):
        return parse_currency
    raise TypeError(f"no reader for an option of type {type(default).__name__}")


def option_text(value: object) -> str:
    """An option's canonical text: ``true``/``false``, an enum by its value, a Fraction as
    ``1/100`` or ``0``, a whole number in decimal."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# --- a rule book's table of options -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Option:
    """One option: its name (the rules' field), its default, where the default comes from, and
    how its text is read (None: by the kind of the default, ``parser_for``)."""

    name: str
    default: Any
    source: str = ""
    parse: Callable[[str], Any] | None = None

    def read(self, text: str) -> Any:
        """The option's value from its text; ValueError says what is wanted."""
        return (self.parse or parser_for(self.default))(text)

    @property
    def default_text(self) -> str:
        return option_text(self.default)


# A rule book's bounds between options: ``check(rules, given, prefix)`` raises InvalidArgument
# naming ``<prefix>.<option>``, the option among ``given`` (the names set by the caller) at
# fault where it can tell.
Check = Callable[[R, Collection[str], str], None]


class OptionTable(Generic[R]):
    """A rule book's options and presets, and how its rules are built from text.

    ``rules``: the rules' class (called with ``preset=`` and every option by name);
    ``options``: the rows, in the order of the rules' fields; ``presets``: name -> the options
    it sets (typed values); ``check``: the bounds between options.
    """

    def __init__(
        self,
        rules: Callable[..., R],
        options: Sequence[Option],
        presets: Mapping[str, Mapping[str, Any]],
        default_preset: str,
        check: Check[R],
    ) -> None:
        self._rules = rules
        self.options = tuple(options)
        self.by_name: Mapping[str, Option] = {o.name: o for o in self.options}
        self.names = tuple(self.by_name)
        self.defaults: dict[str, Any] = {o.name: o.default for o in self.options}
        self.presets = presets
        self.default_preset = default_preset
        self._check = check
        if len(self.by_name) != len(self.options) or default_preset not in presets:
            raise ValueError("option names must be unique and the default preset one of presets")

    def build(
        self, preset: str, overrides: Mapping[str, str] | None = None, prefix: str = "overrides"
    ) -> R:
        """The preset with single options overridden by their text."""
        given = dict(overrides or {})
        if preset not in self.presets:
            raise InvalidArgument(
                "preset",
                "UNKNOWN_PRESET",
                f"unknown preset {preset!r} (one of {', '.join(self.presets)})",
            )
        values: dict[str, Any] = {**self.defaults, **self.presets[preset]}
        for name, text in given.items():
            field = f"{prefix}.{name}"
            option = self.by_name.get(name)
            if option is None:
                raise InvalidArgument(
                    field, "UNKNOWN_OPTION", f"unknown option (one of {', '.join(self.names)})"
                )
            if not isinstance(text, str):
                raise InvalidArgument(field, "BAD_VALUE", "must be text")
            try:
                values[name] = option.read(text)
            except ValueError as exc:
                raise InvalidArgument(field, "BAD_VALUE", f"{exc}, got {text!r}") from None
        rules = self._rules(preset=preset, **values)
        self._check(rules, frozenset(given), prefix)
        return rules

    def from_options(self, options: Mapping[str, str]) -> R:
        """The inverse of ``text``: a stored ruleset read back (errors name ``options.<name>``).
        An option missing (a table recorded before the option existed) reads its default: the
        preset's, else the rule book's."""
        rest = dict(options)
        return self.build(rest.pop("preset", self.default_preset), rest, "options")

    def with_options(self, rules: R, **changes: Any) -> R:
        """A copy with typed changes (for tests and tools), checked like an override."""
        changed = replace(rules, **changes)
        self._check(changed, frozenset(changes), "overrides")
        return changed

    @staticmethod
    def text(rules: DataclassInstance) -> dict[str, str]:
        """Every field of ``rules`` as canonical text, in field order (``preset`` first)."""
        return {f.name: option_text(getattr(rules, f.name)) for f in fields(rules)}
