"""``sabot rules treinta-y-una …`` and ``sabot odds --game treinta-y-una``, from outside."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from services.cli import main


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(args)
    out, err = capsys.readouterr()
    return rc, out, err


def test_hand_json_is_the_contract(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(
        ["rules", "treinta-y-una", "hand", "1O", "12B", "11C", "--format", "json"], capsys
    )
    assert rc == 0 and err == ""
    report = json.loads(out)
    assert report["total"] == 31 and report["real"] is True
    assert report["bust"] is False and report["cards"] == ["1O", "12B", "11C"]


def test_hand_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["rules", "treinta-y-una", "hand", "1O", "12B", "11C"], capsys)[1] == (
        "1O 12B 11C = 31: treinta y una real\n"
    )
    assert run(["rules", "treinta-y-una", "hand", "1O", "5C", "7E"], capsys)[1] == "1O 5C 7E = 23\n"
    _, out, _ = run(
        ["rules", "treinta-y-una", "hand", "10O", "11C", "5B", "6E", "--format", "json"], capsys
    )
    assert json.loads(out)["total"] == 31 and json.loads(out)["real"] is False
    _, out, _ = run(["rules", "treinta-y-una", "hand", "10O", "11C", "7B", "5E"], capsys)
    assert out == "10O 11C 7B 5E = 32: over 31\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["hand", "1O", "8C"], "cards[1]: no card '8C' in SPANISH-40"),
        (["hand", "1O", "1O"], "cards[1]: 1O twice"),
        (["hand", "AS"], "cards[0]: no card 'AS'"),
        (["hand", "1O", "--format", "xml"], "--format: must be table or json"),
        (["options", "--preset", "nope"], "preset: unknown preset 'nope'"),
        (["options", "--option", "tie=maybe"], "overrides.tie: must be one of"),
        (["options", "--option", "tie"], "--option: expected K=V"),
    ],
)
def test_bad_input_is_one_line(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = run(["rules", "treinta-y-una", *args], capsys)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("sabot: error: ") and message in err


def test_options(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(
        [
            "rules",
            "treinta-y-una",
            "options",
            "--preset",
            "empate_nulo",
            "--option",
            "commission=5%",
            "--format",
            "json",
        ],
        capsys,
    )
    report = json.loads(out)
    assert report["preset"] == "empate_nulo"
    assert report["options"]["tie"] == {
        "value": "void_carry_over",
        "default": "banker_wins",
        "source": "seed 003, first sentence of the showdown",
    }
    assert report["options"]["commission"]["value"] == "1/20"
    _, table, _ = run(["rules", "treinta-y-una", "options"], capsys)
    assert "turn_seconds" in table and "60" in table


def test_odds_exact(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(
        ["odds", "--game", "treinta-y-una", "--format", "json", "--no-monte-carlo"], capsys
    )
    assert rc == 0 and err == ""
    report = json.loads(out)
    three = report["three_cards"]
    assert three["real"]["exact"] == "33/1235"
    assert three["thirty_one"]["exact"] == "33/1235"
    assert three["totals"]["30"] == {"exact": "11/494", "value": 11 / 494, "subsets": 220}
    assert sum(t["subsets"] for t in three["totals"].values()) == 9880
    assert report["preset"] == "clasica" and "monte_carlo" not in report
    _, table, _ = run(["odds", "--game", "treinta-y-una", "--no-monte-carlo"], capsys)
    assert "P(treinta y una real)" in table and "33/1235" in table
    assert "banker edge" not in table


def test_odds_plays_the_monte_carlo_unless_told(capsys: pytest.CaptureFixture[str]) -> None:
    """``sabot odds --game treinta-y-una`` alone: the exact figures and the banker's edge
    against punters standing at 15 ... 30, on ``DEFAULT_DEALS`` deals through the engine."""
    rc, out, err = run(["odds", "--game", "treinta-y-una", "-q"], capsys)
    assert rc == 0 and err == ""
    assert "P(treinta y una real)" in out and "33/1235" in out and "banker edge" in out
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["15"], ["30"])]
    assert any(r[1].endswith("%") for r in rows)  # an edge row, beside the totals' rows
    assert "monte-carlo: 1000 deals through the engine" in out


def test_odds_monte_carlo(capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "odds",
        "--game",
        "treinta-y-una",
        "--format",
        "json",
        "--monte-carlo",
        "40",
        "--seed",
        "ff",
    ]
    first = json.loads(run(args, capsys)[1])
    assert json.loads(run(args, capsys)[1]) == first  # the same seed, the same estimates
    mc = first["monte_carlo"]
    assert mc["deals"] == 40 and mc["seed"] == "ff" and mc["banker_stands_at"] == 28
    assert [e["stand_at"] for e in mc["edges"]] == list(range(15, 31))
    _, table, _ = run(
        [
            "odds",
            "--game",
            "treinta-y-una",
            "--monte-carlo",
            "40",
            "--preset",
            "empate_nulo",
            "--option",
            "commission=1%",
        ],
        capsys,
    )
    assert "banker edge" in table and "tie=void_carry_over" in table


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--monte-carlo", "0"], "--monte-carlo: must be a whole number of deals"),
        (["--monte-carlo", "many"], "--monte-carlo: not a whole number"),
        (["--seed", "xyz"], "--seed: must be 1 to 64 hexadecimal digits"),
        (["--decks", "2"], "--decks: treinta-y-una is played with one deck"),
        (["--preset", "italiana"], "preset: unknown preset 'italiana'"),
        (["--option", "colour=red"], "overrides.colour: unknown option"),
        (["--format", "yaml"], "--format: must be table or json"),
        (["--monte-carlo", "9", "--no-monte-carlo"], "--monte-carlo: not with --no-monte-carlo"),
    ],
)
def test_odds_bad_input_is_one_line(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = run(["odds", "--game", "treinta-y-una", *extra], capsys)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and message in err


def test_the_installed_command_never_prints_a_traceback() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from services.cli import main; sys.exit(main())",
            "rules",
            "treinta-y-una",
            "hand",
            "13O",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == "sabot: error: cards[0]: no card '13O' in SPANISH-40\n"
