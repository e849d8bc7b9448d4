"""An installed wheel works without the source tree: it carries the generated gRPC stubs and
the PostgreSQL append-only guard (ops/postgres/append_only.sql), and applies the guard."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import PG_HOST, PG_PORT, PG_USER

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.postgres
def test_a_wheel_carries_its_stubs_and_sql_and_guards_postgres(
    tmp_path: Path, postgres_database: str,
) -> None:
    # Built from a copy of the tree: the build regenerates services/api/gen in the tree it
    # builds, which the tests running beside this one (pytest -n 2) import.
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "var", "build", "*.egg-info", ".hypothesis", "__pycache__",
        ".mypy_cache", ".ruff_cache", ".pytest_cache"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation",
         "--quiet", "-w", str(tmp_path / "dist")], check=True, capture_output=True, cwd=tmp_path)
    (wheel,) = (tmp_path / "dist").glob("sabot-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "services/ledger/sql/append_only.sql" in names
    assert "services/ledger/sql/writer_lease.sql" in names
    assert "services/api/gen/sabot/v1/betting_pb2.py" in names
    assert "sabot_verify/__main__.py" in names
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)  # a pure-Python wheel: unpacking installs it
    url = f"postgresql://{PG_USER}@{PG_HOST}:{PG_PORT}/{postgres_database}?schema=public"
    script = (
        "import services.ledger.schema as s, services.ledger.api as a\n"
        f"assert str(s.SQL_FILE).startswith({str(site)!r}), s.SQL_FILE\n"
        f"l = a.Ledger(a.LedgerConfig(store_url={url!r}, seal_key=bytes(32)), games=())\n"
        "l.open_account('wheel-1', 'wheel-player')\n"
        "l.close()\n"
        "import psycopg\n"
        f"with psycopg.connect('host={PG_HOST} port={PG_PORT} user={PG_USER} "
        f"dbname={postgres_database}') as c:\n"
        "    try:\n"
        "        c.execute('DELETE FROM sabot_events')\n"
        "    except psycopg.Error as e:\n"
        "        print('refused:', e)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(site)}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "the event log is append-only" in done.stdout
