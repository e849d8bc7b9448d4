"""The credentials file and the keyring, without a server: tokens kept hashed (never in clear),
at least 128 bits, rotation, revocation and expiry, the file's checks, SABOT_TOKENS' hashed
entries, and ``sabot credentials``."""

from __future__ import annotations

import json
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import services.cli as cli
from services.api import credentials
from services.api.config import Config, ConfigError
from services.api.credentials import Credential, CredentialError, Keyring
from services.api.roles import Role
from services.api.server import keyring_of
from services.settings import Settings

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def test_issue_keeps_only_the_hash_and_the_file_is_private(tmp_path: Path) -> None:
    path = tmp_path / "keys" / "credentials.toml"
    credential, token = credentials.issue(path, "c-0173", Role.CROUPIER, now=NOW,
                                          expires=NOW + timedelta(days=90))
    assert token is not None and credentials.token_bits(token) >= 256
    text = path.read_text()
    assert token not in text and credentials.token_hash(token) in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    [read] = credentials.read(path)
    assert read == credential and read.expires == NOW + timedelta(days=90)
    keyring = Keyring(path=path)
    found = keyring.token(token)
    assert found is not None and found.principal.principal_id == "c-0173"
    assert found.principal.role is Role.CROUPIER and found.principal.account is None
    assert keyring.token(token[:-1]) is None and keyring.token("") is None


def test_a_principal_holds_several_credentials_and_one_role(tmp_path: Path) -> None:
    path = tmp_path / "credentials.toml"
    first, one = credentials.issue(path, "anne", Role.PLAYER)
    second, two = credentials.issue(path, "anne", Role.PLAYER)
    assert first.principal == second.principal and first.principal.account == "anne"
    assert one and two and one != two
    with pytest.raises(CredentialError, match="a principal has one role"):
        credentials.issue(path, "anne", Role.CASHIER)
    with pytest.raises(CredentialError, match="a principal has one role"):
        credentials.issue(path, "anne", Role.PLAYER, account="bruno")
    keyring = Keyring(path=path)
    assert {keyring.token(t).id for t in (one, two) if keyring.token(t)} == {first.id, second.id}


def test_revoked_and_expired_credentials_are_found_with_their_state(tmp_path: Path) -> None:
    path = tmp_path / "credentials.toml"
    kept, keep = credentials.issue(path, "cashier-12", Role.CASHIER, now=NOW)
    gone, lose = credentials.issue(path, "cashier-12", Role.CASHIER, now=NOW,
                                   expires=NOW + timedelta(hours=1))
    assert keep and lose
    [revoked] = credentials.revoke(path, credential_id=gone.id, now=NOW + timedelta(minutes=5))
    assert revoked.id == gone.id
    keyring = Keyring(path=path)
    later = (NOW + timedelta(minutes=10)).timestamp()
    assert keyring.token(lose).state(later) == "revoked"  # type: ignore[union-attr]
    assert keyring.token(keep).state(later) == "active"  # type: ignore[union-attr]
    assert kept.state((NOW + timedelta(days=999)).timestamp()) == "active"
    assert gone.state((NOW + timedelta(hours=2)).timestamp()) == "expired"
    with pytest.raises(CredentialError, match="no active credential"):
        credentials.revoke(path, credential_id=gone.id)
    with pytest.raises(CredentialError, match="in the future"):
        credentials.issue(path, "x-1", Role.ADMIN, expires=NOW, now=NOW)


def test_a_certificate_name_stands_for_a_principal(tmp_path: Path) -> None:
    path = tmp_path / "credentials.toml"
    credential, token = credentials.issue(path, "terminal-4", Role.CROUPIER,
                                          certificate="terminal-4.casino")
    assert token is None and "sha256" not in path.read_text().split("[[credential]]")[1]
    keyring = Keyring(path=path)
    assert keyring.has_certificates
    assert keyring.certificate(["someone", "terminal-4.casino"]) == credential
    assert keyring.certificate(["terminal-4"]) is None
    credentials.revoke(path, principal_id="terminal-4")
    keyring.reload()
    assert keyring.certificate(["terminal-4.casino"]) is None


@pytest.mark.parametrize(("text", "message"), [
    ("[[credential]]\nid = 'k-1'\n", "id must look like"),
    ("[[credential]]\nid = 'k-00000001'\nprincipal = 'a'\nrole = 'king'\nsha256 = '" + "0" * 64
     + "'\n", "unknown role"),
    ("[[credential]]\nid = 'k-00000001'\nprincipal = 'a b'\nrole = 'admin'\nsha256 = '"
     + "0" * 64 + "'\n", "is not an id"),
    ("[[credential]]\nid = 'k-00000001'\nprincipal = 'a'\nrole = 'admin'\n", "give sha256"),
    ("[[credential]]\nid = 'k-00000001'\nprincipal = 'a'\nrole = 'admin'\nsha256 = 'abc'\n",
     "64 lower-case hex"),
    ("[[credential]]\nid = 'k-00000001'\nprincipal = 'a'\nrole = 'admin'\ntoken = 'x'\n",
     "unknown key 'token'"),
    ("[[credential]]\nid = 'k-00000001'\nprincipal = 'a'\nrole = 'admin'\nsha256 = '"
     + "0" * 64 + "'\nexpires = 2027-01-01T00:00:00\n", "needs its zone"),
    ("[[credential]]\nid = 'k-00000001'\nprincipal = 'a'\nrole = 'admin'\naccount = 'b'\n"
     "sha256 = '" + "0" * 64 + "'\n", "only a player"),
    ("tokens = ['x']\n", "only \\[\\[credential\\]\\] tables"),
    ("[[credential\n", "not TOML"),
])
def test_a_bad_file_is_refused_in_one_line_naming_the_entry(tmp_path: Path, text: str,
                                                            message: str) -> None:
    path = tmp_path / "credentials.toml"
    path.write_text(text)
    with pytest.raises(CredentialError, match=message) as caught:
        credentials.read(path)
    assert "\n" not in str(caught.value) and str(path) in str(caught.value)


def test_two_entries_may_not_share_an_id_or_a_hash(tmp_path: Path) -> None:
    entry = ("[[credential]]\nid = 'k-00000001'\nprincipal = 'a'\nrole = 'admin'\n"
             "sha256 = '" + "0" * 64 + "'\n")
    with pytest.raises(CredentialError, match="appears twice"):
        credentials.parse(entry + entry, "f")
    with pytest.raises(CredentialError, match="same token hash"):
        credentials.parse(entry + entry.replace("k-00000001", "k-00000002"), "f")


def test_a_reload_keeps_the_credentials_in_force_when_the_file_breaks(tmp_path: Path) -> None:
    path = tmp_path / "credentials.toml"
    _, token = credentials.issue(path, "admin-1", Role.ADMIN)
    events: list[str] = []
    keyring = Keyring(path=path, on_event=lambda event, fields: events.append(event))
    generation = keyring.generation
    path.write_text("garbage = [")
    assert keyring.changed() and keyring.reload() is False
    assert keyring.token(token or "") is not None and keyring.generation == generation
    assert events == ["credentials reload refused; the credentials in force stay"]
    path.unlink()  # a file removed: nobody from it may call any more
    assert keyring.reload() and keyring.token(token or "") is None


def test_a_file_caught_empty_in_the_middle_of_a_write_leaves_the_credentials_in_force(
        tmp_path: Path) -> None:
    """An editor that truncates the file before writing it (``Path.write_text``) is seen with
    an empty file: a reload then refuses it (no caller locked out), and the watcher reads a
    change only once it has held still from one look to the next."""
    path = tmp_path / "credentials.toml"
    _, token = credentials.issue(path, "admin-1", Role.ADMIN)
    keyring = Keyring(path=path)
    kept = path.read_text()
    path.write_text("")  # truncated, not yet written
    assert keyring.reload() is False and keyring.token(token or "") is not None
    path.write_text(kept[: len(kept) // 2])  # half written: the watcher waits for it to settle
    pending = keyring.look(None)
    assert pending is not None and keyring.token(token or "") is not None
    path.write_text(kept + "\n")  # the write ends
    pending = keyring.look(pending)  # changed again: still waiting
    assert pending is not None
    generation = keyring.generation
    assert keyring.look(pending) is None  # held still: read
    assert keyring.generation == generation + 1 and keyring.token(token or "") is not None
    assert keyring.look(None) is None  # nothing more to read


def test_a_file_others_may_write_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "keys"
    path = folder / "credentials.toml"
    _, token = credentials.issue(path, "admin-1", Role.ADMIN)
    path.chmod(0o622)
    with pytest.raises(CredentialError, match=r"the file may be written by others \(mode 622\)"):
        Keyring(path=path)
    path.chmod(0o600)
    keyring = Keyring(path=path)
    folder.chmod(0o777)
    try:
        assert keyring.reload() is False and keyring.token(token or "") is not None
        with pytest.raises(CredentialError, match="its directory may be written by others"):
            Keyring(path=path)
        folder.chmod(0o1777)  # sticky: others cannot replace the file
        assert Keyring(path=path).token(token or "") is not None
    finally:
        folder.chmod(0o700)


names_ = st.from_regex(credentials.PRINCIPAL_ID, fullmatch=True)


@settings(max_examples=60)
@given(st.lists(st.tuples(names_, st.sampled_from(list(Role)), st.booleans(),
                          st.integers(min_value=0, max_value=10**8)), max_size=6),
       st.text(min_size=1).filter(str.strip))
def test_render_and_parse_round_trip(entries: list[tuple[str, Role, bool, int]],
                                     odd: str) -> None:
    made = []
    roles: dict[str, Role] = {}
    for n, (pid, role, certificate, seconds) in enumerate(entries):
        role = roles.setdefault(pid, role)
        when = NOW + timedelta(seconds=seconds)
        made.append(Credential(
            id=f"k-{n:08x}", principal=credentials.principal_of(pid, role, None, "t"),
            sha256=None if certificate else credentials.token_hash(f"tok-{n}"),
            certificate=f"{odd}-{n}" if certificate else None, issued=NOW,
            expires=when if seconds % 2 else None, revoked=when if seconds % 3 == 0 else None))
    assert credentials.parse(credentials.render(made), "f") == made


@pytest.mark.parametrize(("token", "ok"), [
    ("a", False), ("t:admin", False), ("0123456789abcdef" * 2, True), ("0123456789abcdef", False),
    ("x" * 200, False), ("abab" * 20, False), ("tok-admin-1234abcd", False),
    pytest.param(credentials.new_token(), True, id="new_token"),  # a fixed id: pytest -n 2
    ("Zm9vYmFyYmF6cXV4MTIzNDU2Nzg", True),
])
def test_a_token_carries_at_least_128_bits(token: str, ok: bool) -> None:
    assert (credentials.token_bits(token) >= credentials.MIN_TOKEN_BITS) is ok


def load(env: dict[str, str], dotenv: Path | None) -> Config:
    """What ``sabot serve`` makes of the settings' tokens (services/settings.py, the one
    reader: ``Tokens.for_server``)."""
    tokens, hashed = Settings.load(env=env, env_file=dotenv).tokens.for_server()
    return Config(tokens=tokens, credentials=hashed)


def test_sabot_tokens_short_clear_and_hashed_entries(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^SABOT_TOKENS \(player:anne\): a token must carry"):
        load({"SABOT_TOKENS": "tok-anne:player:anne"}, None)
    strong = credentials.new_token()
    hashed = credentials.new_token()
    config = load({"SABOT_TOKENS": f"{strong}:admin,sha256:{credentials.token_hash(hashed)}"
                                   ":player:anne"}, None)
    keyring = keyring_of(config)
    assert keyring.token(strong).principal.role is Role.ADMIN  # type: ignore[union-attr]
    anne = keyring.token(hashed)
    assert anne is not None and anne.principal.account == "anne"
    assert anne.principal.principal_id == "anne"
    dotenv = tmp_path / ".env"
    dotenv.write_text(f"SABOT_TOKENS={strong}:admin\n")
    with pytest.raises(ConfigError, match="a clear token in a file"):
        load({}, dotenv)
    dotenv.write_text(f"SABOT_TOKENS=sha256:{credentials.token_hash(strong)}:admin\n")
    assert keyring_of(load({}, dotenv)).token(strong) is not None
    with pytest.raises(ConfigError, match="64 hex"):
        load({"SABOT_TOKENS": "sha256:abcd:admin"}, None)


def test_the_credentials_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("services.cli.credentials",))
    path = str(tmp_path / "c.toml")
    assert cli.main(["credentials", "issue", "--file", path, "--principal", "cashier-12",
                     "--role", "cashier", "--days", "30"]) == 0
    out, err = capsys.readouterr()
    token = out.strip()
    assert len(out.splitlines()) == 1 and token.startswith("sabot_")
    assert "issued k-" in err and "cashier-12" in err and token not in err
    assert token not in Path(path).read_text()
    assert cli.main(["credentials", "list", "--file", path, "--format", "json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert (row["principal"], row["role"], row["state"]) == ("cashier-12", "cashier", "active")
    assert credentials.token_hash(token) not in json.dumps(row)
    assert cli.main(["credentials", "revoke", "--file", path, row["id"]]) == 0
    assert f"revoked {row['id']}" in capsys.readouterr().out
    assert cli.main(["credentials", "list", "--file", path]) == 0
    assert "revoked" in capsys.readouterr().out
    assert cli.main(["credentials", "revoke", "--file", path, row["id"]]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert cli.main(["credentials", "issue", "--file", path, "--principal", "x",
                     "--role", "admin", "--expires", "2020-01-01T00:00:00Z"]) == 2
    assert "in the future" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", _Line(token))
    assert cli.main(["credentials", "hash"]) == 0
    assert capsys.readouterr().out.strip() == f"sha256:{credentials.token_hash(token)}"
    monkeypatch.setattr("sys.stdin", _Line("short"))
    assert cli.main(["credentials", "hash"]) == 2
    assert "at least 128 bits" in capsys.readouterr().err


class _Line:
    def __init__(self, text: str) -> None:
        self.text = text

    def readline(self) -> str:
        return self.text + "\n"
