"""A PostgreSQL store whose password holds a space, a quote or a backslash: every connection
string of the ledger is built by the one function that quotes it (``services.ledger.schema
.conninfo``, psycopg's ``make_conninfo``); ``Ledger.__init__`` built its own unquoted copy, so a
password with a space broke that path only (issue 21)."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from psycopg.conninfo import conninfo_to_dict

from services.bootstrap import LEDGER_GAMES
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig, store_env
from services.ledger.schema import conninfo
from tests.conftest import PG_HOST, PG_PORT, PG_USER

PASSWORD = "a b'c\\d e"


def test_the_connection_string_keeps_the_password_whole() -> None:
    env = store_env(f"postgresql://ana:{quote(PASSWORD, safe='')}@db.example:6543/sabot")
    assert conninfo_to_dict(conninfo(env)) == {
        "dbname": "sabot", "host": "db.example", "port": "6543", "user": "ana",
        "password": PASSWORD}


@pytest.mark.postgres
def test_the_ledger_opens_a_store_whose_password_has_a_space(postgres_database: str,
                                                              postgres_schema: str) -> None:
    """The cluster's trust authentication ignores the password: what is tested is that every
    connection string the ledger builds (its schema's guards included) still parses."""
    url = (f"postgresql://{PG_USER}:{quote(PASSWORD, safe='')}@{PG_HOST}:{PG_PORT}/"
           f"{postgres_database}?schema={postgres_schema}")
    ledger = Ledger(LedgerConfig(store_url=url, seal_key=bytes(32)), games=LEDGER_GAMES)
    try:
        ledger.open_account("o-ana", "ana")
        assert ledger.get_account("ana").balance == 0
    finally:
        ledger.close()
