"""A stored card changed by an insider (issue 24's acceptance): the event itself, in the store,
changed as the store's owner would (SQLite: its append-only guard dropped for the edit, as
tests/tamper/ does it, then put back), on a server of this test's own (the ledger halts its
writer on reading it: the shared one is left whole). The table's recall reads the coup's events
through the evidence check the writer uses, so the listing refuses it, naming the changed
event's position, and the page shows that refusal as a failure; the check in the browser reads
the coup's events as the regulator's export reads them from the store, and fails at that card
(from the revealed seed's shuffle) and at that event (its leaf, computed from its bytes, is not
in the signed log).

And a console (or a server behind it) that lies: another event's valid proof or another
event's bytes given for an event the page shows, or a card, an amount or a step's value shown
other than the event's bytes: each fails at its event."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from services.api.gen.sabot.v1 import events_pb2

from .conftest import Played, Tampered, console_of, serving, shot
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


def _recall(played: Played) -> events_pb2.ListRecalledCoupsResponse:
    """The table's coups as the server's recall serves them (to the regulator)."""
    client = played.client("regulator")
    try:
        found: events_pb2.ListRecalledCoupsResponse = client.recall.ListRecalledCoups(
            events_pb2.ListRecalledCoupsRequest(parent=played.table, page_size=50))
        return found
    finally:
        client.close()


@pytest.fixture(scope="module")
def insider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Played, str]]:
    """A server and console of this module's own, its store to be edited."""
    with serving(tmp_path_factory.mktemp("tamper")) as played, console_of(played) as url:
        yield played, url


def test_a_stored_card_changed_fails_the_listing_and_the_check_at_that_card(
        browser: Any, insider: tuple[Played, str]) -> None:
    played, console = insider
    assert len(played.coups) >= 3
    coup = played.coups[1]
    steps = next(c for c in _recall(played).coups if c.coup.name == coup).steps
    event = [s for s in steps if s.type.endswith(":Coup.CardDealt")][1]
    card = json.loads(event.data_json)
    changed = "KH" if card["code"] != "KH" else "QS"
    assert _insider_edits(played, event.position, changed) == card["code"]
    # the recall, reading the coup's events through the writer's evidence check, refuses
    with pytest.raises(grpc.RpcError) as refused:
        _recall(played)
    assert refused.value.code() is grpc.StatusCode.FAILED_PRECONDITION
    assert f"position {event.position}:" in str(refused.value.details()), refused.value.details()
    page = sign_in(browser, console, played.tokens["regulator"])
    try:
        page.goto(f"{console}/{played.table}")  # the listing: the refusal, as a failure
        shot(page, "table-tampered-in-store")
        alert = page.locator("#recall-refused").inner_text()
        assert alert.startswith("FAIL: the ledger refuses this table's recall:"), alert
        assert f"position {event.position}:" in alert, alert
        assert page.locator(f'a[href="/coup/{coup}"]').count() == 0  # no coup shown as good
        # the find of a role that reads the tables' recall (a croupier): the refusal as its note
        finder = sign_in(browser, console, played.tokens["croupier"])
        try:
            finder.goto(f"{console}/search?table={played.table.split('/', 1)[1]}")
            shot(finder, "search-tampered-in-store")
            notes = " ".join(finder.locator(".note").all_inner_texts())
            assert "FAILED_PRECONDITION" in notes and f"position {event.position}:" in notes, \
                notes
            assert finder.locator(f'a[href="/coup/{coup}"]').count() == 0
        finally:
            finder.close()
        page.goto(f"{console}/coup/{coup}")
        assert f"position {event.position}:" in page.locator("#recall-refused").inner_text()
        page.get_by_role("button", name="Check this coup").click()
        page.wait_for_selector("#check[data-verdict]", timeout=60_000)
        shot(page, "coup-tampered-in-store")
        results = page.locator("#check-results").inner_text()
        assert page.locator("#check").get_attribute("data-verdict") == "fail", results
        assert "FAIL the ledger refuses this coup's recall:" in results, results
        assert (f"FAIL card at position {card['position']} (event #{event.position}): "
                f"recorded {changed}, the shuffle gives {card['code']}") in results, results
        assert re.search(r"FAIL \d+ recorded card events against the shuffle: 1 differ", results)
        # its leaf, computed in the browser from the bytes the store holds now, is not the
        # notarised one: the event is not in the signed log, and only that event
        assert (f"FAIL event #{event.position}: its stored bytes are not those the notary "
                "hashed") in results, results
        assert f"FAIL event #{event.position} is not in the signed log" in results, results
        assert len(re.findall(r"FAIL event #\d+ is not in the signed log", results)) == 1, results
    finally:
        page.close()


def _check(page: Any, console: str, coup: str, name: str) -> str:
    page.goto(f"{console}/coup/{coup}")
    page.get_by_role("button", name="Check this coup").click()
    page.wait_for_selector("#check[data-verdict]", timeout=60_000)
    shot(page, name)
    assert page.locator("#check").get_attribute("data-verdict") == "fail"
    return str(page.locator("#check-results").inner_text())


def test_a_valid_proof_of_another_event_fails_at_that_event(browser: Any, console: str,
                                                            played: Played) -> None:
    """The server hands, for one event of the coup, another event's bytes with that event's
    own valid inclusion proof (the proof checks, for the other event): the browser, binding
    the bytes to the event it shows by the log position they hold, fails at that event; given
    the other event's bytes with this event's proof, its computed leaf leads to no signed
    root."""
    swapped: dict[str, int] = {}

    def other_event(facts: Any) -> None:
        proofs = [p for p in facts["evidence"]["proofs"] if p.get("leaf")]
        one, other = proofs[2], proofs[3]
        swapped.update(shown=one["position"], given=other["position"])
        for k in ("leaf", "leaf_index", "path", "notarised"):
            one[k] = other[k]

    lying = Tampered(sign_in(browser, console, played.tokens["regulator"]), "**/api/coup/**",
                     other_event)
    try:
        results = _check(lying.page, console, played.coups[0], "coup-proof-of-another-event")
        assert not lying.errors, lying.errors
        assert (f"FAIL event #{swapped['shown']}: the bytes given are not this event's (they "
                f"are of position {swapped['given']})") in results, results
        assert f"FAIL event #{swapped['shown']}: shown, but not among the events proved" \
            in results, results
    finally:
        lying.close()

    def other_bytes(facts: Any) -> None:
        proofs = [p for p in facts["evidence"]["proofs"] if p.get("leaf")]
        one, other = proofs[2], proofs[3]
        content = json.loads(other["leaf"])
        content["position"] = one["position"]  # passed off as this event's
        swapped.update(shown=one["position"])
        one["leaf"] = json.dumps(content, sort_keys=True, separators=(",", ":"))

    lying = Tampered(sign_in(browser, console, played.tokens["regulator"]), "**/api/coup/**",
                     other_bytes)
    try:
        results = _check(lying.page, console, played.coups[0], "coup-bytes-of-another-event")
        assert not lying.errors, lying.errors
        assert f"FAIL event #{swapped['shown']} is not in the signed log" in results, results
    finally:
        lying.close()


def test_a_displayed_fact_changed_fails_at_its_event(browser: Any, console: str,
                                                      played: Played) -> None:
    """The page shows a card, an amount and a step's value other than the event's stored
    bytes, while the facts and their proofs are the true ones: each fails at its event."""
    page = sign_in(browser, console, played.tokens["regulator"])
    for coup in (c for i, c in enumerate(played.coups) if i != 1):  # a coup that moved money
        true_page = page.goto(f"{console}/coup/{coup}")
        assert true_page is not None
        html = true_page.text()
        if '<tr class="movement">' in html:
            break
    card = re.search(r'data-position="(\d+)"\s+title="position \d+"><span class="code">(\w+)'
                     r'</span>', html)
    amount = re.search(r'<tr class="movement">(?:<td>[^<]*</td>\s*){3}<td class="num">'
                       r'([\d.]+) EUR</td>', html)
    step = re.search(r'<span class="pos">#(\d+)</span> <span class="type">Coup.CardDealt'
                     r'</span>.*?<span class="k">running_total</span>=<span class="v">(\d+)',
                     html, re.S)
    assert card and amount and step
    other = "KH" if card.group(2) != "KH" else "QS"
    lied = (html.replace(card.group(0), card.group(0).replace(
                f">{card.group(2)}</span>", f">{other}</span>"), 1)
            .replace(f"{amount.group(1)} EUR</td>", f"9{amount.group(1)} EUR</td>", 1)
            .replace(step.group(0), step.group(0)[:-len(step.group(2))] + "777", 1))

    def fulfil(route: Any) -> None:
        route.fulfill(status=200, content_type="text/html; charset=utf-8", body=lied)

    page.route(lambda url: url == f"{console}/coup/{coup}", fulfil)  # the page, not its facts
    try:
        results = _check(page, console, coup, "coup-displayed-fact-changed")
        assert re.search(rf"FAIL event #\d+: the card at position {card.group(1)} is shown as "
                         rf"{other} \(\w+, total \d+\), its stored bytes say {card.group(2)}",
                         results), results
        assert re.search(rf"FAIL event #\d+: \w+ from \S+ to \S+ shown as 9{amount.group(1)} "
                         r"EUR, its stored bytes say \d+ minor units", results), results
        assert (f"FAIL event #{step.group(1)}: shown running_total=777, its stored bytes say "
                f"running_total={step.group(2)}") in results, results
        assert re.search(r"FAIL \d+ steps, \d+ cards, \d+ fates and \d+ movements shown against "
                         r"the stored bytes of the events in the signed log: 3 differ", results)
        assert not re.search(r"FAIL event #\d+ is not in the signed log", results), results
    finally:
        page.unroute_all(behavior="wait")
        page.close()
