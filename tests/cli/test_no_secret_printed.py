"""No command prints a secret, ever (issue 12 item 7): every command that takes a key is given a
wrong one and a valid-looking private key in the wrong place, and neither the key's bytes (hex,
PEM) nor the token appear on stdout or stderr."""

from __future__ import annotations

import io
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, x25519

import services.cli as cli
from services.api import logs

Case = Callable[[Path, "Keys"], list[str]]


class Keys:
    """Private keys as a person might mistype or misplace them: hex, and PEM files."""

    def __init__(self, folder: Path) -> None:
        self.ed = ed25519.Ed25519PrivateKey.generate()
        self.x = x25519.X25519PrivateKey.generate()
        self.hex = self.ed.private_bytes_raw().hex()
        self.x_hex = self.x.private_bytes_raw().hex()
        self.seal = secrets.token_hex(32)
        self.ed_pem = folder / "ed.key"
        self.x_pem = folder / "x.key"
        for path, key in ((self.ed_pem, self.ed), (self.x_pem, self.x)):
            path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                               serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
        self.hex_file = folder / "hex.key"
        self.hex_file.write_text(self.hex + "\n")

    def secrets(self) -> list[str]:
        texts = [self.hex, self.x_hex, self.seal, self.hex[:62], self.seal[:63]]
        for path in (self.ed_pem, self.x_pem):
            body = "".join(path.read_text().splitlines()[1:-1])
            texts += [body, body[:40], body[-40:]]
        return texts


def _store(tmp: Path) -> str:
    return f"sqlite:///{tmp}/s.db"


CASES: dict[str, Case] = {
    # a wrong key: the right kind mistyped (a digit short), the wrong kind, a PEM where none goes
    "store checkpoint short": lambda t, k: ["store", "checkpoint", "--store", _store(t),
                                            "--checkpoint-key", k.hex[:62]],
    "store checkpoint x25519": lambda t, k: ["store", "checkpoint", "--store", _store(t),
                                             "--checkpoint-key", str(k.x_pem)],
    "checkpoint --key x25519": lambda t, k: ["checkpoint", "--store", _store(t), "--key",
                                             str(k.x_pem)],
    "store export private as public": lambda t, k: [
        "store", "export", "--store", _store(t), "--checkpoint-public-key", str(k.ed_pem)],
    "store export private hex as public": lambda t, k: [
        "store", "export", "--store", _store(t), "--checkpoint-public-key", k.hex[:63]],
    "store export --key x25519": lambda t, k: ["export", "--store", _store(t), "--key",
                                               str(k.x_pem)],
    "store export chain private": lambda t, k: [
        "store", "export", "--store", _store(t), "--chain-public-key", str(k.ed_pem)],
    "store replay regulator short": lambda t, k: [
        "store", "replay", "--store", _store(t), "--shoe", "s", "--regulator-key",
        k.x_hex[:62]],
    "store replay regulator ed25519": lambda t, k: [
        "store", "replay", "--store", _store(t), "--shoe", "s", "--regulator-key",
        str(k.ed_pem)],
    "store replay chain private": lambda t, k: [
        "store", "replay", "--store", _store(t), "--shoe", "s", "--chain-public-key",
        str(k.hex_file) + "x"],
    "store rerun seal pem": lambda t, k: ["store", "rerun", "--store", _store(t), "--into",
                                          f"sqlite:///{t}/into.db", "--seal-key", str(k.ed_pem)],
    "store rerun seal short": lambda t, k: ["store", "rerun", "--store", _store(t), "--into",
                                            f"sqlite:///{t}/into.db", "--seal-key", k.seal[:63]],
    # a valid-looking private key in the wrong place
    "store a key": lambda t, k: ["store", "events", "--store", k.hex],
    "store a pem": lambda t, k: ["store", "balance-sheet", "--store", str(k.ed_pem)],
    "target a key": lambda t, k: ["table", "get", "t1", "--target", k.hex],
    "credentials a pem": lambda t, k: ["credentials", "list", "--credentials", str(k.ed_pem)],
    "demo tokens a key": lambda t, k: ["demo", "--target", "127.0.0.1:1", "--tokens", k.hex],
    "serve checkpoint short": lambda t, k: [
        "serve", "--dev", "--single-process", "--listen", "127.0.0.1:0", "--store", _store(t),
        "--env-file", str(t / "none.env"), "--checkpoint-key", k.hex[:62]],
    "serve regulator private pem": lambda t, k: [
        "serve", "--dev", "--single-process", "--listen", "127.0.0.1:0", "--store", _store(t),
        "--env-file", str(t / "none.env"), "--regulator-key", str(k.x_pem)],
}
ENV_CASES: dict[str, Callable[[Keys], dict[str, str]]] = {
    "SABOT_SEAL_KEY short": lambda k: {"SABOT_SEAL_KEY": k.seal[:63]},
    "SABOT_CHAIN_KEY x25519": lambda k: {"SABOT_CHAIN_KEY": k.x_hex[:62]},
    "SABOT_CHECKPOINT_KEY a public place": lambda k: {"SABOT_REGULATOR_KEY": str(k.ed_pem)},
    "SABOT_STORE a key": lambda k: {"SABOT_STORE": k.hex},
}


@pytest.fixture(autouse=True)
def _logs_kept_apart() -> Iterator[None]:
    """``sabot serve`` points the log at the (captured) stderr: point it away afterwards."""
    yield
    logs.configure(stream=io.StringIO())


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = cli.main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out + err


def _clean(monkeypatch: pytest.MonkeyPatch, tmp: Path) -> None:
    monkeypatch.chdir(tmp)
    import os

    for name in list(os.environ):
        if name.startswith("SABOT_"):
            monkeypatch.delenv(name)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_wrong_or_misplaced_key_is_never_printed(
        case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _clean(monkeypatch, tmp_path)
    keys = Keys(tmp_path)
    code, said = _run(CASES[case](tmp_path, keys), capsys)
    assert code != 0, said
    assert said.strip(), "an error says what is wrong"
    for text in keys.secrets():
        assert text not in said, (case, said)


@pytest.mark.parametrize("case", sorted(ENV_CASES))
def test_a_wrong_key_in_the_environment_is_never_printed(
        case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _clean(monkeypatch, tmp_path)
    keys = Keys(tmp_path)
    for name, value in ENV_CASES[case](keys).items():
        monkeypatch.setenv(name, value)
    argv = ["serve", "--dev", "--single-process", "--listen", "127.0.0.1:0", "--env-file",
            str(tmp_path / "none.env")]
    if "SABOT_STORE" not in ENV_CASES[case](keys):
        argv += ["--store", _store(tmp_path)]
    code, said = _run(argv, capsys)
    assert code != 0, said
    for text in keys.secrets():
        assert text not in said, (case, said)
