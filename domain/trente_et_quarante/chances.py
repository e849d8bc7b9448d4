"""The four chances of the layout and the two rows of the deal."""

from __future__ import annotations

from enum import StrEnum


class Row(StrEnum):
    NOIR = "noir"  # the first row dealt
    ROUGE = "rouge"  # the second row dealt


class Chance(StrEnum):
    NOIR = "noir"  # the Noir row wins
    ROUGE = "rouge"  # the Rouge row wins
    COULEUR = "couleur"  # the Noir row's first card has the winning row's colour
    INVERSE = "inverse"  # it has the other colour


OPPOSITE: dict[Chance, Chance] = {
    Chance.NOIR: Chance.ROUGE,
    Chance.ROUGE: Chance.NOIR,
    Chance.COULEUR: Chance.INVERSE,
    Chance.INVERSE: Chance.COULEUR,
}

COLOUR_CHANCES = frozenset({Chance.COULEUR, Chance.INVERSE})
ROW_CHANCES = frozenset({Chance.NOIR, Chance.ROUGE})
