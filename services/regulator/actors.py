"""Who caused each exported event: the ``actor`` field of the export (docs/export-format.md).

Every command is stored in one transaction, its events first and its ``Request.Recorded`` at the
end of the batch's save; the request names the events it caused (``effects``) and who ran it
(``actor``). So the actor of an event is that of the request whose effects list it: found among
the exported events themselves, or in the few stored events right after them (the rest of the
last transaction and its requests).

A request's state is mostly its arguments and result; only ``actor`` and ``effects`` are read
here (``command_fields``: unwrapped as ``vocabulary.state`` unwraps them, the rest left as it
is), each request once per export (``Fields``: by position)."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any

from services.ledger.core import unwrapped
from services.regulator.source import EventTable, RawEvent
from services.topics import REQUEST_RECORDED

LOOKAHEAD = 20_000  # stored events read past a range's end, at most, to find its requests
Key = tuple[str, int]  # (originator id, version)
Fields = dict[int, tuple[Any, Any]]  # a request's position -> its (actor, effects)


def command_fields(ev: RawEvent) -> tuple[Any, Any]:
    """A request's ``actor`` and ``effects``, as ``vocabulary.state(ev)`` holds them (None when
    absent), without unwrapping the rest of its state."""
    try:
        raw = json.loads(ev.state.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):  # not JSON: exported as ``state_b64``, no state
        return None, None
    if isinstance(raw, dict) and set(raw) != {"_type_", "_data_"}:
        return unwrapped(raw.get("actor")), unwrapped(raw.get("effects"))
    st = unwrapped(raw)
    if not isinstance(st, dict):
        return None, None
    return st.get("actor"), st.get("effects")


def fields_of(ev: RawEvent, memo: Fields | None) -> tuple[Any, Any]:
    """``command_fields(ev)``, remembered in ``memo`` by the event's position."""
    if memo is None:
        return command_fields(ev)
    got = memo.get(ev.position)
    if got is None:
        got = memo[ev.position] = command_fields(ev)
    return got


def _actor_of(actor: Any) -> dict[str, Any]:
    if isinstance(actor, dict):
        return dict(actor)
    return {"principal": "unrecorded", "role": "unrecorded", "peer": ""}  # a version 1 request


def _learn(ev: RawEvent, out: dict[Key, dict[str, Any]], memo: Fields | None) -> None:
    raw_actor, effects = fields_of(ev, memo)
    actor = _actor_of(raw_actor)
    out[(ev.originator_id, ev.version)] = actor
    for effect in effects or ():
        if isinstance(effect, list) and len(effect) == 2:
            out.setdefault((str(effect[0]), int(effect[1])), actor)


def command_actors(events: EventTable, stored: Mapping[int, RawEvent],
                   memo: Fields | None = None, wanted: Collection[int] | None = None
                   ) -> dict[Key, Any]:
    """The actor of each of ``stored``'s events (position -> event, one range), keyed by
    (originator id, version); an event none of whose requests is found is absent.
    ``memo``: the requests' fields already read (and those read here, kept); ``wanted``: the
    positions whose actor is asked for (None: all; the others' requests are not looked for
    past the range)."""
    out: dict[Key, dict[str, Any]] = {}
    for ev in stored.values():
        if ev.topic == REQUEST_RECORDED:
            _learn(ev, out, memo)
    missing = [e for e in stored.values() if (e.originator_id, e.version) not in out
               and (wanted is None or e.position in wanted)]
    if not missing:
        return out
    after, read, in_requests, step = max(stored), 0, False, 64
    while read < LOOKAHEAD:  # in growing batches: the requests are most often the next few
        step = min(2 * step, 2000, LOOKAHEAD - read)
        batch = events.read(after, step)
        for ev in batch:
            if ev.topic == REQUEST_RECORDED:
                in_requests = True
                _learn(ev, out, memo)
            elif in_requests:  # the last transaction's requests are over
                return out
        if len(batch) < step:
            return out
        read += len(batch)
        after = batch[-1].position
    return out
