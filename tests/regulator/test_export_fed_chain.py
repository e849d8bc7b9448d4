"""A whole log's export checks the evidence chain with the events it writes (``_ChainFeed``)
instead of reading the log a second time (issue 25 item 6): on an intact store and on stores
tampered with in every way an insider can (an event edited, deleted or added after the anchor,
a link deleted), what it finds is what the second read finds (``chain_problems``), and the
export's bytes are the same either way. So is the export of a shoe and of the log written
from the events read once (their stored states spliced into the lines, not parsed and
encoded again) byte for byte what encoding each record gives (``canonical_json``)."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.bootstrap import ROUND_END
from services.regulator import export
from services.regulator.canonical import canonical_json
from services.regulator.export import ExportSummary, write_export
from services.regulator.notary import Notary
from services.regulator.source import Database, EventTable
from tests.conftest import sqlite_copy

from .conftest import Played

LINK = "sabot.ledger:Chain.Linked"


def _export(url: str, played: Played, monkeypatch: pytest.MonkeyPatch | None = None,
            **kw: Any) -> tuple[str, ExportSummary]:
    """The export's text and summary; with ``monkeypatch``, the chain checked by reading the
    log again, as before the feed."""
    db = Database(url)
    try:
        events = EventTable(db)
        notary = Notary(db, events, played.key, "sabot-test", ROUND_END, create=False)
        buf = io.StringIO()
        with pytest.MonkeyPatch.context() as mp:
            if monkeypatch is not None:
                mp.setattr(export._ChainFeed, "whole_log", classmethod(lambda *_a: None))
            summary = write_export(buf, events, notary, played.public_key, **kw)
        return buf.getvalue(), summary
    finally:
        db.close()


def _copy(played: Played, tmp: Path) -> str:
    path = tmp / "store.db"
    url = sqlite_copy(played.url, path)
    with sqlite3.connect(path) as conn:  # the insider's side of the append-only guard
        for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
            conn.execute(f'DROP TRIGGER "{name}"')
    return url


def _tamper(url: str, what: str, at: float) -> None:
    """An insider's change to the stored events, at the fraction ``at`` of the log."""
    with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
        rows = conn.execute("SELECT rowid, topic, state FROM stored_events ORDER BY rowid"
                            ).fetchall()
        links = [r for r in rows if r[1] == LINK]
        pick = rows[min(len(rows) - 1, int(at * len(rows)))]
        if what == "edit":
            conn.execute("UPDATE stored_events SET state = ? WHERE rowid = ?",
                         (bytes(pick[2]).replace(b"}", b',"x":1}', 1), pick[0]))
        elif what == "reformat":  # the same content, not canonical: the chain's bytes differ
            spaced = json.dumps(json.loads(pick[2]), separators=(", ", ": ")).encode()
            conn.execute("UPDATE stored_events SET state = ? WHERE rowid = ?",
                         (spaced, pick[0]))
        elif what == "delete":
            conn.execute("DELETE FROM stored_events WHERE rowid = ?", (pick[0],))
        elif what == "delete-link":
            link = links[min(len(links) - 1, int(at * len(links)))]
            conn.execute("DELETE FROM stored_events WHERE rowid = ?", (link[0],))
        elif what == "append":  # after the anchor, covered by no link
            conn.execute("INSERT INTO stored_events (originator_id, originator_version, topic, "
                         "state) VALUES (?, ?, ?, ?)", ("f" * 32, 1, "bench:Inserted", b"{}"))


def test_intact_log_fed_as_read(played_sqlite: Played) -> None:
    fed, summary = _export(played_sqlite.url, played_sqlite)
    read, again = _export(played_sqlite.url, played_sqlite, pytest.MonkeyPatch())
    assert fed == read
    assert summary.chain_problems == again.chain_problems == []


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(what=st.sampled_from(["edit", "reformat", "delete", "delete-link", "append"]),
       at=st.floats(min_value=0.0, max_value=1.0))
def test_tampered_log_fed_finds_what_a_second_read_finds(
        played_sqlite: Played, tmp_path_factory: pytest.TempPathFactory, what: str,
        at: float) -> None:
    url = _copy(played_sqlite, tmp_path_factory.mktemp("fed"))
    _tamper(url, what, at)
    fed, summary = _export(url, played_sqlite)
    read, again = _export(url, played_sqlite, pytest.MonkeyPatch())
    assert fed == read
    assert summary.chain_problems == again.chain_problems
    if what != "append":  # an event added after the anchor's batch is past what is checked
        assert summary.chain_problems  # each is a change the chain names


def _records_encoded(text: str) -> str:
    """The export's records each encoded again as ``canonical_json`` writes a record."""
    return "".join(canonical_json(json.loads(line), strict=False).decode() + "\n"
                   for line in text.splitlines())


@pytest.mark.parametrize("which", ["shoe", "log", "each"])
def test_lines_are_the_records_canonical_json(played_sqlite: Played, which: str) -> None:
    kw: dict[str, Any] = {}
    if which != "log":
        kw["shoe_ids"] = [played_sqlite.shoes[0]]
    if which == "each":
        kw["proofs"] = "each"
    text, _summary = _export(played_sqlite.url, played_sqlite, **kw)
    assert text == _records_encoded(text)


def test_a_state_not_stored_canonical_is_encoded(played_sqlite: Played, tmp_path: Path
                                                ) -> None:
    """A stored state that is not its canonical JSON (an insider's reformatting) cannot be
    spliced: its record is the parsed content encoded, as before."""
    url = _copy(played_sqlite, tmp_path)
    _tamper(url, "reformat", 0.5)
    text, _summary = _export(url, played_sqlite)
    assert text == _records_encoded(text)
