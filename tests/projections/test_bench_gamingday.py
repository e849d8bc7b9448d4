"""bench.gamingday still runs (a day of one shoe at one table): the figures are the bench's,
this only keeps it from rotting as settings change (the server's keys, the ledger's config)."""

from __future__ import annotations

from pathlib import Path

from bench import gamingday


def test_the_gaming_day_bench_plays_a_day_and_reads_its_report(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'day.db'}"
    assert gamingday.fill(url, tables=1, shoes=1) == 1
    first, times, rows = gamingday.measure(url, tmp_path)
    assert rows >= 3  # the table's shifts and day, the cage's
    assert first > 0 and len(times) == gamingday.CALLS
