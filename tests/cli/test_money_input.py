"""Money typed as it is shown (issue 22): ``--amount 500.00`` in major units with the currency's
decimals, ``--amount-minor`` for scripts; a bare whole number is refused with a hint (it meant
minor units in the previous release: a cashier typing the screen's 500 paid out 5.00)."""

from __future__ import annotations

import json

import pytest

from services.cli.exits import Exit

from .conftest import Served
from .test_bad_input import one_line, run


def balance(served: Served, account: str, capsys: pytest.CaptureFixture[str]) -> int:
    code, out, _ = run(["account", "get", account, *served.admin(), "--format", "json"], capsys)
    assert code == 0, out
    return int(json.loads(out)["balance"].get("amount_minor", 0))


def test_major_units_move_what_they_say(served: Served,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["account", "open", "money-a", *served.admin()], capsys)[0] == 0
    code, out, _ = run(["account", "deposit", "money-a", "--amount", "500.00",
                        *served.admin()], capsys)
    assert code == 0 and "500.00 EUR" in out, out
    assert balance(served, "money-a", capsys) == 50_000
    code, out, _ = run(["account", "deposit", "money-a", "--amount-minor", "50000",
                        *served.admin()], capsys)
    assert code == 0 and balance(served, "money-a", capsys) == 100_000


def test_a_bare_whole_number_is_refused_with_a_hint(served: Served,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["account", "deposit", "anne", "--amount", "500", *served.admin()],
                       capsys)
    one_line(code, err)
    assert code == Exit.USAGE
    assert "500.00 EUR" in err and "--amount-minor 500" in err, err


@pytest.mark.parametrize("typed", ["5.5", "5.555", "-5.00", "5,00", "five", "0.00", ""])
def test_amounts_that_are_not_the_currencys_form(typed: str, served: Served,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["account", "deposit", "anne", "--amount", typed, *served.admin()],
                       capsys)
    one_line(code, err)
    assert code == Exit.USAGE and "--amount" in err, err


def test_amount_and_amount_minor_are_one_or_the_other(
        served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["account", "deposit", "anne", "--amount", "1.00", "--amount-minor",
                        "100", *served.admin()], capsys)
    one_line(code, err)
    assert code == Exit.USAGE
    code, _, err = run(["account", "deposit", "anne", *served.admin()], capsys)
    one_line(code, err)
    assert code == Exit.USAGE


@pytest.mark.parametrize(("currency", "typed", "minor"), [
    ("JPY", "500", 500), ("KWD", "1.500", 1500), ("CHF", "1234.56", 123_456)])
def test_each_currency_reads_its_own_decimals(currency: str, typed: str, minor: int,
                                              served: Served,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    account = f"money-{currency.lower()}"
    assert run(["account", "open", account, "--currency", currency, *served.admin()],
               capsys)[0] == 0
    code, _, err = run(["account", "deposit", account, "--amount", typed, "--currency",
                        currency, *served.admin()], capsys)
    assert code == 0, err
    assert balance(served, account, capsys) == minor


def test_the_currency_read_is_the_currency_sent(served: Served,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """500.00 read as EUR (the default) on a JPY account is refused by the server, never
    moved as 50,000 yen."""
    assert run(["account", "open", "money-yen", "--currency", "JPY", *served.admin()],
               capsys)[0] == 0
    code, _, err = run(["account", "deposit", "money-yen", "--amount", "500.00",
                        *served.admin()], capsys)
    one_line(code, err)
    assert code == Exit.REFUSED and "JPY" in err, err
    assert balance(served, "money-yen", capsys) == 0
