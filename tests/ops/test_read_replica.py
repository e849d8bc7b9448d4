"""Reads off the primary (issue 23, item 4; docs/operations.md, "Reads off the primary"): a
primary and a streaming standby of the test's own (``initdb``, then ``pg_basebackup -R`` on free
ports, run as postgres, removed after). ``sabot serve`` writes the primary as the server role
and reads the standby (``SABOT_READ_STORE``) as the reader role; a coup is played through it.
Then, each read from the standby and saying how far behind it is: the gaming-day report, the
read models' runner (it reads the standby's log and writes its rows on the primary), an export
(VERIFIED by sabot-verify with pinned keys), a replay and a proof; the server's health and
metrics give the read store's lag. With the standby's replay paused the lag is stated in
events and seconds, and the export from it still verifies (it ends at the last checkpoint the
standby holds). Neither the writer nor the notary ever connects to the standby: only the
reader role does (``pg_stat_activity`` on both clusters)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from services.api.client import Client, new_request_id
from services.api.gen.sabot.v1 import (
    betting_pb2,
    cashier_pb2,
    common_pb2,
    regulator_pb2,
    table_pb2,
)
from services.cli import main
from tests.conftest import postgres_unavailable

from .support import ADMIN_TOKEN, Keys, Served, clean_env
from .test_store_return import Cluster, _free_port

pytestmark = pytest.mark.postgres
OWNER, SERVER, READER = "rr_owner", "rr_server", "rr_reader"  # the test's own cluster's roles
CAUGHT_UP_WITHIN = 30.0  # seconds


def _tool(name: str) -> str:
    """PostgreSQL's own binary (``pg_config --bindir``), not a distribution's wrapper."""
    try:
        bindir = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        bindir = ""
    path = Path(bindir) / name if bindir else None
    if path is not None and path.exists():
        return str(path)
    found = shutil.which(name)
    if found is None:
        postgres_unavailable(f"no {name} here (PostgreSQL's server binaries)")
    return found


@dataclass
class Pair:
    primary: Cluster
    standby: Cluster

    def url(self, role: str, standby: bool = False) -> str:
        port = (self.standby if standby else self.primary).port
        return f"postgresql://{role}@127.0.0.1:{port}/sabot"

    def sql(self, query: str, params: tuple[Any, ...] = (), standby: bool = False,
            database: str = "sabot") -> list[tuple[Any, ...]]:
        cluster = self.standby if standby else self.primary
        with psycopg.connect(cluster.dsn(database), autocommit=True) as conn:
            cur = conn.execute(query, params)
            return list(cur.fetchall()) if cur.description else []

    def head(self, standby: bool = False) -> int:
        return int(self.sql("SELECT coalesce(max(notification_id), 0) FROM sabot_events",
                            standby=standby)[0][0])

    def caught_up(self) -> None:
        """Wait until the standby has replayed everything the primary has written."""
        # asked of the clusters' "postgres" database: the standby may not have replayed the
        # creation of "sabot" yet
        target = self.sql("SELECT pg_current_wal_lsn()", database="postgres")[0][0]
        deadline = time.monotonic() + CAUGHT_UP_WITHIN
        while not self.sql("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,),
                           standby=True, database="postgres")[0][0]:
            assert time.monotonic() < deadline, "the standby did not catch up"
            time.sleep(0.05)

    def clients(self, standby: bool) -> set[tuple[str, str]]:
        """(role, application) of every client connected to the sabot database."""
        rows = self.sql("SELECT usename, application_name FROM pg_stat_activity "
                        "WHERE datname = 'sabot' AND backend_type = 'client backend' "
                        "AND pid <> pg_backend_pid()", standby=standby, database="postgres")
        return {(str(r[0]), str(r[1])) for r in rows}


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    folder = Path(tempfile.mkdtemp(prefix="sabot-rr-"))
    folder.chmod(0o755)
    primary = Cluster(folder / "primary", _free_port())
    standby = Cluster(folder / "standby", _free_port())
    try:
        try:
            primary.create()
        except FileNotFoundError as exc:
            postgres_unavailable("cannot run initdb", str(exc))
        primary.start()
        standby.folder.mkdir(mode=0o700)
        if os.geteuid() == 0:
            shutil.chown(standby.folder, "postgres", "postgres")
        standby._as_postgres(_tool("pg_basebackup"), "-h", "127.0.0.1", "-p",
                             str(primary.port), "-U", "postgres", "-D",
                             str(standby.folder / "data"), "-R", "-X", "stream", "--no-sync")
        standby.start()
        found = Pair(primary, standby)
        with psycopg.connect(primary.dsn(), autocommit=True) as conn:
            for role in (OWNER, SERVER, READER):
                conn.execute(f"CREATE ROLE {role} LOGIN")
            conn.execute(f'CREATE DATABASE "sabot" OWNER {OWNER}')
        assert main(["store", "init", "--store", found.url(OWNER), "--server-role", SERVER,
                     "--reader-role", READER, "--env-file", str(folder / "none.env")]) == 0
        found.caught_up()  # the standby holds the store before a test reads it there
        yield found
    finally:
        for cluster in (standby, primary):
            with contextlib.suppress(Exception):
                cluster.stop("immediate")
        shutil.rmtree(folder, ignore_errors=True)


def _keys(folder: Path) -> Keys:
    """The server's keys, made in this process (``sabot keys chain|checkpoint``)."""
    class Made(Keys):
        def __post_init__(self) -> None:
            for pair in ("chain", "checkpoint"):
                assert main(["keys", pair, "--out", str(self.folder / pair)]) == 0

    return Made(folder)


def _play(target: str) -> tuple[str, str]:
    """One shoe of Trente et Quarante with one coup staked and settled, then closed (its seed
    revealed): (the table's id, the shoe's id)."""
    client = Client(target, ADMIN_TOKEN)
    try:
        client.cashier.OpenAccount(cashier_pb2.OpenAccountRequest(
            request_id=new_request_id(), account_id="rr-anne", currency_code="EUR"))
        client.cashier.Deposit(cashier_pb2.DepositRequest(
            request_id=new_request_id(), name="accounts/rr-anne",
            amount=common_pb2.Money(currency_code="EUR", amount_minor=100_000)))
        table = client.tables.OpenTable(table_pb2.OpenTableRequest(
            request_id=new_request_id(), table_id="rr-table", preset="francaise"))
        shoe = client.tables.OpenShoe(table_pb2.OpenShoeRequest(
            request_id=new_request_id(), parent=table.name))
        shoe = client.tables.CutShoe(table_pb2.CutShoeRequest(
            request_id=new_request_id(), name=shoe.name, cut_position=100, cut_by="rr-anne"))
        coup = client.tables.OpenCoup(table_pb2.OpenCoupRequest(
            request_id=new_request_id(), parent=shoe.name))
        client.betting.PlaceStake(betting_pb2.PlaceStakeRequest(
            request_id=new_request_id(), coup=coup.name, account="accounts/rr-anne",
            chance=common_pb2.CHANCE_NOIR,
            amount=common_pb2.Money(currency_code="EUR", amount_minor=1_000)))
        for call, request in ((client.tables.CloseBetting, table_pb2.CloseBettingRequest),
                              (client.tables.DealCoup, table_pb2.DealCoupRequest),
                              (client.tables.SettleCoup, table_pb2.SettleCoupRequest)):
            call(request(request_id=new_request_id(), name=coup.name))
        client.tables.CloseShoe(table_pb2.CloseShoeRequest(
            request_id=new_request_id(), name=shoe.name))
        return "rr-table", shoe.name.rsplit("/", 1)[-1]
    finally:
        client.close()


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``sabot ARGV`` in this process: (exit code, stdout, stderr)."""
    capsys.readouterr()
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _metrics(port: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as answer:
        health = json.loads(answer.read())
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    values = {line.split()[0]: float(line.split()[1]) for line in text.splitlines()
              if line.startswith("sabot_read_store_")}
    return {"health": health, "metrics": values}


def _verify(export: Path, keys: Keys) -> subprocess.CompletedProcess[str]:
    ops = Path(__file__).resolve().parents[2] / "ops"
    return subprocess.run(
        [sys.executable, "-m", "sabot_verify", str(export), "--checkpoint-public-key",
         keys.checkpoint_public, "--chain-public-key", str(keys.folder / "chain.pub")],
        capture_output=True, text=True, timeout=120, env=clean_env(PYTHONPATH=str(ops)))


def test_reports_runner_export_replay_and_proof_read_the_standby_and_say_its_lag(
        pair: Pair, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keys = _keys(tmp_path)
    env = clean_env(SABOT_READ_STORE=pair.url(READER, standby=True))
    served = Served(pair.url(SERVER), keys, tmp_path, "--metrics-listen", "127.0.0.1:0",
                    env=env)
    try:
        target = served.wait_listening()
        table, shoe = _play(target)
        pair.caught_up()
        store = ("--store", pair.url(SERVER), "--read-store", pair.url(READER, standby=True),
                 "--env-file", str(tmp_path / "none.env"))
        reader = ("--store", pair.url(READER), *store[2:])  # the back office reads only
        day = (datetime.now(UTC) - timedelta(hours=6)).date().isoformat()  # 06:00 UTC days
        head = pair.head()

        # The server's read models thread read the standby's log and wrote its rows on the
        # primary; they reached the standby by replication: the report reads them there.
        deadline = time.monotonic() + CAUGHT_UP_WITHIN
        while True:
            code, out, err = _run(capsys, "store", "report", "day", *reader, "--day", day,
                                  "--format", "json")
            assert code == 0, err
            report = json.loads(out)
            said = report["facts"]["read_store"]
            if f"the read models there at log position {head}" in said:
                break
            assert time.monotonic() < deadline, said
            time.sleep(0.2)
            pair.caught_up()
        assert said.startswith(f"a standby at log position {head} of the store's {head} "
                               "(0 events behind); replay lag 0.00 s"), said
        assert any(r["table_id"] == table for s in report["sections"] for r in s["rows"])

        # The runner: it reads the standby's log, writes the rows on the primary (as the
        # server role: the standby refuses every write).
        code, out, err = _run(capsys, "store", "projections", "catch-up", *store)
        assert code == 0, err
        assert "from the read store, a standby at log position" in out, out
        code, out, err = _run(capsys, "store", "projections", "lag", *reader)
        assert code == 0, err
        lines = [json.loads(x) for x in out.splitlines()]
        assert {x["events_behind"] for x in lines[:-1]} == {0}
        assert lines[-1]["read_store"]["standby"] is True
        assert lines[-1]["read_store"]["events_behind"] == 0

        # An export from the standby, verified by sabot-verify with the keys pinned.
        export = tmp_path / "standby.jsonl"
        code, out, err = _run(capsys, "store", "export", *reader, "--checkpoint-public-key",
                              keys.checkpoint_public, "-o", str(export), "-q")
        assert code == 0, err
        assert f"read store: a standby at log position {head} of the store's {head}" in err
        verified = _verify(export, keys)
        assert verified.returncode == 0 and "VERIFIED" in verified.stdout, (
            verified.stdout + verified.stderr)

        # A replay and a proof from the standby; the server's replay RPC reads it too.
        code, out, err = _run(capsys, "store", "replay", *reader, "--shoe", shoe,
                              "--chain-public-key", str(keys.folder / "chain.pub"))
        assert code == 0, out + err
        assert "verdict: identical" in out and "read store: a standby" in err
        code, out, err = _run(capsys, "store", "proof", *reader, "--position", "1")
        assert code == 0, err
        assert json.loads(out)["inclusion"]["position"] == 1
        client = Client(target, ADMIN_TOKEN)
        try:
            steps = list(client.regulator.ReplayShoe(regulator_pb2.ReplayShoeRequest(
                name=f"tables/{table}/shoes/{shoe}")))
        finally:
            client.close()
        assert steps

        # The server's health and metrics give the read store's lag.
        seen = _metrics(served.metrics_port())
        assert seen["health"]["facts"]["read_store"]["position"] >= head
        assert seen["metrics"]["sabot_read_store_lag_events"] == 0

        # The standby's replay paused, the primary goes on: the lag is said, and an export
        # from the standby still verifies (it ends at the last checkpoint the standby holds).
        pair.sql("SELECT pg_wal_replay_pause()", standby=True)
        try:
            _play_more(target)
            behind = pair.head() - pair.head(standby=True)
            assert behind > 0
            code, out, err = _run(capsys, "store", "report", "shoes", *reader, "--table",
                                  table)
            assert code == 0, err
            assert f"({behind} events, " in out and " s behind); replay lag" in out, out
            code, out, err = _run(capsys, "store", "projections", "lag", *reader)
            lagging = json.loads(out.splitlines()[-1])["read_store"]
            assert lagging["events_behind"] == behind and lagging["seconds_behind"] > 0
            assert lagging["replay_lag_seconds"] > 0 and lagging["wal_bytes_behind"] > 0
            late = tmp_path / "late.jsonl"
            code, out, err = _run(capsys, "store", "export", *reader,
                                  "--checkpoint-public-key", keys.checkpoint_public, "-o",
                                  str(late), "-q")
            assert code == 0 and f"({behind} events, " in err, err
            assert _verify(late, keys).returncode == 0
            deadline = time.monotonic() + CAUGHT_UP_WITHIN
            while (shown := _metrics(served.metrics_port()))["metrics"].get(
                    "sabot_read_store_lag_events", 0) == 0:
                assert time.monotonic() < deadline, "the metrics never showed the lag"
                time.sleep(0.2)
            print(f"\nREAD REPLICA FIGURES: replay paused: {behind} events, "
                  f"{lagging['seconds_behind']:.2f} s behind, "
                  f"replay lag {lagging['replay_lag_seconds']:.2f} s, "
                  f"{lagging['wal_bytes_behind']} WAL bytes; health "
                  f"{shown['health']['facts']['read_store']}")
        finally:
            pair.sql("SELECT pg_wal_replay_resume()", standby=True)
        resumed = time.monotonic()
        pair.caught_up()
        print(f"READ REPLICA FIGURES: caught up {time.monotonic() - resumed:.2f} s after the "
              f"replay resumed; caught up before: {said}")

        # Who connected where: the standby saw the reader role only (the server's read
        # models, its regulator's RPCs and health probe, the commands above), never the
        # server role that the writer and the notary connect as; the writer is on the primary.
        on_standby = pair.clients(standby=True)
        on_primary = pair.clients(standby=False)
        assert on_standby and {role for role, _ in on_standby} == {READER}, on_standby
        assert any(app.startswith("sabot-writer") for role, app in on_primary
                   if role == SERVER), on_primary
    finally:
        served.stop()
    assert '"event": "read store"' in (tmp_path / "server.log").read_text()


def _play_more(target: str) -> None:
    client = Client(target, ADMIN_TOKEN)
    try:
        for k in range(3):
            client.cashier.Deposit(cashier_pb2.DepositRequest(
                request_id=new_request_id(), name="accounts/rr-anne",
                amount=common_pb2.Money(currency_code="EUR", amount_minor=100 + k)))
    finally:
        client.close()

