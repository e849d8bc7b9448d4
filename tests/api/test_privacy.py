"""A player token sees the table as a player at a real table would: every stake, its chance and
amount, but not who the other players are (their account ids are "" in watch, recall and the
table's reads); the croupier and the regulator see everyone."""

from __future__ import annotations

import json
import time
from typing import Any
from uuid import UUID, uuid4

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.cards import DeckKind
from domain.shuffle import load_sabot
from domain.trente_et_quarante.deal import deal_coup
from domain.trente_et_quarante.outcome import judge
from domain.trente_et_quarante.rules import CutCardRule
from services.api import convert
from services.api.client import new_request_id
from services.api.gen.sabot.v1 import betting_pb2, common_pb2, events_pb2, table_pb2

from .conftest import SEED
from .support import Api, money, open_coup, open_table

IDENTITY_KEYS = {"account_id", "player", "counter_account", "debit_account", "credit_account",
                 "cut_by"}


def decided_cut(shoe_id: UUID) -> int:
    """A cut whose first coup a row wins (so money moves at the settlement)."""
    for position in range(1, 312):
        cards = load_sabot(SEED, shoe_id, DeckKind.FRENCH_52, 6, position).cards
        if judge(deal_coup(cards, 0, CutCardRule.VOID_COUP)).decided:
            return position
    raise AssertionError("no cut gives a decided first coup")


@pytest.fixture(scope="module")
def scene(api: Api) -> dict[str, Any]:
    """A settled coup with a stake of anne's (noir) and one of bruno's (rouge), the shoe cut by
    bruno, and the log position before it all."""
    start = api.running.hub.catch_up()
    table = open_table(api)
    croupier = api.as_("croupier").tables
    shoe_id = uuid4()
    shoe = croupier.OpenShoe(table_pb2.OpenShoeRequest(request_id=new_request_id(),
                                                       parent=table.name, shoe_id=str(shoe_id)))
    croupier.CutShoe(table_pb2.CutShoeRequest(request_id=new_request_id(), name=shoe.name,
                                              cut_position=decided_cut(shoe_id),
                                              cut_by="bruno"))
    coup = open_coup(api, shoe.name)
    stakes = {}
    for player, chance, amount in (("anne", common_pb2.CHANCE_NOIR, 1_100),
                                   ("bruno", common_pb2.CHANCE_ROUGE, 2_200)):
        stakes[player] = api.as_(player).betting.PlaceStake(betting_pb2.PlaceStakeRequest(
            request_id=new_request_id(), coup=coup.name, account=f"accounts/{player}",
            chance=chance, amount=money(amount))).stake.name
    croupier.DealCoup(table_pb2.DealCoupRequest(request_id=new_request_id(), name=coup.name))
    settled = croupier.SettleCoup(table_pb2.SettleCoupRequest(request_id=new_request_id(),
                                                              name=coup.name))
    return {"start": start, "table": table.name, "shoe": shoe.name, "coup": coup.name,
            "stakes": stakes, "settled": settled}


def watched(api: Api, role: str, scene: dict[str, Any]) -> list[events_pb2.Event]:
    """The table's events from before the scene, up to the coup's settlement."""
    stream = api.as_(role).watch.WatchTable(events_pb2.WatchTableRequest(
        table=scene["table"], after_position=scene["start"]), timeout=10)
    events: list[events_pb2.Event] = []
    deadline = time.monotonic() + 10
    for response in stream:
        events.extend(response.events)
        if any(e.type == "sabot.ledger:Coup.Settled" for e in events):
            break
        assert time.monotonic() < deadline
    stream.cancel()
    return events


def identities(data: Any) -> set[str]:
    """Every value of an identity key in event data."""
    found: set[str] = set()
    if isinstance(data, dict):
        for key, value in data.items():
            if key in IDENTITY_KEYS and isinstance(value, str):
                found.add(value)
            else:
                found |= identities(value)
    elif isinstance(data, list):
        for value in data:
            found |= identities(value)
    return found


def players_in_coup(coup: table_pb2.Coup) -> set[str]:
    return ({s.account for s in coup.layout} | {f.account for f in coup.fates}
            | {m.account for m in coup.movements}
            | {a for m in coup.movements for a in (m.debit_account, m.credit_account)})


def test_a_player_watching_sees_the_stakes_but_not_who_the_others_are(
        api: Api, scene: dict[str, Any]) -> None:
    events = watched(api, "anne", scene)
    seen = set().union(*(identities(json.loads(e.data_json)) for e in events))
    assert "anne" in seen and "" in seen
    assert "bruno" not in seen
    assert all(b"bruno" not in e.SerializeToString() for e in events)
    placed = [json.loads(e.data_json) for e in events if e.type == "sabot.ledger:Coup.StakePlaced"]
    assert sorted((p["chance"], p["amount_after"], p["account_id"]) for p in placed) == [
        ("noir", 1_100, "anne"), ("rouge", 2_200, "")]
    # The house's accounts stay visible: they are nobody's identity.
    moved = [json.loads(e.data_json) for e in events if e.type == "sabot.ledger:Coup.MoneyMoved"]
    assert moved and all(":" in m["debit_account"] or ":" in m["credit_account"] for m in moved)


@pytest.mark.parametrize("role", ["croupier", "regulator"])
def test_the_house_watching_sees_everyone(api: Api, scene: dict[str, Any], role: str) -> None:
    events = watched(api, role, scene)
    seen = set().union(*(identities(json.loads(e.data_json)) for e in events))
    assert {"anne", "bruno"} <= seen and "" not in seen


def test_a_player_recalling_sees_the_amounts_but_not_the_others(
        api: Api, scene: dict[str, Any]) -> None:
    recall = api.as_("anne").recall.ListRecalledCoups(events_pb2.ListRecalledCoupsRequest(
        parent=scene["table"], page_size=1))
    (recalled,) = recall.coups
    assert b"bruno" not in recall.SerializeToString()
    assert {"accounts/anne", ""} <= players_in_coup(recalled.coup)
    fates = {(f.chance, f.amount_before_minor, f.account) for f in recalled.coup.fates}
    assert fates == {(common_pb2.CHANCE_NOIR, 1_100, "accounts/anne"),
                     (common_pb2.CHANCE_ROUGE, 2_200, "")}
    steps = set().union(*(identities(json.loads(s.data_json)) for s in recalled.steps))
    assert "anne" in steps and "bruno" not in steps

    house = api.as_("regulator").recall.ListRecalledCoups(events_pb2.ListRecalledCoupsRequest(
        parent=scene["table"], page_size=1))
    assert "accounts/bruno" in players_in_coup(house.coups[0].coup)
    assert house.coups[0].coup == scene["settled"]
    assert len(house.coups[0].steps) == len(recalled.steps)


def test_a_player_reading_the_table_sees_no_other_player(api: Api,
                                                         scene: dict[str, Any]) -> None:
    anne = api.as_("anne").tables
    answers = [
        anne.GetTable(table_pb2.GetTableRequest(name=scene["table"])),
        anne.GetShoe(table_pb2.GetShoeRequest(name=scene["shoe"])),
        anne.GetCoup(table_pb2.GetCoupRequest(name=scene["coup"])),
        anne.ListCoups(table_pb2.ListCoupsRequest(parent=scene["shoe"])),
        anne.ListTables(table_pb2.ListTablesRequest(page_size=1000)),
    ]
    assert all(b"bruno" not in a.SerializeToString() for a in answers)
    assert answers[1].cut_by == ""
    coup = answers[2]
    assert {(f.chance, f.account) for f in coup.fates} == {
        (common_pb2.CHANCE_NOIR, "accounts/anne"), (common_pb2.CHANCE_ROUGE, "")}
    croupier = api.as_("croupier").tables
    assert croupier.GetShoe(table_pb2.GetShoeRequest(name=scene["shoe"])).cut_by == "bruno"
    assert "accounts/bruno" in players_in_coup(
        croupier.GetCoup(table_pb2.GetCoupRequest(name=scene["coup"])))


PEOPLE = st.sampled_from(["anne", "bruno", "chiara", "", "table:t1:bank", "cage:EUR"])
DATA = st.recursive(
    st.one_of(st.integers(), st.booleans(), st.none(), PEOPLE),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from([*sorted(IDENTITY_KEYS), "amount", "chance", "stake",
                                         "stake_id", "stakes"]), inner, max_size=5),
    ),
    max_leaves=20,
)


def blank_identities(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: "?" if k in IDENTITY_KEYS and isinstance(v, str) else blank_identities(v)
                for k, v in data.items()}
    if isinstance(data, list):
        return [blank_identities(v) for v in data]
    return data


@settings(max_examples=150, deadline=None)
@given(data=DATA, viewer=st.sampled_from(["anne", "bruno"]))
def test_redaction_hides_exactly_the_other_players(data: Any, viewer: str) -> None:
    shown = convert.redact(data, viewer)
    allowed = {"", viewer, "table:t1:bank", "cage:EUR"}
    assert identities(shown) <= allowed
    assert identities(shown) & {viewer, "table:t1:bank", "cage:EUR"} == (
        identities(data) & {viewer, "table:t1:bank", "cage:EUR"})
    assert blank_identities(shown) == blank_identities(data)  # nothing else changes
    assert convert.redact(data, None) == data  # the house sees everything
