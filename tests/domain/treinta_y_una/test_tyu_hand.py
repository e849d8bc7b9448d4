"""What a hand is worth: aces 1 or 11, figures 10, the treinta y una real, over 31."""

from __future__ import annotations

from itertools import combinations

import pytest
from tyu_tables import DECK, cards

from domain.cards import card_from_code
from domain.errors import InvalidArgument
from domain.treinta_y_una.hand import evaluate, parse_hand


@pytest.mark.parametrize(
    ("codes", "total", "real", "bust", "aces_high"),
    [
        ("1O 12B 11C", 31, True, False, 1),  # the example: two figures and an ace
        ("1E 10O 10C", 31, True, False, 1),  # the sota is a figure ("princesa", seed 003)
        ("1O 5C 7E", 23, False, False, 1),  # the ace counts 11
        ("1O 10C 10E 5B", 26, False, False, 0),  # the ace counts 1: 36 would be over 31
        ("1O 1C 5B", 27, False, False, 2),  # two aces at 11: 22 + 5
        ("1O 1C 1B", 23, False, False, 2),  # the third ace at 1: 33 would be over
        ("1O 1C 1B 1E", 24, False, False, 2),
        ("10O 11C 5B 6E", 31, False, False, 0),  # a plain 31: four cards
        ("1O 12B 11C 10O", 31, False, False, 0),  # three figures and an ace: 31, not real
        ("12O 12C 12E", 30, False, False, 0),  # three figures
        ("7O 7C 7E 7B", 28, False, False, 0),
        ("10O 11C 7B 5E", 32, False, True, 0),  # over 31: the lowest total
        ("1O 10O 11C 7B 5E", 33, False, True, 0),  # the ace at 1 cannot save it
        ("2O 3O 4O", 9, False, False, 0),
    ],
)
def test_hand_examples(codes: str, total: int, real: bool, bust: bool, aces_high: int) -> None:
    value = evaluate(cards(codes))
    assert (value.total, value.real, value.bust, value.aces_high) == (total, real, bust, aces_high)
    assert value.thirty_one is (total == 31)


def test_a_real_is_exactly_three_cards_two_figures_and_an_ace() -> None:
    figures = [c for c in DECK if c.rank in ("10", "11", "12")]
    aces = [c for c in DECK if c.rank == "1"]
    assert len(figures) == 12 and len(aces) == 4
    reals = [h for h in combinations(DECK, 3) if evaluate(h).real]
    assert len(reals) == 4 * 66  # an ace of four, two figures of twelve
    for hand in reals:
        assert sorted(c.rank in ("10", "11", "12") for c in hand) == [False, True, True]


def test_three_cards_make_31_only_as_a_real_and_are_never_over() -> None:
    for hand in combinations(DECK, 3):
        value = evaluate(hand)
        assert value.thirty_one is value.real
        assert not value.bust


def test_best_total_is_the_highest_at_most_31() -> None:
    """Brute force over every choice of aces at 1 or 11, on every 4-card hand with an ace."""
    for hand in combinations(DECK[:14], 4):  # oros 1-12 and copas 1-2: aces, small, figures
        low = sum(c.value for c in hand)
        aces = sum(c.rank == "1" for c in hand)
        totals = [low + 10 * k for k in range(aces + 1)]
        fits = [t for t in totals if t <= 31]
        assert evaluate(hand).total == (max(fits) if fits else low)


def test_parse_hand_reads_spanish_codes() -> None:
    assert parse_hand(["1o", "12B", " 11c "]) == cards("1O 12B 11C")


@pytest.mark.parametrize(
    ("codes", "field", "reason"),
    [
        (["1O", "8O"], "cards[1]", "UNKNOWN_CARD"),  # no 8 in a Spanish deck
        (["AS"], "cards[0]", "UNKNOWN_CARD"),  # a French card
        (["1O", "12B", "1O"], "cards[2]", "DUPLICATE_CARD"),
        ([], "cards", "EMPTY_HAND"),
    ],
)
def test_parse_hand_refuses(codes: list[str], field: str, reason: str) -> None:
    with pytest.raises(InvalidArgument) as err:
        parse_hand(codes)
    assert (err.value.field, err.value.reason) == (field, reason)


def test_a_french_card_is_not_spanish() -> None:
    from domain.treinta_y_una.hand import check_spanish

    with pytest.raises(InvalidArgument) as err:
        check_spanish([card_from_code("AS")], "shoe")
    assert (err.value.field, err.value.reason) == ("shoe", "NOT_SPANISH")
