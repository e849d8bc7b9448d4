"""``Settings.load``: the flag, else the environment, else the ``.env`` file, else the default;
old names as aliases; a command reads only what it names; errors name the variable and the flag
in one line."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519

from services.api.config import ConfigError
from services.api.credentials import new_token, token_hash
from services.api.roles import Role
from services.projections.gamingday import GamingDay
from services.settings import (
    BY_NAME,
    DEFAULT_STORE,
    SETTINGS,
    SettingError,
    Settings,
    add_flags,
    reads,
    settings_read,
)

SEAL = "ab" * 32
ED = ed25519.Ed25519PrivateKey.from_private_bytes(bytes(range(32)))


def test_defaults() -> None:
    s = Settings.load({}, {}, None)
    assert s.store == DEFAULT_STORE == "sqlite:///var/sabot.db"
    assert (s.listen, s.target) == ("127.0.0.1:50051", "127.0.0.1:50051")
    assert s.seal_key is None and s.checkpoint_key is None and s.chain_key is None
    assert (s.workers, s.projections, s.ledger_process, s.streams_per_principal) == (32, True,
                                                                                     True, 4)
    assert s.gaming_day is None and not s.tokens and s.sources == {}


def test_flag_then_environment_then_file_then_default(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("# site\nSABOT_STORE=sqlite:///file.db\nexport SABOT_LISTEN='0.0.0.0:1'\n"
                      "SABOT_WORKERS=\"7\"\n")
    env = {"SABOT_STORE": "sqlite:///env.db", "SABOT_WORKERS": "9"}
    s = Settings.load({"store": "sqlite:///flag.db"}, env, dotenv)
    assert (s.store, s.listen, s.workers, s.target) == (
        "sqlite:///flag.db", "0.0.0.0:1", 9, "127.0.0.1:50051")
    assert s.sources == {"store": "--store", "listen": f"SABOT_LISTEN in {dotenv}",
                         "workers": "SABOT_WORKERS"}
    s = Settings.load({"store": None}, env, dotenv)
    assert s.store == "sqlite:///env.db"
    assert Settings.load({}, {}, dotenv).store == "sqlite:///file.db"


def test_the_env_file_from_its_flag_its_variable_or_dot_env(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    monkeypatch.chdir(tmp_path)
    Path(".env").write_text("SABOT_TARGET=dot:1\n")
    Path("site.env").write_text("SABOT_TARGET=site:1\n")
    Path("flag.env").write_text("SABOT_TARGET=flag:1\n")
    assert Settings.load({}, {}).target == "dot:1"
    assert Settings.load({}, {"SABOT_ENV_FILE": "site.env"}).target == "site:1"
    s = Settings.load({"env_file": "flag.env"}, {"SABOT_ENV_FILE": "site.env"})
    assert (s.target, s.env_file) == ("flag:1", Path("flag.env"))
    assert Settings.load({}, {"SABOT_ENV_FILE": "none.env"}).target == "127.0.0.1:50051"
    assert Settings.load({}, {}, None).target == "127.0.0.1:50051"  # no file at all


def test_old_names_are_aliases() -> None:
    assert Settings.load({}, {"SABOT_STORE_URL": "sqlite:///old.db"}, None).store == \
        "sqlite:///old.db"
    both = {"SABOT_STORE": "sqlite:///a.db", "SABOT_STORE_URL": "sqlite:///a.db"}
    assert Settings.load({}, both, None).store == "sqlite:///a.db"
    with pytest.raises(SettingError, match=r"^SABOT_STORE and SABOT_STORE_URL") as caught:
        Settings.load({}, {**both, "SABOT_STORE_URL": "sqlite:///b.db"}, None)
    assert "a.db" not in str(caught.value) and "b.db" not in str(caught.value)
    from cryptography.hazmat.primitives.asymmetric import x25519

    reg = x25519.X25519PrivateKey.from_private_bytes(bytes(range(32))).public_key()
    s = Settings.load({}, {"SABOT_REGULATOR_KEY": reg.public_bytes_raw().hex()}, None)
    assert s.regulator_public_key == reg.public_bytes_raw()
    assert s.sources["regulator_public_key"] == "SABOT_REGULATOR_KEY"


def test_a_command_reads_only_what_it_names() -> None:
    bad = {"SABOT_WORKERS": "lots", "SABOT_SEAL_KEY": "zz", "SABOT_STORE": "ftp://x",
           "SABOT_TARGET": "h:1"}
    assert Settings.load({}, bad, None, only=["target"]).target == "h:1"
    for name, variable in (("workers", "SABOT_WORKERS"), ("seal_key", "SABOT_SEAL_KEY"),
                           ("store", "SABOT_STORE")):
        with pytest.raises(SettingError, match=f"^{variable}: "):
            Settings.load({}, bad, None, only=[name])
    with pytest.raises(ValueError, match="no such setting"):
        Settings.load({}, {}, None, only=["nope"])


@pytest.mark.parametrize("setting", [s for s in SETTINGS if s.variable and s.flag],
                         ids=lambda s: s.name)
def test_an_error_names_the_variable_and_the_flag(setting: object) -> None:
    from services.settings import Setting

    assert isinstance(setting, Setting)
    bad = "\tnot a good value at all\t" if setting.name not in ("chain_head",) else " "
    try:
        Settings.load({}, {setting.variable or "": bad}, None, only=[setting.name])
    except SettingError as exc:  # from the environment: the variable first, then the flag
        message = str(exc)
        assert message.startswith(f"{setting.variable}: ") and f"or {setting.flag})" in message
        assert "\n" not in message
    else:  # free text (a path, a token, a gaming day's shifts): nothing to refuse here
        assert setting.name in ("token", "credentials", "env_file", "tls_cert", "tls_key",
                                "tls_client_ca", "tls_ca", "tls_client_cert", "tls_client_key",
                                "chain_head", "tokens", "ledger_process", "projections")
        return
    try:
        Settings.load({setting.name: bad}, {}, None, only=[setting.name])
    except SettingError as exc:  # from the flag: the flag first, then the variable
        assert str(exc).startswith(f"{setting.flag}: ") and f"or {setting.variable})" in str(exc)


def test_required_settings_name_the_variable_and_the_flag() -> None:
    s = Settings.load({}, {}, None)
    with pytest.raises(SettingError, match=r"^SABOT_SEAL_KEY / --seal-key: required$"):
        s.require("store", "seal_key")
    with pytest.raises(SettingError, match=r"^--regulator-private-key: required$"):
        s.require("regulator_key")
    assert isinstance(SettingError("x"), ConfigError)


def test_keys_and_their_public_halves(tmp_path: Path) -> None:
    raw = ED.private_bytes_raw()
    s = Settings.load({}, {"SABOT_CHECKPOINT_KEY": raw.hex(), "SABOT_SEAL_KEY": SEAL}, None)
    assert s.checkpoint_key == raw and s.seal_key == bytes.fromhex(SEAL)
    assert s.checkpoint_public_key == ED.public_key().public_bytes_raw()  # derived
    other = ed25519.Ed25519PrivateKey.generate().public_key().public_bytes_raw()
    s = Settings.load({"checkpoint_public_key": other.hex()},
                      {"SABOT_CHECKPOINT_KEY": raw.hex()}, None)
    assert s.checkpoint_public_key == other  # given: not derived
    (tmp_path / "a.pub").write_text(other.hex() + "\n")
    pub = ED.public_key().public_bytes_raw()
    s = Settings.load({"chain_public_keys": [str(tmp_path / "a.pub"), pub.hex()]}, {}, None)
    assert s.chain_public_keys == (other, pub)
    s = Settings.load({}, {"SABOT_CHAIN_PUBLIC_KEY": f"{pub.hex()}, {other.hex()}"}, None)
    assert s.chain_public_keys == (pub, other)
    with pytest.raises(SettingError, match=r"^SABOT_SEAL_KEY: "):
        Settings.load({}, {"SABOT_SEAL_KEY": "ab" * 16}, None)  # 16 bytes: no longer accepted


def test_the_gaming_day_from_its_two_settings(tmp_path: Path) -> None:
    s = Settings.load({}, {"SABOT_GAMING_DAY": "06:00 Europe/Paris", "SABOT_SHIFTS": "4"}, None)
    assert s.gaming_day == GamingDay(6, 0, "Europe/Paris", 4)
    assert Settings.load({"shifts": "2"}, {}, None).gaming_day == GamingDay(6, 0, "UTC", 2)
    assert Settings.load({}, {}, None).gaming_day is None
    for env, name in (({"SABOT_GAMING_DAY": "6am"}, "SABOT_GAMING_DAY"),
                      ({"SABOT_SHIFTS": "7"}, "SABOT_SHIFTS")):
        with pytest.raises(SettingError, match=f"^{name}: "):
            Settings.load({}, env, None)


def test_tokens_for_the_server_and_for_a_client(tmp_path: Path) -> None:
    strong, other = new_token(), new_token()
    s = Settings.load({}, {"SABOT_TOKENS": f"{strong}:admin,sha256:{token_hash(other)}"
                                          ":player:anne"}, None)
    clear, hashed = s.tokens.for_server()
    assert clear[strong].role is Role.ADMIN and hashed[0].principal.account == "anne"
    weak = Settings.load({}, {"SABOT_TOKENS": "tok-anne:player:anne"}, None)
    assert weak.tokens.clear["tok-anne"].account == "anne"  # a client (the demo) may hold it
    with pytest.raises(SettingError, match=r"^SABOT_TOKENS \(player:anne\): a token must"):
        weak.tokens.for_server()
    dotenv = tmp_path / ".env"
    dotenv.write_text(f"SABOT_TOKENS={strong}:admin\n")
    with pytest.raises(SettingError, match="a clear token in a file"):
        Settings.load({}, {}, dotenv).tokens.for_server()
    dotenv.write_text(f"SABOT_TOKENS=sha256:{token_hash(strong)}:admin\n")
    assert Settings.load({}, {}, dotenv).tokens.for_server()[1][0].principal.role is Role.ADMIN
    with pytest.raises(SettingError, match=r"^SABOT_TOKENS: unknown role"):
        Settings.load({}, {"SABOT_TOKENS": f"{strong}:king"}, None)
    with pytest.raises(SettingError, match=r"^--tokens: each item"):
        Settings.load({"tokens": "x"}, {}, None)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="t")
    add_flags(parser, "store", "seal_key", "ledger_process", "chain_public_keys",
              "regulator_public_key", "insecure")
    reads(parser, "tls_ca")
    return parser


def test_flags_on_a_parser() -> None:
    parser = _parser()
    assert settings_read(parser) == ("store", "seal_key", "ledger_process", "chain_public_keys",
                                     "regulator_public_key", "insecure", "env_file", "tls_ca",
                                     "debug")
    args = parser.parse_args(["--store", "sqlite:///x.db", "--single-process",
                              "--chain-key", "ab" * 32, "--insecure"])
    ca = {"SABOT_TLS_CA": "/ca.pem", "SABOT_TARGET": "elsewhere:1", "SABOT_SEAL_KEY": SEAL}
    s = Settings.from_args(args, ca)
    assert (s.store, s.ledger_process, s.insecure, s.tls_ca, s.seal_key) == (
        "sqlite:///x.db", False, True, Path("/ca.pem"), bytes.fromhex(SEAL))
    assert s.target == "127.0.0.1:50051"  # not read by this command
    assert len(s.chain_public_keys) == 1
    assert Settings.from_args(parser.parse_args([]), {}).ledger_process is True
    text = parser.format_help()
    assert "--chain-public-key" in text and "--chain-key" not in text  # the old name is hidden
    assert "--regulator-public-key" in text and "--regulator-key" not in text
    assert "env SABOT_STORE; default: sqlite:///var/sabot.db" in " ".join(text.split())
    assert "--env-file" in text


def test_one_flag_one_help_everywhere() -> None:
    one, two = _parser(), argparse.ArgumentParser(prog="t")
    add_flags(two, "store")

    def help_of(p: argparse.ArgumentParser) -> str | None:
        return next(a.help for a in p._actions if "--store" in a.option_strings)

    assert help_of(one) == help_of(two)


def test_the_table_holds_each_variable_and_flag_once() -> None:
    variables = [v for s in SETTINGS for v in (s.variable, *s.aliases) if v]
    assert len(variables) == len(set(variables))
    flags = [s.flag for s in SETTINGS if s.flag]
    assert len(flags) == len(set(flags))
    assert len(BY_NAME) == len(SETTINGS)
    for s in SETTINGS:
        assert s.format and s.default and (s.variable or s.flag)
        assert not s.variable or s.variable.startswith("SABOT_")
