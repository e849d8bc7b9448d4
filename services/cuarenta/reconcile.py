"""Cuarenta's reconciliation per table, folded from the stored log.

For each gaming day (of the matches' ends): the matches won, the stakes the sides put up, what
the winners were paid, the house's commission, and the players' net (what they won, > 0, or
lost, < 0, between them and the house). It closes when each finished match paid out exactly its
pot (payouts plus commission equal the stakes: the players' net plus the commission is zero).
Over the table: the stakes still held for the matches in play equal the balance of the table's
``stakes`` account, and the commissions its ``house_commission`` account's, both re-derived
from the accounts' own entries. ``balanced`` says all of it holds.

Each match's facts are folded from its events by :func:`fold`: by the ledger's query over the
stored log (:func:`reconcile`) and by the read model (``services/cuarenta/projection.py``, the
accounts' balances from the bankrolls) alike; :func:`result` sums them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from services import topics as T
from services.ledger.ids import table_account
from services.ledger.views import StoredEvent
from services.projections.games import Facts, FloorFacts, day_of, fold_log
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


def fold(facts: Facts, topic: str, data: Mapping[str, Any], at: datetime) -> None:
    """One event of a match into its facts: ``table_id``, the money ``moves`` (``[kind,
    amount]``) and when it was ``won`` (None: in play)."""
    if topic == T.CUARENTA_MATCH_OPENED:
        facts.update(table_id=str(data["table_id"]), moves=[], won=None)
    elif topic == T.CUARENTA_MATCH_MONEY_MOVED:
        facts["moves"].append([str(data["kind"]), int(data["amount"])])
    elif topic == T.CUARENTA_MATCH_WON:
        facts["won"] = at.isoformat()


def floor(facts: Facts) -> FloorFacts | None:
    """A match won, for the floor's gaming-day report: its handle is the stakes both sides
    put up, the house's win its commission, levied on that pot
    (``domain.cuarenta.stakes.commission``)."""
    if facts.get("won") is None or facts.get("table_id") is None:
        return None
    moves = facts["moves"]
    staked = sum(amount for kind, amount in moves if kind == "stake")
    return FloorFacts(str(facts["won"]), staked,
                      sum(amount for kind, amount in moves if kind == "commission"), staked)


def result(matches: Iterable[Facts], table_id: str, stakes_account: int,
           commission_account: int, setting: GamingDay = DEFAULT) -> Reconciliation:
    """The table's reconciliation from its matches' facts and the balances of its ``stakes``
    and ``house_commission`` accounts."""
    days: dict[str, dict[str, Any]] = {}
    held = in_play = 0
    for m in matches:
        if m["table_id"] != table_id:
            continue
        moves = m["moves"]
        staked = sum(amount for kind, amount in moves if kind == "stake")
        day = day_of(m, "won", setting)
        if day is None:
            in_play += 1
            held += staked
            continue
        d = days.setdefault(day, {"matches": 0, "stakes": 0, "payouts": 0, "commission": 0,
                                  "ok": True})
        paid = sum(amount for kind, amount in moves if kind == "payout")
        house = sum(amount for kind, amount in moves if kind == "commission")
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
    balanced = (all(d.balanced for d in out) and held == stakes_account
                and commission == commission_account)
    return Reconciliation(table_id, out, in_play, held, stakes_account, commission_account,
                          balanced)


def reconcile(events: Iterable[StoredEvent], table_id: str,
              setting: GamingDay = DEFAULT) -> Reconciliation:
    """The ledger's query, folded from the stored log (matches and accounts' events)."""
    stakes_id = table_account(table_id, "stakes")
    commission_id = table_account(table_id, "house_commission")
    accounts: dict[str, str] = {}  # originator -> account id
    balances = {stakes_id: 0, commission_id: 0}
    games = []
    for e in events:
        s = e.state
        if e.topic == T.ACCOUNT_OPENED:
            accounts[e.originator_id] = str(s["account_id"])
        elif e.topic in T.ACCOUNT_ENTRIES:
            account = accounts.get(e.originator_id)
            if account in balances:
                sign = -1 if e.topic in T.ACCOUNT_DEBITS else 1
                balances[account] += sign * int(s["amount"])
        else:
            games.append(e)
    matches = fold_log(games, T.CUARENTA_MATCH_OPENED, fold).values()
    return result(matches, table_id, balances[stakes_id], balances[commission_id], setting)
