"""The store an operations test runs a served process on: a SQLite file, or a PostgreSQL
database of its own (made and dropped around the test). A module needing another file name
defines its own ``store``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .support import create_store, drop_database, url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'sabot.db'}"
        return
    database = create_store()
    try:
        yield url(database)
    finally:
        drop_database(database)
