"""A store whose disk is full (issue 20): ``sabot serve`` answers a write UNAVAILABLE with reason
``STORE_FULL`` (and a RetryInfo), ``sabot.writer`` says NOT_SERVING until a save succeeds
again, and once space is freed the same request id is stored, once. The disk is a small tmpfs
the test mounts (root only: skipped otherwise) and fills with a file, then empties: the SQLite
file lives on it; PostgreSQL's database lives in a tablespace on it (created and dropped here).
Both through the server's default ledger process."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import psycopg
import pytest

from tests.conftest import (
    OWNER_ROLE,
    PG_ADMIN_DSN,
    READER_ROLE,
    SERVER_ROLE,
    ensure_roles,
    postgres_unavailable,
)

from .support import Keys, Served, drop_database, sabot, url
from .test_outage import NOT_SERVING, SERVING, Site, unavailable_details


@contextlib.contextmanager
def small_disk(size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` in a folder every user may reach (PostgreSQL's server runs as
    postgres: pytest's own folders are root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="sabot-disk-"))
    folder.chmod(0o755)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0777", "tmpfs",
                           str(folder)], capture_output=True, text=True)
    if done.returncode != 0:
        folder.rmdir()
        # a machine where root may mount (CI's) always runs it: SABOT_REQUIRE_POSTGRES=1 fails
        postgres_unavailable(f"cannot mount a tmpfs here ({done.stderr.strip()})")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)
        with contextlib.suppress(OSError):
            folder.rmdir()


def fill(disk: Path) -> Path:
    """A file taking every free byte of ``disk``."""
    filler = disk / "filler"
    chunk = b"\0" * 65536
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            try:
                os.write(fd, chunk)
            except OSError:
                break
        while True:  # the last partial chunk
            try:
                os.write(fd, b"\0" * 512)
            except OSError:
                break
    finally:
        os.close(fd)
    return filler


def check_full_then_back(site: Site, disk: Path) -> None:
    site.open_account("f-1")
    assert site.deposit("before", "f-1").balance.amount_minor == 1
    assert site.status("sabot.writer") == SERVING
    filler = fill(disk)
    refused = None
    stored = 1
    for i in range(400):  # until a save needs space (PostgreSQL: a new page)
        try:
            site.deposit(f"full-{i}", "f-1", timeout=10)
            stored += 1
        except grpc.RpcError as exc:
            refused = (f"full-{i}", exc)
            break
    assert refused is not None, "every write was stored on a full disk"
    request_id, error = refused
    assert error.code() is grpc.StatusCode.UNAVAILABLE, error.details()
    reason, delay = unavailable_details(error)
    assert reason == "STORE_FULL", (reason, error.details())
    assert delay > 0
    assert "retry with the same request id" in (error.details() or "")
    site.wait_status(NOT_SERVING, "sabot.writer", timeout=10)
    time.sleep(1.0)  # it stays NOT_SERVING while the disk is full (no write succeeded)
    assert site.status("sabot.writer") == NOT_SERVING
    assert site.status("") == SERVING  # reads are served
    with pytest.raises(grpc.RpcError) as again:  # still full: the retry is refused the same way
        site.deposit(request_id, "f-1", timeout=10)
    assert unavailable_details(again.value)[0] == "STORE_FULL"
    filler.unlink()  # space returns
    assert site.deposit(request_id, "f-1", timeout=10).balance.amount_minor == stored + 1
    site.wait_status(SERVING, "sabot.writer", timeout=10)
    assert site.deposit(request_id, "f-1", timeout=10).balance.amount_minor == stored + 1
    assert site.balance("f-1") == (stored + 1, stored + 1)  # the refused write: stored once


def test_sqlite_on_a_full_disk_is_unavailable_store_full(tmp_path: Path) -> None:
    with small_disk("6m") as disk:
        served = Served(f"sqlite:///{disk / 'sabot.db'}", Keys(tmp_path), tmp_path)
        try:
            served.wait_listening()
            site = Site(served, None, "")  # type: ignore[arg-type]
            try:
                check_full_then_back(site, disk)
            finally:
                site.channel.close()
        finally:
            served.stop()


@pytest.mark.postgres
def test_postgres_on_a_full_disk_is_unavailable_store_full(tmp_path: Path) -> None:
    with small_disk("24m") as disk:
        space = disk / "pg"
        space.mkdir()
        shutil.chown(space, "postgres", "postgres")
        tablespace = f"sabot_full_{uuid.uuid4().hex[:8]}"
        database = f"sabot_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
        ensure_roles()
        with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as conn:
            conn.execute(f"CREATE TABLESPACE {tablespace} LOCATION '{space}'")
        try:
            with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{database}" OWNER {OWNER_ROLE} '
                             f"TABLESPACE {tablespace}")
            done = sabot("ledger-schema", "--store", url(database, OWNER_ROLE),
                         "--server-role", SERVER_ROLE, "--reader-role", READER_ROLE)
            assert done.returncode == 0, done.stderr
            served = Served(url(database), Keys(tmp_path), tmp_path)
            try:
                served.wait_listening()
                site = Site(served, None, database)  # type: ignore[arg-type]
                try:
                    check_full_then_back(site, disk)
                finally:
                    site.channel.close()
            finally:
                served.stop()
        finally:
            drop_database(database)
            with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as conn:
                conn.execute(f"DROP TABLESPACE IF EXISTS {tablespace}")
