"""A real server on 127.0.0.1 (a free port) per store: SQLite, and PostgreSQL on a fresh database.
Its callers are named principals of a credentials file (``PRINCIPALS``), each with a token
issued as ``sabot credentials issue`` does (only the hashes are in the file).

PostgreSQL is skipped only when unreachable AND ``SABOT_REQUIRE_POSTGRES`` is not "1".
"""

from __future__ import annotations

import io
import os
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import psycopg
import pytest

from services.api import credentials, logs, server
from services.api.config import Config
from services.api.gen.sabot.v1 import cashier_pb2
from services.api.roles import Role
from services.bootstrap import LEDGER_GAMES, SERVED
from services.ledger.api import Ledger, LedgerConfig
from services.ledger.remote import LedgerHost, RemoteLedger
from tests.conftest import PG_ADMIN_DSN, postgres_unavailable

from .support import DEPOSIT, PLAYERS, Api, money

PG_ADMIN = PG_ADMIN_DSN
SEED = bytes(range(100, 132))  # every shoe of the tests: the same seed, its own shoe id
KEY = bytes(range(32))
# role -> the principal the API tests call as (players: their account is their id)
PRINCIPALS = {"croupier": "c-0173", "cashier": "cashier-12", "back_office": "office-3",
              "regulator": "regulator-1", "admin": "admin-1"}


def issue_principals(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    """A credentials file naming ``PRINCIPALS`` and ``PLAYERS``: (role -> token, account ->
    token)."""
    roles = {r: credentials.issue(path, pid, Role(r))[1] or "" for r, pid in PRINCIPALS.items()}
    players = {p: credentials.issue(path, p, Role.PLAYER)[1] or "" for p in PLAYERS}
    return roles, players


class LogBuffer(io.StringIO):
    """The server's JSON log lines, shared by the tests (thread-safe writes)."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            return super().write(text)


def _pg_database() -> str:
    try:
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute("SELECT 1")
    except psycopg.OperationalError as exc:
        postgres_unavailable("PostgreSQL unreachable", str(exc))
    name = f"sabot_test_api_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return name


def _drop(name: str) -> None:
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def serve_api(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
              ) -> Iterator[Api]:
    """The ``api`` fixture's server (tests/conftest.py defines the fixture: one server per store
    for the whole session, shared by tests/api, tests/cuarenta and tests/treinta_y_una; every
    test makes its own tables and accounts)."""
    database = None
    if request.param.startswith("sqlite"):
        url = f"sqlite:///{Path(tmp_path_factory.mktemp('api')) / 'sabot.db'}"
    else:
        database = _pg_database()
        # the server connects as the role that may only read and insert (tests/conftest.py)
        url = request.getfixturevalue("restricted_setup")(database).server_url
    keys = Path(tmp_path_factory.mktemp("credentials")) / "credentials.toml"
    roles, players = issue_principals(keys)
    log = LogBuffer()
    logs.configure(stream=log)
    ledger = Ledger(LedgerConfig(store_url=url, seal_key=KEY, new_seed=lambda: SEED,
                                 pool_size=8), batching=True, games=LEDGER_GAMES)
    host = None
    served: Ledger = ledger
    if request.param.endswith("ledger-process"):
        # The server talks to the ledger over the ledger process's socket and protocol (the
        # host runs in this process's threads, so the tests' fixed seed still applies).
        path = str(Path(tempfile.mkdtemp(prefix="sabot-test-")) / "ledger.sock")
        host = LedgerHost(ledger, path).start()
        served = cast(Ledger, RemoteLedger(path, url, pool_size=8, secret=host.secret,
                                           games=LEDGER_GAMES))
    config = Config(listen="127.0.0.1:0", store=url, credentials_file=keys, seal_key=KEY,
                    workers=16)
    running = server.start(config, served, games=SERVED)
    target = f"127.0.0.1:{running.port}"
    result = Api(target, request.param, {**roles, "player": players["anne"]}, players, log,
                 running, credentials=keys,
                 principals={**PRINCIPALS, "player": "anne", **{p: p for p in PLAYERS}})
    cashier = result.as_("cashier").cashier
    for p in PLAYERS:
        cashier.OpenAccount(cashier_pb2.OpenAccountRequest(
            request_id=f"open-{p}", account_id=p, currency_code="EUR"))
        cashier.Deposit(cashier_pb2.DepositRequest(
            request_id=f"deposit-{p}", name=f"accounts/{p}", amount=money(DEPOSIT)))
    yield result
    for client in result._clients.values():
        client.close()
    running.stop(grace=1)
    if host is not None:
        host.close()
        ledger.close()
    if database:
        _drop(database)
