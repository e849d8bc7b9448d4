"""Cuarenta's options: defaults (seed 001, then Pagat), presets, text overrides, validation."""

from __future__ import annotations

from fractions import Fraction

import pytest

from domain.cuarenta.rules import (
    OPTION_DEFAULTS,
    OPTION_NAMES,
    OPTION_SOURCES,
    PRESET_NAMES,
    CaptureChoice,
    CartonRounding,
    CuarentaRules,
    FourOfAKind,
    Rule38,
    TableAtHandEnd,
    cuarenta_rules,
    with_options,
)
from domain.errors import InvalidArgument


def test_the_defaults_are_the_seed_then_pagat() -> None:
    r = cuarenta_rules()
    assert r == cuarenta_rules("seed", {})
    assert r.players == 2
    assert (r.caida_points, r.limpia_points, r.ronda_points) == (2, 2, 2)  # 1 tanto each
    assert r.carton_rounding is CartonRounding.POINTS_COLUMN  # the seed's points column
    assert r.rule_38 is Rule38.NO_LIMPIA  # Pagat
    assert r.four_of_a_kind is FourOfAKind.WINS_MATCH  # Pagat
    assert r.table_at_hand_end is TableAtHandEnd.NOBODY  # Pagat
    assert r.must_capture is False
    assert r.capture_choice is CaptureChoice.PLAYER
    assert r.caida_across_deals is True
    assert (r.stake, r.commission_rate, r.currency, r.turn_seconds) == (0, Fraction(0), "EUR", 60)


def test_presets() -> None:
    assert PRESET_NAMES == ("seed", "seed_literal", "pagat")
    literal = cuarenta_rules("seed_literal")
    assert literal.rule_38 is Rule38.OFF and literal.four_of_a_kind is FourOfAKind.RONDA
    assert cuarenta_rules("pagat").carton_rounding is CartonRounding.UP_TO_TANTO


def test_deals_per_hand_use_the_pack_exactly() -> None:
    assert cuarenta_rules().deals_per_hand == 4  # two players: four deals of five
    assert cuarenta_rules(overrides={"players": "4"}).deals_per_hand == 2  # four: two


def test_every_option_has_a_parser_a_default_and_a_source() -> None:
    assert set(OPTION_NAMES) == set(OPTION_DEFAULTS) == set(OPTION_SOURCES)
    assert set(cuarenta_rules().options()) == {"preset", *OPTION_NAMES}


def test_options_round_trip() -> None:
    r = cuarenta_rules(
        "pagat",
        {
            "players": "4",
            "rule_38": "caida_only",
            "four_of_a_kind": "ronda",
            "table_at_hand_end": "last_capturer",
            "must_capture": "yes",
            "capture_choice": "most_cards",
            "caida_across_deals": "off",
            "stake": "10_000",
            "commission_rate": "2.5%",
            "currency": "USD",
            "turn_seconds": "30",
        },
    )
    assert r.commission_rate == Fraction(1, 40) and r.stake == 10_000 and r.must_capture
    assert r.options()["commission_rate"] == "1/40"
    assert CuarentaRules.from_options(r.options()) == r


@pytest.mark.parametrize(
    ("option", "value", "reason"),
    [
        ("players", "3", "OUT_OF_RANGE"),
        ("players", "two", "BAD_VALUE"),
        ("rule_38", "sometimes", "BAD_VALUE"),
        ("must_capture", "maybe", "BAD_VALUE"),
        ("stake", "-1", "OUT_OF_RANGE"),
        ("commission_rate", "100%", "OUT_OF_RANGE"),
        ("commission_rate", "a lot", "BAD_VALUE"),
        ("turn_seconds", "0", "OUT_OF_RANGE"),
        ("currency", "euro", "BAD_VALUE"),
        ("colour", "red", "UNKNOWN_OPTION"),
    ],
)
def test_a_bad_option_names_its_field(option: str, value: str, reason: str) -> None:
    with pytest.raises(InvalidArgument) as err:
        cuarenta_rules(overrides={option: value})
    assert err.value.field == f"overrides.{option}"
    assert err.value.reason == reason


def test_an_unknown_preset() -> None:
    with pytest.raises(InvalidArgument) as err:
        cuarenta_rules("quito")
    assert (err.value.field, err.value.reason) == ("preset", "UNKNOWN_PRESET")


def test_with_options_validates() -> None:
    r = with_options(cuarenta_rules(), players=4)
    assert r.players == 4
    with pytest.raises(InvalidArgument):
        with_options(r, players=6)
