"""A stored card changed by an insider (issue 24's acceptance): the event itself, in the store,
changed as the store's owner would (SQLite: its append-only guard dropped for the edit, as
tests/tamper/ does it, then put back). The server goes on serving the coup: its recall reads
the coup's events from the store, the changed one too; the check in the browser, computing the
shuffle from the revealed seed, fails at that card and names its position and its event's.

(The writer, which checks every event it loads against its evidence chain, stops at the first
load of that event; the recall's direct read does not pass through it: what the browser checks
is what an insider can make the server serve.)"""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Any

from services.api.gen.sabot.v1 import events_pb2

from .conftest import Played, shot
from .test_console import sign_in

TABLES = ("stored_events", "stored_snapshots")


def _insider_edits(played: Played, position: int, code: str) -> str:
    """The stored event at ``position`` (a Coup.CardDealt) given the card ``code``: the
    store's guard triggers dropped, the row's state changed, the triggers put back. The card
    it held."""
    conn = sqlite3.connect(played.store, timeout=30)
    try:
        guards = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND "
                              "tbl_name IN (?, ?)", TABLES).fetchall()
        assert guards  # the store is guarded: the insider must drop them first
        for name, _ in guards:
            conn.execute(f'DROP TRIGGER "{name}"')
        (state,) = conn.execute("SELECT state FROM stored_events WHERE rowid = ?",
                                (position,)).fetchone()
        data = json.loads(state)
        was = str(data["code"])
        data["code"] = code
        conn.execute("UPDATE stored_events SET state = ? WHERE rowid = ?",
                     (json.dumps(data, separators=(",", ":")).encode(), position))
        for _, sql in guards:
            conn.execute(sql)
        conn.commit()
        return was
    finally:
        conn.close()


def _recalled(played: Played, coup: str) -> list[Any]:
    """The coup's steps as the server's recall serves them (to the regulator)."""
    recall = played.client("regulator").recall.ListRecalledCoups(
        events_pb2.ListRecalledCoupsRequest(parent=played.table, page_size=50))
    return list(next(c for c in recall.coups if c.coup.name == coup).steps)


def test_a_stored_card_changed_fails_the_check_at_that_card(browser: Any, console: str,
                                                            played: Played) -> None:
    assert len(played.coups) >= 3
    coup = played.coups[1]  # checked by no other test: the first and the last are
    event = [s for s in _recalled(played, coup) if s.type.endswith(":Coup.CardDealt")][1]
    card = json.loads(event.data_json)
    changed = "KH" if card["code"] != "KH" else "QS"
    assert _insider_edits(played, event.position, changed) == card["code"]
    served = next(s for s in _recalled(played, coup) if s.position == event.position)
    assert json.loads(served.data_json)["code"] == changed  # the server serves it
    page = sign_in(browser, console, played.tokens["regulator"])
    try:
        page.goto(f"{console}/coup/{coup}")
        page.get_by_role("button", name="Check this coup").click()
        page.wait_for_selector("#check[data-verdict]", timeout=60_000)
        shot(page, "coup-tampered-in-store")
        results = page.locator("#check-results").inner_text()
        assert page.locator("#check").get_attribute("data-verdict") == "fail", results
        assert (f"FAIL card at position {card['position']} (event #{event.position}): "
                f"recorded {changed}, the shuffle gives {card['code']}") in results
        assert re.search(r"FAIL \d+ recorded card events against the shuffle: 1 differ", results)
    finally:
        page.close()
