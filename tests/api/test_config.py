"""Configuration from the environment or a .env file: tokens, store, listen address, seal key."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.api import names
from services.api.config import Config, ConfigError, format_tokens, parse_tokens
from services.api.credentials import new_token, token_hash
from services.api.errors import ApiError
from services.api.roles import Role
from services.api.server import keyring_of
from services.bootstrap import ROLE_TABLE
from services.settings import Settings

RPC_ROLES, allowed = ROLE_TABLE.rows, ROLE_TABLE.allowed  # the server's role table


def load(env: dict[str, str], dotenv: Path | None, **flags: str) -> Settings:
    """The settings (services/settings.py, the one reader): ``flags``, then ``env``, then the
    ``dotenv`` file."""
    return Settings.load(flags, env=env, env_file=dotenv)


def server_config(settings: Settings) -> Config:
    """What ``sabot serve`` hands the server of the settings' tokens."""
    tokens, hashed = settings.tokens.for_server()
    return Config(tokens=tokens, credentials=hashed, credentials_file=settings.credentials)


def test_tokens_parse_into_roles_and_accounts() -> None:
    tokens = parse_tokens("a1:admin, c1:croupier,p1:player:anne")
    assert tokens["a1"].role is Role.ADMIN and tokens["a1"].account is None
    assert tokens["p1"].role is Role.PLAYER and tokens["p1"].account == "anne"
    assert parse_tokens(format_tokens(tokens)) == tokens


@pytest.mark.parametrize("spec", ["x", "t:king", "t:player", "t:admin:anne", "t:admin,t:cashier",
                                  ":admin", "t:player:anne:extra"])
def test_bad_tokens_are_refused_naming_the_variable(spec: str) -> None:
    with pytest.raises(ConfigError, match="SABOT_TOKENS"):
        parse_tokens(spec)


def test_the_environment_wins_over_the_dotenv_file(tmp_path: Path) -> None:
    token = new_token()  # a file holds its hash only (a clear token there is refused)
    dotenv = tmp_path / ".env"
    dotenv.write_text("# dev\nSABOT_STORE=sqlite:///a.db\nexport SABOT_LISTEN='0.0.0.0:1'\n"
                      f"SABOT_SEAL_KEY={'ab' * 32}\n"
                      f"SABOT_TOKENS=sha256:{token_hash(token)}:admin\n")
    config = load({"SABOT_STORE": "postgresql://postgres@127.0.0.1/x"}, dotenv)
    assert config.store == "postgresql://postgres@127.0.0.1/x"
    assert config.listen == "0.0.0.0:1"
    assert config.seal_key == bytes.fromhex("ab" * 32)
    found = keyring_of(server_config(config)).token(token)
    assert found is not None and found.principal.role is Role.ADMIN
    assert load({}, dotenv, listen="127.0.0.1:9", store="sqlite:///b.db").listen == "127.0.0.1:9"


@pytest.mark.parametrize("key", ["zz", "abc", "ab" * 7])
def test_a_bad_seal_key_is_refused(key: str) -> None:
    with pytest.raises(ConfigError, match="SABOT_SEAL_KEY"):
        load({"SABOT_SEAL_KEY": key}, None)


def test_the_regulator_reads_everything_and_writes_nothing() -> None:
    for method, (writes, _) in RPC_ROLES.items():
        assert allowed(method, Role.REGULATOR) is not writes
        assert allowed(method, Role.ADMIN)
    assert not allowed("/sabot.v1.Unknown/Method", Role.REGULATOR)


@given(st.integers())
def test_amounts_are_checked_at_the_edge(amount: int) -> None:
    if 0 < amount <= names.MAX_AMOUNT:
        assert names.check_amount("amount", amount) == amount
    else:
        with pytest.raises(ApiError) as caught:
            names.check_amount("amount", amount)
        assert caught.value.field == "amount"


@given(st.text(max_size=80))
def test_a_table_name_is_accepted_only_in_its_shape(text: str) -> None:
    try:
        table_id = names.table_name("name", text)
    except ApiError as exc:
        assert exc.field == "name"
    else:
        assert names.table(table_id) == text


@given(st.integers(min_value=0, max_value=10**6), st.integers(min_value=1, max_value=1000))
def test_page_tokens_round_trip(offset: int, size: int) -> None:
    token = names.next_token(offset, size, offset + size + 1)
    assert names.page(size, token) == (offset + size, size)


def test_an_unreachable_store_is_unavailable_not_internal() -> None:
    import grpc
    import psycopg
    from eventsourcing.persistence import OperationalError

    from services.api.errors import code_of, to_status

    for exc in (psycopg.OperationalError("down"), OperationalError("down")):
        assert code_of(exc) is grpc.StatusCode.UNAVAILABLE
        assert "down" not in to_status(exc).details
    assert code_of(KeyError("bug")) is grpc.StatusCode.INTERNAL
    assert to_status(KeyError("secret detail")).details == "internal error"


def test_the_gaming_day_setting(tmp_path: Path) -> None:
    from services.projections.gamingday import DEFAULT, GamingDay

    assert load({}, None).gaming_day is None  # not given: the read models keep theirs
    assert GamingDay(6, 0, "UTC", 3) == DEFAULT
    config = load({"SABOT_GAMING_DAY": "06:00 Europe/Paris", "SABOT_SHIFTS": "4"}, None)
    assert config.gaming_day == GamingDay(6, 0, "Europe/Paris", 4)
    dotenv = tmp_path / ".env"
    dotenv.write_text("SABOT_GAMING_DAY=05:30 Asia/Kolkata\n")
    assert load({}, dotenv).gaming_day == GamingDay(5, 30, "Asia/Kolkata", 3)


@pytest.mark.parametrize("env,name", [
    ({"SABOT_GAMING_DAY": "6am Paris"}, "SABOT_GAMING_DAY"),
    ({"SABOT_GAMING_DAY": "06:00 Europe/Nowhere"}, "SABOT_GAMING_DAY"),
    ({"SABOT_GAMING_DAY": "25:00 UTC"}, "SABOT_GAMING_DAY"),
    ({"SABOT_SHIFTS": "7"}, "SABOT_SHIFTS"),
    ({"SABOT_SHIFTS": "0"}, "SABOT_SHIFTS"),
])
def test_a_bad_gaming_day_is_refused_naming_the_variable(env: dict[str, str], name: str) -> None:
    with pytest.raises(ConfigError, match=f"^{name}: "):
        load(env, None)
