"""Tables live (issue 24, item 2) in a real browser: a Trente et Quarante coup, a Treinta y Una
round and a Cuarenta match, each at a table of its own, followed on three pages while they are
played through the API: each page shows the play within a few seconds; the round's face-down
cards are backs until the showdown, the match's hands backs (no face in the page); Pause stops
the asking (no request, nothing changes) until Resume, which asks at once."""

from __future__ import annotations

import re
import uuid
from typing import Any

from playwright.sync_api import expect

from services.api.client import new_request_id
from services.api.gen.sabot.v1 import table_pb2

from .conftest import PLAYERS, Played, shot
from .test_console import sign_in

SOON = 20_000  # ms: a poll every 2 s, on a loaded machine


def _tables(played: Played) -> tuple[str, str, str, str, str, str]:
    """At tables of their own: a coup opened, a round with its stakes, a match opened (the
    three tables, then the three)."""
    croupier = played.client("croupier")
    t = croupier.tables
    tq = t.OpenTable(table_pb2.OpenTableRequest(request_id=new_request_id(),
                                                table_id=f"live-{uuid.uuid4().hex[:6]}")).name
    shoe = t.OpenShoe(table_pb2.OpenShoeRequest(request_id=new_request_id(), parent=tq))
    t.CutShoe(table_pb2.CutShoeRequest(request_id=new_request_id(), name=shoe.name,
                                       cut_position=100, cut_by="anne"))
    coup = t.OpenCoup(table_pb2.OpenCoupRequest(request_id=new_request_id(),
                                                parent=shoe.name)).name
    tyu = croupier.rounds.open_table(f"live-{uuid.uuid4().hex[:6]}").name
    r = croupier.rounds.open_round(tyu, list(PLAYERS), 20_000, "EUR")
    for p in PLAYERS:
        if r.banker.split("/")[-1] != p:
            played.client(p).rounds.place_stake(r.name, p, 1_000, "EUR")
    cu = croupier.matches.open_table(f"live-{uuid.uuid4().hex[:6]}").name
    m = croupier.matches.open(cu, list(PLAYERS), 1_000, "EUR").match.name
    return tq, tyu, cu, coup, r.name, m


def _backs(played: Played, r: Any) -> int:
    """How many of the round's cards the croupier reads face down (a hand over 31 is shown at
    once, a hand of 31 at the deal ends the round)."""
    seen = played.client("croupier").rounds.get(r.name)
    return sum(1 for h in seen.hands for c in h.cards if not c.code)


def test_tables_live_follow_the_play_with_pause_and_resume(browser: Any, console: str,
                                                           played: Played) -> None:
    tq, tyu, cu, coup, round_name, match = _tables(played)
    croupier = played.client("croupier")
    context = browser.new_context()
    first = sign_in(context, console, played.tokens["croupier"])
    pages = {"coup": first, "round": context.new_page(), "match": context.new_page()}
    try:
        for key, table in (("coup", tq), ("round", tyu), ("match", cu)):
            pages[key].goto(f"{console}/{table}")
            expect(pages[key].locator("#live-state")).to_contain_text("following the table")
        now = {k: p.locator("#live-now") for k, p in pages.items()}
        expect(now["coup"]).to_contain_text("betting")
        expect(now["round"]).to_contain_text("Not dealt yet")
        expect(now["match"]).to_contain_text("awaiting_deal")
        # the deal: each page shows it, the round's face-down cards and the match's hands
        # as backs (as the croupier reads them: faces are their holders' alone)
        croupier.tables.DealCoup(table_pb2.DealCoupRequest(request_id=new_request_id(),
                                                           name=coup))
        r = croupier.rounds.deal(round_name)
        m = croupier.matches.deal(match).match
        expect(now["coup"].locator(".card")).not_to_have_count(0, timeout=SOON)
        hand = now["round"].locator(".live-hand .card")
        expect(hand).to_have_count(6, timeout=SOON)
        expect(now["round"].locator(".live-hand .card.back")).to_have_count(_backs(played, r))
        expect(now["match"].locator(".live-seat .card.back")).to_have_count(10, timeout=SOON)
        held = {c.card for seat in (0, 1) for c in played.client(PLAYERS[seat]).matches.hand(
            match, seat).cards}  # each seat's own cards, as only its player reads them
        assert len(held) == 10 and not held & set(re.findall(
            r"\b[0-9JQKA]+[CDHS]\b", now["match"].inner_text()))
        shot(pages["round"], "live-tyu-dealt")
        # Pause the match's page: a card played is neither asked for nor shown until Resume
        watching = pages["match"]
        watching.get_by_role("button", name="Pause").click()
        expect(watching.locator("#live-state")).to_have_text("paused")
        asked: list[str] = []
        watching.on("request", lambda q: asked.append(q.url) if "/live/" in q.url else None)
        player = played.client(PLAYERS[m.to_act % 2]).matches
        legal = player.hand(match, m.to_act).legal  # the first play of a hand takes nothing
        card = min(p.card for p in legal if not p.capture)
        player.play(match, m.to_act, card, (), leave_on_table=True)
        if r.phase == "playing":  # a carta (a hand of 31 at the deal may have ended it)
            who = r.whose_turn.split("/")[-1]
            r = played.client(who).rounds.carta(round_name, who)
            expect(hand).to_have_count(7, timeout=SOON)  # the carta, face up
            expect(now["round"].locator(".live-hand .card.back")).to_have_count(
                _backs(played, r))
        watching.wait_for_timeout(2_500)  # a poll's interval past the pause, at the least
        assert asked == []
        expect(now["match"].locator(".live-table .card")).to_have_count(0)
        watching.get_by_role("button", name="Resume").click()
        expect(now["match"].locator(".live-table .card")).to_have_text([card], timeout=SOON)
        expect(now["match"].locator(".live-seat .card.back")).to_have_count(9)
        assert asked
        # the showdown: every face shown, no back left
        while r.phase == "playing":
            who = r.whose_turn.split("/")[-1]
            r = played.client(who).rounds.me_planto(round_name, who)
        croupier.rounds.settle(round_name)
        expect(now["round"].locator(".live-hand .card.back")).to_have_count(0, timeout=SOON)
        expect(now["round"]).to_contain_text("settled")
        for key, p in pages.items():
            shot(p, f"live-{key}")
    finally:
        context.close()
