"""A fast reader of stored events for the projections: plain JSON, no event classes built.

Views read attributes (``ev.amount``), so a stored event decoded here (a :class:`StoredEvent`)
and a domain event from ``app.mapper`` (as the projection runner gives) look the same to them.
Events whose stored ``class_version`` differs from their class's (they need upcasting), and
stores with a cipher or compressor, go through the application's mapper instead; but for a
class whose upcasters read and write JSON values only (``plain_upcasts``: an old
``Request.Recorded``), applied here to the decoded JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.persistence import Notification
from eventsourcing.utils import get_topic, resolve_topic

from services.projections.view import Envelope

_loads: Callable[[bytes], Any]
try:  # orjson parses several times faster; the standard library gives the same values
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - orjson is a dependency
    _loads = json.loads


class StoredEvent:
    """A stored event's state; its fields read as attributes, like a domain event's."""

    def __repr__(self) -> str:
        return f"StoredEvent({self.__dict__!r})"


def _obj(d: dict[str, Any]) -> StoredEvent:
    ev = object.__new__(StoredEvent)
    ev.__dict__ = d
    return ev


EPOCH = datetime.fromisoformat("1970-01-01T00:00:00+00:00")


def envelope(position: int, event: Any, topic: str | None = None) -> Envelope:
    """The envelope of a domain event (as the mapper or the projection runner gives it)."""
    time = getattr(event, "timestamp", None)
    if not isinstance(time, datetime):
        time = EPOCH
    return Envelope(position, topic or get_topic(type(event)), event, time, time.isoformat(),
                    str(event.originator_id))


def _unwrap(value: dict[str, Any]) -> Any:
    kind = value["_type_"]
    data = value["_data_"]
    if kind == "datetime_iso":
        return datetime.fromisoformat(data)
    if kind == "tuple_as_list":
        return [_unwrap(x) if type(x) is dict and "_type_" in x else x for x in data]
    if type(data) is dict:
        return _obj(data)
    return data  # enums stored as their text, uuid_hex, decimal_str, ...


Row = tuple[int, str, int, str, bytes]  # (position, originator id text, version, topic, state)


def decoder(app: Any) -> Callable[[Any], Envelope]:
    """A function from a notification to the envelope of its event, for ``app``'s log."""
    return decoders(app)[0]


def decoders(app: Any) -> tuple[Callable[[Any], Envelope], Callable[[Row], Envelope] | None]:
    """For ``app``'s log: a function from a notification to its envelope, and one from a raw
    row (see :data:`Row`; ``None`` when the store has a cipher or compressor)."""
    mapper = app.mapper
    if getattr(mapper, "cipher", None) or getattr(mapper, "compressor", None):
        return lambda n: envelope(n.id, mapper.to_domain_event(n), n.topic), None
    loads = _loads
    versions: dict[str, int] = {}
    fromiso = datetime.fromisoformat
    new = object.__new__
    marker = b'"_type_"'
    texts: dict[Any, str] = {}  # originator id -> its text (an aggregate has many events)

    def slow(row: Row) -> Envelope:
        nid, oid, over, topic, state = row
        n = Notification(id=nid, originator_id=UUID(oid), originator_version=over, topic=topic,
                         state=state)
        return envelope(nid, mapper.to_domain_event(n), topic)  # needs upcasting

    def decode_row(row: Row) -> Envelope:
        nid, oid, over, topic, state = row
        version = versions.get(topic)
        if version is None:
            version = versions[topic] = getattr(resolve_topic(topic), "class_version", 1)
        d = loads(state)
        stored_version = d.pop("class_version", 1) if version != 1 or "class_version" in d else 1
        if stored_version != version:
            cls = resolve_topic(topic)
            if not getattr(cls, "plain_upcasts", False) or stored_version > version:
                return slow(row)
            for v in range(stored_version, version):  # they read and write JSON values only
                getattr(cls, f"upcast_v{v}_v{v + 1}")(d)
        at = d["timestamp"]["_data_"]
        time = d["timestamp"] = fromiso(at)
        wrapped = state.count(marker) - 1  # values wrapped besides the timestamp
        if wrapped:
            stake = d.get("stake")
            if wrapped == 1 and type(stake) is dict:  # the usual case: one stake
                d["stake"] = _unwrap(stake)
            else:
                for k, v in d.items():
                    if type(v) is dict and "_type_" in v:
                        d[k] = _unwrap(v)
        d["originator_id"] = oid  # as text (no view reads it; a UUID costs ~1 us)
        d["originator_version"] = over
        ev = new(StoredEvent)  # _obj, inlined
        ev.__dict__ = d
        return Envelope(nid, topic, ev, time, at, oid)

    def decode(n: Any) -> Envelope:
        oid = n.originator_id
        text = texts.get(oid)
        if text is None:
            if len(texts) > 100_000:
                texts.clear()
            text = texts[oid] = str(oid)
        return decode_row((n.id, text, n.originator_version, n.topic, n.state))

    return decode, decode_row
