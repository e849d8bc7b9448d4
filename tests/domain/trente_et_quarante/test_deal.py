"""The deal: rows until past 30, the cut card under both house rules, the vectors' coups."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from domain.cards import Card
from domain.errors import InvalidArgument
from domain.shuffle import Sabot
from domain.trente_et_quarante.chances import Row
from domain.trente_et_quarante.deal import DealtCard, deal_coup, deal_shoe
from domain.trente_et_quarante.outcome import Result, judge
from domain.trente_et_quarante.rules import CutCardRule

Build = Callable[[str], tuple[Card, ...]]
VOID, FINISH = CutCardRule.VOID_COUP, CutCardRule.FINISH_COUP


def codes(cards: tuple[Card, ...]) -> str:
    return " ".join(c.code for c in cards)


def test_vector1_first_three_coups(vector1: Sabot) -> None:
    coups = deal_shoe(vector1.cards, VOID)[:3]
    expected = [
        ("6H 8D 7S QH", 31, "QD 6C 8C AS 6D", 31),
        ("AD AD JH KD 6C 3D", 31, "KH 3H 8C KS", 31),
        ("KS JH 7C TS", 37, "QD 8S TC JC", 38),
    ]
    position = 0
    for coup, (noir, noir_total, rouge, rouge_total) in zip(coups, expected, strict=True):
        assert coup.start == position
        assert (codes(coup.noir), coup.noir_total) == (noir, noir_total)
        assert (codes(coup.rouge), coup.rouge_total) == (rouge, rouge_total)
        assert coup.complete and not coup.cut_card_reached
        position = coup.next_position
    assert position == 9 + 10 + 8


def test_vector2_first_coup(vector2: Sabot) -> None:
    coup = deal_coup(vector2.cards, 0, VOID)
    assert codes(coup.noir) == "3D 9H 4H 8C KH" and coup.noir_total == 34
    assert codes(coup.rouge) == "8H 8S 5S AD 7C TH" and coup.rouge_total == 39
    outcome = judge(coup)
    assert outcome.result is Result.NOIR and outcome.couleur is False


def test_dealt_cards_carry_row_position_and_running_total(vector1: Sabot) -> None:
    coup = deal_coup(vector1.cards, 0, VOID)
    assert coup.cards[0] == DealtCard(Row.NOIR, vector1.cards[0], 0, 6)
    assert [(d.row, d.position, d.running_total) for d in coup.cards] == [
        (Row.NOIR, 0, 6),
        (Row.NOIR, 1, 14),
        (Row.NOIR, 2, 21),
        (Row.NOIR, 3, 31),
        (Row.ROUGE, 4, 10),
        (Row.ROUGE, 5, 16),
        (Row.ROUGE, 6, 24),
        (Row.ROUGE, 7, 25),
        (Row.ROUGE, 8, 31),
    ]


# 11 cards: the cut card lies before position 6, in the middle of the Rouge row.
MID_ROUGE = "TS TS TS AS TH TH TD 5C 2C 3C 4C"


def test_cut_card_in_the_rouge_row_voids_the_coup_under_void_coup(cards: Build) -> None:
    coup = deal_coup(cards(MID_ROUGE), 0, VOID)
    assert codes(coup.noir) == "TS TS TS AS" and coup.noir_total == 31
    assert codes(coup.rouge) == "TH TH" and coup.rouge_total is None
    assert coup.cut_card_reached and not coup.complete
    assert coup.next_position == 6
    outcome = judge(coup)
    assert outcome.result is Result.VOID
    assert outcome.winning_chances == frozenset() and outcome.couleur is None
    assert outcome.announcement.startswith("Coup nul")


def test_cut_card_in_the_rouge_row_is_finished_under_finish_coup(cards: Build) -> None:
    coup = deal_coup(cards(MID_ROUGE), 0, FINISH)
    assert codes(coup.rouge) == "TH TH TD 5C" and coup.rouge_total == 35
    assert coup.cut_card_reached and coup.complete
    assert coup.next_position == 8
    outcome = judge(coup)
    assert outcome.result is Result.NOIR and outcome.couleur is True


def test_finish_coup_is_void_when_the_sabot_runs_out(cards: Build) -> None:
    coup = deal_coup(cards("TS TS TS AS TH 2H 2D 2C 2S AC"), 0, FINISH)
    assert codes(coup.rouge) == "TH 2H 2D 2C 2S AC"
    assert coup.cut_card_reached and not coup.complete and coup.rouge_total is None
    assert judge(coup).result is Result.VOID


def test_a_coup_ending_just_before_the_cut_card_leaves_the_next_one_void(cards: Build) -> None:
    sabot = cards("TS TS TS AS TH TH TH AH 2C 3C 4C 5C 6C")  # cut card before position 8
    first = deal_coup(sabot, 0, VOID)
    assert first.complete and not first.cut_card_reached and first.next_position == 8
    second = deal_coup(sabot, 8, VOID)
    assert second.cards == () and second.cut_card_reached and not second.complete
    assert second.next_position == 8
    assert deal_shoe(sabot, VOID) == (first, second)


@pytest.mark.parametrize("position", [-1, 14])
def test_a_position_past_the_end_is_invalid(cards: Build, position: int) -> None:
    sabot = cards("TS TS TS AS TH TH TH AH 2C 3C 4C 5C 6C")
    with pytest.raises(InvalidArgument) as err:
        deal_coup(sabot, position, VOID)
    assert err.value.field == "position"


def test_a_whole_shoe_stops_at_the_cut_card(vector1: Sabot) -> None:
    for rule in (VOID, FINISH):
        coups = deal_shoe(vector1.cards, rule)
        assert all(not c.cut_card_reached for c in coups[:-1])
        assert coups[-1].cut_card_reached
        for before, after in itertools.pairwise(coups):
            assert after.start == before.next_position
    void_last = deal_shoe(vector1.cards, VOID)[-1]
    assert all(d.position < 312 - 5 for d in void_last.cards)
