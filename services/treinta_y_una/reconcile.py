"""Treinta y Una's reconciliation per table and gaming day.

For each (table, gaming day) of its rounds' settlements: the rounds, the stakes placed, what
the banks collected and paid between the players (``collection``, ``payment``), the house
commission (``commission`` from winners, ``bank_commission`` from the banks), and the check
that closes it: the players' net over the day plus the house's commission is zero, and each
settled round left its table's ``stakes`` and ``bank`` accounts empty but for the stakes of a
void round carried to the next. ``balanced`` says both hold.

Each round's facts are folded from its events by :func:`fold`: by the ledger's query over the
stored log (:func:`reconcile`) and by the read model (``services/treinta_y_una/projection.py``)
alike; :func:`days` sums them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from services import topics as T
from services.ledger.views import StoredEvent
from services.projections.games import Facts, FloorFacts, day_of, fold_log
from services.projections.gamingday import DEFAULT, GamingDay

_BANK_IN = {"bank_put_up", "collection"}
_BANK_OUT = {"payment", "bank_commission", "bank_returned"}
_STAKES_IN = {"stake", "cover"}
_STAKES_OUT = {"collection", "return"}
_SUMS = ("rounds", "stakes", "collected", "paid", "commission", "players_net", "carried")


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


def fold(facts: Facts, topic: str, data: Mapping[str, Any], at: datetime) -> None:
    """One event of a round into its facts: ``table_id``, ``stakes`` placed, the stakes
    ``carried_in`` from the last game and ``carried`` to the next, the money ``moves``
    (``[kind, amount, debit, credit, player]``) and when it ``ended`` (settled or cancelled)."""
    if topic == T.TREINTA_Y_UNA_ROUND_OPENED:
        facts.update(table_id=str(data["table_id"]), stakes=0, moves=[], carried=0, ended=None,
                     carried_in=sum(int(c[2]) for c in data.get("carried", [])))
    elif topic == T.TREINTA_Y_UNA_ROUND_STAKE_PLACED:
        facts["stakes"] += int(data["amount"])
    elif topic == T.TREINTA_Y_UNA_ROUND_MONEY_MOVED:
        facts["moves"].append([str(data["kind"]), int(data["amount"]),
                               str(data["debit_account"]), str(data["credit_account"]),
                               str(data["player"])])
    elif topic in (T.TREINTA_Y_UNA_ROUND_SETTLED, T.TREINTA_Y_UNA_ROUND_CANCELLED):
        facts["carried"] = sum(int(c[2]) for c in data.get("carried", []))
        facts["ended"] = at.isoformat()


def floor(facts: Facts) -> FloorFacts | None:
    """A settled round for the floor's gaming-day report: its handle is the stakes placed (not
    their covers), the house's win its commission (from winners and banks), levied on each
    collection and each payment (``domain.treinta_y_una.settlement.commission_on``)."""
    if facts.get("ended") is None or facts.get("table_id") is None:
        return None
    moves = facts["moves"]
    return FloorFacts(
        str(facts["ended"]), int(facts["stakes"]),
        sum(m[1] for m in moves if m[0] in ("commission", "bank_commission")),
        sum(m[1] for m in moves if m[0] in ("collection", "payment")))


def days(rounds: Iterable[Facts], table_id: str | None = None,
         setting: GamingDay = DEFAULT) -> list[DayReconciliation]:
    """The days of every table (or of ``table_id``), in order; a round counts on the gaming
    day of its settlement (a round not settled yet is not counted)."""
    sums: dict[tuple[str, str], dict[str, int]] = {}
    ok: dict[tuple[str, str], bool] = {}
    carried_in: dict[tuple[str, str], int] = {}
    for r in rounds:
        day = day_of(r, "ended", setting)
        if day is None or (table_id is not None and r["table_id"] != table_id):
            continue
        key = (r["table_id"], day)
        d = sums.setdefault(key, dict.fromkeys(_SUMS, 0))
        bank = stakes = 0
        d["rounds"] += 1
        d["stakes"] += r["stakes"]
        for kind, amount, debit, credit, player in r["moves"]:
            bank += amount if kind in _BANK_IN else -amount if kind in _BANK_OUT else 0
            stakes += amount if kind in _STAKES_IN else -amount if kind in _STAKES_OUT else 0
            if kind == "collection":
                d["collected"] += amount
            elif kind == "payment":
                d["paid"] += amount
            elif kind in ("commission", "bank_commission"):
                d["commission"] += amount
            if debit == player:
                d["players_net"] -= amount
            if credit == player:
                d["players_net"] += amount
        d["carried"] += r["carried"]
        carried_in[key] = carried_in.get(key, 0) + r["carried_in"]
        # the round emptied its bank, and its stakes account but for what it carried
        ok[key] = ok.get(key, True) and bank == 0 and stakes + r["carried_in"] == r["carried"]
    out = []
    for key in sorted(sums):
        d = sums[key]
        # the day's net: what the players lost went to the house, or is held carried over
        balanced = ok[key] and d["players_net"] + d["commission"] + d["carried"] == carried_in[
            key]
        out.append(DayReconciliation(key[0], key[1], d["rounds"], d["stakes"], d["collected"],
                                     d["paid"], d["commission"], d["players_net"],
                                     d["carried"], balanced))
    return out


def reconcile(events: Iterable[StoredEvent], table_id: str | None = None,
              setting: GamingDay = DEFAULT) -> list[DayReconciliation]:
    """The ledger's query: :func:`days` of the rounds folded from the stored events."""
    return days(fold_log(events, T.TREINTA_Y_UNA_ROUND_OPENED, fold).values(), table_id,
                setting)
