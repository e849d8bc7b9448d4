"""The adapter to the ledger's events: their topics, and how to find a shoe's and a coup's events.

This is the only module that knows the ledger's event vocabulary (``services/ledger``); the
standalone verifier carries its own copy of the topic names (docs/export-format.md lists them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid5

from services.regulator.source import EventTable, RawEvent

P = "sabot.ledger:"
SHOE_PREFIX = P + "Shoe."
COUP_PREFIX = P + "Coup."
TABLE_OPENED = P + "Table.Opened"
TABLE_SHOE_STARTED = P + "Table.ShoeStarted"
TABLE_SHOE_ENDED = P + "Table.ShoeEnded"
TABLE_COUP_STARTED = P + "Table.CoupStarted"
TABLE_CLOSED = P + "Table.Closed"  # its stakes settled on its latest coup (``coup_id``)
SHOE_SHUFFLED = P + "Shoe.Shuffled"
SHOE_CUT = P + "Shoe.Cut"
SHOE_COUP_DEALT = P + "Shoe.CoupDealt"
SHOE_CLOSED = P + "Shoe.Closed"
COUP_OPENED = P + "Coup.Opened"
STAKE_CARRIED_OVER = P + "Coup.StakeCarriedOver"
LAYOUT_RESTATED = P + "Coup.LayoutRestated"
MONEY_MOVED = P + "Coup.MoneyMoved"
BETTING_CLOSED = P + "Coup.BettingClosed"
CARD_DEALT = P + "Coup.CardDealt"
COUP_RESOLVED = P + "Coup.Resolved"
COUP_SETTLED = P + "Coup.Settled"
STAKE_EVENTS = frozenset(
    P + "Coup." + n
    for n in (
        "StakeChanged", "StakePlaced", "StakeRaised", "StakeWithdrawn", "InsuranceBought",
        "Refait31Chosen", "StakeHalfWithdrawn", "StakeMoved", "StakeWon", "StakeLost",
        "StakeVoided", "StakePartaged", "StakeImprisoned", "StakeSecondPrison", "StakeReleased",
        "StakeBackToPrison", "StakePrisonLost", "StakeReturned", "StakeHalfReturned",
    )
)

# services.ledger.ids: a table's aggregate id is uuid5(NAMESPACE, "table:" + table_id)
LEDGER_NAMESPACE = UUID("5a6b0c7e-3e5f-4d0a-9b1c-7a2d8e4f6c10")


def table_uuid(table_id: str) -> UUID:
    return uuid5(LEDGER_NAMESPACE, "table:" + table_id)


def plain(value: Any) -> Any:
    """The stored JSON without the transcoder's ``{"_type_", "_data_"}`` wrappers."""
    if isinstance(value, dict):
        if set(value) == {"_type_", "_data_"}:
            return plain(value["_data_"])
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def state(event: RawEvent) -> dict[str, Any]:
    content = event.content()
    data = plain(content.get("state", {}))
    return data if isinstance(data, dict) else {}


def coup_end(event: RawEvent) -> str | None:
    """The notary's trigger: a coup ends when it is settled."""
    return event.originator_id if event.topic == COUP_SETTLED else None


@dataclass
class ShoeEvents:
    """A shoe's events and its coups', found by aggregate id (no scan of the log)."""

    shoe_id: str
    table_id: str
    table: list[RawEvent]  # the table's Opened and the events naming this shoe or its coups
    # (its Closed when the close settled the stakes on one of them)
    shoe: list[RawEvent]
    coups: dict[str, list[RawEvent]]  # coup id -> its events, in coup order

    def all_events(self) -> list[RawEvent]:
        out = [*self.table, *self.shoe]
        for evs in self.coups.values():
            out += evs
        return sorted(out, key=lambda e: e.position)


def _uuid(text: str) -> UUID | None:
    try:
        return UUID(text)
    except ValueError:
        return None


def shoe_events(events: EventTable, shoe_id: str) -> ShoeEvents | None:
    """Everything recorded about one shoe, or None if no such shoe."""
    sid = _uuid(shoe_id)
    if sid is None:
        return None
    shoe = events.by_originator(sid)
    if not shoe or shoe[0].topic != SHOE_SHUFFLED:
        return None
    table_id = str(state(shoe[0])["table_id"])
    table_all = events.by_originator(table_uuid(table_id))
    table: list[RawEvent] = []
    coup_ids: list[str] = []
    inside = False
    for ev in table_all:
        st = state(ev)
        if ev.topic == TABLE_OPENED:
            table.append(ev)
        elif ev.topic in (TABLE_SHOE_STARTED, TABLE_SHOE_ENDED):
            inside = str(st.get("shoe_id")) == str(sid) and ev.topic == TABLE_SHOE_STARTED
            if str(st.get("shoe_id")) == str(sid):
                table.append(ev)
        elif ev.topic == TABLE_COUP_STARTED and inside:
            coup_ids.append(str(st["coup_id"]))
    coups: dict[str, list[RawEvent]] = {}
    uuids = [u for u in (_uuid(c) for c in coup_ids) if u is not None]
    found = events.by_originators(uuids)
    for cid in coup_ids:
        cu = _uuid(cid)
        evs = found.get(str(cu), []) if cu is not None else []
        if evs and str(state(evs[0]).get("shoe_id")) == str(sid):
            coups[cid] = evs
    for ev in table_all:
        if ev.topic in (TABLE_COUP_STARTED, TABLE_CLOSED) and str(state(ev)["coup_id"]) in coups:
            table.append(ev)
    table.sort(key=lambda e: e.position)
    return ShoeEvents(str(sid), table_id, table, shoe, coups)


def shoe_of_coup(events: EventTable, coup_id: str) -> str | None:
    cu = _uuid(coup_id)
    if cu is None:
        return None
    evs = events.by_originator(cu, limit=1)
    if not evs or evs[0].topic != COUP_OPENED:
        return None
    return str(state(evs[0])["shoe_id"])


def closed_shoes(events: EventTable) -> list[str]:
    """Ids of every closed shoe, in the order they closed."""
    return [e.originator_id for e in events.by_topic(SHOE_CLOSED)]
