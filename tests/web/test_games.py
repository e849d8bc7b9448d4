"""Treinta y Una's and Cuarenta's pages in a real browser (Debian's chromium): a table's rounds
or matches, a round's and a match's replay in RECALL MODE, and the in-browser check (the
shoe's commitment, SABOT-SHUFFLE-1, every card at its position, the face-down cards'
SABOT-HIDDEN-1 commitments) passing for the regulator and a player; a round still in play says
what is not yet revealed and shows no face; a lying record fails at the card; no token or
unrevealed seed in any page."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest

from services.api.client import Client

from .conftest import Played, Tampered, shot
from .test_console import sign_in


def _open(page: Any, console: str, table: str, link: str) -> None:
    page.get_by_role("navigation").get_by_role("link", name="Tables").click()
    page.get_by_role("link", name=table.split("/")[1]).click()
    page.locator(f'table a[href="{link}"]').click()  # the recall's (the live view links too)
    page.get_by_text("RECALL MODE").wait_for()  # loaded: a click waits only for the commit
    assert page.get_by_text("RECALL MODE").is_visible()


def _check(page: Any, button: str) -> tuple[str | None, str]:
    page.get_by_role("button", name=button).click()
    page.wait_for_selector("#game-check[data-verdict]", timeout=60_000)
    return (page.locator("#game-check").get_attribute("data-verdict"),
            page.locator("#check-results").inner_text())


@pytest.mark.parametrize("role", ["regulator", "anne"])
def test_a_round_is_replayed_and_checks(role: str, browser: Any, console: str,
                                        played: Played) -> None:
    page = sign_in(browser, console, played.tokens[role], "anne" if role == "anne" else "")
    try:
        _open(page, console, played.tyu_table, f"/round/{played.round}")
        shot(page, f"tyu-table-{role}")
        assert page.locator(".frames > li").count() >= 6  # six cards dealt, then each one more
        assert page.locator(".hand .card.back").count() == 0  # settled: every hand shown
        assert page.get_by_text("Next banker").is_visible()
        verdict, results = _check(page, "Check this round")
        shot(page, f"tyu-round-{role}")
        assert verdict == "pass", results
        assert re.search(r"PASS round 1 .*commitment: SHA-256 of the revealed seed", results)
        assert re.search(r"cards against the shuffle: 0 differ", results)
        assert re.search(r"6 face-down commitments against the seed: 0 differ", results)
        assert "6 face-down cards shown open the commitments" in results
        assert re.search(r"PASS round 1 .*: the banker's lot drawn again from the seed", results)
        if role == "regulator":
            assert re.search(r"PASS checkpoint of \d+ events signed by key", results)
            assert re.search(r"PASS [1-9]\d* events of the round are in the signed log, each "
                             r"leaf computed here from the event's stored bytes", results)
            assert re.search(r"PASS [1-9]\d* steps shown against the stored bytes of the "
                             r"round's events in the signed log: 0 differ", results), results
        else:
            assert "the regulator's to check: not checked here" in results
    finally:
        page.close()


@pytest.mark.parametrize("role", ["regulator", "bruno"])
def test_a_match_is_replayed_and_checks(role: str, browser: Any, console: str,
                                        played: Played) -> None:
    page = sign_in(browser, console, played.tokens[role], "bruno" if role == "bruno" else "")
    try:
        _open(page, console, played.cuarenta_table, f"/match/{played.match}")
        moves = page.locator("table.moves tbody tr")
        assert moves.count() > 40
        assert page.locator("tr.move-captured").count() > 0
        assert page.locator("tr.move-won").count() == 1
        assert page.get_by_role("heading", name="The stakes paid").is_visible()
        verdict, results = _check(page, "Check this match")
        shot(page, f"cuarenta-match-{role}")
        assert verdict == "pass", results
        hands = len(re.findall(r"PASS hand \d+ \(shoe \w+\): commitment", results))
        assert hands >= 2 and hands == len(re.findall(r"against the shuffle: 0 differ", results))
        if role == "regulator":
            assert re.search(r"PASS [1-9]\d* events of the match are in the signed log, each "
                             r"leaf computed here from the event's stored bytes", results)
            assert re.search(rf"PASS {page.locator('tr[data-version]').count()} "
                             r"moves shown against the stored bytes of the match's events in "
                             r"the signed log: 0 differ", results), results
    finally:
        page.close()


def test_a_match_move_shown_otherwise_fails_at_its_event(browser: Any, console: str,
                                                        played: Played) -> None:
    """The match's page shows a capture's card, and a stake's amount, other than their events'
    stored bytes (the facts and their proofs true): the regulator's check fails at each."""
    page = sign_in(browser, console, played.tokens["regulator"])
    true_page = page.goto(f"{console}/match/{played.match}")
    assert true_page is not None
    html = true_page.text()
    row = re.search(r'<tr class="move-captured" data-version="(\d+)".*?data-k="card"[^>]*>'
                    r'(\w+)</span>', html, re.S)
    paid = re.search(r'<tr data-version="(\d+)" data-kind="money"><td data-k="kind">stake</td>'
                     r'.*?<td class="num" data-k="amount">([^<]+)</td>', html, re.S)
    assert row and paid, html
    card = "KH" if row.group(2) != "KH" else "QS"
    lied = html.replace(row.group(0), row.group(0)[:-len(row.group(2)) - 7] + card + "</span>", 1)
    lied = lied.replace(paid.group(0), paid.group(0)[:-len(paid.group(2)) - 5] + "9.99 EUR</td>",
                        1)

    def fulfil(route: Any) -> None:
        route.fulfill(status=200, content_type="text/html; charset=utf-8", body=lied)

    page.route(lambda url: url == f"{console}/match/{played.match}", fulfil)
    try:
        page.goto(f"{console}/match/{played.match}")
        verdict, results = _check(page, "Check this match")
        shot(page, "cuarenta-match-move-shown-otherwise")
        assert verdict == "fail", results
        assert re.search(rf"FAIL event #\d+: shown card={card}, its stored bytes say "
                         rf"card={row.group(2)}", results), results
        assert re.search(r"FAIL event #\d+: shown amount=9.99 EUR, its stored bytes say "
                         r"amount=\d+", results), results
        assert re.search(r"FAIL \d+ moves shown against the stored bytes of the match's events "
                         r"in the signed log: 2 differ", results), results
    finally:
        page.unroute_all(behavior="wait")
        page.close()


def test_a_valid_proof_of_another_event_fails_at_the_match_event(
        browser: Any, console: str, played: Played) -> None:
    """For one event of the match the server hands another event's bytes with that event's own
    valid inclusion proof: the browser, binding the bytes to the event by the log position
    they hold, fails at that event, and the move it is shows as proved by no event."""
    swapped: dict[str, int] = {}

    def other_event(facts: Any) -> None:
        proofs = [p for p in facts["evidence"]["proofs"] if p.get("leaf")]
        one, other = proofs[5], proofs[6]
        swapped.update(shown=one["position"], given=other["position"],
                       version=json.loads(one["leaf"])["version"])
        for k in ("leaf", "leaf_index", "path", "notarised"):
            one[k] = other[k]

    lying = Tampered(sign_in(browser, console, played.tokens["regulator"]), "**/api/match/**",
                     other_event)
    try:
        lying.page.goto(f"{console}/match/{played.match}")
        verdict, results = _check(lying.page, "Check this match")
        shot(lying.page, "cuarenta-match-proof-of-another-event")
        assert not lying.errors, lying.errors
        assert verdict == "fail", results
        assert (f"FAIL event #{swapped['shown']}: the bytes given are not this event's (they "
                f"are of position {swapped['given']})") in results, results
        assert (f"FAIL move {swapped['version']}: shown, but no event of the match in the "
                "signed log is it") in results, results
    finally:
        lying.close()


def test_a_round_step_shown_otherwise_fails_at_its_event(browser: Any, console: str,
                                                        played: Played) -> None:
    """The round's page shows a step's value other than its event's stored bytes (the facts
    and their proofs true): the regulator's check fails at that event."""
    page = sign_in(browser, console, played.tokens["regulator"])
    true_page = page.goto(f"{console}/round/{played.round}")
    assert true_page is not None
    html = true_page.text()
    step = re.search(r'<span class="pos">v(\d+)</span> <span class="type">Opened</span>.*?'
                     r'<span class="k">bank</span>=<span class="v">(\d+)</span>', html, re.S)
    assert step, html
    lied = html.replace(step.group(0), step.group(0)[:-len(step.group(2)) - 7] + "1</span>", 1)

    def fulfil(route: Any) -> None:
        route.fulfill(status=200, content_type="text/html; charset=utf-8", body=lied)

    page.route(lambda url: url == f"{console}/round/{played.round}", fulfil)
    try:
        page.goto(f"{console}/round/{played.round}")
        verdict, results = _check(page, "Check this round")
        shot(page, "tyu-round-step-shown-otherwise")
        assert verdict == "fail", results
        assert re.search(rf"FAIL event #\d+: shown bank=1, its stored bytes say "
                         rf"bank={step.group(2)}", results), results
        assert re.search(r"FAIL \d+ steps shown against the stored bytes of the round's events "
                         r"in the signed log: 1 differ", results), results
    finally:
        page.unroute_all(behavior="wait")
        page.close()


def test_a_round_in_play_is_not_yet_revealed(browser: Any, console: str,
                                             played: Played) -> None:
    page = sign_in(browser, console, played.tokens["regulator"])
    try:
        page.goto(f"{console}/round/{played.open_round}")
        assert page.locator(".hand .card.back").count() == 6  # nobody has shown a card
        verdict, results = _check(page, "Check this round")
        shot(page, "tyu-round-in-play")
        assert verdict == "pending", results
        assert "not yet revealed: the shoe is still in play" in results
        assert "6 face-down cards not shown yet" in results
    finally:
        page.close()


def test_a_round_that_lies_fails_at_the_card(browser: Any, console: str,
                                             played: Played) -> None:
    def change(facts: Any) -> None:
        card = facts["shoes"][0]["cards"][0]  # a face-down card, shown at the showdown
        card["card"] = "1O" if card["card"] != "1O" else "12B"
        for hidden in facts["shoes"][0]["hidden"]:  # changed wherever the record has it
            if hidden["position"] == card["position"]:
                hidden["card"] = card["card"]

    lying = Tampered(sign_in(browser, console, played.tokens["regulator"]), "**/api/round/**",
                     change)
    try:
        lying.page.goto(f"{console}/round/{played.round}")
        verdict, results = _check(lying.page, "Check this round")
        assert not lying.errors, lying.errors
        assert verdict == "fail"
        assert re.search(r"FAIL round 1 .*card at position \d+ \(\w+\): recorded (1O|12B), "
                         r"the shuffle gives", results)
        assert re.search(r"FAIL .* does not open its commitment", results)
    finally:
        lying.close()


def test_no_token_or_unrevealed_seed_in_the_game_pages(console: str, played: Played) -> None:
    regulator = Client(played.target, played.tokens["regulator"])
    try:
        open_shoe = regulator.rounds.get(played.open_round).shoe
    finally:
        regulator.close()
    for who in ("regulator", "bruno"):
        with httpx.Client(base_url=console, follow_redirects=False) as http:
            form = http.get("/signin").text
            csrf = re.search(r'name="csrf" value="([^"]+)"', form)
            assert csrf
            http.post("/signin", data={"token": played.tokens[who], "csrf": csrf.group(1),
                                       "account": "" if who == "regulator" else who})
            live = f"/live/{played.tyu_table.split('/')[1]}"  # its round in play
            pages = {p: http.get(p) for p in (
                f"/{played.tyu_table}", f"/{played.cuarenta_table}",
                f"/round/{played.round}", f"/round/{played.open_round}",
                f"/match/{played.match}", f"/api/round/{played.round}",
                f"/api/round/{played.open_round}", f"/api/match/{played.match}", live,
                f"/live/{played.cuarenta_table.split('/')[1]}", "/search?player=bruno",
                f"/search?id={played.open_round}", *(["/mine"] if who == "bruno" else []))}
            assert all(r.status_code == 200 for r in pages.values()), \
                {p: r.status_code for p, r in pages.items()}
            revealed = {s["seed"] for s in pages[f"/api/round/{played.round}"].json()["shoes"]}
            revealed |= {s["seed"] for s in pages[f"/api/match/{played.match}"].json()["shoes"]}
            assert all(revealed)  # the settled round's shoe and every hand's: closed, revealed
            facts = pages[f"/api/round/{played.open_round}"].json()["shoes"][0]
            assert facts["name"] == open_shoe and facts["seed"] is None
            assert not any(c["card"] for c in facts["hidden"]) or who == "bruno"
            for hidden in facts["hidden"]:  # the live view shows each face-down card a back
                for page in (live, f"/round/{played.open_round}", f"/{played.tyu_table}"):
                    assert re.search(rf'<li class="card back" data-position="{hidden["position"]}"',
                                     pages[page].text), (page, hidden["position"])
            secret = [s.hex() for s in played.drawn if s.hex() not in revealed]
            for path, answer in pages.items():
                for seed in secret:
                    assert seed not in answer.text, path
                for token in played.tokens.values():
                    assert token not in answer.text, path
            refused = http.get(f"/api/round/{played.tyu_table}/rounds/not-a-round")
            assert refused.status_code in (400, 404) and "Traceback" not in refused.text


def test_a_match_that_lies_fails_at_the_card(browser: Any, console: str,
                                             played: Played) -> None:
    def change(facts: Any) -> None:
        # the first hand's third card played: the last hand may have fewer (one match in about
        # forty ends two cards into its last hand: [-1][2] failed there, in the handler)
        card = facts["shoes"][0]["cards"][2]
        card["card"] = "KH" if card["card"] != "KH" else "QS"

    lying = Tampered(sign_in(browser, console, played.tokens["regulator"]), "**/api/match/**",
                     change)
    try:
        lying.page.goto(f"{console}/match/{played.match}")
        verdict, results = _check(lying.page, "Check this match")
        shot(lying.page, "cuarenta-match-tampered")
        assert not lying.errors, lying.errors
        assert verdict == "fail"
        assert re.search(r"FAIL hand \d+ .*card at position \d+ \(move \d+, seat \d\): "
                         r"recorded (KH|QS), the shuffle gives", results)
    finally:
        lying.close()


def test_a_wrong_pinned_key_fails_the_round(browser: Any, console: str,
                                            played: Played) -> None:
    page = sign_in(browser, console, played.tokens["regulator"])
    try:
        page.goto(f"{console}/round/{played.round}")
        page.get_by_label(re.compile("Notary's public key")).fill("ab" * 32)
        verdict, results = _check(page, "Check this round")
        assert verdict == "fail"
        assert "FAIL checkpoint of" in results
    finally:
        page.close()


@pytest.mark.parametrize("path", [
    "/round/not-a-round", "/api/round/tables/x/rounds/../../etc", "/match/tables/x",
    "/api/match/tables/nope/matches/00000000-0000-4000-8000-000000000009",
    "/api/round/tables/nope/rounds/00000000-0000-4000-8000-000000000009",
])
def test_a_bad_name_is_refused_with_its_status(path: str, console: str,
                                               played: Played) -> None:
    with httpx.Client(base_url=console, follow_redirects=False) as http:
        form = http.get("/signin").text
        csrf = re.search(r'name="csrf" value="([^"]+)"', form)
        assert csrf
        http.post("/signin", data={"token": played.tokens["regulator"], "csrf": csrf.group(1)})
        answer = http.get(path)
        assert answer.status_code in (400, 404), (path, answer.status_code, answer.text[:300])
        assert "Traceback" not in answer.text
