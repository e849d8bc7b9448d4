"""Cuarenta's reconciliation per table, folded from the stored log.

For each gaming day (of the matches' ends): the matches won, the stakes the sides put up, what
the winners were paid, the house's commission, and the players' net (what they won, > 0, or
lost, < 0, between them and the house). It closes when each finished match paid out exactly its
pot (payouts plus commission equal the stakes: the players' net plus the commission is zero).
Over the table: the stakes still held for the matches in play equal the balance of the table's
``stakes`` account, and the commissions its ``house_commission`` account's, both re-derived
from the accounts' own entries. ``balanced`` says all of it holds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from services import topics as T
from services.ledger.ids import table_account
from services.ledger.views import StoredEvent
from services.projections.gamingday import DEFAULT, GamingDay


@dataclasses.dataclass(frozen=True, slots=True)
class DayReconciliation:
    gaming_day: str
    matches: int  # won that day (on points, four of a rank, or a forfeit)
    stakes: int  # what both sides put up
    payouts: int  # to the winning sides' players
    commission: int  # to the house
    players_net: int
    balanced: bool


@dataclasses.dataclass(frozen=True, slots=True)
class Reconciliation:
    table_id: str
    days: tuple[DayReconciliation, ...]
    in_play: int  # matches not over
    held: int  # their stakes, held on the table
    stakes_account: int  # the table's stakes account, from its entries
    commission_account: int  # the table's house_commission account, from its entries
    balanced: bool


@dataclasses.dataclass
class _Match:
    moves: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    day: str | None = None


def reconcile(events: Iterable[StoredEvent], table_id: str,
              setting: GamingDay = DEFAULT) -> Reconciliation:
    stakes_id = table_account(table_id, "stakes")
    commission_id = table_account(table_id, "house_commission")
    accounts: dict[str, str] = {}  # originator -> account id
    balances = {stakes_id: 0, commission_id: 0}
    matches: dict[str, _Match] = {}
    for e in events:
        s = e.state
        if e.topic == T.ACCOUNT_OPENED:
            accounts[e.originator_id] = str(s["account_id"])
        elif e.topic in T.ACCOUNT_ENTRIES:
            account = accounts.get(e.originator_id)
            if account in balances:
                sign = -1 if e.topic in T.ACCOUNT_DEBITS else 1
                balances[account] += sign * int(s["amount"])
        elif e.topic == T.CUARENTA_MATCH_OPENED:
            if s["table_id"] == table_id:
                matches[e.originator_id] = _Match()
        elif e.originator_id in matches:
            m = matches[e.originator_id]
            if e.topic == T.CUARENTA_MATCH_MONEY_MOVED:
                m.moves.append(s)
            elif e.topic == T.CUARENTA_MATCH_WON:
                at = e.timestamp or datetime.fromisoformat(str(s["timestamp"]))
                m.day = setting.of(at)[0]
    days: dict[str, dict[str, Any]] = {}
    held = in_play = 0
    for m in matches.values():
        staked = sum(int(x["amount"]) for x in m.moves if x["kind"] == "stake")
        if m.day is None:
            in_play += 1
            held += staked
            continue
        d = days.setdefault(m.day, {"matches": 0, "stakes": 0, "payouts": 0, "commission": 0,
                                    "ok": True})
        paid = sum(int(x["amount"]) for x in m.moves if x["kind"] == "payout")
        house = sum(int(x["amount"]) for x in m.moves if x["kind"] == "commission")
        d["matches"] += 1
        d["stakes"] += staked
        d["payouts"] += paid
        d["commission"] += house
        d["ok"] = d["ok"] and paid + house == staked
    out = tuple(
        DayReconciliation(day, d["matches"], d["stakes"], d["payouts"], d["commission"],
                          d["payouts"] - d["stakes"], d["ok"]
                          and d["payouts"] - d["stakes"] + d["commission"] == 0)
        for day, d in sorted(days.items()))
    commission = sum(d.commission for d in out)
    balanced = (all(d.balanced for d in out) and held == balances[stakes_id]
                and commission == balances[commission_id])
    return Reconciliation(table_id, out, in_play, held, balances[stakes_id],
                          balances[commission_id], balanced)
