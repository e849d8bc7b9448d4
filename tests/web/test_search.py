"""Finding a coup, a round or a match (issue 24, item 1) in a real browser and over HTTP: each
role finds each of the three by another filter (log position, id, player, table, time range,
shoe), replays it and (the back office and the croupier, whose rounds and matches no other test
checks) runs the check and sees it pass; a player's "Yours" lists his own and nothing else;
every filter, a page at a time, through what the API lets each role see; a bad field is a 400
naming it."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from services.api.gen.sabot.v1 import events_pb2

from .conftest import OTHER, Played, shot
from .test_console import sign_in


def _id(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _find(page: Any, console: str, **fields: str) -> None:
    """The search form filled in and sent, as a user does."""
    page.get_by_role("navigation").get_by_role("link", name="Find").click()
    labels = {"game": "Game", "table": "Table", "shoe": "Shoe", "id": "Coup, round or match",
              "player": "Player", "position": "Log position", "from": "From (UTC)",
              "to": "To (UTC)"}
    for field, value in fields.items():
        if field == "game":
            page.get_by_label(labels[field], exact=True).select_option(value)
        else:
            page.get_by_label(labels[field], exact=True).fill(value)
    page.get_by_role("button", name="Find").click()
    page.wait_for_selector("section.found")


def _replay(page: Any, game: str, name: str) -> None:
    page.locator(f'section.found[data-game="{game}"] tr[data-name="{name}"] a').click()
    page.get_by_text("RECALL MODE").wait_for()  # loaded: a click waits only for the commit
    assert page.get_by_text("RECALL MODE").is_visible()
    assert name in page.locator("h1").inner_text()


def _check(page: Any, button: str) -> tuple[str | None, str]:
    page.get_by_role("button", name=button).click()
    page.wait_for_selector("#game-check[data-verdict]", timeout=60_000)
    return (page.locator("#game-check").get_attribute("data-verdict"),
            page.locator("#check-results").inner_text())


def _staked(played: Played, coup: str, account: str) -> bool:
    """Whether ``account`` has a step (a stake, a stake carried over to it...) in ``coup``, as
    the regulator reads the table's recall."""
    client = played.client("regulator")
    try:
        found = client.recall.ListRecalledCoups(events_pb2.ListRecalledCoupsRequest(
            parent=played.table, page_size=50))
    finally:
        client.close()
    steps = next(c.steps for c in found.coups if c.coup.name == coup)
    return any(_names(json.loads(s.data_json or "{}"), account) for s in steps)


def _names(data: dict[str, Any], account: str) -> bool:
    """Whether a step's data names ``account`` as the read model's search does: its account or
    player, or the player of a stake carried over to the coup (``stake.player``)."""
    stake = data.get("stake")
    carried = stake.get("player") if isinstance(stake, dict) else None
    return account in (data.get("account_id"), data.get("player"), carried)


def _window() -> tuple[str, str]:
    now = datetime.now(UTC)
    return ((now - timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M"),
            (now + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M"))


@pytest.mark.parametrize("role", ["regulator", "back_office", "croupier", "anne"])
def test_each_role_finds_replays_a_coup_a_round_and_a_match(role: str, browser: Any,
                                                           console: str, played: Played) -> None:
    """The form once (a coup by a log position of its events), then the search's own links
    (a round and a match by another filter each); each replayed in RECALL MODE, and checked
    where no other test checks that role's (the back office's and the croupier's rounds and
    matches: tests/web/test_games.py checks the regulator's and the players')."""
    page = sign_in(browser, console, played.tokens[role], "anne" if role == "anne" else "")
    coup = played.coups[1]
    try:
        if role == "anne":  # "Yours": her coups, rounds and matches, each marked
            page.get_by_role("navigation").get_by_role("link", name="Yours").click()
            page.wait_for_selector("section.found")
            shot(page, "yours-anne")
            for game, name in (("trente-et-quarante", coup), ("treinta-y-una", played.round),
                               ("cuarenta", played.match)):
                row = page.locator(f'section.found[data-game="{game}"] tr[data-name="{name}"]')
                assert row.get_attribute("class") == "mine-row"
                assert row.get_by_role("link").inner_text() == "Replay (yours)"
            _replay(page, "cuarenta", played.match)
            return
        _find(page, console, position=str(played.positions[_id(coup)][-1]))
        shot(page, f"search-{role}")
        assert page.locator("section.found tbody tr[data-name]").count() == 1  # that coup only
        _replay(page, "trente-et-quarante", coup)
        since, until = _window()
        by = {"regulator": {"id": _id(played.round)},
              "back_office": {"game": "treinta-y-una", "player": "bruno"},
              "croupier": {"table": played.tyu_table.split("/")[1]}}[role]
        page.goto(f"{console}/search?{urlencode(by)}")
        _replay(page, "treinta-y-una", played.round)
        if role != "regulator":
            verdict, results = _check(page, "Check this round")
            assert verdict == "pass", results
            assert re.search(r"cards against the shuffle: 0 differ", results)
            if role == "back_office":  # the checkpoint is the back office's to read
                assert re.search(r"PASS checkpoint of \d+ events signed by key", results)
                assert "the inclusion of its events in the signed log is the regulator's" \
                    in results
            else:
                assert "the regulator's to check: not checked here" in results
        page.goto(f"{console}/search?{urlencode({'game': 'cuarenta', 'from': since, 'to': until})}")
        _replay(page, "cuarenta", played.match)
        if role != "regulator":
            verdict, results = _check(page, "Check this match")
            assert verdict == "pass", results
            if role == "back_office":
                assert re.search(r"PASS checkpoint of \d+ events signed by key", results)
    finally:
        page.close()


class Http:
    """A signed-in session over HTTP: the search's answers as the server renders them."""

    def __init__(self, console: str, played: Played, who: str) -> None:
        self.http = httpx.Client(base_url=console, follow_redirects=False, timeout=60)
        form = self.http.get("/signin").text
        csrf = re.search(r'name="csrf" value="([^"]+)"', form)
        assert csrf
        account = who if who in ("anne", "bruno", OTHER) else ""
        done = self.http.post("/signin", data={"token": played.tokens[who],
                                               "csrf": csrf.group(1), "account": account})
        assert done.status_code == 303

    def found(self, path: str = "/search", **query: str) -> dict[str, list[str]]:
        """Each game's names found (a page); under "<game>:next" its More link."""
        answer = self.http.get(f"{path}?{urlencode(query)}" if query else path)
        assert answer.status_code == 200, (path, query, answer.status_code)
        out: dict[str, list[str]] = {}
        for game, body in re.findall(r'<section class="found" data-game="([^"]+)"(.*?)</section>',
                                     answer.text, re.S):
            out[game] = re.findall(r'data-name="([^"]+)"', body)
            more = re.search(r'class="more" href="\?([^"]+)"', body)
            out[f"{game}:next"] = [more.group(1).replace("&amp;", "&")] if more else []
        return out

    def pages(self, **query: str) -> list[str]:
        """Every page of one game's results, in order (following its More links)."""
        game = query["game"]
        seen: list[str] = []
        found = self.found(**query)
        for _ in range(20):
            seen += found[game]
            if not found[f"{game}:next"]:
                return seen
            found = self.found(f"/search?{found[f'{game}:next'][0]}")
        raise AssertionError("more than 20 pages")

    def close(self) -> None:
        self.http.close()


@pytest.mark.parametrize("who", ["regulator", "croupier"])
def test_every_filter_a_page_at_a_time(who: str, console: str, played: Played) -> None:
    """The back office and the regulator find coups through RecallCoups; the croupier through
    the tables' recall read here: the same coups, by each filter, paged."""
    http = Http(console, played, who)
    try:
        table = played.table.split("/")[1]
        everything = http.found(game="trente-et-quarante", table=table)["trente-et-quarante"]
        assert set(played.coups) | {played.open_coup} <= set(everything)
        paged = http.pages(game="trente-et-quarante", table=table, size="2")
        assert paged == everything  # newest first, no coup twice or missed
        for coup in played.coups:
            for at in played.positions[_id(coup)][:1] + played.positions[_id(coup)][-1:]:
                assert http.found(position=str(at)) == {
                    "trente-et-quarante": [coup], "trente-et-quarante:next": [],
                    "treinta-y-una": [], "treinta-y-una:next": [],
                    "cuarenta": [], "cuarenta:next": []}
        shoe = played.shoe
        for given in (shoe, _id(shoe)):
            found = http.found(game="trente-et-quarante", shoe=given, table=table)
            assert found["trente-et-quarante"] == [c for c in everything if c in played.coups]
        assert http.found(id=_id(played.coups[0]), game="trente-et-quarante")[
            "trente-et-quarante"] == [played.coups[0]]
        for unit in (played.round, played.open_round, played.match, played.other_round):
            game = "cuarenta" if "/matches/" in unit else "treinta-y-una"
            assert http.found(position=str(played.positions[_id(unit)][-1]))[game] == [unit]
            assert http.found(id=_id(unit))[game] == [unit]
            assert http.found(id=unit)[game] == [unit]
        # an id with other filters: they must match too
        assert http.found(id=_id(played.round), player="bruno")["treinta-y-una"] == [
            played.round]
        assert http.found(id=_id(played.round), player=OTHER)["treinta-y-una"] == []
        assert http.found(id=played.match, table=played.tyu_table.split("/")[1])[
            "cuarenta"] == []
        at_tyu = http.http.get(f"/search?table={played.tyu_table.split('/')[1]}").text
        assert "INVALID_ARGUMENT" not in at_tyu and "FAILED_PRECONDITION" not in at_tyu
        assert played.round in http.found(table=played.tyu_table.split("/")[1])["treinta-y-una"]
        rounds = http.found(game="treinta-y-una", player=OTHER)["treinta-y-una"]
        assert rounds == [played.other_round]
        anne = http.found(player="anne")
        assert played.round in anne["treinta-y-una"] and played.other_round not in anne[
            "treinta-y-una"]
        assert played.match in anne["cuarenta"]
        assert set(played.coups) <= set(anne["trente-et-quarante"])
        # nobody staked on it, unless a stake of the shoe's last coup was carried over to it
        # (a refait's prison): then it is anne's too
        assert (played.open_coup in anne["trente-et-quarante"]) == _staked(
            played, played.open_coup, "anne")
        late, _ = _window()
        for query in ({"from": "2001-01-01T00:00", "to": "2001-01-02T00:00"},
                      {"from": (datetime.now(UTC) + timedelta(days=1)).strftime(
                          "%Y-%m-%dT%H:%M")}):
            found = http.found(**query)
            assert not any(found[g] for g in ("trente-et-quarante", "treinta-y-una",
                                               "cuarenta")), query
        found = http.found(**{"from": late})
        assert played.round in found["treinta-y-una"] and played.match in found["cuarenta"]
        assert set(played.coups) <= set(http.pages(game="trente-et-quarante", **{"from": late}))
        rounds_paged = http.pages(game="treinta-y-una", size="1")
        assert len(rounds_paged) == len(set(rounds_paged)) >= 3
        assert {played.round, played.open_round, played.other_round} <= set(rounds_paged)
    finally:
        http.close()


def test_a_player_finds_only_his_own(console: str, played: Played) -> None:
    """anne's "Yours" has her coups, rounds and matches and not bruno's round with another
    player; a search by another player's account is what the API refuses her (rounds and
    matches) or shows her blank (the coups' recall): nothing of his."""
    anne = Http(console, played, "anne")
    try:
        mine = anne.found("/mine")
        assert set(played.coups) <= set(mine["trente-et-quarante"])
        assert (played.open_coup in mine["trente-et-quarante"]) == _staked(
            played, played.open_coup, "anne")
        assert {played.round, played.open_round} <= set(mine["treinta-y-una"])
        assert played.other_round not in mine["treinta-y-una"]
        assert played.match in mine["cuarenta"]
        page = anne.http.get("/mine").text
        rows = re.findall(r"<tr([^>]*) data-name=", page)
        assert rows and all('class="mine-row"' in r for r in rows)  # every one marked hers
        theirs = anne.http.get("/search?" + urlencode({"player": OTHER}))
        assert theirs.status_code == 200
        assert "PERMISSION_DENIED" in theirs.text
        assert not any(anne.found(player=OTHER)[g] for g in ("trente-et-quarante",
                                                              "treinta-y-una", "cuarenta"))
        assert anne.http.get("/mine?player=bruno").status_code == 200  # still hers only
        assert played.other_round not in anne.found("/mine", player="bruno")["treinta-y-una"]
    finally:
        anne.close()
    office = Http(console, played, "back_office")
    try:
        assert office.http.get("/mine").status_code == 303  # no account: the search instead
    finally:
        office.close()


@pytest.mark.parametrize("query, field", [
    ({"position": "0"}, "position"), ({"position": "x1"}, "position"),
    ({"game": "poker"}, "game"), ({"table": "Not A Table"}, "table"),
    ({"id": "../../etc/passwd"}, "id"), ({"shoe": "tables/t/rounds/" + "0" * 36}, "shoe"),
    ({"from": "yesterday"}, "from"), ({"from": "2026-01-02T00:00", "to": "2026-01-01T00:00"},
                                      "to"),
    ({"size": "1000"}, "size"), ({"game": "cuarenta", "page": "bm90IGEgY3Vyc29y"}, "page"),
])
def test_a_bad_field_is_refused_naming_it(query: dict[str, str], field: str, console: str,
                                          played: Played) -> None:
    http = Http(console, played, "croupier")
    try:
        answer = http.http.get("/search?" + urlencode(query))
        assert answer.status_code == 400, (query, answer.status_code)
        assert re.search(rf'role="alert">{field}: ', answer.text), answer.text[-600:]
        assert "Traceback" not in answer.text
    finally:
        http.close()
