"""Store URLs as libpq reads them (issue 23): every form libpq accepts is passed through as it
is (several hosts with their ports, ``?host=&port=`` lists, libpq's query parameters), or refused
naming the part; never replaced by a default, never an error that shows the password.
Real connections through these forms: tests/ops/test_store_hosts.py."""

from __future__ import annotations

import pytest

from domain.errors import InvalidArgument
from services.ledger.config import LIBPQ, libpq_params, store_env
from services.ledger.schema import conninfo
from services.regulator.source import Database, StoreError
from services.settings import SettingError, Settings, redact_url


def _where(url: str) -> tuple[str, str, str, str, str, str]:
    env = store_env(url)
    return (env["POSTGRES_HOST"], env["POSTGRES_PORT"], env["POSTGRES_DBNAME"],
            env["POSTGRES_USER"], env["POSTGRES_PASSWORD"], env["POSTGRES_SCHEMA"])


@pytest.mark.parametrize(("url", "expected"), [
    ("postgresql://u@h:5471/db", ("h", "5471", "db", "u", "", "public")),
    ("postgresql://u:p%40ss@h1:5471,h2:5472/db",
     ("h1,h2", "5471,5472", "db", "u", "p@ss", "public")),
    ("postgresql://u@/db?host=h1,h2&port=5471,5472",
     ("h1,h2", "5471,5472", "db", "u", "", "public")),
    ("postgres://u@h1,h2,h3/db?schema=casino", ("h1,h2,h3", ",,", "db", "u", "", "casino")),
    ("postgresql://u@h1:5471,h2/db", ("h1,h2", "5471,", "db", "u", "", "public")),
    ("postgresql://[::1]:5471,[fe80::1]:5472/db",
     ("::1,fe80::1", "5471,5472", "db", "postgres", "", "public")),
    ("postgresql:///db?host=%2Fvar%2Frun%2Fpostgresql", ("/var/run/postgresql", "5432", "db",
                                                          "postgres", "", "public")),
    ("postgresql://u@h/db?user=v&password=s", ("h", "5432", "db", "v", "s", "public")),
    ("postgresql:///db", ("127.0.0.1", "5432", "db", "postgres", "", "public")),  # none given
])
def test_hosts_ports_and_the_rest_as_libpq_reads_them(url: str, expected: tuple[str, ...]
                                                      ) -> None:
    assert _where(url) == expected


def test_libpq_parameters_pass_through_to_every_connection_string() -> None:
    url = ("postgresql://u:pw@h1:5471,h2:5472/db?target_session_attrs=read-write"
           "&sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&application_name=floor"
           "&load_balance_hosts=random&schema=casino")
    env = store_env(url)
    assert libpq_params(env) == {
        "target_session_attrs": "read-write", "sslmode": "verify-full",
        "sslrootcert": "/etc/ca.pem", "application_name": "floor",
        "load_balance_hosts": "random"}
    assert "schema" not in env[LIBPQ]  # Sabot's own: the search path, not libpq's
    from psycopg.conninfo import conninfo_to_dict

    assert conninfo_to_dict(conninfo(env)) == {
        "host": "h1,h2", "port": "5471,5472", "dbname": "db", "user": "u", "password": "pw",
        "target_session_attrs": "read-write", "sslmode": "verify-full",
        "sslrootcert": "/etc/ca.pem", "application_name": "floor",
        "load_balance_hosts": "random"}
    assert store_env("postgresql://u@h/db?ssl=true")[LIBPQ] == "sslmode=require"  # libpq's
    assert LIBPQ not in store_env("postgresql://u@h/db?schema=x")


@pytest.mark.parametrize(("url", "part"), [
    ("postgresql://u@h/db?connect_timeout=3", "connect_timeout: not supported"),
    ("postgresql://u@h/db?keepalives_idle=3", "keepalives_idle: not supported"),
    ("postgresql://u@h/db?options=-c%20x%3D1", "options: not supported"),
    ("postgresql://u@h/db?service=prod", "service: not supported"),
    ("postgresql://u@h/db?replication=1", "replication: not supported"),
    ("postgresql://u@h/db?target_session_attrs=rw", "target_session_attrs: 'rw' is not one"),
    ("postgresql://u@h/db?sslmode=on", "sslmode: 'on' is not one"),
    ("postgresql://u@h/db?frobnicate=1", 'invalid URI query parameter: "frobnicate"'),
    ("postgresql://u@h1,h2,h3/db?port=1,2", "port: 2 ports for 3 hosts"),
    ("postgresql://u@h:x/db", "port: each must be a number"),
    ("postgresql://u@h:70000/db", "port: each must be a number"),
    ("postgresql://u@h/", "needs a database"),
    ("postgresql://u@h/db?schema=a&schema=b", "schema: give one"),
    ("postgresql://u:s3cr%ZZet@h/db", "not a URL libpq can read"),
    ("postgresql://u:s3cret@[::1/db", "not a URL libpq can read"),
])
def test_what_cannot_be_passed_is_refused_naming_the_part(url: str, part: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        store_env(url)
    assert part in caught.value.message
    assert "s3cr" not in caught.value.message
    with pytest.raises(SettingError) as setting:  # the setting: an error, never a traceback
        Settings.load(env={"SABOT_STORE": url}, env_file=None)
    assert part in str(setting.value) and "s3cr" not in str(setting.value)
    with pytest.raises(StoreError) as notary:  # the notary's database, before connecting
        Database(url)
    assert part in str(notary.value) and "s3cr" not in str(notary.value)


@pytest.mark.parametrize(("url", "shown"), [
    ("postgresql://u:pw@h:5/db", "postgresql://u:***@h:5/db"),
    ("postgresql://u:pw@h1:5471,h2:5472/db?target_session_attrs=read-write",
     "postgresql://u:***@h1:5471,h2:5472/db?target_session_attrs=read-write"),
    ("postgresql://u@/db?host=h1,h2&password=pw&sslmode=require",
     "postgresql://u@/db?host=h1,h2&password=***&sslmode=require"),
    ("postgresql://u@h1,h2/db", "postgresql://u@h1,h2/db"),
])
def test_a_shown_url_hides_its_password_in_every_form(url: str, shown: str) -> None:
    assert redact_url(url) == shown
