"""Paths must exist and keys must be the right half (issue 22 item 6): a read command never
creates a SQLite file, ``credentials issue`` and ``keys --out`` create no folder, a public key
given for a private one is refused naming the flag, and ``store rerun`` names ``--seal-key``
when the sealed seeds do not open. Each is one line and exit code 2."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import services.cli as cli
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig
from tests.ledger.play import KEY, Croupier


def sabot(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = cli.main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def refused(argv: list[str], capsys: pytest.CaptureFixture[str], *, code: int = 2) -> str:
    got, _, err = sabot(argv, capsys)
    assert got == code, err
    assert "Traceback" not in err and err.count("\n") == 1 and err.startswith("sabot: error: ")
    return err


@pytest.mark.parametrize("command", [["store", "events"], ["store", "balance-sheet"],
                                     ["store", "rerun", "--seal-key", KEY.hex(), "--into",
                                      "sqlite:///{tmp}/into.db"]])
def test_a_read_command_creates_no_sqlite_file(command: list[str], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    typo = tmp_path / "sabot.dbb"
    err = refused([*(c.format(tmp=tmp_path) for c in command), "--store", f"sqlite:///{typo}",
                   "--env-file", str(tmp_path / "none")], capsys)
    assert err == f"sabot: error: --store: {typo}: no such SQLite file (a command that reads " \
                  "creates none); check the path\n"
    assert list(tmp_path.iterdir()) == []


def test_rerun_with_another_seal_key_names_the_flag(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    ledger = Ledger(LedgerConfig(store_url=url, seal_key=KEY))
    croupier = Croupier(ledger, "t1", ["ana", "bruno"], random.Random(5))
    croupier.setup("francaise")
    ledger.open_shoe("r-shoe-1", croupier.table_id)  # its seed sealed with KEY
    ledger.close()
    err = refused(["store", "rerun", "--store", url, "--seal-key", "cd" * 32, "--into",
                   f"sqlite:///{tmp_path}/r.db", "--env-file", str(tmp_path / "none")], capsys)
    assert err.startswith("sabot: error: --seal-key: a shoe's sealed seed in --store does not "
                          "open with this key")
    assert "cd" * 32 not in err


def test_credentials_issue_creates_no_folder(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "no" / "such" / "credentials.toml"
    err = refused(["credentials", "issue", "--credentials", str(path), "--principal", "a-1",
                   "--role", "admin"], capsys)
    assert err == f"sabot: error: --credentials: {path.parent}: no such folder; make it first " \
                  "(mkdir, owned by the server's user, not writable by others)\n"
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("pair", ["regulator", "checkpoint", "chain"])
def test_keys_out_creates_no_folder(pair: str, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "no" / "such" / "k"
    err = refused(["keys", pair, "--out", str(out)], capsys)
    assert err == f"sabot: error: --out: {out.parent}: no such folder; make it first\n"
    assert not (tmp_path / "no").exists()
