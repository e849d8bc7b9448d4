"""Files the server trusts are refused when someone else may have written them (issue 20 item
3): the credentials file, the ``.env`` file, the key files and the writer's head file must be
owned by the server's user or root and not writable by group or others; the credentials file
and the keys not in a folder others may write (unless sticky). A missing credentials file
fails the start. Each refusal is one line naming the file and the fix.

The files "another user made" are chowned to ``nobody``, which needs root: elsewhere these
tests are skipped with that reason."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

import services.cli as cli
from services.api import credentials
from services.api.credentials import CredentialError, Keyring
from services.api.roles import Role
from services.api.tls import ServerFiles, TlsError
from services.files import FileTrustError, check_trusted, read_env_file
from services.settings import SettingError, Settings

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
SEAL = "ab" * 32


def _nobody() -> int:
    try:
        return pwd.getpwnam("nobody").pw_uid
    except KeyError:
        return 65534


def _by_nobody(path: Path) -> Path:
    os.chown(path, _nobody(), -1)
    return path


def _sabot(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = cli.main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith("sabot: error: "), err
    return code, err


@ROOT_ONLY
def test_a_credentials_file_another_user_made_is_refused_at_start_and_on_reload(
        tmp_path: Path) -> None:
    folder = tmp_path / "etc"
    folder.mkdir(mode=0o700)
    path = folder / "credentials.toml"
    _, token = credentials.issue(path, "admin-1", Role.ADMIN)
    keyring = Keyring(path=path)
    assert keyring.token(token or "") is not None
    # nobody's own file, with nobody's admin token, in place of the server's
    planted = folder / "planted.toml"
    _, theirs = credentials.issue(planted, "admin-2", Role.ADMIN)
    _by_nobody(planted)
    with pytest.raises(CredentialError, match=rf"^{planted}: the file is owned by nobody "
                                              r"\(uid \d+\), not by this user \(root \(uid 0\)\) "
                                              rf"or root; check it, then chown root {planted}$"):
        Keyring(path=planted)
    os.replace(planted, path)
    assert keyring.changed() and keyring.reload() is False
    assert keyring.token(theirs or "") is None and keyring.token(token or "") is not None


@ROOT_ONLY
def test_a_credentials_file_in_a_folder_another_user_owns_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "theirs"
    folder.mkdir(mode=0o755)
    path = folder / "credentials.toml"
    credentials.issue(path, "admin-1", Role.ADMIN)
    _by_nobody(folder)
    with pytest.raises(CredentialError, match="its directory is owned by nobody"):
        Keyring(path=path)


def test_a_missing_credentials_file_fails_the_start(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "credentials.toml"
    with pytest.raises(CredentialError, match=rf"^{path}: no such credentials file; make it "
                                              "with `sabot credentials issue"):
        Keyring(path=path)
    code, err = _sabot(["serve", "--credentials", str(path), "--seal-key", SEAL, "--store",
                        f"sqlite:///{tmp_path}/s.db", "--env-file", str(tmp_path / "none"),
                        "--listen", "127.0.0.1:0"], capsys)
    assert code == 2
    assert err.startswith(f"sabot: error: --credentials: {path}: no such credentials file")
    assert not (tmp_path / "s.db").exists()  # refused before the store is touched


@ROOT_ONLY
def test_serve_refuses_a_credentials_file_another_user_made(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "credentials.toml"
    credentials.issue(path, "admin-1", Role.ADMIN)
    _by_nobody(path)
    code, err = _sabot(["serve", "--credentials", str(path), "--seal-key", SEAL, "--store",
                        f"sqlite:///{tmp_path}/s.db", "--env-file", str(tmp_path / "none"),
                        "--listen", "127.0.0.1:0"], capsys)
    assert code == 2 and f"{path}: the file is owned by nobody" in err
    assert f"chown root {path}" in err


@ROOT_ONLY
def test_a_dotenv_another_user_made_is_refused(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text(f"SABOT_CREDENTIALS={tmp_path}/theirs.toml\n")
    assert Settings.load({}, {}, dotenv).credentials == tmp_path / "theirs.toml"
    _by_nobody(dotenv)
    with pytest.raises(SettingError, match=rf"^{dotenv}: the .env file is owned by nobody .*"
                                           rf"chown root {dotenv} \(SABOT_ENV_FILE / "
                                           r"--env-file\)$"):
        Settings.load({}, {}, dotenv)
    # planted in the server's working directory: sabot serve stops in one line
    monkeypatch.chdir(tmp_path)
    for name in ("SABOT_ENV_FILE", "SABOT_CREDENTIALS", "SABOT_TOKENS"):
        monkeypatch.delenv(name, raising=False)
    code, err = _sabot(["serve", "--seal-key", SEAL, "--listen", "127.0.0.1:0"], capsys)
    assert code == 2 and ".env: the .env file is owned by nobody" in err


def test_a_dotenv_others_may_write_is_refused(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("SABOT_WORKERS=3\n")
    dotenv.chmod(0o666)
    with pytest.raises(SettingError, match=rf"^{dotenv}: the .env file may be written by others "
                                           rf"\(mode 666\); chmod go-w {dotenv}"):
        Settings.load({}, {}, dotenv)
    dotenv.chmod(0o644)
    assert Settings.load({}, {}, dotenv).workers == 3
    assert Settings.load({}, {}, tmp_path / "missing.env").workers == 32  # no file: none


@ROOT_ONLY
def test_key_files_another_user_made_are_refused(tmp_path: Path) -> None:
    key = tmp_path / "seal.key"
    key.write_text(SEAL + "\n")
    assert Settings.load({"seal_key": str(key)}, {}, None).seal_key == bytes.fromhex(SEAL)
    _by_nobody(key)
    with pytest.raises(SettingError, match=rf"^--seal-key: {key}: the key file is owned by "
                                           r"nobody .*chown root"):
        Settings.load({"seal_key": str(key)}, {}, None)
    os.chown(key, 0, -1)
    key.chmod(0o620)
    with pytest.raises(SettingError, match=r"^SABOT_SEAL_KEY: .*the key file may be written by "
                                           r"others \(mode 620\); chmod go-w"):
        Settings.load({}, {"SABOT_SEAL_KEY": str(key)}, None)


def test_a_key_in_a_folder_others_may_write_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "keys"
    folder.mkdir()
    key = folder / "seal.key"
    key.write_text(SEAL + "\n")
    folder.chmod(0o777)
    try:
        with pytest.raises(SettingError, match="its directory may be written by others "
                                               r"\(mode 777\)"):
            Settings.load({"seal_key": str(key)}, {}, None)
        folder.chmod(0o1777)  # sticky: others cannot swap the file
        assert Settings.load({"seal_key": str(key)}, {}, None).seal_key == bytes.fromhex(SEAL)
    finally:
        folder.chmod(0o700)


@ROOT_ONLY
def test_a_head_file_another_user_made_is_refused(tmp_path: Path) -> None:
    head = tmp_path / "chain-head.json"
    assert Settings.load({"chain_head": str(head)}, {}, None).chain_head == str(head)  # new
    head.write_text("{}")
    _by_nobody(head)
    with pytest.raises(SettingError, match=rf"^--chain-head: {head}: the head file is owned by "
                                           "nobody"):
        Settings.load({"chain_head": str(head)}, {}, None)


@ROOT_ONLY
def test_a_tls_key_another_user_made_is_refused(tmp_path: Path) -> None:
    cert, key = tmp_path / "server.crt", tmp_path / "server.key"
    cert.write_text("-----BEGIN CERTIFICATE-----\n")
    key.write_text("-----BEGIN PRIVATE KEY-----\n")
    _by_nobody(key)
    with pytest.raises(TlsError, match=rf"^--tls-private-key: {key}: the key file is owned "
                                       "by nobody"):
        ServerFiles(cert, key).load()


def test_a_missing_file_passes_the_check(tmp_path: Path) -> None:
    check_trusted(tmp_path / "missing", folder=True)
    with pytest.raises(FileTrustError):
        (tmp_path / "f").write_text("")
        (tmp_path / "f").chmod(0o602)
        check_trusted(tmp_path / "f")


@pytest.mark.parametrize("token", ["a", "password", "0123456789abcdef"])
def test_credentials_hash_refuses_a_token_under_128_bits(
        token: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(token + "\n"))
    code, err = _sabot(["credentials", "hash"], capsys)
    assert code == 2 and "the token on stdin: a token must carry at least 128 bits" in err


def test_the_env_file_reads_as_compose_and_python_dotenv_do(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("SABOT_WORKERS=7  # threads\nexport SABOT_LISTEN='0.0.0.0:1' # all\n"
                      'SABOT_GAMING_DAY="06:00 Europe/Paris"\nSABOT_SHIFTS=${N_SHIFTS}\n'
                      "\n# a comment\n")
    s = Settings.load({}, {}, dotenv)
    assert (s.workers, s.listen) == (7, "0.0.0.0:1")
    assert s.gaming_day is not None and s.gaming_day.zone == "Europe/Paris"
    dotenv.write_text("SABOT_WORKERS=7\n  this line is no setting\n")
    with pytest.raises(SettingError, match=rf"^{dotenv}: line 2: not KEY=VALUE"):
        Settings.load({}, {}, dotenv)


def test_every_line_of_env_example_reads_uncommented(tmp_path: Path) -> None:
    """Each commented sample of .env.example is a line the reader takes as it is written (the
    hashed SABOT_TOKENS sample too)."""
    example = Path(__file__).resolve().parents[2] / ".env.example"
    samples = [line[1:] for line in example.read_text().splitlines()
               if line.startswith("#SABOT_")]
    dotenv = tmp_path / ".env"
    dotenv.write_text("\n".join(samples) + "\n")
    values = read_env_file(dotenv)
    assert len(values) == len(samples) >= 15
    tokens = Settings.load({}, {}, dotenv, only=("tokens",)).tokens
    assert [c.principal.role for c in tokens.hashed] == [Role.BACK_OFFICE]
