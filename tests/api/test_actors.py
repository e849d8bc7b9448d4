"""A named actor on every fact: recall (who dealt each coup, who placed each stake), statements
and the back office's feed show who ran the command behind each event; a player sees another
player only as "player"."""

from __future__ import annotations

from typing import Any

import pytest

from services.api.client import new_request_id
from services.api.gen.sabot.v1 import betting_pb2, cashier_pb2, common_pb2, events_pb2

from .support import Api, money, open_coup, open_shoe, open_table
from .test_retries_after_state_change import step

PLACED = "sabot.ledger:Coup.StakePlaced"


def _principal(api: Api, role: str) -> str:
    """The principal id the server records for a role's token (as configured)."""
    return api.principals[role]


@pytest.fixture(scope="module")
def played(api: Api) -> dict[str, Any]:
    """A coup with a stake of anne's and one of bruno's, dealt and settled by the croupier."""
    table = open_table(api)
    shoe = open_shoe(api, table.name)
    coup = open_coup(api, shoe.name)
    stakes = {}
    for who, chance in (("anne", common_pb2.CHANCE_NOIR), ("bruno", common_pb2.CHANCE_ROUGE)):
        stakes[who] = api.as_(who).betting.PlaceStake(betting_pb2.PlaceStakeRequest(
            request_id=new_request_id(), coup=coup.name, account=f"accounts/{who}",
            chance=chance, amount=money(500))).stake.name
    step(api, "DealCoup", coup.name)
    step(api, "SettleCoup", coup.name)
    return {"table": table.name, "coup": coup.name, "stakes": stakes}


def _recalled(api: Api, who: str, table: str) -> events_pb2.RecalledCoup:
    answer = api.as_(who).recall.ListRecalledCoups(
        events_pb2.ListRecalledCoupsRequest(parent=table, page_size=1))
    (coup,) = answer.coups
    return coup


def test_recall_shows_who_dealt_and_who_placed_each_stake(api: Api, played: dict[str, Any]
                                                          ) -> None:
    coup = _recalled(api, "croupier", played["table"])
    croupier = _principal(api, "croupier")
    assert (coup.dealt_by.principal, coup.dealt_by.role) == (croupier, "croupier")
    assert coup.dealt_by.peer  # where it called from
    assert all(s.actor.principal for s in coup.steps)  # every step has its actor
    assert all(s.position > 0 for s in coup.steps)
    placed = {s.actor.account: s.actor for s in coup.steps if s.type == PLACED}
    assert set(placed) == {"accounts/anne", "accounts/bruno"}
    assert placed["accounts/anne"].principal == _principal(api, "anne")
    assert placed["accounts/anne"].role == "player"
    dealt = [s for s in coup.steps if s.type.endswith(("CardDealt", "Resolved"))]
    assert dealt and {s.actor.principal for s in dealt} == {croupier}


def test_a_player_sees_another_player_as_a_player_only(api: Api, played: dict[str, Any]
                                                       ) -> None:
    coup = _recalled(api, "anne", played["table"])
    placed = [s.actor for s in coup.steps if s.type == PLACED]
    mine = [a for a in placed if a.account == "accounts/anne"]
    theirs = [a for a in placed if a.account != "accounts/anne"]
    assert len(mine) == 1 and mine[0].principal == _principal(api, "anne") and mine[0].peer
    assert len(theirs) == 1
    assert (theirs[0].principal, theirs[0].account, theirs[0].peer, theirs[0].role) == (
        "", "", "", "player")
    # the croupier is named, not where it called from
    assert coup.dealt_by.principal == _principal(api, "croupier")
    assert coup.dealt_by.peer == ""
    assert _principal(api, "bruno") not in str(coup)


def test_statements_show_who_posted_each_entry(api: Api, played: dict[str, Any]) -> None:
    page = api.as_("anne").cashier.ListStatementEntries(
        cashier_pb2.ListStatementEntriesRequest(parent="accounts/anne", page_size=1000))
    by_kind = {e.kind: e.actor for e in page.entries}
    assert by_kind["cash_in"].role == "cashier"
    assert by_kind["cash_in"].principal == _principal(api, "cashier")
    assert by_kind["stake"].principal == _principal(api, "anne")
    assert all(e.actor.role for e in page.entries)


def test_the_feed_names_the_actor_of_every_event(api: Api, played: dict[str, Any]) -> None:
    feed = api.as_("back_office").feed
    events = [e for batch in feed.StreamEvents(events_pb2.StreamEventsRequest(
        stop_at_end=True, batch_size=7)) for e in batch.events]  # batches cut transactions
    assert events
    assert all(e.actor.role for e in events), [e.type for e in events if not e.actor.role]
    coup_id = played["coup"].rsplit("/", 1)[1]
    mine = [e for e in events if e.aggregate_id == coup_id]
    assert {e.actor.role for e in mine} == {"croupier", "player"}
    assert any(e.actor.peer for e in mine)


def test_the_read_models_show_who_dealt_and_who_posted(api: Api, played: dict[str, Any]
                                                       ) -> None:
    """The back office's recall and the statement read model (projections) carry the actors
    too, whatever batch boundary falls between an event and its command's request."""
    from services.api.gen.sabot.v1 import reports_pb2

    back = api.as_("back_office").read_models
    (coup,) = back.RecallCoups(reports_pb2.RecallCoupsRequest(coup=played["coup"])).coups
    assert (coup.dealt_by.principal, coup.dealt_by.role) == (
        _principal(api, "croupier"), "croupier")
    assert all(s.actor.role for s in coup.steps), [s.kind for s in coup.steps if not s.actor.role]
    placed = {s.actor.principal for s in coup.steps if s.kind == "Coup.StakePlaced"}
    assert placed == {_principal(api, "anne"), _principal(api, "bruno")}
    statement = api.as_("anne").read_models.GetPlayerStatement(
        reports_pb2.GetPlayerStatementRequest(account="accounts/anne", page_size=1000))
    kinds = {line.kind: line.actor for line in statement.lines}
    assert kinds["cash_in"].principal == _principal(api, "cashier")
    assert kinds["cash_in"].peer == ""  # to a player, the house's staff without their peer
    assert kinds["stake"].principal == _principal(api, "anne") and kinds["stake"].peer
    assert all(line.actor.role for line in statement.lines)
