"""What the client commands print: money in major units with the currency (its own decimals)
and enum values in the game's words as text; minor units and the proto's names in JSON;
``--format json`` on every client command, ``health`` included."""

from __future__ import annotations

import argparse
import json
import re

import pytest

import services.cli as cli

from .conftest import Served
from .test_bad_input import commands, run


def test_money_in_major_units_as_text_minor_units_in_json(
        served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["account", "get", "anne", *served.admin()], capsys)
    assert code == 0 and re.search(r"^balance +1000\.00 EUR$", out, re.M), out
    code, out, _ = run(["account", "get", "anne", *served.admin(), "--format", "json"], capsys)
    assert json.loads(out)["balance"] == {"currency_code": "EUR", "amount_minor": "100000"}


@pytest.mark.parametrize(("currency", "deposit", "shown"), [
    ("JPY", "500", "500 JPY"), ("KWD", "1.500", "1.500 KWD"), ("CHF", "1234.56", "1234.56 CHF")])
def test_each_currency_with_its_own_decimals(served: Served, currency: str, deposit: str,
                                             shown: str, capsys: pytest.CaptureFixture[str]
                                             ) -> None:
    account = f"holder-{currency.lower()}"
    assert run(["account", "open", account, "--currency", currency, *served.admin()],
               capsys)[0] == 0
    code, out, _ = run(["account", "deposit", account, "--amount", deposit, "--currency",
                        currency, *served.admin()], capsys)
    assert code == 0 and shown in out, out


def test_enums_in_the_game_words(served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["stake", "place", served.coup, "--account", "bruno", "--chance",
                        "couleur", "--amount", "25.00", *served.admin()], capsys)
    assert code == 0
    assert re.search(r"\bcouleur\b", out) and "CHANCE_" not in out, out
    assert "REFAIT31_CHOICE" not in out and re.search(r"refait31_choice +none", out), out
    assert "25.00 EUR" in out
    code, out, _ = run(["stake", "list", served.table, *served.admin(), "--format", "json"],
                       capsys)
    assert code == 0 and "CHANCE_COULEUR" in out  # JSON keeps the proto's names


def test_the_balance_sheet_totals_per_currency(served: Served,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["balance-sheet", *served.office()], capsys)
    assert code == 0 and re.search(r"cage:eur +-2000\.00 EUR", out), out
    doc = json.loads(run(["balance-sheet", *served.office(), "--format", "json"], capsys)[1])
    assert {t["currency_code"]: int(t.get("amount_minor", 0)) for t in doc["totals"]}["EUR"] == 0
    assert all(b["currency_code"] for b in doc["balances"])


def test_health_as_json(served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["health", "--target", served.target, "--format", "json"], capsys)
    assert code == 0 and json.loads(out) == {"status": "SERVING"}


def test_every_client_command_takes_format_json() -> None:
    client = set(commands_of("services.cli.client"))
    assert client  # table open, ..., health
    parser = cli.build_parser()
    for command in client:
        p = parser
        for word in command.split():
            p = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)
                     ).choices[word]
        formats = [a for a in p._actions if "--format" in a.option_strings]
        assert formats and "json" in formats[0].choices, command


def commands_of(module: str) -> list[str]:
    import importlib

    parser = cli.Parser(prog="sabot")
    importlib.import_module(module).register(parser.add_subparsers())
    return commands(parser)


def test_a_report_row_as_text() -> None:
    from services.cli.client import human

    row = {"table": "tables/t1", "currency_code": "JPY", "handle_minor": "4240",
           "theoretical_win": "36.93", "interval_low": "-603.75", "hold_percent": "7.08",
           "handle_by_chance": [{"chance": "CHANCE_NOIR", "amount_minor": "1420"}]}
    assert human({"rows": [row]}) == {"rows": [{
        "table": "tables/t1", "currency_code": "JPY", "handle": "4240 JPY",
        "theoretical_win": "37 JPY", "interval_low": "-604 JPY", "hold_percent": "7.08",
        "handle_by_chance": [{"chance": "noir", "amount": "1420 JPY"}]}]}
