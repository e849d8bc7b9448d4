"""Paths must exist and keys must be the right half (issue 22 item 6): a read command never
creates a SQLite file, ``credentials issue`` and ``keys --out`` create no folder, a public key
given for a private one is refused naming the flag, and ``store rerun`` names ``--seal-key``
when the sealed seeds do not open. Each is one line and exit code 2."""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import pytest

import services.cli as cli
from services.bootstrap import LEDGER_GAMES
from services.cli import build_parser
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


def test_rerun_with_another_seal_key_names_the_flag(store_url: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    url = store_url  # SQLite and PostgreSQL
    ledger = Ledger(LedgerConfig(store_url=url, seal_key=KEY), games=LEDGER_GAMES)
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


def _parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
             ) -> list[tuple[str, argparse.ArgumentParser]]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [(" ".join(path), parser)]
    return [leaf for name, p in subs[0].choices.items() for leaf in _parsers(p, (*path, name))]


def test_every_key_flag_says_public_or_private() -> None:
    """The flags each command shows (old names stay hidden, one release); the seal key is
    symmetric: neither."""
    shown = {flag: command for command, p in _parsers(build_parser()) for a in p._actions
             if a.help != argparse.SUPPRESS for flag in a.option_strings if "key" in flag}
    assert shown, "no key flag found"
    wrong = {f: c for f, c in shown.items()
             if f != "--seal-key" and "public" not in f and "private" not in f}
    assert not wrong


def test_the_old_key_flags_still_work(tmp_path: Path) -> None:
    parser = build_parser()
    pub = tmp_path / "k.pub"
    for argv, dest in ((["serve", "--chain-key", "x"], "chain_key"),
                       (["serve", "--tls-key", "x"], "tls_key"),
                       (["store", "checkpoint", "--checkpoint-key", "x"], "checkpoint_key"),
                       (["store", "checkpoint", "--key", "x"], "checkpoint_key"),
                       (["store", "replay", "--regulator-key", "x", "--shoe", "s"],
                        "regulator_key"),
                       (["store", "export", "--chain-key", str(pub)], "chain_public_keys")):
        args = parser.parse_args(argv)
        assert getattr(args, dest) in ("x", [str(pub)]), argv


@pytest.fixture
def pair(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    assert sabot(["keys", "chain", "--out", str(tmp_path / "chain")], capsys)[0] == 0
    return tmp_path / "chain"


def test_keys_chain_says_the_private_key_is_the_servers(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    code, out, _ = sabot(["keys", "chain", "--out", str(tmp_path / "chain")], capsys)
    assert code == 0 and "keep it off the server" not in out
    assert f"private key {tmp_path}/chain.key (the server's: SABOT_CHAIN_KEY / " \
           "--chain-private-key, on the servers only)" in out
    code, out, _ = sabot(["keys", "regulator", "--out", str(tmp_path / "reg")], capsys)
    assert code == 0 and "(the regulator's machine only: keep it off the server)" in out


@pytest.mark.parametrize(("argv", "flag"), [
    (["serve", "--chain-private-key", "{pub}"], "--chain-private-key"),
    (["serve", "--chain-key", "{pub}"], "--chain-private-key"),  # the old name
    (["serve", "--checkpoint-private-key", "{pub}"], "--checkpoint-private-key"),
    (["serve", "--seal-key", "{pub}"], "--seal-key"),
    (["store", "checkpoint", "--store", "sqlite:///{tmp}/s.db", "--checkpoint-key", "{pub}"],
     "--checkpoint-private-key"),
    (["store", "replay", "--store", "sqlite:///{tmp}/s.db", "--shoe", "s",
      "--regulator-private-key", "{pub}"], "--regulator-private-key"),
])
def test_a_public_key_given_for_a_private_one_is_refused(
        argv: list[str], flag: str, pair: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    pub = f"{pair}.pub"
    err = refused([*(a.format(pub=pub, tmp=tmp_path) for a in argv), "--env-file",
                   str(tmp_path / "none")], capsys)
    assert err.startswith(f"sabot: error: {flag}: {pub}: a public key (NAME.pub) given for ")
    assert not (tmp_path / "s.db").exists()


def test_a_private_key_file_holding_the_public_half_is_refused(
        pair: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copied = tmp_path / "chain.key"
    copied.write_text(Path(f"{pair}.pub").read_text())  # the .pub's hex over the PEM
    err = refused(["serve", "--chain-private-key", str(copied), "--env-file",
                   str(tmp_path / "none")], capsys)
    assert err == f"sabot: error: --chain-private-key: {copied}: holds the public key of " \
                  "chain.pub; an Ed25519 private key is the private half of the pair " \
                  "(or SABOT_CHAIN_KEY)\n"
