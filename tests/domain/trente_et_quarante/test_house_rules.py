"""House rules: presets, option defaults, text overrides, validation, canonical round trip."""

from __future__ import annotations

from fractions import Fraction

import pytest

from domain.errors import InvalidArgument
from domain.trente_et_quarante.rules import (
    PRESET_NAMES,
    ChanceSet,
    ColourChancesOnRefait31,
    CutCardRule,
    HouseRules,
    PrisonRefait31Rule,
    Refait31Rule,
    house_rules,
)


def test_francaise_is_the_default_preset() -> None:
    rules = house_rules()
    assert rules == house_rules("francaise", {})
    assert rules.preset == "francaise"
    assert rules.decks == 6
    assert rules.cut_card is CutCardRule.VOID_COUP
    assert rules.chances is ChanceSet.ALL
    assert rules.allow_opposed_stakes is False
    assert rules.refait31 is Refait31Rule.PLAYER_CHOICE
    assert rules.prison_refait31 is PrisonRefait31Rule.SECOND_PRISON
    assert rules.couleur_inverse_on_refait31 is ColourChancesOnRefait31.RETURNED
    assert rules.insurance_rate == Fraction(1, 100)
    assert (rules.half_withdrawal, rules.move_imprisoned) == (False, False)
    assert (rules.min_stake, rules.max_stake, rules.currency) == (100, 1_000_000, "EUR")


def test_espanola() -> None:
    rules = house_rules("espanola")
    assert rules.refait31 is Refait31Rule.PARTAGE
    assert rules.couleur_inverse_on_refait31 is ColourChancesOnRefait31.LIKE_COLOURS
    assert rules.cut_card is CutCardRule.VOID_COUP
    assert rules.prison_refait31 is PrisonRefait31Rule.SECOND_PRISON  # the option default
    assert (rules.half_withdrawal, rules.move_imprisoned) == (False, False)


def test_italiana() -> None:
    rules = house_rules("italiana")
    assert rules.refait31 is Refait31Rule.PRISON
    assert rules.couleur_inverse_on_refait31 is ColourChancesOnRefait31.LIKE_COLOURS
    assert rules.prison_refait31 is PrisonRefait31Rule.SECOND_PRISON
    assert (rules.half_withdrawal, rules.move_imprisoned) == (True, True)


@pytest.mark.parametrize(
    ("text", "rate"),
    [
        ("1%", Fraction(1, 100)),
        ("0.5%", Fraction(1, 200)),
        ("1/100", Fraction(1, 100)),
        ("0", Fraction(0)),
        ("0.01", Fraction(1, 100)),
        (" 2 % ", Fraction(1, 50)),
    ],
)
def test_insurance_rate_texts(text: str, rate: Fraction) -> None:
    assert house_rules("francaise", {"insurance_rate": text}).insurance_rate == rate


def test_text_overrides_of_every_kind() -> None:
    rules = house_rules(
        "italiana",
        {
            "decks": "2",
            "allow_opposed_stakes": "true",
            "half_withdrawal": "false",
            "cut_card": "finish_coup",
            "chances": "noir_rouge",
            "prison_refait31": "lost",
            "min_stake": "5",
            "max_stake": "500",
            "currency": "CHF",
            "refait31": "partage",
            "couleur_inverse_on_refait31": "returned",
            "move_imprisoned": "FALSE",
        },
    )
    assert rules.preset == "italiana"
    assert rules.decks == 2 and rules.allow_opposed_stakes and not rules.half_withdrawal
    assert rules.cut_card is CutCardRule.FINISH_COUP and rules.chances is ChanceSet.NOIR_ROUGE
    assert rules.prison_refait31 is PrisonRefait31Rule.LOST
    assert (rules.min_stake, rules.max_stake, rules.currency) == (5, 500, "CHF")
    assert not rules.move_imprisoned


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_options_round_trip(preset: str) -> None:
    rules = house_rules(preset, {"insurance_rate": "0.5%", "max_stake": "2000"})
    options = rules.options()
    assert set(options) == {
        "preset",
        "decks",
        "cut_card",
        "chances",
        "allow_opposed_stakes",
        "refait31",
        "prison_refait31",
        "couleur_inverse_on_refait31",
        "insurance_rate",
        "half_withdrawal",
        "move_imprisoned",
        "min_stake",
        "max_stake",
        "currency",
        "prisoners_at_close",
    }
    assert all(isinstance(v, str) for v in options.values())
    assert options["insurance_rate"] == "1/200"
    assert HouseRules.from_options(options) == rules
    assert HouseRules.from_options(options).options() == options


def test_canonical_text_of_the_default() -> None:
    options = house_rules().options()
    assert options["insurance_rate"] == "1/100"
    assert options["allow_opposed_stakes"] == "false"
    assert options["max_stake"] == "1000000"
    assert options["cut_card"] == "void_coup"


def test_unknown_preset() -> None:
    with pytest.raises(InvalidArgument) as err:
        house_rules("monaco")
    assert err.value.field == "preset"


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"colour": "red"}, "overrides.colour"),
        ({"preset": "italiana"}, "overrides.preset"),
        ({"decks": "0"}, "overrides.decks"),
        ({"decks": "9"}, "overrides.decks"),
        ({"decks": "six"}, "overrides.decks"),
        ({"min_stake": "0"}, "overrides.min_stake"),
        ({"min_stake": "2000000"}, "overrides.min_stake"),
        ({"max_stake": "50"}, "overrides.max_stake"),
        ({"min_stake": "10", "max_stake": "9"}, "overrides.max_stake"),
        ({"currency": "eur"}, "overrides.currency"),
        ({"currency": "EURO"}, "overrides.currency"),
        ({"insurance_rate": "abc"}, "overrides.insurance_rate"),
        ({"insurance_rate": "-1%"}, "overrides.insurance_rate"),
        ({"insurance_rate": "100%"}, "overrides.insurance_rate"),
        ({"insurance_rate": "1/0"}, "overrides.insurance_rate"),
        ({"allow_opposed_stakes": "maybe"}, "overrides.allow_opposed_stakes"),
        ({"refait31": "toss"}, "overrides.refait31"),
        ({"cut_card": "ignore"}, "overrides.cut_card"),
    ],
)
def test_bad_overrides_name_the_option(overrides: dict[str, str], field: str) -> None:
    with pytest.raises(InvalidArgument) as err:
        house_rules("francaise", overrides)
    assert err.value.field == field


def test_from_options_rejects_unknown_keys() -> None:
    options = house_rules().options() | {"jackpot": "1"}
    with pytest.raises(InvalidArgument) as err:
        HouseRules.from_options(options)
    assert err.value.field == "options.jackpot"
