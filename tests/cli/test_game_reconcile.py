"""``sabot report reconcile --game treinta-y-una|cuarenta --table T``: a game's reconciliation
of a table from the server's read models (GetReconciliation), exit 0 when it balances; the old
``sabot report reconcile`` unchanged; every error one line."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from services.api import logs, server
from services.api.config import Config, parse_tokens
from services.bootstrap import SERVED
from tests.cuarenta.support import Game, Referee, fund
from tests.treinta_y_una.support import Croupier, table_ledger

from .conftest import ADMIN, KEY, OFFICE
from .test_bad_input import one_line, run


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[list[str], Any, str]]:
    logs.configure(stream=io.StringIO())
    store = f"sqlite:///{Path(tmp_path_factory.mktemp('cli-games')) / 'sabot.db'}"
    with table_ledger(store, commission="5%") as (ledger, tyu):
        croupier = Croupier(ledger, tyu)
        for _ in range(3):
            croupier.play()
        ledger.open_table("open-mesa", "mesa-1", None, {"commission_rate": "5%"},
                          game="cuarenta")
        fund(ledger, ["eva", "fede"])
        cuarenta = Game(ledger)
        Referee(cuarenta, cuarenta.open_match("o", "mesa-1", ["eva", "fede"],
                                              stake=1_000).match).finish()
        tokens = parse_tokens(f"{ADMIN}:admin,{OFFICE}:back_office")
        running = server.start(Config(listen="127.0.0.1:0", store=store, tokens=tokens,
                                      seal_key=KEY, workers=4), ledger, games=SERVED)
        try:
            yield ["--target", f"127.0.0.1:{running.port}", "--token", OFFICE], ledger, store
        finally:
            running.stop(grace=1)


def test_a_games_reconciliation(played: tuple[list[str], Any, str],
                                capsys: pytest.CaptureFixture[str]) -> None:
    office, ledger, _ = played
    code, out, err = run(["report", "reconcile", "--game", "treinta-y-una", "--table", "tyu-1",
                          "--format", "json", *office], capsys)
    assert code == 0, err
    got = json.loads(out)
    expected = ledger.tyu_reconcile("tyu-1")
    assert got["table"] == "tables/tyu-1" and got["balanced"] is True
    assert [(d["gaming_day"], int(d["rounds"]), int(d["commission"]["amount_minor"]))
            for d in got["days"]] == [(d.gaming_day, d.rounds, d.commission) for d in expected]
    code, out, err = run(["report", "reconcile", "--game", "cuarenta", "--table", "mesa-1",
                          "--format", "json", *office], capsys)
    assert code == 0, err
    got = json.loads(out)
    r = ledger.cuarenta_reconcile("mesa-1")
    assert got["balanced"] is True and int(got["commission_account"]["amount_minor"]) == (
        r.commission_account) == 100
    code, out, err = run(["report", "reconcile", "--game", "cuarenta", "--table", "mesa-1",
                          *office], capsys)
    assert code == 0 and "balanced" in out and "mesa-1" in out, err
    day = ledger.tyu_reconcile("tyu-1")[0].gaming_day
    code, out, _ = run(["report", "reconcile", "--game", "treinta-y-una", "--table", "tyu-1",
                        "--day", day, "--format", "json", *office], capsys)
    assert code == 0 and [d["gaming_day"] for d in json.loads(out)["days"]] == [day]
    code, out, _ = run(["report", "reconcile", "--format", "json", *office], capsys)
    assert code == 0 and json.loads(out)["agree"] is True  # the old command, unchanged


@pytest.mark.parametrize(("argv", "offline"), [
    (["--game", "cuarenta"], True),
    (["--table", "tyu-1"], True),
    (["--game", "cuarenta", "--table", "no-such-table"], False),  # offline: no rows
    (["--game", "cuarenta", "--table", "tyu-1"], False),  # offline: no rows
    (["--game", "treinta-y-una", "--table", "tyu-1", "--day", "2026-13-40"], True),
    (["--game", "treinta-y-una", "--table", "tyu-1", "--day", "26-1-1"], True),
    (["--game", "baccarat", "--table", "tyu-1"], True),
])
def test_errors_are_one_line(played: tuple[list[str], Any, str], argv: list[str],
                             offline: bool, capsys: pytest.CaptureFixture[str]) -> None:
    office, _, store = played
    code, _, err = run(["report", "reconcile", *argv, *office], capsys)
    one_line(code, err)
    if offline:  # the same from the store (``sabot store reconcile``)
        code, _, err = run(["store", "reconcile", "--store", store, *argv], capsys)
        one_line(code, err)


def test_offline_from_a_store(played: tuple[list[str], Any, str],
                              capsys: pytest.CaptureFixture[str]) -> None:
    """``sabot store reconcile --game G --table T``: the same figures from the store's read
    models, without a server."""
    _, ledger, store = played
    code, out, err = run(["store", "reconcile", "--store", store, "--game", "treinta-y-una",
                          "--table", "tyu-1", "--format", "json"], capsys)
    assert code == 0, err
    got = json.loads(out)
    assert got["facts"]["result"] == "balanced"
    expected = ledger.tyu_reconcile("tyu-1")
    assert [(r["gaming_day"], r["rounds"], r["stakes"], r["commission"], r["players_net"])
            for r in got["rows"]] == [(d.gaming_day, d.rounds, d.stakes, d.commission,
                                       d.players_net) for d in expected]
    code, out, err = run(["store", "reconcile", "--store", store, "--game", "cuarenta",
                          "--table", "mesa-1", "--format", "csv"], capsys)
    assert code == 0, err
    r = ledger.cuarenta_reconcile("mesa-1")
    assert out.splitlines() == [
        "gaming_day,matches,stakes,payouts,commission,players_net,balanced",
        *(f"{d.gaming_day},{d.matches},{d.stakes},{d.payouts},{d.commission},"
          f"{d.players_net},{d.balanced}" for d in r.days)]
    code, out, _ = run(["store", "reconcile", "--store", store, "--game", "cuarenta",
                        "--table", "mesa-1"], capsys)
    assert code == 0 and "commission_account: 100" in out
