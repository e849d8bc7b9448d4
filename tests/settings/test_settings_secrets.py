"""No setting's secret comes back: not in ``repr``, not in an error, whether it is a good key or a
mistyped one; a store URL's password is hidden."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.settings import SETTINGS, Setting, SettingError, Settings, redact_url

GOOD = "5ec12e7" * 9 + "5"  # 64 hex digits
SECRETS = [s for s in SETTINGS if s.secret]


def test_the_secret_settings() -> None:
    assert {s.name for s in SECRETS} == {"store", "read_store", "token", "tokens", "seal_key",
                                         "checkpoint_key", "regulator_key", "chain_key"}


def _good(setting: Setting, tmp_path: Path) -> str:
    if setting.name in ("store", "read_store"):
        return f"postgresql://sabot:{GOOD}@127.0.0.1:5432/sabot"
    if setting.name == "tokens":
        return f"{GOOD}:admin"
    if setting.name == "regulator_key":  # an X25519 private key: any 32 bytes
        return GOOD
    return GOOD


@pytest.mark.parametrize("setting", SECRETS, ids=lambda s: s.name)
def test_a_good_secret_is_not_in_repr(setting: Setting, tmp_path: Path) -> None:
    text = _good(setting, tmp_path)
    flags = {setting.name: text} if setting.flag else {}
    env = {setting.variable: text} if setting.variable else {}
    s = Settings.load(flags, env, None, only=[setting.name])
    assert s.given(setting.name)
    shown = repr(s) + str(s) + repr(s.sources)
    assert GOOD not in shown and GOOD.upper() not in shown
    raw = bytes.fromhex(GOOD)
    assert repr(raw)[2:-1][:20] not in shown


@pytest.mark.parametrize("setting", SECRETS, ids=lambda s: s.name)
@pytest.mark.parametrize("mistyped", [GOOD[:-1], GOOD + "0", GOOD[:-1] + "g", GOOD[:32],
                                      "/etc/" + GOOD, GOOD + "\n" + GOOD])
def test_a_mistyped_secret_is_not_in_the_error(setting: Setting, mistyped: str) -> None:
    if setting.name in ("store", "read_store"):  # a password in a URL that cannot be read
        mistyped = f"postgresql://sabot:{mistyped.replace('/', '')}@127.0.0.1:nope/sabot"
    elif setting.name == "tokens":
        mistyped = f"{mistyped}:king"
    elif setting.name == "token":
        return  # any text is a token: nothing to refuse
    for flags, env in (({setting.name: mistyped}, {}), ({}, {setting.variable or "": mistyped})):
        if not flags and setting.variable is None:
            continue
        if flags and setting.flag is None:
            continue
        with pytest.raises(SettingError) as caught:
            Settings.load(flags, env, None, only=[setting.name])
        message = str(caught.value)
        assert GOOD[:12] not in message and "\n" not in message


def test_a_store_urls_password_is_hidden() -> None:
    assert redact_url(f"postgresql://sabot:{GOOD}@db:5432/x?schema=s") == \
        "postgresql://sabot:***@db:5432/x?schema=s"
    assert redact_url("postgresql://sabot@db/x") == "postgresql://sabot@db/x"
    assert redact_url("sqlite:///var/sabot.db") == "sqlite:///var/sabot.db"
    s = Settings.load({"store": f"postgresql://sabot:{GOOD}@db:5432/x"}, {}, None)
    assert GOOD not in repr(s) and "sabot:***@db:5432" in repr(s)
