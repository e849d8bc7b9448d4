"""Treinta y Una's reconciliation per table and gaming day, folded from the stored log.

For each (table, gaming day) of its rounds' settlements: the rounds, the stakes placed, what
the banks collected and paid between the players (``collection``, ``payment``), the house
commission (``commission`` from winners, ``bank_commission`` from the banks), and the check
that closes it: the players' net over the day plus the house's commission is zero, and each
settled round left its table's ``stakes`` and ``bank`` accounts empty but for the stakes of a
void round carried to the next. ``balanced`` says both hold.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from services import topics as T
from services.ledger.views import StoredEvent
from services.projections.gamingday import DEFAULT, GamingDay

_BANK_IN = {"bank_put_up", "collection"}
_BANK_OUT = {"payment", "bank_commission", "bank_returned"}
_STAKES_IN = {"stake", "cover"}
_STAKES_OUT = {"collection", "return"}


@dataclasses.dataclass(frozen=True, slots=True)
class DayReconciliation:
    table_id: str
    gaming_day: str
    rounds: int
    stakes: int  # the stakes placed (not their covers)
    collected: int  # by the banks from the punters
    paid: int  # by the banks to the punters
    commission: int  # to the house, from winners and banks
    players_net: int  # what the players won (> 0) or lost (< 0) between them and the house
    carried: int  # stakes of void rounds held for the next
    balanced: bool


@dataclasses.dataclass
class _Round:
    table_id: str
    moves: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    stakes: int = 0
    carried: int = 0
    carried_in: int = 0
    day: str | None = None


def reconcile(events: Iterable[StoredEvent], table_id: str | None = None,
              setting: GamingDay = DEFAULT) -> list[DayReconciliation]:
    """The days of every table (or of ``table_id``), in order; a round counts on the gaming
    day of its settlement (a round not settled yet is not counted)."""
    rounds: dict[str, _Round] = {}
    for e in events:
        if not e.topic.startswith(T.TREINTA_Y_UNA_ROUND + "."):
            continue
        r = rounds.get(e.originator_id)
        s = e.state
        if e.topic == T.TREINTA_Y_UNA_ROUND_OPENED:
            rounds[e.originator_id] = r = _Round(str(s["table_id"]))
            r.carried_in = sum(int(c[2]) for c in s.get("carried", []))
        if r is None:
            continue
        if e.topic == T.TREINTA_Y_UNA_ROUND_STAKE_PLACED:
            r.stakes += int(s["amount"])
        elif e.topic == T.TREINTA_Y_UNA_ROUND_MONEY_MOVED:
            r.moves.append(s)
        elif e.topic in (T.TREINTA_Y_UNA_ROUND_SETTLED, T.TREINTA_Y_UNA_ROUND_CANCELLED):
            r.carried = sum(int(c[2]) for c in s.get("carried", []))
            at = e.timestamp or datetime.fromisoformat(str(s["timestamp"]))
            r.day = setting.of(at)[0]
    days: dict[tuple[str, str], dict[str, int]] = {}
    ok: dict[tuple[str, str], bool] = {}
    for r in rounds.values():
        if r.day is None or (table_id is not None and r.table_id != table_id):
            continue
        key = (r.table_id, r.day)
        d = days.setdefault(key, dict.fromkeys(
            ("rounds", "stakes", "collected", "paid", "commission", "players_net", "carried"), 0))
        bank = stakes = 0
        d["rounds"] += 1
        d["stakes"] += r.stakes
        for m in r.moves:
            kind, amount = str(m["kind"]), int(m["amount"])
            bank += amount if kind in _BANK_IN else -amount if kind in _BANK_OUT else 0
            stakes += amount if kind in _STAKES_IN else -amount if kind in _STAKES_OUT else 0
            if kind == "collection":
                d["collected"] += amount
            elif kind == "payment":
                d["paid"] += amount
            elif kind in ("commission", "bank_commission"):
                d["commission"] += amount
            if m["debit_account"] == m["player"]:
                d["players_net"] -= amount
            if m["credit_account"] == m["player"]:
                d["players_net"] += amount
        d["carried"] += r.carried
        # the round emptied its bank, and its stakes account but for what it carried
        ok[key] = ok.get(key, True) and bank == 0 and stakes + r.carried_in == r.carried
    out = []
    for key in sorted(days):
        d = days[key]
        # the day's net: what the players lost went to the house, or is held carried over
        balanced = ok[key] and d["players_net"] + d["commission"] + d["carried"] == sum(
            rounds_carried_in(rounds, key))
        out.append(DayReconciliation(key[0], key[1], d["rounds"], d["stakes"], d["collected"],
                                     d["paid"], d["commission"], d["players_net"], d["carried"],
                                     balanced))
    return out


def rounds_carried_in(rounds: dict[str, _Round], key: tuple[str, str]) -> list[int]:
    return [r.carried_in for r in rounds.values() if (r.table_id, r.day) == key]
