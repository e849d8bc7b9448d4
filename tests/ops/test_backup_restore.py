"""The runbook's backup and restore (docs/operations.md, "Backup and restore"), done as it says:
a store served by ``sabot serve`` (the demo played through it, as the server role), dumped with
``pg_dump -Fc`` while it serves, restored with ``pg_restore`` into a new database, then
``sabot store reconcile`` agrees, ``sabot store export`` exports it and ``sabot-verify`` says
VERIFIED. And a writer started on a restored store that lost what the writer signed since the
dump (the chain head file is newer than the backup) refuses to write, in one line."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from tests.conftest import (
    OWNER_ROLE,
    PG_ADMIN_DSN,
    PG_HOST,
    PG_PORT,
    PG_USER,
    READER_ROLE,
    SERVER_ROLE,
    postgres_unavailable,
)

from .support import (
    ADMIN_TOKEN,
    Keys,
    Served,
    clean_env,
    create_store,
    drop_database,
    sabot,
    serving,
    url,
)

pytestmark = pytest.mark.postgres


def _pg(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    path = shutil.which(tool) or f"/usr/lib/postgresql/15/bin/{tool}"
    return subprocess.run([path, "-h", PG_HOST, "-p", str(PG_PORT), "-U", PG_USER, *args],
                          capture_output=True, text=True, timeout=120)


def _events(database: str) -> int:
    dsn = f"host={PG_HOST} port={PG_PORT} user={PG_USER} dbname={database}"
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM sabot_events").fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture
def databases() -> list[str]:
    made: list[str] = []
    yield made
    for name in made:
        drop_database(name)


def test_a_dump_restored_into_a_new_database_reconciles_exports_and_verifies(
        tmp_path: Path, databases: list[str]) -> None:
    if shutil.which("pg_dump") is None and not Path("/usr/lib/postgresql/15/bin/pg_dump").exists():
        postgres_unavailable("pg_dump not installed")
    keys = Keys(tmp_path)
    source = create_store()
    databases.append(source)
    with serving(url(source), keys, tmp_path, "--demo") as served:
        # Backup: while the server serves (pg_dump reads one snapshot of the database).
        dump = tmp_path / "sabot.dump"
        done = _pg("pg_dump", "--format=custom", "--file", str(dump), "--dbname", source)
        assert done.returncode == 0, done.stderr
        stored = _events(source)
        # A write after the dump: the writer's head file now names a link the dump lacks.
        late = sabot("account", "open", "late-1", "--currency", "EUR", "--target",
                     served.target, "--token", ADMIN_TOKEN, "--request-id", "after-the-dump")
        assert late.returncode == 0, late.stderr
    assert stored > 100
    restored = source + "_r"
    databases.append(restored)
    with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{restored}" OWNER {OWNER_ROLE}')
    done = _pg("pg_restore", "--exit-on-error", "--dbname", restored, str(dump))
    assert done.returncode == 0, done.stderr
    assert _events(restored) == stored
    again = sabot("store", "init", "--store", url(restored, OWNER_ROLE), "--server-role",
                  SERVER_ROLE, "--reader-role", READER_ROLE)  # the runbook's idempotent step
    assert again.returncode == 0, again.stderr

    reconcile = sabot("store", "reconcile", "--store", url(restored, SERVER_ROLE))
    assert reconcile.returncode == 0, reconcile.stdout + reconcile.stderr
    export = tmp_path / "export.jsonl"
    exported = sabot("store", "export", "--store", url(restored, SERVER_ROLE),
                     "--checkpoint-key", str(keys.checkpoint), "-o", str(export), "-q")
    assert exported.returncode == 0, exported.stderr
    chain = str(keys.folder / "chain.pub")
    verified = _verify(export, "--checkpoint-key", keys.checkpoint_public,
                       "--chain-public-key", chain)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "VERIFIED" in verified.stdout

    # The restored store lacks the batch written after the dump, which the writer's head file
    # names: sabot-verify with the head file says where the log was cut, and a writer given
    # that head file refuses the store (the runbook's "restoring an older backup").
    head = tmp_path / "chain-head.json"
    cut = _verify(export, "--checkpoint-key", keys.checkpoint_public, "--chain-public-key",
                  chain, "--chain-head", str(head), "-v")
    assert cut.returncode != 0 and "NOT VERIFIED" in cut.stdout, cut.stdout
    assert "the log was cut here" in cut.stdout
    refused = Served(url(restored), keys, tmp_path)
    try:
        assert refused.process.wait(timeout=60) != 0
    finally:
        refused.stop()
    assert "restored from an older backup; refusing to write" in (
        tmp_path / "server.log").read_text()


def _verify(export: Path, *args: str) -> subprocess.CompletedProcess[str]:
    ops = Path(__file__).resolve().parents[2] / "ops"
    return subprocess.run([sys.executable, "-m", "sabot_verify", str(export), *args],
                          capture_output=True, text=True, timeout=120,
                          env=clean_env(PYTHONPATH=str(ops)))

