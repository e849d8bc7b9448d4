"""A small real server for the CLI tests (SQLite, admin and back-office tokens): one table with a
shoe and a coup open for betting, and the players' accounts."""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from services.api import logs, server
from services.api.client import Client
from services.api.config import Config, parse_tokens
from services.api.gen.sabot.v1 import cashier_pb2, common_pb2, table_pb2
from services.bootstrap import LEDGER_GAMES, SERVED
from services.ledger.api import Ledger, LedgerConfig

KEY = bytes(range(32))
ADMIN = "cli-admin-token-0f4a8c2e9b7d41a6"
OFFICE = "cli-office-token-7c1e5a9d3b2f4e80"


@dataclass(frozen=True)
class Served:
    target: str
    port: int
    store: str
    table: str
    shoe: str
    coup: str

    def admin(self) -> list[str]:
        return ["--target", self.target, "--token", ADMIN]

    def office(self) -> list[str]:
        return ["--target", self.target, "--token", OFFICE]


@pytest.fixture(scope="package")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from serving(tmp_path_factory)


def serving(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The server of ``Served`` started, yielded, stopped (a test module whose movements would
    change the shared one's balances, which other tests read exactly, starts its own)."""
    logs.configure(stream=io.StringIO())  # the server's lines, not the commands' output
    store = f"sqlite:///{Path(tmp_path_factory.mktemp('cli')) / 'sabot.db'}"
    ledger = Ledger(LedgerConfig(store_url=store, seal_key=KEY), batching=True, games=LEDGER_GAMES)
    tokens = parse_tokens(f"{ADMIN}:admin,{OFFICE}:back_office")
    running = server.start(Config(listen="127.0.0.1:0", store=store, tokens=tokens,
                                  seal_key=KEY, workers=8), ledger, games=SERVED)
    target = f"127.0.0.1:{running.port}"
    client = Client(target, ADMIN)
    client.tables.OpenTable(table_pb2.OpenTableRequest(request_id="t", table_id="cli"))
    shoe = client.tables.OpenShoe(table_pb2.OpenShoeRequest(request_id="s", parent="tables/cli"))
    client.tables.CutShoe(table_pb2.CutShoeRequest(request_id="c", name=shoe.name,
                                                   cut_position=150, cut_by="anne"))
    coup = client.tables.OpenCoup(table_pb2.OpenCoupRequest(request_id="o", parent=shoe.name))
    for player in ("anne", "bruno"):
        client.cashier.OpenAccount(cashier_pb2.OpenAccountRequest(
            request_id=f"a-{player}", account_id=player, currency_code="EUR"))
        client.cashier.Deposit(cashier_pb2.DepositRequest(
            request_id=f"d-{player}", name=f"accounts/{player}",
            amount=common_pb2.Money(amount_minor=100_000, currency_code="EUR")))
    client.close()
    yield Served(target, running.port, store, "tables/cli", shoe.name, coup.name)
    running.stop(grace=1)
    ledger.close()
