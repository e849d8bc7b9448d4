"""Health goes NOT_SERVING and the server drains on shutdown; ``sabot serve`` stops cleanly on
SIGTERM; ``sabot demo`` plays a shoe through the API; the client commands print answers."""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2

import services.cli as cli
from services.api import demo, server
from services.api.client import Client
from services.api.config import Config, parse_tokens
from services.bootstrap import LEDGER_GAMES, SERVED
from services.ledger.api import Ledger, LedgerConfig
from services.trente_et_quarante import demo as tq_demo

from .support import Api

ROOT = Path(__file__).resolve().parents[2]


def test_graceful_shutdown_says_not_serving_then_stops(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    ledger = Ledger(LedgerConfig(store_url=url, seal_key=secrets.token_bytes(32)),
                    games=LEDGER_GAMES)
    running = server.start(Config(listen="127.0.0.1:0", store=url,
                                  tokens=parse_tokens("t:admin")), ledger, games=SERVED)
    client = Client(f"127.0.0.1:{running.port}")
    statuses: list[int] = []
    watch = client.health.Watch(health_pb2.HealthCheckRequest(service=""))

    def follow() -> None:
        try:
            for reply in watch:
                statuses.append(reply.status)
        except grpc.RpcError:
            pass

    follower = threading.Thread(target=follow)
    follower.start()
    while not statuses:
        threading.Event().wait(0.02)
    running.stop(grace=2)
    follower.join(5)
    client.close()
    assert statuses[0] == health_pb2.HealthCheckResponse.SERVING
    assert health_pb2.HealthCheckResponse.NOT_SERVING in statuses


def test_sabot_serve_stops_on_sigterm(tmp_path: Path) -> None:
    env = {**os.environ, "SABOT_TOKENS": "", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "services.cli.server", "serve", "--dev", "--listen",
         "127.0.0.1:0", "--store", f"sqlite:///{tmp_path / 'var' / 's.db'}",
         "--env-file", str(tmp_path / "none.env")],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        target = ""
        for line in proc.stdout:
            if "listening on" in line:
                target = line.split("listening on ")[1].split()[0]
                break
        assert target
        client = Client(target)
        reply = client.health.Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
        client.close()
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
        assert proc.stderr is not None
        assert "server stopped" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_demo_plays_a_whole_shoe_through_the_api(api: Api) -> None:
    tokens = parse_tokens(",".join(
        [f"{api.tokens['croupier']}:croupier", f"{api.tokens['cashier']}:cashier",
         *(f"{t}:player:{p}" for p, t in api.player_tokens.items())]))
    said: list[str] = []
    balances = tq_demo.play(api.target, demo.cast_from(tokens, "t"), say=said.append,
                            cut=150)
    text = "\n".join(said)
    assert "Seed revealed" in text and "matches the one published" in text
    assert "rien ne va plus" in text.lower()
    assert set(balances) == {"anne", "bruno", "chiara"}


def test_client_commands_print_answers_and_errors(api: Api, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("services.cli.client", "services.cli.server"))
    common = ["--target", api.target, "--token", api.tokens["cashier"]]
    assert cli.main(["account", "get", "anne", *common, "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["name"] == "accounts/anne" and shown["kind"] == "player"
    assert cli.main(["account", "get", "nobody-at-all", *common]) == 3  # refused: NOT_FOUND
    assert "NOT_FOUND" in capsys.readouterr().err
    assert cli.main(["health", "--target", api.target]) == 0
    assert capsys.readouterr().out.strip() == "SERVING"
    office = ["--target", api.target, "--token", api.tokens["back_office"]]
    assert cli.main(["balance-sheet", *office]) == 0
    shown = capsys.readouterr().out  # in major units with the currency (issue 12)
    assert re.search(r"^total +0\.00 EUR$", shown, re.M), shown
