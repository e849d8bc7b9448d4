"""The PostgreSQL pools of ``sabot serve`` have settings (issue 22 item 6): ``SABOT_PG_POOL_SIZE``
/ ``--pg-pool-size`` and ``SABOT_PG_MAX_OVERFLOW`` / ``--pg-max-overflow``, reaching the
writer's pool (through the ledger process's pipe too) and the server's reads; the most
connections a server opens is logged at start, in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from services import bootstrap
from services.api.credentials import new_token
from services.bootstrap import LEDGER_GAMES
from services.cli.server import OTHER_CONNECTIONS
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig, store_env
from services.settings import SettingError, Settings

ROOT = Path(__file__).resolve().parents[2]


def test_the_pool_settings_and_their_defaults() -> None:
    s = Settings.load({}, {}, None)
    assert (s.pg_pool_size, s.pg_max_overflow) == (None, 2)
    s = Settings.load({"pg_pool_size": "6"}, {"SABOT_PG_MAX_OVERFLOW": "0"}, None)
    assert (s.pg_pool_size, s.pg_max_overflow) == (6, 0)
    with pytest.raises(SettingError, match=r"^--pg-pool-size: an integer 1..200, got '0' "
                                           r"\(or SABOT_PG_POOL_SIZE\)$"):
        Settings.load({"pg_pool_size": "0"}, {}, None)
    with pytest.raises(SettingError, match=r"^SABOT_PG_MAX_OVERFLOW: an integer 0..200"):
        Settings.load({}, {"SABOT_PG_MAX_OVERFLOW": "-1"}, None)
    config = bootstrap.ledger_config(s.replace(seal_key=bytes(32)), pool_size=6)
    assert (config.pool_size, config.max_overflow) == (6, 0)
    assert LedgerConfig.from_pipe(config.to_pipe()).max_overflow == 0  # the ledger process
    env = store_env("postgresql://u@h:1/d", 6, 0)
    assert (env["POSTGRES_POOL_SIZE"], env["POSTGRES_MAX_OVERFLOW"]) == ("6", "0")


@pytest.mark.postgres
def test_the_pool_is_sized_as_set(postgres_store_url: str) -> None:
    ledger = Ledger(LedgerConfig(store_url=postgres_store_url, seal_key=bytes(32), pool_size=3,
                                 max_overflow=1), games=LEDGER_GAMES)
    try:
        pool = ledger.app.recorder.datastore.pool  # type: ignore[attr-defined]
        assert (pool.min_size, pool.max_size) == (3, 4)
    finally:
        ledger.close()


@pytest.mark.postgres
def test_serve_logs_the_most_connections_it_opens(postgres_store_url: str,
                                                  tmp_path: Path) -> None:
    token = new_token()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SABOT_")},
           "SABOT_TOKENS": f"{token}:admin"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "services.cli.server", "serve", "--listen", "127.0.0.1:0",
         "--store", postgres_store_url, "--seal-key", "ab" * 32, "--chain-private-key",
         "cd" * 32, "--pg-pool-size", "3", "--pg-max-overflow", "1", "--projections", "off",
         "--turn-clock", "off", "--env-file", str(tmp_path / "none")],
        cwd=tmp_path, env={**env, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 120
        assert proc.stdout is not None
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "server started" in line:
                break
        found = [json.loads(x) for x in lines if '"store connections"' in x]
        assert len(found) == 1, "".join(lines)
        assert found[0]["at_most"] == 2 * (3 + 1) + OTHER_CONNECTIONS
        assert (found[0]["pools"], found[0]["pool_size"], found[0]["max_overflow"]) == (2, 3, 1)
        assert "postgresql" not in json.dumps(found[0])  # no store URL in the line
    finally:
        proc.terminate()
        proc.wait(timeout=60)
