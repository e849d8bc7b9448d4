"""Points: tantos and perros, the cartón's table, the ronda, and the 38-point rule.

"Por CAIDA gana 1 Tanto = 2 Puntos ... Al completar 5 Tantos o 10 Puntos, estos se canjean por
1 Perro = 10 Puntos" (seed 001, §4). Scores are held in points; ``tally`` shows them in perros and
tantos (and the odd point the cartón's points column can give).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from domain.cards import Card
from domain.cuarenta.ranks import RANKS
from domain.cuarenta.rules import (
    GAME_POINTS,
    PACK_SIZE,
    CartonRounding,
    CuarentaRules,
    FourOfAKind,
    Rule38,
)
from domain.errors import InvalidArgument

TANTO = 2  # points
PERRO = 10  # points: 5 tantos

# The seed's table (§4.1), row by row: cards won -> (tantos, puntos). It disagrees with itself
# from 21 cards on (21 cards: 4 tantos = 8 points, but 7 points): the points column is the rule
# (RULES.md §3), the tantos column the option ``carton_rounding = up_to_tanto``.
SEED_CARTON_TABLE: dict[int, tuple[int, int]] = {
    20: (3, 6), 21: (4, 7), 22: (4, 8), 23: (5, 9), 24: (5, 10), 25: (6, 11), 26: (6, 12),
    27: (7, 13), 28: (7, 14), 29: (8, 15), 30: (8, 16), 31: (9, 17), 32: (9, 18),
    33: (10, 19), 34: (10, 20), 35: (11, 21), 36: (11, 22), 37: (12, 23), 38: (12, 24),
    39: (13, 25), 40: (13, 26),
}  # fmt: skip
CARTON_MINIMUM = min(SEED_CARTON_TABLE)  # "En caso de no alcanzar a reunir 20 cartas no se ganan"

CARTON_POINTS: dict[CartonRounding, dict[int, int]] = {
    CartonRounding.POINTS_COLUMN: {n: pts for n, (_, pts) in SEED_CARTON_TABLE.items()},
    CartonRounding.UP_TO_TANTO: {n: t * TANTO for n, (t, _) in SEED_CARTON_TABLE.items()},
}


def carton(rules: CuarentaRules, cards: int, field: str = "cards") -> int:
    """The cartón: the points for ``cards`` cards won in a hand (0 under 20)."""
    if isinstance(cards, bool) or not isinstance(cards, int) or not 0 <= cards <= PACK_SIZE:
        raise InvalidArgument(field, "OUT_OF_RANGE", f"must be 0 to {PACK_SIZE}, got {cards!r}")
    return CARTON_POINTS[rules.carton_rounding].get(cards, 0)


@dataclass(frozen=True, slots=True)
class Tally:
    """A score as the table keeps it: perros (10 points), tantos (2 points), an odd point."""

    points: int

    @property
    def perros(self) -> int:
        return self.points // PERRO

    @property
    def tantos(self) -> int:
        return self.points % PERRO // TANTO

    @property
    def odd(self) -> int:
        """1 when the points are odd (the cartón's points column: 21 cards are 7 points)."""
        return self.points % TANTO

    def __str__(self) -> str:
        parts = []
        if self.perros:
            parts.append(f"{self.perros} perro{'s' if self.perros != 1 else ''}")
        if self.tantos:
            parts.append(f"{self.tantos} tanto{'s' if self.tantos != 1 else ''}")
        if self.odd:
            parts.append("1 point")
        if not parts:
            return f"{self.points} points"
        return f"{self.points} point{'s' if self.points != 1 else ''} ({' + '.join(parts)})"


def tally(points: int) -> Tally:
    return Tally(points)


# --- what the 38-point rule withholds -------------------------------------------------------


class Source(StrEnum):
    """Where points come from."""

    CAIDA = "caida"
    LIMPIA = "limpia"
    RONDA = "ronda"
    CARTON = "carton"


THIRTY_EIGHT = GAME_POINTS - 2  # the rule's threshold: one tanto short of the game

WITHHELD_AT_38: dict[Rule38, frozenset[Source]] = {
    Rule38.OFF: frozenset(),
    Rule38.NO_LIMPIA: frozenset({Source.LIMPIA}),
    Rule38.CAIDA_ONLY: frozenset({Source.LIMPIA, Source.RONDA, Source.CARTON}),
}


def withheld(rules: CuarentaRules, source: Source, side_points: int) -> bool:
    """True when the 38-point rule withholds points of ``source`` from a side with
    ``side_points`` (38 or more: a side two short of the game, or one short after an odd
    cartón)."""
    return side_points >= THIRTY_EIGHT and source in WITHHELD_AT_38[rules.rule_38]


# --- the ronda ------------------------------------------------------------------------------


class Announcement(StrEnum):
    RONDA = "ronda"  # three of a rank in the five dealt (seed 001, §3.3)
    FOUR_OF_A_KIND = "four_of_a_kind"  # four of a rank (the option ``four_of_a_kind``)


def rank_counts(hand: Sequence[Card]) -> Counter[str]:
    return Counter(card.rank for card in hand)


def announcement(rules: CuarentaRules, hand: Sequence[Card]) -> Announcement | None:
    """What a player's dealt five announce: four of a kind (when it wins the match), a ronda
    (three of a rank; four of a rank under ``four_of_a_kind = ronda``), or nothing. Five cards
    hold at most one rank three times."""
    most = max(rank_counts(hand).values(), default=0)
    if most >= 4 and rules.four_of_a_kind is FourOfAKind.WINS_MATCH:
        return Announcement.FOUR_OF_A_KIND
    if most >= 3:
        return Announcement.RONDA
    return None


def ronda_rank(hand: Sequence[Card]) -> str | None:
    """The rank held three (or four) times, or None; for the holder's eyes only."""
    counts = rank_counts(hand)
    return next((rank for rank in RANKS if counts.get(rank, 0) >= 3), None)
