"""How the regulator finds a shoe's and a coup's events among the raw rows it reads.

The topics are ``services/topics.py``'s (the standalone verifier carries its own copy,
``ops/sabot_verify/topics.py``; docs/export-format.md lists them).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from uuid import UUID

from services.ledger.core import unwrapped
from services.ledger.ids import table_uuid
from services.regulator.source import EventTable, RawEvent
from services.topics import (
    COUP_OPENED,
    SHOE_CLOSED,
    SHOE_SHUFFLED,
    TABLE_CLOSED,
    TABLE_COUP_STARTED,
    TABLE_OPENED,
    TABLE_ROUND_STARTED,
    TABLE_SHOE_ENDED,
    TABLE_SHOE_STARTED,
)

# positions between a shoe's ``Shoe.Shuffled`` and its table's ``Table.ShoeStarted``, at most,
# where a table's shoe is looked for by ``between_marks`` (they are saved together, a few apart)
SHOE_STARTED_NEAR = 64


def state(event: RawEvent) -> dict[str, Any]:
    """The event's state as ``event.content()`` parses it, the transcoders' wrappers taken off
    ({} when it is not a JSON object). Read only: the dict is shared by every caller asking
    for the same stored bytes (``_decoded``)."""
    return _decoded(event.state)


@lru_cache(maxsize=4096)
def _decoded(stored: bytes) -> dict[str, Any]:
    """``state``'s answer for these stored bytes (a pure function of them), remembered: a
    replay asks for most of its events' states two or three times (the table's, the coups'
    first events, the deals), and a replay of the same coup again asks for all of them."""
    try:
        data = unwrapped(json.loads(stored.decode("utf-8")))
    except (UnicodeDecodeError, ValueError):  # as RawEvent.content: not JSON, no state
        return {}
    return data if isinstance(data, dict) else {}


class RoundEnds:
    """The notary's trigger: ``round_ends(event)``, the round (coup, round, match: the event's
    aggregate) ``event`` ends, or None: an event of one of ``topics`` ends one (each game's
    ``RegulatorGame.round_ends``). The composition root makes it from the games it holds and
    hands it to the notary, which imports no game."""

    def __init__(self, topics: Iterable[str]) -> None:
        self.topics = frozenset(topics)

    def __call__(self, event: RawEvent) -> str | None:
        return event.originator_id if event.topic in self.topics else None


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


def shoe_events(events: EventTable, shoe_id: str, only: str | None = None,
                only_events: list[RawEvent] | None = None) -> ShoeEvents | None:
    """Everything recorded about one shoe, or None if no such shoe. ``only``: one of its coups
    (a coup's replay): its events in full, of the others their first (their number and shoe);
    ``only_events``: that coup's events, already read by ``coup_events`` (not read again)."""
    sid = _uuid(shoe_id)
    if sid is None:
        return None
    shoe = events.by_originator(sid)
    if not shoe or shoe[0].topic != SHOE_SHUFFLED:
        return None
    table_id = str(state(shoe[0])["table_id"])
    table_all = _table_of_shoe(events, table_uuid(table_id), shoe, sid)
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
        elif ev.topic in (TABLE_COUP_STARTED, TABLE_ROUND_STARTED) and inside:
            coup_ids.append(str(st.get("coup_id") or st["round_id"]))  # a game's rounds
    coups: dict[str, list[RawEvent]] = {}
    uuids = [u for u in (_uuid(c) for c in coup_ids) if u is not None]
    found = _coup_events(events, uuids, only, only_events)
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


def _table_of_shoe(events: EventTable, table: UUID, shoe: list[RawEvent], sid: UUID
                   ) -> list[RawEvent]:
    """The table's events ``shoe_events`` reads for shoe ``sid`` (``shoe``: the shoe's own
    events), whatever the table's years: its ``Table.Opened`` (version 1) and its events from
    the shoe's ``Table.ShoeStarted`` (saved with ``Shoe.Shuffled``, a few positions from it) up
    to the next shoe's ``Table.ShoeStarted``, read by version in ranges about the shoe's size.
    No other event of the table is this shoe's: the ones before that start are earlier shoes',
    the ones from the next start on later shoes'. The table's whole history where that start
    is not found so near (a store written otherwise): the same events are then picked from it.
    A version missing in what is read (a deleted event) reads the whole history too; the
    read ends at ``len(shoe) + 8`` versions with no event after the last (the table's end)."""
    started = next((e for e in events.topic_near(TABLE_SHOE_STARTED, shoe[0].position,
                                                 SHOE_STARTED_NEAR)
                    if e.originator_id == str(table)
                    and str(state(e).get("shoe_id")) == str(sid)), None)
    if started is None:
        return events.by_originator(table)
    # read by ranges of twice the shoe's size: the table's events of a shoe are one a coup or
    # round and a few, so the first range usually reaches the next shoe's start, or the
    # table's end (its upper half empty), in one statement
    step = len(shoe) + 8
    out: list[RawEvent] = []
    first, ranges = started.version, [(1, 1), (started.version, started.version + 2 * step - 1)]
    expect = first  # the next version: one missing is a deleted event, for the whole read
    while True:
        part = events.versions(table, ranges)
        for ev in part:
            if ev.version >= started.version:
                if ev.version != expect:
                    return events.by_originator(table)
                expect += 1
            if (ev.version > started.version and ev.topic == TABLE_SHOE_STARTED
                    and str(state(ev).get("shoe_id")) != str(sid)):
                return out  # the next shoe's start: the rest of the table is later shoes'
            out.append(ev)
        if expect < first + step:
            return out  # no event in the range's upper half: the table's end
        first += 2 * step
        ranges = [(first, first + 2 * step - 1)]


def _coup_events(events: EventTable, uuids: list[UUID], only: str | None,
                 only_events: list[RawEvent] | None = None) -> dict[str, list[RawEvent]]:
    one = _uuid(only) if only is not None else None
    if one is None:
        return events.by_originators(uuids)
    found = {oid: [ev] for oid, ev in events.first_events([u for u in uuids if u != one]).items()}
    found[str(one)] = events.by_originator(one) if only_events is None else only_events
    return found


def _coup_read(events: EventTable, coup_id: str,
               limit: int | None) -> tuple[str, list[RawEvent]] | None:
    """A coup's shoe id (from its first event) and its first ``limit`` events (None: all)."""
    cu = _uuid(coup_id)
    if cu is None:
        return None
    evs = events.by_originator(cu, limit=limit)
    if not evs or evs[0].topic != COUP_OPENED:
        return None
    return str(state(evs[0])["shoe_id"]), evs


def shoe_of_coup(events: EventTable, coup_id: str) -> str | None:
    found = _coup_read(events, coup_id, 1)
    return None if found is None else found[0]


def coup_events(events: EventTable, coup_id: str) -> tuple[str, list[RawEvent]] | None:
    """A coup's shoe id and its events in version order, in one read (None: no such coup):
    ``shoe_of_coup``'s answer from the first of the events a coup's replay reads in full."""
    return _coup_read(events, coup_id, None)


def closed_shoes(events: EventTable) -> list[str]:
    """Ids of every closed shoe, in the order they closed."""
    return [e.originator_id for e in events.by_topic(SHOE_CLOSED)]
