"""Who caused each exported event: the ``actor`` field of the export (docs/export-format.md).

Every command is stored in one transaction, its events first and its ``Request.Recorded`` at the
end of the batch's save; the request names the events it caused (``effects``) and who ran it
(``actor``). So the actor of an event is that of the request whose effects list it: found among
the exported events themselves, or in the few stored events right after them (the rest of the
last transaction and its requests)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services.regulator.source import EventTable, RawEvent
from services.regulator.vocabulary import state
from services.topics import REQUEST_RECORDED

LOOKAHEAD = 20_000  # stored events read past a range's end, at most, to find its requests
Key = tuple[str, int]  # (originator id, version)


def _actor_of(st: dict[str, Any]) -> dict[str, Any]:
    actor = st.get("actor")
    if isinstance(actor, dict):
        return dict(actor)
    return {"principal": "unrecorded", "role": "unrecorded", "peer": ""}  # a version 1 request


def _learn(ev: RawEvent, out: dict[Key, dict[str, Any]]) -> None:
    st = state(ev)
    actor = _actor_of(st)
    out[(ev.originator_id, ev.version)] = actor
    for effect in st.get("effects") or ():
        if isinstance(effect, list) and len(effect) == 2:
            out.setdefault((str(effect[0]), int(effect[1])), actor)


def command_actors(events: EventTable, stored: Mapping[int, RawEvent]) -> dict[Key, Any]:
    """The actor of each of ``stored``'s events (position -> event, one range), keyed by
    (originator id, version); an event none of whose requests is found is absent."""
    out: dict[Key, dict[str, Any]] = {}
    for ev in stored.values():
        if ev.topic == REQUEST_RECORDED:
            _learn(ev, out)
    missing = [e for e in stored.values() if (e.originator_id, e.version) not in out]
    if not missing:
        return out
    after, read, in_requests = max(stored), 0, False
    while read < LOOKAHEAD:
        batch = events.read(after, 2000)
        for ev in batch:
            if ev.topic == REQUEST_RECORDED:
                in_requests = True
                _learn(ev, out)
            elif in_requests:  # the last transaction's requests are over
                return out
        if len(batch) < 2000:
            return out
        read += len(batch)
        after = batch[-1].position
    return out
