"""The regulator's commands end to end: keygen, checkpoint, export, sabot-verify, replay, proof."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from services.regulator.merkle import verify_consistency, verify_inclusion
from tests.conftest import sqlite_copy

from .conftest import Played, sabot
from .play import CHAIN_PUBLIC


def test_commands(
    played_sqlite: Played, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "copy.db"
    url = sqlite_copy(played_sqlite.url, store)
    assert sabot("checkpoint-keygen", "--out", str(tmp_path / "op")) == 0
    assert sabot("regulator-keygen", "--out", str(tmp_path / "reg")) == 0
    assert sabot("regulator-keygen", "--out", str(tmp_path / "reg")) == 2  # never overwrites
    assert (tmp_path / "reg.key").stat().st_mode & 0o077 == 0
    key = str(tmp_path / "op.key")
    capsys.readouterr()
    # notarise the copy afresh, under the key made here
    with sqlite3.connect(store) as conn:
        for table in ("regulator_leaves", "regulator_nodes", "regulator_checkpoints"):
            conn.execute(f"DELETE FROM {table}")
    assert sabot("checkpoint", "--store", url, "--key", key) == 0
    head = json.loads(capsys.readouterr().out)
    assert head["size"] > 1000 and head["origin"] == "sabot"
    out = tmp_path / "export.jsonl"
    assert sabot("export", "--store", url, "--key", key, "-o", str(out),
                 "--shoe", played_sqlite.shoes[0]) == 0
    beside = Path(sys.executable).parent / "sabot-verify"
    verify = str(beside) if beside.exists() else shutil.which("sabot-verify") or ""
    assert verify, "the sabot-verify console script is installed"
    done = subprocess.run(
        [verify, str(out), "--checkpoint-key", str(tmp_path / "op.pub"),
         "--chain-public-key", CHAIN_PUBLIC.hex()],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1].startswith("VERIFIED")
    capsys.readouterr()
    cid = played_sqlite.coups[played_sqlite.shoes[0]][4]
    assert sabot("replay", "--store", url, "--coup", cid) == 0
    assert capsys.readouterr().out.startswith("verdict: identical")
    assert sabot("proof", "--store", url, "--position", "5", "--from-size", "100") == 0
    proof = json.loads(capsys.readouterr().out)
    root = bytes.fromhex(proof["root"])
    inc = proof["inclusion"]
    verify_inclusion(bytes.fromhex(inc["leaf_hash"]), inc["index"], proof["size"],
                     [bytes.fromhex(h) for h in inc["proof"]], root)
    cons = proof["consistency"]
    verify_consistency(100, proof["size"], bytes.fromhex(cons["root_from"]), root,
                       [bytes.fromhex(h) for h in cons["proof"]])
    assert sabot("export", "--store", "mysql://x/y", "--key", key) == 2
    assert sabot("export", "--store", url, "--key", key, "--since", "2026-01-01") == 2


def test_through_sabot_main(
    played_sqlite: Played, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import services.cli as sabot_cli

    if "services.cli.regulator" not in sabot_cli.COMMAND_MODULES:
        monkeypatch.setattr(
            sabot_cli, "COMMAND_MODULES", (*sabot_cli.COMMAND_MODULES, "services.cli.regulator")
        )
    url = played_sqlite.url
    assert sabot_cli.main(["replay", "--store", url, "--coup", "nope"]) == 3  # refused: no coup
    assert "coup_id: no coup nope" in capsys.readouterr().err
    assert sabot_cli.main(["replay", "--store", url, "--shoe", played_sqlite.shoes[2]]) == 0
    assert capsys.readouterr().out.startswith("verdict: identical")
