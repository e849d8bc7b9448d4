"""The table rules: options as data, their defaults, the presets, errors naming the option."""

from __future__ import annotations

from fractions import Fraction

import pytest

from domain.errors import InvalidArgument
from domain.treinta_y_una.rules import (
    OPTION_NAMES,
    OPTIONS,
    PRESETS,
    BankCover,
    BankWithout31,
    BustRule,
    Several31,
    TableRules,
    TieRule,
    table_rules,
    with_options,
)


def test_defaults_read_rules_md() -> None:
    rules = table_rules()
    assert rules.preset == "clasica"
    assert rules.tie is TieRule.BANKER_WINS
    assert rules.bust is BustRule.LOSES_AT_ONCE
    assert rules.real_outranks_plain is True
    assert rules.bank_cover is BankCover.WORST_CASE
    assert rules.several_31 is Several31.FIRST_IN_TURN
    assert rules.bank_without_31 is BankWithout31.STAYS
    assert rules.commission == 0
    assert rules.turn_seconds == 60
    assert 2 <= rules.max_players <= 13
    assert rules.min_stake <= rules.max_stake


def test_every_option_has_a_source_and_a_field() -> None:
    names = [f for f in TableRules.__dataclass_fields__ if f != "preset"]
    assert list(OPTION_NAMES) == names
    assert all(o.source for o in OPTIONS)


def test_preset_empate_nulo_reads_the_seeds_second_sentence() -> None:
    assert table_rules("empate_nulo").tie is TieRule.VOID_CARRY_OVER
    assert set(PRESETS) == {"clasica", "empate_nulo"}


def test_overrides_are_text() -> None:
    rules = table_rules(
        "clasica",
        {
            "tie": "VOID_CARRY_OVER",
            "bust": "at_showdown",
            "real_outranks_plain": "no",
            "bank_cover": "even_money",
            "several_31": "real_first",
            "bank_without_31": "passes_to_mano",
            "commission": "5%",
            "turn_seconds": "0",
            "max_players": "13",
            "min_stake": "1_000",
            "max_stake": "50000",
            "currency": "MXN",
        },
    )
    assert rules.commission == Fraction(1, 20)
    assert rules.min_stake == 1000 and rules.turn_seconds == 0
    assert not rules.real_outranks_plain


@pytest.mark.parametrize("text", ["5%", "1/20", "0.05"])
def test_commission_is_exact(text: str) -> None:
    assert table_rules(overrides={"commission": text}).commission == Fraction(1, 20)


def test_options_round_trip() -> None:
    rules = table_rules("empate_nulo", {"commission": "2.5%", "bank_cover": "even_money"})
    text = rules.options()
    assert text["preset"] == "empate_nulo" and text["commission"] == "1/40"
    assert text["real_outranks_plain"] == "true"
    assert TableRules.from_options(text) == rules


@pytest.mark.parametrize(
    ("preset", "overrides", "field", "reason"),
    [
        ("nope", {}, "preset", "UNKNOWN_PRESET"),
        ("clasica", {"colour": "red"}, "overrides.colour", "UNKNOWN_OPTION"),
        ("clasica", {"tie": "split"}, "overrides.tie", "BAD_VALUE"),
        ("clasica", {"real_outranks_plain": "maybe"}, "overrides.real_outranks_plain", "BAD_VALUE"),
        ("clasica", {"commission": "100%"}, "overrides.commission", "BAD_VALUE"),
        ("clasica", {"commission": "-1%"}, "overrides.commission", "BAD_VALUE"),
        ("clasica", {"turn_seconds": "ten"}, "overrides.turn_seconds", "BAD_VALUE"),
        ("clasica", {"turn_seconds": "3601"}, "overrides.turn_seconds", "OUT_OF_RANGE"),
        ("clasica", {"max_players": "14"}, "overrides.max_players", "OUT_OF_RANGE"),
        ("clasica", {"max_players": "1"}, "overrides.max_players", "OUT_OF_RANGE"),
        ("clasica", {"min_stake": "0"}, "overrides.min_stake", "OUT_OF_RANGE"),
        ("clasica", {"min_stake": "200000"}, "overrides.min_stake", "OUT_OF_RANGE"),
        ("clasica", {"max_stake": "10"}, "overrides.max_stake", "OUT_OF_RANGE"),
        ("clasica", {"currency": "euro"}, "overrides.currency", "BAD_VALUE"),
    ],
)
def test_bad_options_name_the_field(
    preset: str, overrides: dict[str, str], field: str, reason: str
) -> None:
    with pytest.raises(InvalidArgument) as err:
        table_rules(preset, overrides)
    assert (err.value.field, err.value.reason) == (field, reason)


def test_from_options_names_options_fields() -> None:
    text = table_rules().options()
    text["tie"] = "coin_toss"
    with pytest.raises(InvalidArgument) as err:
        TableRules.from_options(text)
    assert err.value.field == "options.tie"


def test_with_options_is_checked() -> None:
    rules = with_options(table_rules(), commission=Fraction(1, 10))
    assert rules.commission == Fraction(1, 10)
    with pytest.raises(InvalidArgument) as err:
        with_options(rules, max_players=20)
    assert err.value.field == "overrides.max_players"
