"""``sabot rules cuarenta …`` and ``sabot odds --game cuarenta``: answers, JSON, one-line errors."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from services.cli import main

Capsys = pytest.CaptureFixture[str]


def run(args: list[str], capsys: Capsys) -> tuple[int, str, str]:
    try:
        rc = main(args)
    except SystemExit as exc:  # argparse's own errors
        rc = int(exc.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


def captures(args: list[str], capsys: Capsys) -> list[dict[str, object]]:
    rc, out, err = run(["rules", "cuarenta", "captures", *args, "--format", "json"], capsys)
    assert rc == 0 and err == ""
    result = json.loads(out)
    assert isinstance(result, list)
    return result


def test_the_issue_s_example_text(capsys: Capsys) -> None:
    rc, out, err = run(
        ["rules", "cuarenta", "captures", "--table", "2C", "3D", "6S", "7D", "JH", "KS",
         "--card", "5H"],
        capsys,
    )
    assert rc == 0 and err == ""
    (line,) = out.splitlines()
    assert line.split()[:6] == ["2C", "3D", "6S", "7D", "JH", "capture"]
    assert "KS" not in line.split("[")[0]


def test_the_issue_s_example_json(capsys: Capsys) -> None:
    result = captures(["--table", "2C", "3D", "6S", "7D", "JH", "KS", "--card", "5H"], capsys)
    assert result == [
        {
            "cards": ["2C", "3D", "6S", "7D", "JH"],
            "kind": "capture",
            "points": 0,
            "withheld": 0,
            "base": ["2C", "3D"],
            "by": "sum",
            "run": ["6S", "7D", "JH"],
        }
    ]


def test_the_seed_s_other_examples(capsys: Capsys) -> None:
    (seven,) = captures(["--table", "7S", "4H", "AD", "--card", "7C"], capsys)
    assert seven["cards"] == ["7S"]
    (jack,) = captures(["--table", "AS", "7C", "JD", "QH", "--card", "JS"], capsys)
    assert jack["cards"] == ["JD", "QH"]


def test_every_set_is_listed_with_its_kind_and_points(capsys: Capsys) -> None:
    result = captures(["--table", "5S", "5H", "6D", "--card", "5C", "--last-played", "5H"], capsys)
    assert [(r["cards"], r["kind"], r["points"]) for r in result] == [
        (["5S", "6D"], "capture", 0),
        (["5H", "6D"], "caida", 2),
    ]
    (both,) = captures(["--table", "5H", "--card", "5C", "--last-played", "5H"], capsys)
    assert (both["kind"], both["points"]) == ("caida_limpia", 4)
    (late,) = captures(
        ["--table", "5H", "--card", "5C", "--last-played", "5H", "--score", "38"], capsys
    )
    assert (late["kind"], late["points"], late["withheld"]) == ("caida_limpia", 2, 2)
    assert captures(["--card", "5C"], capsys) == []  # an empty table


def test_nothing_to_take_in_text(capsys: Capsys) -> None:
    rc, out, _ = run(["rules", "cuarenta", "captures", "--table", "KS", "--card", "5H"], capsys)
    assert rc == 0 and out == "5H takes nothing: it stays on the table\n"


@pytest.mark.parametrize(
    ("n", "text"),
    [
        ("20", "20 cards: 6 points (3 tantos)\n"),
        ("21", "21 cards: 7 points (3 tantos + 1 point)\n"),
        ("40", "40 cards: 26 points (2 perros + 3 tantos)\n"),
        ("19", "19 cards: 0 points (under 20 cards nothing)\n"),
    ],
)
def test_carton(n: str, text: str, capsys: Capsys) -> None:
    rc, out, err = run(["rules", "cuarenta", "carton", n], capsys)
    assert (rc, out, err) == (0, text, "")


def test_carton_json_and_the_tantos_column(capsys: Capsys) -> None:
    rc, out, _ = run(
        ["rules", "cuarenta", "carton", "21", "--option", "carton_rounding=up_to_tanto",
         "--format", "json"],
        capsys,
    )
    assert rc == 0
    assert json.loads(out) == {
        "cards": 21, "points": 8, "perros": 0, "tantos": 4, "odd": 0, "rounding": "up_to_tanto"
    }


def test_options_lists_every_option_with_its_source(capsys: Capsys) -> None:
    rc, out, _ = run(["rules", "cuarenta", "options", "--format", "json"], capsys)
    assert rc == 0
    rows = {r["option"]: r for r in json.loads(out)["options"]}
    assert rows["rule_38"]["default"] == "no_limpia" and "Pagat" in rows["rule_38"]["source"]
    assert rows["carton_rounding"]["default"] == "points_column"
    assert all(r["source"] for r in rows.values())


@pytest.mark.parametrize(
    "args",
    [
        ["captures", "--table", "2X", "--card", "5H"],  # not a card
        ["captures", "--table", "8S", "--card", "5H"],  # not in the Cuarenta pack
        ["captures", "--table", "2C", "2C", "--card", "5H"],  # twice
        ["captures", "--table", "2C", "--card", "2C"],  # the card is on the table
        ["captures", "--table", "2C", "--card", "5H", "--last-played", "3D"],  # not there
        ["captures", "--table", "2C", "--card", "5H", "--score", "lots"],
        ["captures", "--table", "2C"],  # no --card
        ["captures", "--card", "5H", "--format", "xml"],
        ["captures", "--card", "5H", "--option", "rule_38=never"],
        ["captures", "--card", "5H", "--option", "nonsense"],
        ["carton", "41"],
        ["carton", "many"],
        ["carton"],
        ["riddle"],
    ],
)
def test_bad_input_is_one_line_and_a_non_zero_exit(args: list[str], capsys: Capsys) -> None:
    rc, out, err = run(["rules", "cuarenta", *args], capsys)
    assert rc != 0 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("sabot: error: ")
    assert "Traceback" not in err


def test_odds_exact(capsys: Capsys) -> None:
    rc, out, _ = run(["odds", "--game", "cuarenta", "--format", "json"], capsys)
    assert rc == 0
    odds = json.loads(out)
    # C(40,5) = 658008 fives; three of a rank: 10 ranks × C(4,3) × C(36,2) = 25200
    assert Fraction(odds["five_cards"]["three_of_a_rank"]["fraction"]) == Fraction(25200, 658008)
    assert Fraction(odds["five_cards"]["four_of_a_rank"]["fraction"]) == Fraction(360, 658008)
    assert Fraction(odds["per_hand"]["rondas_per_hand"]["fraction"]) == 8 * Fraction(
        25200, 658008
    )
    rc, out, _ = run(["odds", "--game", "cuarenta", "--monte-carlo", "50", "--seed", "1"], capsys)
    assert rc == 0 and "Monte-Carlo: 50 hands, 400 fives" in out


def test_odds_bad_input(capsys: Capsys) -> None:
    for args in (["--decks", "2"], ["--monte-carlo", "0"], ["--format", "xml"]):
        rc, out, err = run(["odds", "--game", "cuarenta", *args], capsys)
        assert rc == 2 and out == "" and len(err.splitlines()) == 1
