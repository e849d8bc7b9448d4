"""The batch commands on the ledger (issue 25 item 2): ``stake_batch`` stores the same events
per stake as the unary commands, as ONE stored request; a retry stores nothing; an atomic
refusal stores nothing; a re-run of the log (``sabot store rerun``) is identical; ``cash_batch``
the same for the cage. Both stores."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.errors import FailedPrecondition, InvalidArgument, RuleViolation
from services.bootstrap import LEDGER_GAMES
from services.ledger.actor import Actor
from services.ledger.api import Ledger
from services.ledger.batch import MAX_ITEMS
from services.ledger.errors import PermissionDenied
from services.ledger.evidence import LINKED_TOPIC
from services.ledger.replay import event_log, replay

from .play import FixedInputs

REQUEST = "sabot.ledger:Request.Recorded"
ANA = Actor("ana", "player", "terminal-1", "ana")
CLIENT_IDS = ["00000000-0000-4000-8000-00000000000" + str(i) for i in range(1, 7)]


def _ledger(url: str) -> Ledger:
    return Ledger(FixedInputs().config(url), games=LEDGER_GAMES)


def _coup(ledger: Ledger) -> str:
    ledger.open_table("t", "t1", "francaise")
    for p in ("ana", "bruno"):
        ledger.open_account(f"a-{p}", p)
        ledger.deposit(f"d-{p}", p, 100_000)
    shoe = ledger.open_shoe("s", "t1")
    ledger.cut("c", shoe.shoe_id, 100, "ana")
    return str(ledger.open_coup("o", "t1").coup_id)


def _game_events(ledger: Ledger, after: int) -> list[tuple[str, str, int, dict[str, Any]]]:
    """The events after ``after`` but requests and chain links, without their times."""
    out = []
    for e in ledger.read_events(after, 10_000):
        if e.topic in (REQUEST, LINKED_TOPIC):
            continue
        state = {k: v for k, v in e.state.items() if k != "timestamp"}
        out.append((e.topic, e.originator_id, e.version, state))
    return out


def _key(event: tuple[str, str, int, dict[str, Any]]) -> tuple[str, int]:
    return event[1], event[2]


def _end(ledger: Ledger) -> int:
    return int(ledger.app.recorder.max_notification_id() or 0)


PLACES = [("noir", 1_000), ("couleur", 500), ("noir", 300)]


def test_a_batch_stores_what_the_unary_commands_store_as_one_request(
        store_url: str, tmp_path: Path) -> None:
    unary, batched = _ledger(f"sqlite:///{tmp_path}/unary.db"), _ledger(store_url)
    try:
        cid, start = _coup(unary), 0
        assert _coup(batched) == cid
        start = _end(unary)
        assert _end(batched) == start
        for i, (chance, amount) in enumerate(PLACES):
            unary.place_stake(f"u{i}", cid, "ana", chance, amount, CLIENT_IDS[i], actor=ANA)
        stake = unary.get_table("t1").layout[0].stake_id
        unary.raise_stake("u-r", cid, stake, 200, actor=ANA)
        unary.withdraw_stake("u-w", cid, unary.get_table("t1").layout[1].stake_id, actor=ANA)
        items: list[dict[str, Any]] = [
            {"action": "place", "account_id": "ana", "chance": c, "amount": a,
             "stake_id": CLIENT_IDS[i]} for i, (c, a) in enumerate(PLACES)]
        first = batched.stake_batch("b1", cid, items, True, actor=ANA)
        assert first.accepted == 3
        second = batched.stake_batch("b2", cid, [
            {"action": "raise", "stake_id": stake, "amount": 200},
            {"action": "withdraw", "stake_id": first.items[1].result.stake.stake_id}
        ], True, actor=ANA)
        assert second.accepted == 2
        # the same events of each aggregate, version for version (in the log a batch's events
        # are grouped by aggregate, as those of any writer's batch of commands are)
        assert sorted(_game_events(batched, start), key=_key) == sorted(
            _game_events(unary, start), key=_key)
        assert unary.balances() == batched.balances()
        requests = [e for e in batched.read_events(start, 10_000) if e.topic == REQUEST]
        assert [r.state["command"] for r in requests] == ["stake_batch", "stake_batch"]
        assert requests[0].state["actor"]["principal"] == "ana"
        # a retry: the first answer, nothing stored
        end = _end(batched)
        assert batched.stake_batch("b1", cid, items, True, actor=ANA) == first
        assert _end(batched) == end
    finally:
        unary.close()
        batched.close()


def test_refusals_store_nothing(store_url: str) -> None:
    ledger = _ledger(store_url)
    try:
        cid = _coup(ledger)
        end = _end(ledger)
        place = {"action": "place", "account_id": "ana", "chance": "noir", "amount": 1_000}
        too_much = {**place, "chance": "couleur", "amount": 99_500}
        with pytest.raises(FailedPrecondition) as refused:
            ledger.stake_batch("x1", cid, [place, too_much], True, actor=ANA)
        assert (refused.value.field, refused.value.reason) == ("items[1].amount",
                                                               "INSUFFICIENT_FUNDS")
        with pytest.raises(PermissionDenied) as denied:
            ledger.stake_batch("x2", cid, [place, {**place, "account_id": "bruno"}], False,
                               actor=ANA)
        assert denied.value.field == "items[1].account_id"
        for bad, field in (([], "items"), ([place] * (MAX_ITEMS + 1), "items"),
                           ([{**place, "action": "double"}], "items[0].action"),
                           ([{**place, "amount": "10"}], "items[0].amount"),
                           ([{**place, "stake_id": CLIENT_IDS[0]},
                             {**place, "stake_id": CLIENT_IDS[0]}], "items[1].stake_id")):
            with pytest.raises(InvalidArgument) as invalid:
                ledger.stake_batch("x3", cid, bad, False, actor=ANA)
            assert invalid.value.field == field
        with pytest.raises(FailedPrecondition) as cash:
            ledger.cash_batch("x4", [
                {"kind": "deposit", "account_id": "ana", "amount": 5},
                {"kind": "withdrawal", "account_id": "ana", "amount": 100_006}], True)
        assert cash.value.field == "movements[1].amount"
        assert _end(ledger) == end
        assert ledger.get_account("ana").balance == 100_000
    finally:
        ledger.close()


def test_the_log_with_batches_reruns_identical(store_url: str, tmp_path: Path) -> None:
    source = _ledger(f"sqlite:///{tmp_path}/source.db")
    try:
        cid = _coup(source)
        source.cash_batch("cb", [{"kind": "deposit", "account_id": "bruno", "amount": 7},
                                 {"kind": "withdrawal", "account_id": "ana", "amount": 10**9},
                                 {"kind": "withdrawal", "account_id": "ana", "amount": 3}])
        placed = source.stake_batch("b1", cid, [  # no client ids: the ids are derived
            {"action": "place", "account_id": "ana", "chance": "noir", "amount": 1_000},
            {"action": "place", "account_id": "ana", "chance": "rouge", "amount": 100},
            {"action": "place", "account_id": "bruno", "chance": "inverse", "amount": 800},
        ], False)
        assert placed.accepted == 2 and placed.items[1].error is not None
        stake = placed.items[0].result.stake.stake_id
        source.stake_batch("b2", cid, [{"action": "raise", "stake_id": stake, "amount": 100}],
                           False, actor=ANA)
        source.deal("d", cid)
        source.settle("st", cid)
        target = replay(source, store_url)
        try:
            assert event_log(target) == event_log(source)
            assert target.balances() == source.balances()
        finally:
            target.close()
    finally:
        source.close()


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["noir", "rouge", "couleur", "inverse"]),
                          st.integers(50, 40_000)), min_size=1, max_size=12),
       st.booleans())
def test_a_batch_moves_what_its_accepted_items_move(sqlite_store_url: str,
                                                    items: list[tuple[str, int]],
                                                    atomic: bool) -> None:
    """Whatever the items: money is conserved, the player's balance falls by exactly the
    accepted items' stakes, never below zero, and an atomic batch is all or nothing."""
    ledger = _ledger(sqlite_store_url.replace(".db", f"-{uuid.uuid4().hex}.db"))  # a fresh store
    try:
        cid = _coup(ledger)
        end = _end(ledger)
        batch = [{"action": "place", "account_id": "ana", "chance": c, "amount": a}
                 for c, a in items]
        try:
            answer = ledger.stake_batch("h", cid, batch, atomic, actor=ANA)
        except RuleViolation:
            assert atomic and _end(ledger) == end
            assert ledger.get_account("ana").balance == 100_000
            return
        taken = sum(a for (_, a), one in zip(items, answer.items, strict=True)
                    if one.result is not None)
        assert answer.accepted == sum(one.result is not None for one in answer.items)
        assert not atomic or answer.accepted == len(items)
        assert ledger.get_account("ana").balance == 100_000 - taken >= 0
        assert sum(ledger.balances().values()) == 0
        assert json.dumps(ledger.balances())  # plain data
    finally:
        ledger.close()


def test_each_item_checks_its_own_account_and_funds(store_url: str) -> None:
    """A player's account checked once for the batch (``Core.player_of``) refuses each item as
    the unary command refuses it: an unknown account, a bad id, and funds spent by the items
    before (non-atomic: the others stand)."""
    ledger = _ledger(store_url)
    try:
        cid = _coup(ledger)
        place = {"action": "place", "account_id": "ana", "chance": "noir", "amount": 40_000}
        items = [place, {**place, "account_id": "nobody"}, {**place, "account_id": "Bad!"},
                 {**place, "chance": "couleur"}, {**place, "amount": 30_000},
                 {**place, "amount": 20_000}]
        answer = ledger.stake_batch("y1", cid, items, False)  # the system actor: any account
        unary = []
        for i, item in enumerate(items):
            try:
                ledger.place_stake(f"u{i}", cid, item["account_id"], item["chance"],
                                   item["amount"])
                unary.append(None)
            except RuleViolation as exc:
                unary.append((exc.reason, exc.field))
        batched = [None if r.error is None else (r.error.reason, r.error.field)
                   for r in answer.items]
        assert batched[1:3] == unary[1:3]  # (the funds: spent by the batch already)
        assert [r[0] if r else None for r in batched] == [
            None, "UNKNOWN_ACCOUNT", "BAD_ID", None, "INSUFFICIENT_FUNDS", None]
        assert answer.accepted == 3
        assert [r.result.balance for r in answer.items if r.result is not None] == [
            60_000, 20_000, 0]
    finally:
        ledger.close()
