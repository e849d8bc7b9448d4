"""Least privilege on PostgreSQL: the owner role applies the schema (``sabot ledger-schema``), the
server's own role reads and inserts, and can neither update, delete, truncate nor switch a
trigger off on the event and snapshot tables (nor on the notary's), yet runs a whole shoe."""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from services.bootstrap import LEDGER_GAMES, READ_GAMES, log_application
from services.cli import CliError
from services.cli import store as cli
from services.ledger.api import Ledger
from services.ledger.config import store_env
from services.ledger.schema import StoreNotReady
from services.projections import default_views
from services.projections.runner import make_runner
from services.projections.service import ReadModels
from services.regulator.notary import Notary
from services.regulator.source import Database, EventTable

from .play import Croupier, FixedInputs

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[2]
GUARDED = ("sabot_events", "sabot_snapshots")
COLUMN = {"sabot_events": "state", "sabot_snapshots": "state", "regulator_leaves": "hash",
          "regulator_nodes": "hash", "regulator_checkpoints": "root"}
FORBIDDEN = (
    "UPDATE {t} SET {c} = {c}",
    "DELETE FROM {t}",
    "TRUNCATE {t}",
    "ALTER TABLE {t} DISABLE TRIGGER USER",
    "ALTER TABLE {t} DISABLE TRIGGER ALL",
    "ALTER TABLE {t} DISABLE TRIGGER {g}",
    "DROP TRIGGER {g} ON {t}",
    "DROP TABLE {t}",
    "LOCK TABLE {t} IN EXCLUSIVE MODE",
)


def trigger(table: str) -> str:
    return "sabot_append_only_rows" if table in GUARDED else f"{table}_append_only"


def sabot(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="sabot")
    cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


def count(dsn: str, table: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
    assert row is not None
    return int(row[0])


def play_a_shoe(url: str) -> Ledger:
    """A whole shoe, three players, through the batching writer (as ``sabot serve`` runs it)."""
    ledger = Ledger(FixedInputs().config(url), batching=True, games=LEDGER_GAMES)
    croupier = Croupier(ledger, "t1", ["ana", "bruno", "carla"], random.Random(7))
    croupier.setup("francaise")
    croupier.play_shoe()
    assert len(croupier.coups) > 20
    assert sum(ledger.balances().values()) == 0
    return ledger


def test_the_servers_role_runs_a_shoe_and_cannot_change_the_log(
    postgres_restricted: Any,
) -> None:
    store = postgres_restricted
    ledger = play_a_shoe(store.server_url)
    try:
        # and the parts the server runs beside the ledger: read models (the projection runner
        # of `sabot projections run`, then the poller of `sabot serve`), the notary
        with make_runner(log_application(), default_views(games=READ_GAMES),
                         store_env(store.server_url), batch_size=500) as runner:
            runner.wait(ledger.app.recorder.max_notification_id(), timeout=60)
        models = ReadModels(ledger.app, games=READ_GAMES)
        models.catch_up()
        assert {lag.events_behind for lag in models.lag()} == {0}
        assert models.reconcile(ledger.balances()).ok
        db = Database(store.server_url)
        notary = Notary(db, EventTable(db), None)
        assert notary.hold()
        notary.sync()
        assert notary.size == ledger.saved_position()
        notary.release()
        db.close()
    finally:
        ledger.close()
    server = store.dsn(store.server_role)
    events = count(server, "sabot_events")
    assert events > 1000 and count(server, "sabot_snapshots") >= 0
    for table in (*GUARDED, "regulator_leaves", "regulator_nodes", "regulator_checkpoints"):
        before = count(server, table)
        for statement in FORBIDDEN:
            with psycopg.connect(server) as conn:
                with pytest.raises(psycopg.errors.InsufficientPrivilege) as refused:
                    conn.execute(statement.format(t=table, c=COLUMN[table], g=trigger(table)))
                text = str(refused.value)
                assert "permission denied" in text or "must be owner" in text, text
        assert count(server, table) == before
    # the role owns nothing of the event store, holds no right beyond SELECT and INSERT
    with psycopg.connect(store.dsn(store.owner_role)) as conn:
        for table in GUARDED:
            rights = conn.execute(
                "SELECT privilege_type FROM information_schema.role_table_grants "
                "WHERE grantee = %s AND table_schema = %s AND table_name = %s",
                (store.server_role, store.schema, table)).fetchall()
            assert sorted(r[0] for r in rights) == ["INSERT", "SELECT"], table
            owner = conn.execute(
                "SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = to_regclass(%s)",
                (f'"{store.schema}".{table}',)).fetchone()
            assert owner == (store.owner_role,)
    # the reader reads and cannot insert
    reader = store.dsn(store.reader_role)
    assert count(reader, "sabot_events") == events
    with psycopg.connect(reader) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("INSERT INTO sabot_events (originator_id, originator_version, topic, state)"
                     " VALUES (gen_random_uuid(), 1, 'x', ''::bytea)")
    # the owner, for comparison, may: the triggers are what stops it (and the chain)
    with psycopg.connect(store.dsn(store.owner_role)) as conn, pytest.raises(
            psycopg.errors.InsufficientPrivilege, match="append-only"):
        conn.execute("DELETE FROM sabot_events")
    # replayed by a reader: the store reopens without create rights and answers
    reopened = Ledger(FixedInputs().config(store.reader_url), standby=True, games=LEDGER_GAMES)
    try:
        assert sum(reopened.balances().values()) == 0
    finally:
        reopened.close()


def test_the_server_starts_only_on_a_store_its_owner_set_up(
    restricted_store_factory: Callable[[], Any], postgres_dsn: str,
) -> None:
    store = restricted_store_factory()
    # nothing set up in a schema of its own: it may not create the tables, and says what to do
    with psycopg.connect(postgres_dsn) as conn:
        conn.execute('CREATE SCHEMA "bare_' + store.schema + '"')
        conn.execute(f'GRANT USAGE ON SCHEMA "bare_{store.schema}" TO {store.server_role}')
        conn.commit()
    bare = store.server_url.replace(f"schema={store.schema}", f"schema=bare_{store.schema}")
    with pytest.raises(StoreNotReady, match="sabot store init"):
        Ledger(FixedInputs().config(bare), games=LEDGER_GAMES)
    # a guard switched off by the owner: the server refuses to start on it
    with psycopg.connect(store.dsn(store.owner_role)) as conn:
        conn.execute("ALTER TABLE sabot_events DISABLE TRIGGER sabot_append_only_rows")
        conn.commit()
    with pytest.raises(StoreNotReady, match="disabled"):
        Ledger(FixedInputs().config(store.server_url), games=LEDGER_GAMES)
    # the owner runs ledger-schema again (idempotent): the guard is back, the server starts
    assert sabot("ledger-schema", "--store", store.owner_url, "--server-role",
                 store.server_role, "--reader-role", store.reader_role) == 0
    ledger = Ledger(FixedInputs().config(store.server_url), games=LEDGER_GAMES)
    ledger.open_account("a", "ana")
    ledger.close()


def test_ledger_schema_prints_the_grants_without_a_password(
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = "postgresql://sabot_owner:s3cr3t-pw@db.example:5432/sabot?schema=casino"
    assert sabot("ledger-schema", "--store", url, "--server-role", "sabot_server",
                 "--reader-role", "auditor", "--print") == 0
    out = capsys.readouterr().out
    assert "s3cr3t" not in out and "sabot_owner" not in out
    assert ('GRANT SELECT, INSERT ON TABLE "casino"."sabot_events", "casino"."sabot_snapshots"'
            in out)
    assert 'TO "sabot_server"' in out and 'GRANT SELECT ON TABLE' in out and '"auditor"' in out
    assert "SECURITY DEFINER" in out and "sabot_lock_events" in out
    for right in ("UPDATE", "DELETE", "TRUNCATE", "TRIGGER"):
        assert not [line for line in out.splitlines()
                    if line.startswith("GRANT") and right in line], right


def test_ledger_schema_refuses_a_server_role_that_owns_the_tables(
    postgres_store_url: str, capsys: pytest.CaptureFixture[str],
) -> None:
    Ledger(FixedInputs().config(postgres_store_url),
           games=LEDGER_GAMES).close()  # made by postgres: its owner
    with pytest.raises(CliError, match="owns sabot_events"):
        sabot("ledger-schema", "--store", postgres_store_url, "--server-role", "postgres")
    with pytest.raises(CliError, match="does not exist"):
        sabot("ledger-schema", "--store", postgres_store_url, "--server-role", "no_such_role_x")


def test_sabot_serve_runs_as_the_servers_role(
    postgres_restricted: Any, tmp_path: Path,
) -> None:
    """``sabot serve`` (its ledger in a process of its own, the notary, the read models) plays
    the demo's whole shoe through the API as the restricted role, then stops cleanly."""
    env = {**os.environ, "SABOT_TOKENS": "", "PYTHONUNBUFFERED": "1", "SABOT_WORKERS": "4",
           "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "services.cli.server", "serve", "--dev", "--demo", "--listen",
         "127.0.0.1:0", "--store", postgres_restricted.server_url,
         "--env-file", str(tmp_path / "none.env")],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        narration = []
        for line in proc.stdout:
            narration.append(line)
            if "listening on" in line:
                break
        assert any("listening on" in line for line in narration), "".join(narration)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0  # stopped gracefully
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    server = postgres_restricted.dsn(postgres_restricted.server_role)
    assert count(server, "sabot_events") > 1000
    assert count(server, "regulator_checkpoints") > 10  # the notary signed at each coup end
    with psycopg.connect(server) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s AND tableowner = %s",
            (postgres_restricted.schema, postgres_restricted.server_role)).fetchall()]
    assert tables and all(t.startswith("rm_") for t in tables), tables  # it owns only those
