"""``sabot stake batch`` and ``sabot account batch`` (issue 25 item 2) against a real server:
several items from flags or a JSON file in one call; a refused item is shown and the command
ends with one error line and exit 3 (the others stored); ``--atomic`` stores nothing on a
refusal; bad input is a usage error (exit 2) before any call."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import Served, serving
from .test_bad_input import one_line, run


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server of this module's own: its deposits and stakes would change the balances the
    other CLI tests read exactly from the package's shared one (tests/cli/test_human_output.py
    saw the cage at -2065.00 EUR instead of -2000.00 when this module ran first)."""
    yield from serving(tmp_path_factory)


def _account(served: Served, capsys: pytest.CaptureFixture[str]) -> str:
    name = f"b-{uuid.uuid4().hex[:8]}"
    assert run(["account", "open", name, *served.admin()], capsys)[0] == 0
    return name


def _balance(served: Served, account: str, capsys: pytest.CaptureFixture[str]) -> int:
    code, out, _ = run(["account", "get", account, *served.admin(), "--format", "json"], capsys)
    assert code == 0
    return int(json.loads(out)["balance"]["amount_minor"])


def test_a_cashiers_movements_and_a_layout_in_one_call(
        served: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    x, y = _account(served, capsys), _account(served, capsys)
    code, out, err = run(["account", "batch", "--deposit", f"{x}=50.00", "--deposit",
                          f"{y}=20.00", "--withdraw", f"{y}=5.00", *served.admin(),
                          "--format", "json"], capsys)
    assert code == 0, err
    answer = json.loads(out)
    assert answer["accepted"] == 3
    assert (_balance(served, x, capsys), _balance(served, y, capsys)) == (5_000, 1_500)

    code, out, err = run(["stake", "batch", served.coup, "--account", x, "--stake",
                          "noir=10.00", "--stake", "couleur=5.00", *served.admin(),
                          "--format", "json"], capsys)
    assert code == 0, err
    placed = json.loads(out)
    assert placed["accepted"] == 2 and _balance(served, x, capsys) == 3_500
    noir, couleur = (r["result"]["stake"]["name"] for r in placed["results"])
    items = tmp_path / "items.json"
    items.write_text(json.dumps([
        {"action": "raise", "stake": noir, "amount": "2.50"},
        {"action": "withdraw", "stake": couleur},
        {"account": x, "chance": "noir", "amount_minor": 100},
    ]))
    code, out, err = run(["stake", "batch", served.coup, "--batch", str(items), "--atomic",
                          *served.admin()], capsys)
    assert code == 0, err
    assert "accepted" in out and "2.50 EUR" in out  # text: money in major units
    assert _balance(served, x, capsys) == 3_500 - 250 + 500 - 100

    # a refused item: the answer shown, one error line, exit 3, the other item stored
    before = _balance(served, x, capsys)
    code, out, err = run(["stake", "batch", served.coup, "--account", x, "--stake",
                          "couleur=1.00", "--stake", "rouge=1.00", *served.admin()], capsys)
    one_line(code, err)
    assert code == 3 and "1 of 2 items refused" in err and "stakes[1].chance" in err
    assert "OPPOSED_STAKES" in out
    assert _balance(served, x, capsys) == before - 100
    # atomic: nothing stored
    code, _, err = run(["stake", "batch", served.coup, "--account", x, "--stake",
                        "couleur=1.00", "--stake", "rouge=1.00", "--atomic", *served.admin()],
                       capsys)
    one_line(code, err)
    assert code == 3 and "stakes[1].chance" in err
    assert _balance(served, x, capsys) == before - 100
    code, _, err = run(["account", "batch", "--withdraw", f"{y}=1000.00", "--atomic",
                        *served.admin()], capsys)
    one_line(code, err)
    assert code == 3 and "movements[0].amount.amount_minor" in err


@pytest.mark.parametrize("argv", [
    ["stake", "batch", "{coup}"],  # no item
    ["stake", "batch", "{coup}", "--stake", "noir=10.00"],  # no --account
    ["stake", "batch", "{coup}", "--account", "anne", "--stake", "noir"],
    ["stake", "batch", "{coup}", "--account", "anne", "--stake", "vert=1.00"],
    ["stake", "batch", "{coup}", "--account", "anne", "--stake", "noir=10"],  # no decimals
    ["stake", "batch", "{coup}", "--batch", "{file}"],
    ["account", "batch"],
    ["account", "batch", "--deposit", "anne"],
    ["account", "batch", "--batch", "{file}"],
])
def test_bad_batches_are_usage_errors(served: Served, tmp_path: Path, argv: list[str],
                                      capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"action": "double"}]' if argv[0] == "stake" else '{"kind": 1}')
    argv = [a.format(coup=served.coup, file=bad) for a in argv]
    code, _, err = run([*argv, "--target", "127.0.0.1:1", "--token", "x"], capsys)
    one_line(code, err)
    assert code == 2, err
