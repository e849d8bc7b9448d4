"""``sabot store export`` needs no private key and writes nothing (issue 12 item 7): the notary
(``sabot store checkpoint``, or a server with a checkpoint key) signs; the export reads up to
the latest signed checkpoint with the notary's public key."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

import services.cli as cli
from tests.conftest import sqlite_copy

from .conftest import Served


def _copy(served: Served, tmp: Path) -> tuple[str, Path]:
    path = tmp / "copy.db"
    return sqlite_copy(served.store, path), path


def _digest(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        rows = [(t, conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()) for (t,) in
                conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY 1")]
    return hashlib.sha256(repr(rows).encode()).hexdigest()


def test_export_with_the_public_key_only_reads(
        served: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SABOT_CHECKPOINT_KEY", "SABOT_CHECKPOINT_PUBLIC_KEY", "SABOT_STORE"):
        monkeypatch.delenv(name, raising=False)
    url, path = _copy(served, tmp_path)
    assert cli.main(["keys", "checkpoint", "--out", str(tmp_path / "notary")]) == 0
    assert cli.main(["keys", "checkpoint", "--out", str(tmp_path / "other")]) == 0
    capsys.readouterr()
    out = tmp_path / "export.jsonl"
    # nothing signed yet: the export says who signs
    assert cli.main(["store", "export", "--store", url, "--checkpoint-public-key",
                     str(tmp_path / "notary.pub"), "-o", str(out)]) == 2
    assert "sabot store checkpoint" in capsys.readouterr().err
    assert cli.main(["store", "checkpoint", "--store", url, "--checkpoint-key",
                     str(tmp_path / "notary.key")]) == 0
    head = json.loads(capsys.readouterr().out)
    before = _digest(path)
    monkeypatch.setenv("SABOT_CHECKPOINT_PUBLIC_KEY", str(tmp_path / "notary.pub"))
    assert cli.main(["store", "export", "--store", url, "-o", str(out), "-q"]) == 0
    assert _digest(path) == before  # it wrote nothing
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records[0]["kind"] == "header" and records[0]["anchor"] == head["size"]
    assert records[0]["checkpoint_key"] == (tmp_path / "notary.pub").read_text().strip()
    capsys.readouterr()
    # another key than the notary's: refused, naming where it came from
    assert cli.main(["store", "export", "--store", url, "--checkpoint-public-key",
                     str(tmp_path / "other.pub"), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--checkpoint-public-key" in err and "key id" in err
    # no key at all: the variable and the flag are named
    monkeypatch.delenv("SABOT_CHECKPOINT_PUBLIC_KEY")
    assert cli.main(["store", "export", "--store", url, "-o", str(out)]) == 2
    assert "SABOT_CHECKPOINT_PUBLIC_KEY / --checkpoint-public-key: required" in \
        capsys.readouterr().err
