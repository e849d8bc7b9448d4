"""One exit code per cause (services/cli/exits.py, docs/exit-codes.md): a typo, a refusal, a bad
token and a server that cannot be reached no longer all exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from services.cli import main
from services.cli.exits import STATUS, Exit
from services.version import version

from .conftest import Served
from .test_bad_input import run


def test_every_grpc_status_has_an_exit_code() -> None:
    import grpc

    assert {c.name for c in grpc.StatusCode if c.name != "OK"} == set(STATUS)


def test_a_typo_is_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["account", "get", "anne", "--no-such-flag"], capsys)[0] == Exit.USAGE == 2


def test_a_refusal_by_the_server(served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["account", "withdraw", "anne", "--amount", "99999.00",
                        *served.admin()], capsys)
    assert code == Exit.REFUSED == 3, err
    assert err.startswith("sabot: error: FAILED_PRECONDITION: ") and err.count("\n") == 1, err
    code, _, err = run(["account", "get", "nobody-here", *served.admin()], capsys)
    assert code == Exit.REFUSED and "NOT_FOUND" in err, err


def test_a_bad_value_of_the_command_line_is_usage(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["rules", "trente-et-quarante", "deal", "--option", "decks=0"], capsys)
    assert code == Exit.USAGE, err
    assert err.startswith("sabot: error: ") and err.count("\n") == 1, err


def test_a_refusal_by_the_store(served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["store", "report", "statement", "--store", served.store, "--account",
                        "nobody-here"], capsys)
    assert code == Exit.REFUSED == 3, err
    assert err.startswith("sabot: error: ") and err.count("\n") == 1, err


def test_a_bad_token_is_not_permitted(served: Served, capsys: pytest.CaptureFixture[str]
                                      ) -> None:
    code, _, err = run(["account", "get", "anne", "--target", served.target, "--token",
                        "not-a-token-of-this-server-at-all"], capsys)
    assert code == Exit.NOT_PERMITTED == 4 and "UNAUTHENTICATED" in err, err


def test_a_role_without_the_call_is_not_permitted(served: Served,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["account", "deposit", "anne", "--amount", "1.00", *served.office()],
                       capsys)
    assert code == Exit.NOT_PERMITTED and "PERMISSION_DENIED" in err, err


def test_an_unreachable_server_is_retry(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["account", "get", "anne", "--target", "127.0.0.1:1", "--token",
                        "x" * 40], capsys)
    assert code == Exit.UNAVAILABLE == 5 and "UNAVAILABLE" in err, err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"sabot {version()}\n"
    assert version()[0].isdigit()


def test_version_of_the_installed_command() -> None:
    done = subprocess.run([str(Path(sys.executable).parent / "sabot"), "--version"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout.startswith("sabot "), done


def test_odds_of_a_game_take_its_own_preset(capsys: pytest.CaptureFixture[str]) -> None:
    """``sabot odds --game treinta-y-una --preset francaise`` named Trente et Quarante's preset
    and quietly got Treinta y Una's default: refused now, naming the game's presets; without
    --preset each game takes its own."""
    code, _, err = run(["odds", "--game", "treinta-y-una", "--preset", "francaise",
                        "--no-monte-carlo"], capsys)
    assert code == Exit.USAGE and "'francaise'" in err and "clasica" in err, err
    code, out, _ = run(["odds", "--game", "treinta-y-una", "--no-monte-carlo", "--format",
                        "json"], capsys)
    assert code == 0 and '"preset": "clasica"' in out
    code, out, _ = run(["odds", "--format", "json"], capsys)
    assert code == 0 and '"preset": "francaise"' in out


def test_monte_carlo_progress_ends_at_its_count() -> None:
    from domain.treinta_y_una import montecarlo
    from domain.treinta_y_una.rules import table_rules

    seen: list[int] = []
    montecarlo.run(table_rules(), 150, 1, progress=seen.append)
    assert seen[-1] == 150 and seen == sorted(seen)
