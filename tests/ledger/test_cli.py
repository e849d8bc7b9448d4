"""The ledger's ``sabot`` subcommands (registered here on a parser of their own)."""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import pytest

from services.bootstrap import LEDGER_GAMES
from services.cli import store as cli
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig

from .play import KEY, Croupier


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="sabot")
    cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


def test_events_balances_replay(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    ledger = Ledger(LedgerConfig(store_url=url, seal_key=KEY), games=LEDGER_GAMES)
    Croupier(ledger, "t1", ["ana", "bruno"], random.Random(5)).setup("francaise")
    ledger.close()
    assert run("ledger-events", "--store", url, "--limit", "3") == 0
    out, err = capsys.readouterr()
    assert [json.loads(x)["position"] for x in out.splitlines()] == [1, 2, 3]
    assert err == ("sabot: --limit 3: more events follow position 3 (go on with --after 3)\n")
    assert run("ledger-events", "--store", url, "--after", "2") == 0  # to the end, no limit
    out, err = capsys.readouterr()
    every = [json.loads(x)["position"] for x in out.splitlines()]
    assert every == list(range(3, 3 + len(every))) and len(every) > 3 and err == ""
    monkeypatch.setattr(cli, "EVENTS_PAGE", 2)  # read in pages: the same events
    assert run("ledger-events", "--store", url, "--after", "2") == 0
    assert [json.loads(x)["position"] for x in capsys.readouterr().out.splitlines()] == every
    assert run("ledger-balances", "--store", url) == 0
    assert capsys.readouterr().out.splitlines()[-1].split()[-1] == "0"
    assert run("ledger-replay", "--store", url, "--seal-key", KEY.hex(),
               "--into", f"sqlite:///{tmp_path}/r.db") == 0
    assert "identical events" in capsys.readouterr().out
    assert run("ledger-schema", "--store", url) == 0
