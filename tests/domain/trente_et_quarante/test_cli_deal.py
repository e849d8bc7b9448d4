"""``sabot deal``: the auditor's coup-by-coup listing of a shoe."""

from __future__ import annotations

import json
import re
from uuid import UUID

import pytest

from services.cli import auditor, main

V1 = ["--seed", bytes(range(32)).hex(), "--shoe-id", "00000000-0000-0000-0000-000000000001"]


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(["deal", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_table_of_vector1(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run([*V1, "--cut", "100"], capsys)
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert "83d1adf40829c28c33ea56278de5c1071712c24681bd94923a7a1e5749cbdfac" in out
    assert "c4970d79d2b00e9f93a4f3b36cbe7b7d020303c1015a14ca93c70a3af2b2a8b5" in out
    coups = {line.split()[0]: line for line in lines if re.match(r"\s*\d+\s", line)}
    assert re.search(
        r"6H 8D 7S QH = 31\s+QD 6C 8C AS 6D = 31\s+refait 31\s+-\s+un après$", coups["1"]
    )
    assert re.search(r"AD AD JH KD 6C 3D = 31\s+KH 3H 8C KS = 31\s+refait 31", coups["2"])
    assert re.search(
        r"KS JH 7C TS = 37\s+QD 8S TC JC = 38\s+noir wins\s+couleur\s+"
        r"sept, huit\. Rouge perd, et la couleur gagne$",
        coups["3"],
    )
    last = coups[str(len(coups))]
    assert "void" in last and "Coup nul" in last
    assert lines[-1].startswith("cut card reached")


def test_json_of_vector1_under_italiana(capsys: pytest.CaptureFixture[str]) -> None:
    args = [*V1, "--cut", "100", "--preset", "italiana", "--option", "cut_card=finish_coup"]
    rc, out, _ = run([*args, "--format", "json"], capsys)
    assert rc == 0
    report = json.loads(out)
    assert report["rules"]["preset"] == "italiana"
    assert report["rules"]["cut_card"] == "finish_coup"
    assert report["seed_drawn"] is False and report["cut"] == 100
    first, _, third = report["coups"][:3]
    assert first["noir"] == {"cards": ["6H", "8D", "7S", "QH"], "total": 31}
    assert first["result"] == "refait" and first["refait_total"] == 31
    assert third["winning_chances"] == ["couleur", "noir"]
    assert third["announcement"] == "sept, huit. Rouge perd, et la couleur gagne"
    assert [c["coup"] for c in report["coups"]] == list(range(1, len(report["coups"]) + 1))
    assert report["coups"][-1]["cut_card_reached"] is True
    assert not any(c["cut_card_reached"] for c in report["coups"][:-1])


def test_vector2_one_deck(capsys: pytest.CaptureFixture[str]) -> None:
    seed = "2681de5d9808d4aac823a5a53ba27f2843cfbacbd0cbaa839f27ef876c6ef52a"
    args = ["--seed", seed, "--shoe-id", "6f1c2a0e-5d4b-4c3a-9e8f-7a6b5c4d3e2f", "--decks", "1"]
    rc, out, _ = run([*args, "--cut", "26", "--format", "json"], capsys)
    first = json.loads(out)["coups"][0]
    assert rc == 0
    assert first["noir"]["cards"] == ["3D", "9H", "4H", "8C", "KH"]
    assert first["winning_chances"] == ["inverse", "noir"]
    assert first["announcement"] == "quatre, neuf. Rouge perd, et couleur"


def test_without_a_seed_one_is_drawn_and_printed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    drawn: list[int] = []

    def token_bytes(n: int) -> bytes:
        drawn.append(n)
        return bytes(range(32))

    monkeypatch.setattr("services.cli.auditor.secrets.token_bytes", token_bytes)
    monkeypatch.setattr(auditor, "uuid4", lambda: UUID(int=1))
    rc, out, _ = run(["--format", "json"], capsys)
    report = json.loads(out)
    assert rc == 0 and drawn == [32]
    assert report["seed_drawn"] is True
    assert report["seed"] == bytes(range(32)).hex()
    assert report["shoe_id"] == "00000000-0000-0000-0000-000000000001"
    assert report["cut"] == 156  # the middle of 312 cards
    rc, out, _ = run([], capsys)
    assert "(drawn now)" in out and bytes(range(32)).hex() in out


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--seed", "xyz", "--shoe-id", "00000000-0000-0000-0000-000000000001"], "--seed"),
        (["--seed", "00" * 31, "--shoe-id", "00000000-0000-0000-0000-000000000001"], "--seed"),
        ([*V1, "--cut", "0"], "--cut"),
        ([*V1, "--cut", "312"], "--cut"),
        (["--preset", "monaco"], "--preset"),
        (["--option", "jackpot=1"], "--option jackpot"),
        (["--option", "decks=9"], "--option decks"),
        (["--option", "refait31"], "--option"),
        (["--decks", "0"], "--decks"),
        (["--deck", "SPANISH-40"], "--deck"),
        (["--seed", bytes(32).hex(), "--shoe-id", "nope"], "--shoe-id"),
    ],
)
def test_bad_input_is_one_line_on_stderr_exit_2(
    capsys: pytest.CaptureFixture[str], args: list[str], field: str
) -> None:
    rc, out, err = run(args, capsys)
    assert rc == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith(f"sabot: error: {field}")
    assert "Traceback" not in err
