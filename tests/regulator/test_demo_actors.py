"""After the demo (``sabot serve`` with its ledger process, then ``sabot demo`` with a croupier,
a cashier and three players), recall shows who dealt each coup, the export names an actor on
every command and every event, and sabot-verify checks those fields and says who did what."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sabot_verify.__main__ import run

from services.api.client import Client
from services.api.gen.sabot.v1 import events_pb2, table_pb2
from services.bootstrap import ROUND_END
from services.regulator.checkpoint import public_key_bytes
from services.regulator.export import write_export
from services.regulator.notary import Notary
from services.regulator.source import Database, EventTable

ROOT = Path(__file__).resolve().parents[2]
KEY = bytes(range(32))
T = {role: f"{role}-0c6f3a9e2b7d41f58e9a0b1c2d3e4f50" for role in
     ("croupier", "cashier", "anne", "bruno", "chiara")}
TOKENS = ",".join([f"{T['croupier']}:croupier", f"{T['cashier']}:cashier",
                   *(f"{T[p]}:player:{p}" for p in ("anne", "bruno", "chiara"))])
ENV = {"SABOT_SEAL_KEY": KEY.hex(), "SABOT_CHAIN_KEY": "c7" * 32, "SABOT_TOKENS": TOKENS,
       "PYTHONUNBUFFERED": "1"}
REQUEST = "sabot.ledger:Request.Recorded"


def _demo(tmp_path: Path, store: str) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [sys.executable, "-m", "services.cli.server", "serve", "--listen", "127.0.0.1:0",
         "--store", store, "--env-file", str(tmp_path / "none")],
        cwd=ROOT, env={**os.environ, **ENV}, stdout=subprocess.PIPE,
        stderr=(tmp_path / "server.log").open("w"), text=True)
    assert server.stdout is not None
    target = ""
    for line in server.stdout:
        if "listening on" in line:
            target = line.split("listening on ")[1].split()[0]
            break
    assert target, (tmp_path / "server.log").read_text()
    demo = subprocess.run(
        [sys.executable, "-m", "services.cli.server", "demo", "--target", target],
        cwd=ROOT, env={**os.environ, **ENV}, capture_output=True, text=True, timeout=600)
    assert demo.returncode == 0, demo.stderr
    return server, target


@pytest.mark.parametrize("store", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_after_the_demo_every_command_names_its_actor(
    tmp_path: Path, store: str, request: pytest.FixtureRequest,
) -> None:
    url = str(request.getfixturevalue(f"{store}_store_url"))
    server, target = _demo(tmp_path, url)
    try:
        croupier = Client(target, T["croupier"])
        (table,) = [t for t in croupier.tables.ListTables(
            table_pb2.ListTablesRequest(page_size=10)).tables if t.name.startswith("tables/demo")]
        recalled: list[events_pb2.RecalledCoup] = []
        token = ""
        while True:
            page = croupier.recall.ListRecalledCoups(events_pb2.ListRecalledCoupsRequest(
                parent=table.name, page_size=40, page_token=token))
            recalled += page.coups
            if not (token := page.next_page_token):
                break
        assert recalled and len(recalled) == table.coups
        for coup in recalled:  # recall shows who dealt each coup
            assert (coup.dealt_by.principal, coup.dealt_by.role) == ("croupier#0", "croupier")
            assert all(s.actor.role for s in coup.steps)
        player = Client(target, T["anne"])  # a player sees the others as "player"
        seen = player.recall.ListRecalledCoups(events_pb2.ListRecalledCoupsRequest(
            parent=table.name, page_size=1)).coups[0]
        assert {s.actor.principal for s in seen.steps} <= {"anne", "croupier#0", ""}
        croupier.close()
        player.close()
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 0

    key = Ed25519PrivateKey.from_private_bytes(b"\x07" * 32)
    db = Database(url)
    notary = Notary(db, EventTable(db), key, "sabot-test", ROUND_END)
    notary.sync()
    notary.checkpoint_now()
    buf = io.StringIO()
    write_export(buf, EventTable(Database(url)), notary, public_key_bytes(key.public_key()))
    lines = buf.getvalue().splitlines()
    records = [json.loads(line) for line in lines]
    events = [r for r in records if r["kind"] == "event" and r["event"] is not None]
    commands = [r for r in events if r["event"]["topic"] == REQUEST]
    assert len(commands) > table.coups * 3
    principals = {"croupier#0": "croupier", "cashier#1": "cashier", "anne": "player",
                  "bruno": "player", "chiara": "player"}
    for record in events:  # an actor on every exported command and event
        if record["event"]["topic"] == "sabot.ledger:Chain.Linked":  # evidence, of no command
            assert record["actor"]["role"] == "system", record["position"]
            continue
        actor = record["actor"]
        assert principals[actor["principal"]] == actor["role"], record["position"]
        assert actor["peer"], record["position"]
    for record in commands:
        assert record["actor"] == record["event"]["state"]["actor"]
    by_command = {r["event"]["state"]["command"]: r["actor"]["principal"] for r in commands}
    assert by_command["deal"] == by_command["settle"] == by_command["cut"] == "croupier#0"
    assert by_command["place_stake"] in ("anne", "bruno", "chiara")

    out = io.StringIO()
    chain = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(ENV["SABOT_CHAIN_KEY"]))
    assert run(lines, checkpoint_key=public_key_bytes(key.public_key()), out=out,
               chain_keys=[chain.public_key().public_bytes_raw()]) == 0, (
        out.getvalue())
    report = out.getvalue()
    assert report.count("dealt by croupier#0 (croupier)") == table.coups
    assert "stakes placed by anne (player)" in report
    assert "WHO  commands: " in report
    who = [x for x in report.splitlines() if x.startswith("WHO")]  # principals, not ports
    assert who and not any(" from " in x or "ipv4:" in x for x in who), who

    # an actor field edited in the file (it lies outside the notarised content) is caught
    first = next(i for i, r in enumerate(records) if r.get("kind") == "event"
                 and r["event"] and r["event"]["topic"] == "sabot.ledger:Coup.Resolved")
    records[first]["actor"] = {**records[first]["actor"], "principal": "someone-else"}
    forged = [json.dumps(r, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
              for r in records]
    out = io.StringIO()
    assert run(forged, checkpoint_key=public_key_bytes(key.public_key()), out=out) == 1
    assert f"first tampered position {records[first]['position']}" in out.getvalue()
