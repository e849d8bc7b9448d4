"""Issue 21's acceptance for the notary, as a figure: ``BENCH_CHECKPOINT_SECONDS`` (default 60)
of Treinta y Una and Cuarenta alone (no Trente et Quarante coup) under ``sabot serve`` with a
checkpoint key, played through the API by the games' demo clients (``services/cli/
treinta_y_una.py``, ``services/cli/cuarenta.py``), on each store; then the rounds and matches
that ended and how many of them a signed checkpoint names (before issue 21: none). Measured on
2026-12-01: SQLite 63 s, 81 rounds and 14 matches ended, all 81 and 14 signed; PostgreSQL
68 s, 78 rounds and 17 matches, all signed.

``run()`` returns rows of (name, value); ``python -m bench.round_checkpoints`` prints them.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time

from bench._support import Row, on_each_store
from services import topics as T
from services.api import demo
from services.api.config import parse_tokens
from services.cli import cuarenta, treinta_y_una
from services.regulator.notary import Notary
from services.regulator.source import Database, EventTable

PG_DB = f"sabot_bench_checkpoints_{os.getpid()}"
ENDS = {
    "treinta-y-una rounds": {T.TREINTA_Y_UNA_ROUND_SETTLED, T.TREINTA_Y_UNA_ROUND_CANCELLED},
    "cuarenta matches": {T.CUARENTA_MATCH_WON},
}


def _quiet(text: str) -> None:
    del text


def served(url: str, store: str) -> list[Row]:
    seconds = float(os.environ.get("BENCH_CHECKPOINT_SECONDS", "60"))
    spec = ",".join([f"{secrets.token_hex(16)}:admin"] + [
        f"{secrets.token_hex(16)}:player:{name}" for name in ("ana", "beto", "cruz", "dora")])
    env = {**os.environ, "SABOT_STORE": url, "SABOT_TOKENS": spec, "SABOT_SEAL_KEY": "11" * 32,
           "SABOT_CHAIN_KEY": "22" * 32, "SABOT_CHECKPOINT_KEY": "33" * 32,
           "SABOT_TURN_CLOCK": "off"}
    server = subprocess.Popen(
        [sys.executable, "-m", "services.cli.server", "serve", "--listen", "127.0.0.1:0"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert server.stdout is not None
    target = ""
    for line in server.stdout:
        if "listening on" in line:
            target = line.split("listening on ")[1].split(" ")[0]
            break
    tokens = parse_tokens(spec)
    started = time.monotonic()
    try:
        while time.monotonic() - started < seconds:
            cast = treinta_y_una.cast_of(tokens)
            treinta_y_una.play(target, cast.croupier, cast.cashier, cast.players, say=_quiet)
            cuarenta.play(target, demo.cast_from(tokens, secrets.token_hex(2)), say=_quiet)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(60)
    elapsed = time.monotonic() - started
    db = Database(url)
    try:
        events = list(EventTable(db).iterate())
        signed = {c.coup for c in Notary(db, EventTable(db), None, create=False).checkpoints()
                  if c.coup}
    finally:
        db.close()
    rows: list[Row] = [(f"{store}: seconds played", round(elapsed, 1))]
    for what, topics in ENDS.items():
        ended = [e.originator_id for e in events if e.topic in topics]
        rows += [(f"{store}: {what} ended", float(len(ended))),
                 (f"{store}: {what} under a signed checkpoint",
                  float(sum(1 for x in ended if x in signed)))]
    return rows


def run() -> list[Row]:
    return on_each_store("checkpoints", PG_DB, served)


if __name__ == "__main__":
    for name, value in run():
        print(f"{name}: {value:g}")
