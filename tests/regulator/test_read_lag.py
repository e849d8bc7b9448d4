"""A read store's lag and its check that it is a copy of the store (``services/regulator/
replica.py``), on SQLite files holding the events table as the ledger stores it; and the
commands' one-line refusal of a read store that is not a copy. (The streaming standby:
tests/ops/test_read_replica.py.)"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from services.cli import main
from services.regulator.replica import NotACopy, ReadLag, measure
from services.regulator.source import Database


def _store(path: Path, events: list[tuple[str, int, str, bytes]]) -> str:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE stored_events (originator_id TEXT, originator_version INTEGER, "
                 "topic TEXT, state BLOB, PRIMARY KEY (originator_id, originator_version))")
    conn.executemany("INSERT INTO stored_events VALUES (?, ?, ?, ?)", events)
    conn.commit()
    conn.close()
    return f"sqlite:///{path}"


STORED = datetime.now(UTC) - timedelta(seconds=90)
LOG = [(f"{k:032x}", 1, "sabot:AccountOpened",
        b'{"n": %d, "timestamp": {"_type_": "datetime_iso", "_data_": "%s"}}'
        % (k, STORED.isoformat().encode())) for k in range(1, 6)]


@contextmanager
def _pair(tmp_path: Path, read: list[tuple[str, int, str, bytes]],
          primary: list[tuple[str, int, str, bytes]] = LOG) -> Iterator[tuple[Database, Database]]:
    a = Database(_store(tmp_path / "read.db", read))
    b = Database(_store(tmp_path / "primary.db", primary))
    try:
        yield a, b
    finally:
        a.close()
        b.close()


def test_a_copy_behind_says_how_far(tmp_path: Path) -> None:
    with _pair(tmp_path, LOG[:3]) as (read, primary):
        lag = measure(read, primary)
    assert (lag.position, lag.primary, lag.events_behind, lag.standby) == (3, 5, 2, False)
    since = (datetime.now(UTC) - STORED).total_seconds()
    assert lag.seconds_behind is not None and 90 <= lag.seconds_behind <= since
    assert lag.text().startswith("a copy at log position 3 of the store's 5 (2 events, ")
    assert lag.text().endswith(" s behind)")
    assert lag.as_json()["events_behind"] == 2 and lag.as_json()["replay_lag_seconds"] is None


def test_without_the_store_its_position_is_unknown_and_said_why(tmp_path: Path) -> None:
    with _pair(tmp_path, LOG[:3]) as (read, _):
        lag = measure(read, None, "no SABOT_STORE / --store given")
    assert lag.events_behind is None
    assert lag.text() == ("a copy at log position 3; the store's unknown (no SABOT_STORE / "
                          "--store given)")


@pytest.mark.parametrize("read", [
    [*LOG[:2], (LOG[2][0], 1, LOG[2][2], b'{"n": 99}')],  # another event at position 3
    [*LOG, (f"{9:032x}", 1, "sabot:AccountOpened", b"{}")],  # more than the store holds
], ids=["differs", "ahead"])
def test_a_store_that_is_not_a_copy_is_refused(tmp_path: Path,
                                               read: list[tuple[str, int, str, bytes]]) -> None:
    with _pair(tmp_path, read) as (db, primary), pytest.raises(NotACopy) as refused:
        measure(db, primary)
    assert "not a copy of this store" in str(refused.value)


def test_a_standbys_figures_are_said() -> None:
    lag = ReadLag(412, 415, standby=True, replay_seconds=0.123, wal_bytes=1331)
    assert lag.text() == ("a standby at log position 412 of the store's 415 (3 events "
                          "behind); replay lag 0.12 s, 1.3 kB of WAL")


def test_the_commands_refuse_a_read_store_that_is_not_a_copy(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = _store(tmp_path / "primary.db", LOG)
    other = _store(tmp_path / "other.db", [(f"{k:032x}", 2, "sabot:X", b"{}") for k in (7, 8)])
    flags = ["--store", store, "--read-store", other, "--env-file", str(tmp_path / "none")]
    for argv in (["store", "proof", "--position", "1"], ["store", "replay", "--shoe", "x"]):
        assert main([*argv, *flags]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--read-store: the event at log position 2 differs" \
            in err, err
