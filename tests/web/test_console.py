"""The console in a real browser (Debian's chromium, driven by Playwright) on a server with a
played and closed shoe: sign in as each role, find and replay a coup, run the in-browser check
and see it pass; a lying record fails the check at the card; the safety of the pages (CSP,
cookies, CSRF, no secret in a page); screenshots kept as artifacts."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from .conftest import HIDDEN, Played, Tampered, shot

_SIGNED_IN: dict[tuple[int, str, str, str], Any] = {}  # a browser's signed-in contexts


def sign_in(browser: Any, console: str, token: str, account: str = "") -> Any:
    """A page signed in with ``token``, on the console's home page. ``browser``: the package's
    browser, whose context per credential is signed in once and shared (each test its own page
    of it: the sessions' cookie, nothing else, is shared); or a context of the test's own,
    signed in on this page."""
    shared = hasattr(browser, "new_context")
    key = (id(browser), console, token, account)
    if shared and key in _SIGNED_IN:
        page = _SIGNED_IN[key].new_page()
        page.goto(f"{console}/")
        return page
    context = browser.new_context() if shared else browser
    page = context.new_page()
    page.goto(f"{console}/signin")
    page.get_by_label("Credential (token)").fill(token)
    if account:
        page.get_by_label("Your account (players only)").fill(account)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{console}/")
    if shared:
        _SIGNED_IN[key] = context  # signed in: shared from now on
    return page


@pytest.mark.parametrize("role", ["regulator", "back_office", "croupier", "anne"])
def test_each_role_finds_replays_and_checks_a_coup(role: str, browser: Any, console: str,
                                                   played: Played) -> None:
    page = sign_in(browser, console, played.tokens[role], "anne" if role == "anne" else "")
    try:
        shot(page, f"home-{role}")
        page.get_by_role("navigation").get_by_role("link", name="Tables").click()
        shot(page, f"tables-{role}")
        page.get_by_role("link", name=played.table.split("/")[1]).click()
        shot(page, f"table-{role}")
        page.locator(f'table a[href="/coup/{played.coups[0]}"]').click()  # in the recall
        page.get_by_text("RECALL MODE").wait_for()  # loaded: a click waits only for the commit
        assert page.get_by_text("RECALL MODE").is_visible()
        assert page.locator(".cards-dealt .card").count() >= 4
        page.get_by_role("button", name="Check this coup").click()
        page.wait_for_selector("#check[data-verdict]", timeout=60_000)
        shot(page, f"coup-{role}")
        results = page.locator("#check-results").inner_text()
        assert page.locator("#check").get_attribute("data-verdict") == "pass", results
        assert "commitment" in results and "cards of the coup against the shuffle: 0 differ" \
            in results
        if role in ("regulator", "back_office"):
            assert "checkpoint of" in results
        if role == "regulator":
            assert "is in the signed log" in results
    finally:
        page.close()


def test_a_record_that_lies_fails_at_the_card(browser: Any, console: str,
                                              played: Played) -> None:
    """The console (or the server behind it) serves a coup with one card changed: the check,
    computed in the browser from the revealed seed, names that card."""
    def change(facts: Any) -> None:
        card = facts["cards"][1]
        card["card"] = "KH" if card["card"] != "KH" else "QS"

    lying = Tampered(sign_in(browser, console, played.tokens["regulator"]), "**/api/coup/**",
                     change)
    try:
        page = lying.page
        page.goto(f"{console}/coup/{played.coups[0]}")
        page.get_by_role("button", name="Check this coup").click()
        page.wait_for_selector("#check[data-verdict]", timeout=60_000)
        shot(page, "coup-tampered")
        results = page.locator("#check-results").inner_text()
        assert not lying.errors, lying.errors
        assert page.locator("#check").get_attribute("data-verdict") == "fail"
        assert re.search(r"FAIL card at position \d+: recorded (KH|QS), the shuffle gives", results)
    finally:
        lying.close()


def test_a_wrong_pinned_key_fails_the_checkpoint(browser: Any, console: str,
                                                 played: Played) -> None:
    page = sign_in(browser, console, played.tokens["regulator"])
    try:
        page.goto(f"{console}/coup/{played.coups[0]}")
        page.get_by_label(re.compile("Notary's public key")).fill("ab" * 32)
        page.get_by_role("button", name="Check this coup").click()
        page.wait_for_selector("#check[data-verdict]", timeout=60_000)
        assert page.locator("#check").get_attribute("data-verdict") == "fail"
        assert "FAIL checkpoint of" in page.locator("#check-results").inner_text()
    finally:
        page.close()


def test_pages_are_safe(console: str, played: Played) -> None:
    with httpx.Client(base_url=console, follow_redirects=False) as http:
        first = http.get("/signin")
        assert first.status_code == 200
        csp = first.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert first.headers["x-frame-options"] == "DENY"
        cookie = first.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
        assert "<script>" not in first.text  # no inline script
        # a form without the session's CSRF token is refused
        refused = http.post("/signin", data={"token": played.tokens["regulator"], "csrf": "x"})
        assert refused.status_code == 403
        assert http.get("/tables").status_code == 303  # not signed in: to the sign-in page
        csrf = re.search(r'name="csrf" value="([^"]+)"', first.text)
        assert csrf
        done = http.post("/signin", data={"token": played.tokens["regulator"],
                                          "csrf": csrf.group(1)})
        assert done.status_code == 303
        pages = [http.get(p).text for p in ("/", "/tables", f"/{played.table}",
                                             f"/coup/{played.coups[-1]}",
                                             f"/coup/{played.open_coup}",
                                             f"/api/tables/{played.table.split('/')[1]}",
                                             f"/api/coup/{played.coups[-1]}",
                                             f"/api/coup/{played.open_coup}",
                                             f"/live/{played.table.split('/')[1]}",
                                             f"/search?table={played.table.split('/')[1]}",
                                             "/search?player=anne")]
        assert all(pages)
        assert played.seed.hex() in pages[6]  # the closed shoe's seed: revealed, checkable
        for text in pages:
            assert HIDDEN.hex() not in text  # the shoe in play: its seed nowhere
            for token in played.tokens.values():
                assert token not in text


def test_a_bad_credential_is_not_signed_in(browser: Any, console: str) -> None:
    page = browser.new_page()
    try:
        page.goto(f"{console}/signin")
        page.get_by_label("Credential (token)").fill("not-a-token-of-this-server")
        page.get_by_role("button", name="Sign in").click()
        assert page.get_by_role("alert").inner_text() == \
            "this credential is not accepted by the server"
        shot(page, "signin-refused")
    finally:
        page.close()
