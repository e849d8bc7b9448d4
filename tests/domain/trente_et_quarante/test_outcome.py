"""Judging a coup: the winner, Couleur/Inverse, the refait, the croupier's words."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from domain.cards import Card
from domain.shuffle import Sabot
from domain.trente_et_quarante.chances import Chance
from domain.trente_et_quarante.deal import deal_coup, deal_shoe
from domain.trente_et_quarante.outcome import Result, judge
from domain.trente_et_quarante.rules import CutCardRule

Build = Callable[[str], tuple[Card, ...]]


def test_vector1_outcomes(vector1: Sabot) -> None:
    one, two, three = (judge(c) for c in deal_shoe(vector1.cards, CutCardRule.VOID_COUP)[:3])
    for refait in (one, two):
        assert refait.result is Result.REFAIT and refait.refait_total == 31
        assert refait.is_refait31 and refait.couleur is None
        assert refait.winning_chances == frozenset()
        assert refait.announcement == "un après"
    assert three.result is Result.NOIR and three.couleur is True
    assert three.winning_chances == {Chance.NOIR, Chance.COULEUR}
    assert three.announcement == "sept, huit. Rouge perd, et la couleur gagne"
    assert not three.is_refait31


def test_vector2_coup1_noir_and_inverse(vector2: Sabot) -> None:
    outcome = judge(deal_coup(vector2.cards, 0, CutCardRule.VOID_COUP))
    assert outcome.winning_chances == {Chance.NOIR, Chance.INVERSE}
    assert outcome.announcement == "quatre, neuf. Rouge perd, et couleur"


@pytest.mark.parametrize(
    ("sabot", "result", "chances", "words"),
    [
        # Rouge wins, first card red: Couleur.
        (
            "TH TS TS 4C  TS TS TS 2C",
            Result.ROUGE,
            {Chance.ROUGE, Chance.COULEUR},
            "quatre, deux. Rouge gagne, et couleur",
        ),
        # Rouge wins, first card black: Inverse.
        (
            "TC TS TS 4C  TS TS TS AC",
            Result.ROUGE,
            {Chance.ROUGE, Chance.INVERSE},
            "quatre, un. Rouge gagne, et la couleur perd",
        ),
        # Noir wins, first card black: Couleur.
        (
            "TC TS TS AC  TS TS TS 5C",
            Result.NOIR,
            {Chance.NOIR, Chance.COULEUR},
            "un, cinq. Rouge perd, et la couleur gagne",
        ),
        # Noir wins, first card red: Inverse; 40 is said "quarante".
        (
            "TD TS TS 6C  TS TS TS TC",
            Result.NOIR,
            {Chance.NOIR, Chance.INVERSE},
            "six, quarante. Rouge perd, et couleur",
        ),
    ],
)
def test_the_four_results_and_their_words(
    cards: Build, sabot: str, result: Result, chances: set[Chance], words: str
) -> None:
    outcome = judge(deal_coup(cards(sabot), 0, CutCardRule.FINISH_COUP))
    assert outcome.result is result
    assert outcome.winning_chances == chances
    assert outcome.announcement == words


@pytest.mark.parametrize(
    ("last", "total", "words"),
    [("2C", 32, "deux après"), ("7C", 37, "sept après"), ("TC", 40, "quarante après")],
)
def test_a_refait_above_31_is_said_units_apres(
    cards: Build, last: str, total: int, words: str
) -> None:
    sabot = cards(f"TS TS TS {last} TH TH TH {last}")
    outcome = judge(deal_coup(sabot, 0, CutCardRule.FINISH_COUP))
    assert outcome.result is Result.REFAIT and outcome.refait_total == total
    assert not outcome.is_refait31
    assert outcome.announcement == words
