"""Progress on stderr (issue 12 item 10) of the regulator's long commands and the read models'
rebuild: export, replay of a whole shoe, projections rebuild; stdout unchanged, --quiet."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization

import services.cli as cli
from services.cli import progress as progress_module
from tests.conftest import sqlite_copy

from .conftest import Played


@pytest.fixture
def store(played_sqlite: Played, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(progress_module, "LINE_SECONDS", 0.0)  # a line at every update
    return sqlite_copy(played_sqlite.url, tmp_path / "copy.db")


def test_export_says_how_far_it_is(store: str, played_sqlite: Played, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    key = tmp_path / "op.key"
    key.write_bytes(played_sqlite.key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    assert cli.main(["export", "--store", store, "--key", str(key)]) == 0
    out, err = capsys.readouterr()
    records = [json.loads(line) for line in out.splitlines()]
    assert records[0]["kind"] == "header" and records[-1]["kind"] == "end"
    events = sum(r["kind"] == "event" for r in records)
    progress = [ln for ln in err.splitlines() if ln.startswith("export: ")]
    assert progress and progress[-1].startswith(f"export: {events:,}/{events:,} events (100%)")
    assert progress[-1].endswith(" done")
    assert cli.main(["export", "--store", store, "--key", str(key), "--quiet"]) == 0
    assert not [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("export: ")]


def test_replay_of_a_whole_shoe_says_how_far_it_is(
        store: str, played_sqlite: Played, capsys: pytest.CaptureFixture[str]) -> None:
    shoe = played_sqlite.shoes[0]
    assert cli.main(["replay", "--store", store, "--shoe", shoe]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("verdict: identical")
    assert err.splitlines()[-1].startswith("replay: ") and "steps in" in err
    assert cli.main(["replay", "--store", store, "--shoe", shoe, "-q"]) == 0
    assert capsys.readouterr().err == ""


def test_projections_rebuild_says_how_far_it_is(store: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["projections", "rebuild", "--store", store, "--batch", "500"]) == 0
    out, err = capsys.readouterr()
    assert "rebuilt from" in out and "rebuild:" not in out
    lines = [ln for ln in err.splitlines() if ln.startswith("rebuild: ")]
    assert len(lines) >= 3 and lines[0].startswith("rebuild: 500/")
    assert lines[-1].endswith(" done")
    assert cli.main(["projections", "rebuild", "--store", store, "--quiet"]) == 0
    assert capsys.readouterr().err == ""
