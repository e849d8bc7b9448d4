"""Points: tantos and perros, the cartón (the seed's points column), the ronda."""

from __future__ import annotations

import pytest
from cuarenta_support import cards, rules

from domain.cuarenta.scoring import (
    CARTON_MINIMUM,
    SEED_CARTON_TABLE,
    Announcement,
    Source,
    announcement,
    carton,
    ronda_rank,
    tally,
    withheld,
)
from domain.errors import InvalidArgument

# The seed's §4.1 table, its "Número de Cartas" and "Puntos" columns, typed in again.
SEED_POINTS_COLUMN = {
    20: 6, 21: 7, 22: 8, 23: 9, 24: 10, 25: 11, 26: 12, 27: 13, 28: 14, 29: 15, 30: 16,
    31: 17, 32: 18, 33: 19, 34: 20, 35: 21, 36: 22, 37: 23, 38: 24, 39: 25, 40: 26,
}  # fmt: skip
# … and its "Tantos" column.
SEED_TANTOS_COLUMN = {
    20: 3, 21: 4, 22: 4, 23: 5, 24: 5, 25: 6, 26: 6, 27: 7, 28: 7, 29: 8, 30: 8,
    31: 9, 32: 9, 33: 10, 34: 10, 35: 11, 36: 11, 37: 12, 38: 12, 39: 13, 40: 13,
}  # fmt: skip


def test_the_carton_follows_the_seeds_points_column() -> None:
    r = rules()
    for n, points in SEED_POINTS_COLUMN.items():
        assert carton(r, n) == points == n - 14
    assert carton(r, 20) == 6 and carton(r, 21) == 7 and carton(r, 40) == 26


def test_under_twenty_cards_nothing() -> None:
    assert CARTON_MINIMUM == 20
    assert [carton(rules(), n) for n in range(20)] == [0] * 20


def test_up_to_tanto_is_the_tantos_column() -> None:
    r = rules(carton_rounding="up_to_tanto")
    for n, tantos in SEED_TANTOS_COLUMN.items():
        assert carton(r, n) == 2 * tantos
    assert carton(r, 21) == 8  # the seed's "21: 4 tantos", where its points column says 7


def test_the_seeds_table_is_held_as_written() -> None:
    assert {n: p for n, (_, p) in SEED_CARTON_TABLE.items()} == SEED_POINTS_COLUMN
    assert {n: t for n, (t, _) in SEED_CARTON_TABLE.items()} == SEED_TANTOS_COLUMN


@pytest.mark.parametrize("n", [-1, 41, True])
def test_a_count_out_of_range(n: int) -> None:
    with pytest.raises(InvalidArgument) as err:
        carton(rules(), n)
    assert err.value.field == "cards"


@pytest.mark.parametrize(
    ("points", "perros", "tantos", "odd", "text"),
    [
        (0, 0, 0, 0, "0 points"),
        (2, 0, 1, 0, "2 points (1 tanto)"),
        (10, 1, 0, 0, "10 points (1 perro)"),  # 5 tantos = 1 perro
        (24, 2, 2, 0, "24 points (2 perros + 2 tantos)"),
        (7, 0, 3, 1, "7 points (3 tantos + 1 point)"),
        (40, 4, 0, 0, "40 points (4 perros)"),  # "El juego se gana al completar 4 Perros"
    ],
)
def test_tally_shows_perros_and_tantos(
    points: int, perros: int, tantos: int, odd: int, text: str
) -> None:
    t = tally(points)
    assert (t.perros, t.tantos, t.odd) == (perros, tantos, odd)
    assert t.perros * 10 + t.tantos * 2 + t.odd == points
    assert str(t) == text


def test_ronda_is_three_of_a_rank_in_the_five() -> None:
    r = rules()
    assert announcement(r, cards("5S 5H 5D KC 2S")) is Announcement.RONDA
    assert ronda_rank(cards("5S 5H 5D KC 2S")) == "5"
    assert announcement(r, cards("5S 5H KD KC 2S")) is None  # two pairs are nothing
    assert ronda_rank(cards("5S 5H KD KC 2S")) is None


def test_four_of_a_rank() -> None:
    four = cards("QS QH QD QC 2S")
    assert announcement(rules(), four) is Announcement.FOUR_OF_A_KIND
    assert announcement(rules(four_of_a_kind="ronda"), four) is Announcement.RONDA


@pytest.mark.parametrize(
    ("rule", "held"),
    [
        ("off", set()),
        ("no_limpia", {Source.LIMPIA}),
        ("caida_only", {Source.LIMPIA, Source.RONDA, Source.CARTON}),
    ],
)
def test_what_the_38_point_rule_withholds(rule: str, held: set[Source]) -> None:
    r = rules(rule_38=rule)
    assert {s for s in Source if withheld(r, s, 38)} == held
    assert {s for s in Source if withheld(r, s, 39)} == held
    assert not any(withheld(r, s, 37) for s in Source)
