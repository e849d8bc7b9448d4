"""What a played card takes: the same rank, sums among A-7, the run upward, caída, limpia."""

from __future__ import annotations

import pytest
from cuarenta_support import cards, rules

from domain.cuarenta.captures import (
    BaseKind,
    Capture,
    CaptureKind,
    capture_named,
    every_capture_set,
    legal_captures,
)
from domain.cuarenta.ranks import NEXT_RANK, RANKS, parse_card
from domain.cuarenta.rules import CaptureChoice, Rule38


def sets(
    table: str, card: str, last: str | None = None, points: int = 0, **options: object
) -> list[list[str]]:
    return [
        [c.code for c in capture.taken]
        for capture in captures(table, card, last, points, **options)
    ]


def captures(
    table: str, card: str, last: str | None = None, points: int = 0, **options: object
) -> tuple[Capture, ...]:
    return legal_captures(
        rules(**options),
        cards(table),
        parse_card(card),
        parse_card(last) if last else None,
        points,
    )


# --- the seed's own examples (seed 001, §3.4) -------------------------------------------------


def test_seed_example_1_a_seven_takes_only_the_seven() -> None:
    # "En la mesa de juego están las cartas: 7, 4, 1. El jugador lanza la carta: 7, entonces el
    # jugador se lleva o ALZA solamente la carta 7."
    assert sets("7S 4H AD", "7C") == [["7S"]]


def test_seed_example_2_a_five_takes_two_three_then_six_seven_jack_not_king() -> None:
    # "... se lleva las cartas 3, 2 (3 + 2 = 5) y además las cartas consecutivas 6, 7, J a
    # excepción de la K, por no ser una carta consecutiva al no estar en la mesa la carta Q."
    (capture,) = captures("2C 3D 6S 7D JH KS", "5H")
    assert [c.code for c in capture.base] == ["2C", "3D"] and capture.base_kind is BaseKind.SUM
    assert [c.code for c in capture.run] == ["6S", "7D", "JH"]
    assert "KS" not in capture.codes
    assert capture.kind is CaptureKind.CAPTURE and capture.points == 0


def test_seed_example_3_ace_and_seven_never_make_a_jack() -> None:
    # "En la mesa están las cartas: 1, 7, J Q. El jugador lanza la carta J, luego el jugador NO
    # puede sumar cartas consecutivas 1 + 7 = J, solo se lleva las cartas consecutivas J y Q."
    assert sets("AS 7C JD QH", "JS") == [["JD", "QH"]]


# --- the rules behind them --------------------------------------------------------------------


def test_same_rank() -> None:
    assert sets("4H", "4S") == [["4H"]]
    assert sets("KH QD", "KS") == [["KH"]]


def test_nothing_to_take() -> None:
    assert sets("", "5H") == []
    assert sets("KS QD 6C", "5H") == []


def test_sums_only_among_ace_to_seven() -> None:
    assert sets("AS 4D 2C", "7H") == [["AS", "4D", "2C"]]  # three cards may sum
    assert sets("AS 3D 4C", "4H") == [["AS", "3D"], ["4C"]]  # sum or rank: two sets
    assert sets("2S 5D", "7H") == [["2S", "5D"]]
    # J, Q and K are never summed, and a J, Q or K never takes by a sum
    assert sets("JS AD", "QH") == []
    assert sets("3S 4D", "JH") == []
    # an ace cannot be a sum of two cards
    assert sets("AS", "AH") == [["AS"]]


def test_the_run_goes_upward_from_the_played_rank_seven_then_jack() -> None:
    assert sets("6S 7D JH QC KS", "6H") == [["6S", "7D", "JH", "QC", "KS"]]
    assert sets("7D JH", "7S") == [["7D", "JH"]]  # 7 is followed by J
    assert sets("5C 7D", "5S") == [["5C"]]  # a gap ends the run (no 6)
    assert sets("QC KD AH", "QS") == [["QC", "KD"]]  # the run does not wrap round to A
    assert NEXT_RANK["7"] == "J" and NEXT_RANK["K"] is None
    assert RANKS == ("A", "2", "3", "4", "5", "6", "7", "J", "Q", "K")


def test_the_run_needs_a_capture_first() -> None:
    assert sets("6S 7D", "5H") == []  # no 5 and no sum: 6 and 7 are not taken


def test_of_two_cards_of_a_rank_either_may_be_taken() -> None:
    # one capture per outcome, with the card longest on the table …
    assert sets("5S 5H 6D", "5C") == [["5S", "6D"]]
    assert sets("4S 5H 5D", "4C") == [["4S", "5H"]]  # the run takes one 5
    # … but a play may name the other, and the command line lists both
    r, table = rules(), cards("4S 5H 5D")
    assert capture_named(r, table, parse_card("4C"), cards("4S 5D")) is not None
    assert capture_named(r, table, parse_card("4C"), cards("4S 5H 5D")) is None  # one per rank
    every = [[c.code for c in x.taken] for x in every_capture_set(r, table, parse_card("4C"))]
    assert every == [["4S", "5H"], ["4S", "5D"]]
    every = [
        sorted(c.code for c in x.taken)
        for x in every_capture_set(r, cards("2S 2H 3D 3C"), parse_card("5C"))
    ]
    assert every == [["2S", "3D"], ["2S", "3C"], ["2H", "3D"], ["2H", "3C"]]


def test_caida_is_taking_by_rank_the_card_just_played() -> None:
    (capture,) = captures("QD 3H", "QS", last="QD")
    assert capture.caida and not capture.limpia
    assert capture.kind is CaptureKind.CAIDA and capture.points == 2
    # the same rank taken when it is not the card just played: no caída
    (plain,) = captures("QD 3H", "QS", last="3H")
    assert not plain.caida and plain.points == 0


def test_a_sum_that_takes_the_card_just_played_is_no_caida() -> None:
    (capture,) = captures("2S 3H 7D", "5C", last="3H")
    assert [c.code for c in capture.base] == ["2S", "3H"]
    assert not capture.caida and capture.points == 0


def test_with_two_of_a_rank_only_the_card_just_played_is_a_caida() -> None:
    by_set = {c.codes: c for c in captures("5S 5H 6D", "5C", last="5H")}
    assert len(by_set) == 2
    assert by_set[frozenset({"5H", "6D"})].kind is CaptureKind.CAIDA
    assert by_set[frozenset({"5S", "6D"})].kind is CaptureKind.CAPTURE


def test_limpia_clears_the_table() -> None:
    (capture,) = captures("2S 3H 6D", "5C")
    assert capture.limpia and capture.kind is CaptureKind.LIMPIA and capture.points == 2


def test_caida_and_limpia_together_are_four_points() -> None:
    (capture,) = captures("6D 7S", "6C", last="6D")
    assert capture.kind is CaptureKind.CAIDA_LIMPIA and capture.points == 4


@pytest.mark.parametrize(
    ("rule", "points", "caida_limpia", "limpia"),
    [
        (Rule38.OFF, 38, (4, 0), (2, 0)),
        (Rule38.NO_LIMPIA, 36, (4, 0), (2, 0)),  # at 36 the rule does not apply
        (Rule38.NO_LIMPIA, 38, (2, 2), (0, 2)),  # at 38 a limpia scores nothing
        (Rule38.NO_LIMPIA, 39, (2, 2), (0, 2)),  # nor at 39 (after an odd cartón)
        (Rule38.CAIDA_ONLY, 38, (2, 2), (0, 2)),
    ],
)
def test_the_38_point_rule(
    rule: Rule38, points: int, caida_limpia: tuple[int, int], limpia: tuple[int, int]
) -> None:
    (both,) = captures("6D 7S", "6C", last="6D", points=points, rule_38=rule.value)
    assert both.kind is CaptureKind.CAIDA_LIMPIA
    assert (both.points, both.withheld) == caida_limpia
    (clear,) = captures("6D 7S", "6C", points=points, rule_38=rule.value)
    assert clear.kind is CaptureKind.LIMPIA
    assert (clear.points, clear.withheld) == limpia


def test_points_options() -> None:
    (capture,) = captures("6D 7S", "6C", last="6D", caida_points=4, limpia_points=6)
    assert capture.points == 10


def test_most_cards_leaves_only_the_largest_sets() -> None:
    assert sets("AS 3D 4C", "4H", capture_choice=CaptureChoice.MOST_CARDS.value) == [["AS", "3D"]]
    assert sets("AS 3D 4C 5H", "4H", capture_choice="most_cards") == [
        ["AS", "3D", "5H"],
    ]
    assert sets("AS 3D 4C 5H", "4H") == [["AS", "3D", "5H"], ["4C", "5H"]]
