"""Amounts as a person reads them: major units with the currency's own decimals (ISO 4217)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from domain.currency import MINOR_UNITS, check_currency, format_minor, major
from domain.errors import InvalidArgument
from domain.trente_et_quarante.rules import house_rules


@pytest.mark.parametrize(("amount", "code", "shown"), [
    (50000, "EUR", "500.00 EUR"), (1, "EUR", "0.01 EUR"), (0, "EUR", "0.00 EUR"),
    (-150, "EUR", "-1.50 EUR"), (500, "JPY", "500 JPY"), (1500, "KWD", "1.500 KWD"),
    (7, "BHD", "0.007 BHD"), (123456789, "CHF", "1234567.89 CHF"), (90, "CLP", "90 CLP"),
    (Decimal("1234.567"), "EUR", "12.35 EUR"), (Decimal("-0.5"), "JPY", "0 JPY"),
])
def test_amounts_in_major_units(amount: int | Decimal, code: str, shown: str) -> None:
    assert format_minor(amount, code) == shown


def test_the_table_has_iso_4217_minor_units() -> None:
    assert {MINOR_UNITS[c] for c in ("JPY", "KRW", "ISK", "XAF")} == {0}
    assert {MINOR_UNITS[c] for c in ("KWD", "BHD", "JOD", "OMR", "TND", "IQD", "LYD")} == {3}
    assert {MINOR_UNITS[c] for c in ("EUR", "USD", "GBP", "CHF", "MXN")} == {2}
    assert set(MINOR_UNITS.values()) == {0, 2, 3}
    assert all(len(c) == 3 and c.isupper() for c in MINOR_UNITS)
    assert "XAU" not in MINOR_UNITS and "XXX" not in MINOR_UNITS  # no money at a table


def test_a_code_outside_the_table_is_refused_and_shown_as_minor_units() -> None:
    with pytest.raises(InvalidArgument) as refused:
        check_currency("XYZ")
    assert (refused.value.field, refused.value.reason) == ("currency", "BAD_CURRENCY")
    assert check_currency("JPY") == "JPY"
    assert format_minor(5, "XYZ") == "5 minor XYZ" and major(5, "XYZ") == "5"
    with pytest.raises(InvalidArgument) as option:
        house_rules("francaise", {"currency": "XYZ"})
    assert option.value.field == "overrides.currency"
