"""Table rules of Treinta y Una: every option of RULES.md §2 as validated data, and presets.

Each option is one row of ``OPTIONS``: its name, its kind of value, its default and the source
of the default. A preset names only where it departs from the defaults. ``TableRules.options()``
gives every option as canonical text (the form a table-opened event stores) and
``TableRules.from_options`` reads it back.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import Any

from domain.errors import InvalidArgument
from domain.options import Option, OptionTable

TARGET = 31  # "intentará con ellas sumar 31 puntos" (seed 003)
MAX_SEATS = 13  # 13 hands of three cards use 39 of the 40 cards: the deck's own limit


class TieRule(StrEnum):
    """A player's hand equal to the banker's."""

    BANKER_WINS = "banker_wins"  # "le gana a todos los jugadores que tienen menor o igual"
    VOID_CARRY_OVER = "void_carry_over"  # "el juego se considera nulo ... quedan las apuestas"


class BustRule(StrEnum):
    """A hand above 31."""

    LOSES_AT_ONCE = "loses_at_once"  # its turn ends, its stake goes to the bank at once
    AT_SHOWDOWN = "at_showdown"  # nothing is said until the showdown, where it counts 0


class BankCover(StrEnum):
    """What the bank must hold to accept a stake."""

    WORST_CASE = "worst_case"  # twice every accepted stake (each could be a real, paid double)
    EVEN_MONEY = "even_money"  # once every stake; a real's second unit is paid while it lasts


class Several31(StrEnum):
    """Who takes the bank when several players (not the banker) made 31."""

    FIRST_IN_TURN = "first_in_turn"  # the first of them in turn order from the mano
    REAL_FIRST = "real_first"  # a treinta y una real before a plain 31, then turn order


class BankWithout31(StrEnum):
    """Where the bank goes when nobody made 31 (seed 003 is silent)."""

    STAYS = "stays"  # the banker keeps it
    PASSES_TO_MANO = "passes_to_mano"  # "pasa en cada juego a un jugador diferente": the mano


@dataclass(frozen=True, slots=True)
class TableRules:
    """A Treinta y Una table's complete ruleset (recorded whole when the table opens)."""

    preset: str
    tie: TieRule
    bust: BustRule
    real_outranks_plain: bool  # a treinta y una real beats a plain 31
    bank_cover: BankCover
    several_31: Several31
    bank_without_31: BankWithout31
    commission: Fraction  # the house's share of each winning payout, rounded down; 0: none
    turn_seconds: int  # the turn time; 0: no turn time (nobody may stand for an absent player)
    max_players: int  # seats at the table, the banker included
    min_stake: int  # minor units
    max_stake: int  # minor units: "una cantidad máxima acordada de antemano"
    currency: str  # ISO 4217
    # the edition of the rulings the table's rounds are settled under (docs/treinta-y-una.md,
    # "Rulings"): 2 (issue 22: one commission on all one winner collects from one counterparty
    # in a round; a bank passing to the mano goes to the first player dealt in); 1: as before
    # (a commission on each payout; the bank to the seat at the banker's right). A ruleset
    # stored without it (a round or table recorded before) reads 1 (``from_options``).
    ruling: int = 2

    def options(self) -> dict[str, str]:
        """Every option as canonical text, stable keys (``preset`` first)."""
        return OptionTable.text(self)

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> TableRules:
        """Inverse of ``options()``. Raises InvalidArgument naming ``options.<name>``. A
        ruleset stored before ``ruling`` existed is read as ruling 1: its rounds replay and
        settle as they were recorded."""
        return TABLE.from_options({"ruling": str(FIRST_RULING), **options})


# The options in the order of RULES.md §2, each read by the kind of its default
# (domain/options.py). Bounds are checked in ``_check``.
OPTIONS: tuple[Option, ...] = (
    Option("tie", TieRule.BANKER_WINS, "seed 003, first sentence of the showdown"),
    Option("bust", BustRule.LOSES_AT_ONCE, "RULES.md §2 (choice): a hand above 31 loses at once"),
    Option("real_outranks_plain", True, "RULES.md §2 (choice)"),
    Option(
        "bank_cover",
        BankCover.WORST_CASE,
        "RULES.md §2 (choice): the bank covers what it accepts, double for a real",
    ),
    Option("several_31", Several31.FIRST_IN_TURN, "RULES.md §2 (choice)"),
    Option("bank_without_31", BankWithout31.STAYS, "seed 003 names only the player who made 31"),
    Option("commission", Fraction(0), "RULES.md §2 (choice): optional house commission, default 0"),
    Option("turn_seconds", 60, "RULES.md §2 (choice): the table's turn time"),
    Option("max_players", 8, "seed 003: any number of players; 8 seats, the banker included"),
    Option("min_stake", 100, "house rule"),
    Option("max_stake", 100_000, "seed 003: a maximum agreed beforehand"),
    Option("currency", "EUR", "house rule"),
    Option("ruling", 2, "RULES.md §2, the rulings of issue 22 item 9 (1: as recorded before)"),
)
FIRST_RULING, RULING = 1, 2  # the first edition of the rulings (stored before), the latest
OPTION_NAMES = tuple(o.name for o in OPTIONS)
OPTION_DEFAULTS: dict[str, Any] = {o.name: o.default for o in OPTIONS}

DEFAULT_PRESET = "clasica"
PRESETS: dict[str, dict[str, Any]] = {
    "clasica": {},  # seed 003 read with RULES.md §2's defaults: ties to the banker
    "empate_nulo": {"tie": TieRule.VOID_CARRY_OVER},  # seed 003's second sentence on the tie
}
PRESET_NAMES = tuple(PRESETS)


def table_rules(
    preset: str = DEFAULT_PRESET, overrides: Mapping[str, str] | None = None
) -> TableRules:
    """The preset with single options overridden by text values (as a CLI or an RPC gives them).

    Raises InvalidArgument naming ``preset`` or ``overrides.<option>``.
    """
    return TABLE.build(preset, overrides)


def with_options(rules: TableRules, **changes: Any) -> TableRules:
    """A copy with typed changes (for tests and tools), checked like an override."""
    return TABLE.with_options(rules, **changes)


def _check(rules: TableRules, given: Collection[str], prefix: str) -> None:
    """The bounds between options; the error names the option given (or the first one)."""

    def out_of_range(message: str, *names: str) -> InvalidArgument:
        name = next((n for n in names if n in given), names[0])
        return InvalidArgument(f"{prefix}.{name}", "OUT_OF_RANGE", message)

    if not 2 <= rules.max_players <= MAX_SEATS:
        raise out_of_range(f"must be 2 to {MAX_SEATS}, got {rules.max_players}", "max_players")
    if not 0 <= rules.turn_seconds <= 3600:
        raise out_of_range(f"must be 0 to 3600, got {rules.turn_seconds}", "turn_seconds")
    if not 0 <= rules.commission < 1:
        raise out_of_range(f"must be at least 0 and below 1, got {rules.commission}", "commission")
    if not FIRST_RULING <= rules.ruling <= RULING:
        raise out_of_range(f"must be {FIRST_RULING} to {RULING}, got {rules.ruling}", "ruling")
    if rules.min_stake < 1:
        raise out_of_range(f"must be at least 1, got {rules.min_stake}", "min_stake")
    if rules.max_stake < rules.min_stake:
        raise out_of_range(
            f"max_stake {rules.max_stake} is below min_stake {rules.min_stake}",
            "max_stake",
            "min_stake",
        )


TABLE: OptionTable[TableRules] = OptionTable(TableRules, OPTIONS, PRESETS, DEFAULT_PRESET, _check)
