"""The Cuarenta table's rules: every option of RULES.md §3 as validated data, with its source.

Where seed 001 speaks, its word is the default; where it is silent, Pagat's "Cuarenta"
(pagat.com/fishing/cuarenta.html) is. ``OPTION_SOURCES`` says, for each option, where its default
comes from and what the other values mean; docs/cuarenta.md is the same text for people.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import Any

from domain.errors import InvalidArgument
from domain.options import Option, OptionTable, parse_fraction

GAME_POINTS = 40  # "La meta consiste en alcanzar el total de 40 puntos" (seed 001, §1)
HAND_SIZE = 5  # "1 mano de cartas tiene 5 cartas para cada jugador" (seed 001, §1)
PACK_SIZE = 40  # FRENCH-40: no 8, 9, 10 (seed 001, §2; SHUFFLE.md)
PLAYERS = (2, 4)  # two players, or two teams of two (RULES.md §3; Pagat, "The Players")


class Rule38(StrEnum):
    """What a side with 38 points or more (two short of the game) may still score."""

    OFF = "off"  # everything scores (the seed has no such rule)
    NO_LIMPIA = "no_limpia"  # a limpia scores nothing: the side must go out another way
    CAIDA_ONLY = "caida_only"  # only a caída scores (no limpia, ronda or cartón)


class CartonRounding(StrEnum):
    POINTS_COLUMN = "points_column"  # the seed's "Puntos" column: 20 → 6, 21 → 7 … 40 → 26
    UP_TO_TANTO = "up_to_tanto"  # the seed's "Tantos" column × 2: an odd count rounds up, 21 → 8


class FourOfAKind(StrEnum):
    WINS_MATCH = "wins_match"  # four of a rank dealt to one player: that side wins at once
    RONDA = "ronda"  # it is a ronda like any three of a rank (it holds three of a rank)


class TableAtHandEnd(StrEnum):
    NOBODY = "nobody"  # cards left on the table at the end of a hand count for no side
    LAST_CAPTURER = "last_capturer"  # they go to the side that captured last (Spanish Ronda)


class CaptureChoice(StrEnum):
    PLAYER = "player"  # the play names any legal capture set
    MOST_CARDS = "most_cards"  # only the sets taking the most cards are legal


@dataclass(frozen=True, slots=True)
class CuarentaRules:
    """A match's complete ruleset. Recorded whole (``options()``) when the match opens."""

    preset: str
    players: int  # 2 (one against one) or 4 (two teams of two, partners opposite)
    caida_points: int  # 1 tanto = 2 points (seed 001, §4)
    limpia_points: int  # 1 tanto = 2 points (seed 001, §4)
    ronda_points: int  # 1 tanto = 2 points (seed 001, §4)
    carton_rounding: CartonRounding
    rule_38: Rule38
    four_of_a_kind: FourOfAKind
    table_at_hand_end: TableAtHandEnd
    must_capture: bool  # a play that could capture must capture
    capture_choice: CaptureChoice
    caida_across_deals: bool  # the last card of a deal may be taken by caída on the next deal
    stake: int  # minor units each side stakes when the match opens (0: no stakes)
    commission_rate: Fraction  # the house's share of the stakes paid to the winner (0: none)
    currency: str  # ISO 4217 code, e.g. "EUR"
    turn_seconds: int  # a player who has not played within this time forfeits for the side

    @property
    def deals_per_hand(self) -> int:
        """Four deals of five for two players, two for four: the pack is used exactly."""
        return PACK_SIZE // (HAND_SIZE * self.players)

    def options(self) -> dict[str, str]:
        """Every option as canonical text (stable keys), the form stored in events."""
        return OptionTable.text(self)

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> CuarentaRules:
        """Inverse of ``options()`` (used to rebuild from events). Raises InvalidArgument."""
        return TABLE.from_options(options)


# The defaults (seed 001 where it speaks, Pagat where it is silent); a preset names only where
# it departs from them.
OPTION_DEFAULTS: dict[str, Any] = {
    "players": 2,
    "caida_points": 2,
    "limpia_points": 2,
    "ronda_points": 2,
    "carton_rounding": CartonRounding.POINTS_COLUMN,
    "rule_38": Rule38.NO_LIMPIA,
    "four_of_a_kind": FourOfAKind.WINS_MATCH,
    "table_at_hand_end": TableAtHandEnd.NOBODY,
    "must_capture": False,
    "capture_choice": CaptureChoice.PLAYER,
    "caida_across_deals": True,
    "stake": 0,
    "commission_rate": Fraction(0),
    "currency": "EUR",
    "turn_seconds": 60,
}

PRESETS: dict[str, dict[str, Any]] = {
    # seed 001 as written, Pagat where the seed is silent: the defaults
    "seed": {},
    # the seed's own words only: no 38-point rule, four of a kind is a ronda (it holds three)
    "seed_literal": {"rule_38": Rule38.OFF, "four_of_a_kind": FourOfAKind.RONDA},
    # Pagat where it departs from the seed: the cartón rounded up to a whole tanto
    "pagat": {"carton_rounding": CartonRounding.UP_TO_TANTO},
}
PRESET_NAMES = tuple(PRESETS)
DEFAULT_PRESET = "seed"

SEED = "seed 001"
PAGAT = "Pagat, Cuarenta (pagat.com/fishing/cuarenta.html)"
# The stored copy of Pagat's page could be read only up to its deal; its later rules are taken
# as the implementations that cite it read them (docs/cuarenta.md, Sources).
PAGAT_READ = "Pagat's Cuarenta as the implementations citing it read it"

# For each option: where the default comes from, and what the other values are for.
OPTION_SOURCES: dict[str, str] = {
    "players": f"2 or 4: {SEED} §1 (played by pairs of players); RULES.md §3; {PAGAT}, "
    "The Players (two, or four in two teams, partners opposite)",
    "caida_points": f"{SEED} §4: Por CAIDA gana 1 Tanto = 2 Puntos",
    "limpia_points": f"{SEED} §4: Por LIMPIA gana 1 Tanto = 2 Puntos (caída and limpia "
    "together: 2 tantos = 4 points, the two added)",
    "ronda_points": f"{SEED} §4: Por RONDA gana 1 Tanto = 2 Puntos (some tables count 4)",
    "carton_rounding": f"points_column: {SEED} §4.1, the Puntos column (20 cards 6 points, one "
    "more per card, 40 → 26), as RULES.md §3 directs where the seed's table disagrees with "
    "itself; up_to_tanto: the seed's Tantos column (21 → 4 tantos = 8 points), the rounding "
    f"to a whole tanto of {PAGAT_READ}",
    "rule_38": f"no_limpia: {PAGAT_READ} (a side on 38 cannot go out by a limpia); the seed has no "
    "such rule (off); caida_only: a stricter table rule (only a caída takes the last two "
    "points)",
    "four_of_a_kind": f"wins_match: {PAGAT_READ} (four of a rank dealt wins the game at once); "
    f"ronda: the {SEED} reading (§3.3: three of a rank in the five is a ronda)",
    "table_at_hand_end": f"nobody: {PAGAT_READ} (cards left on the table belong to no side); "
    "last_capturer: the Spanish Ronda, from which Cuarenta comes",
    "must_capture": f"false: {SEED} §3 (the opponent 'tiene la posibilidad' of taking) and "
    f"{PAGAT_READ} (a card may always be left on the table)",
    "capture_choice": f"player: {SEED} §3.4 and {PAGAT_READ} (where several sets can be taken "
    "the player chooses one; the play names it); most_cards: a house rule without the choice",
    "caida_across_deals": f"true: {SEED} §3.1 read as written (the card the opponent has just "
    "played, even when a new deal came between); false: a caída only within one deal",
    "stake": "RULES.md §3 (choice): each side stakes the same amount when the match opens",
    "commission_rate": "RULES.md §3 (choice): an optional house commission, default 0",
    "currency": "ISO 4217; the ledger's currency",
    "turn_seconds": "RULES.md §3 (choice): the table's turn time; whoever does not play "
    "within it forfeits the match for the side",
}


def cuarenta_rules(
    preset: str = DEFAULT_PRESET, overrides: Mapping[str, str] | None = None
) -> CuarentaRules:
    """The preset with single options overridden (text values, as a CLI or an RPC gives them).

    Raises domain.errors.InvalidArgument naming the field (``preset`` or ``overrides.<option>``)
    for an unknown preset, an unknown option or a bad value.
    """
    return TABLE.build(preset, overrides)


def with_options(rules: CuarentaRules, **changes: Any) -> CuarentaRules:
    """A copy with typed changes (for tests and tools); validated like an override."""
    return TABLE.with_options(rules, **changes)


# Each option is read by the kind of its default (domain/options.py), the commission as any
# exact fraction: its bounds are checked with the others (``_check``).
OPTIONS: tuple[Option, ...] = tuple(
    Option(name, default, OPTION_SOURCES[name],
           parse_fraction if name == "commission_rate" else None)
    for name, default in OPTION_DEFAULTS.items()
)
OPTION_NAMES = tuple(OPTION_DEFAULTS)
_CURRENCY = re.compile(r"[A-Z]{3}")

# Ranges of the integer options: (low, high).
_RANGES: dict[str, tuple[int, int]] = {
    "caida_points": (0, GAME_POINTS),
    "limpia_points": (0, GAME_POINTS),
    "ronda_points": (0, GAME_POINTS),
    "stake": (0, 10**12),
    "turn_seconds": (5, 3600),
}


def _check(rules: CuarentaRules, given: Collection[str], prefix: str) -> None:
    def field(name: str) -> str:
        return f"{prefix}.{name}"

    if rules.players not in PLAYERS:
        raise InvalidArgument(
            field("players"), "OUT_OF_RANGE", f"must be 2 or 4, got {rules.players}"
        )
    for name, (low, high) in _RANGES.items():
        value = getattr(rules, name)
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise InvalidArgument(
                field(name), "OUT_OF_RANGE", f"must be {low} to {high}, got {value!r}"
            )
    if not 0 <= rules.commission_rate < 1:
        raise InvalidArgument(
            field("commission_rate"), "OUT_OF_RANGE", "must be at least 0 and below 100%"
        )
    if not _CURRENCY.fullmatch(rules.currency):
        raise InvalidArgument(field("currency"), "BAD_VALUE", "must be an ISO 4217 code")


TABLE: OptionTable[CuarentaRules] = OptionTable(
    CuarentaRules, OPTIONS, PRESETS, DEFAULT_PRESET, _check
)
