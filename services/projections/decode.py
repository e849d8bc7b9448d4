"""A fast reader of stored events for the projections: plain JSON, no event classes built.

Views read attributes (``ev.amount``), so a stored event decoded here (a :class:`StoredEvent`)
and a domain event from ``app.mapper`` (as the projection runner gives) look the same to them.
Events whose stored ``class_version`` differs from their class's (they need upcasting), and
stores with a cipher or compressor, go through the application's mapper instead; but for a
class whose upcasters read and write JSON values only (``plain_upcasts``: an old
``Request.Recorded``), applied here to the decoded JSON.

A topic whose events every view that wants it reads only a few fields of (``View.reads``: a
request's ``actor`` and ``effects``, 2 of its 9) is decoded into those fields only (and the
timestamp), by a ``msgspec`` decoder that parses the rest of the JSON without building it:
a ``Request.Recorded`` of ~1.7 KB (its arguments and its result, a view) in ~3 µs instead of
~11 µs. A field the JSON lacks is ``None``; a stored version that needs upcasting goes the
whole way.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any
from uuid import UUID

import msgspec
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


_Stamp = msgspec.defstruct("Stamp", [("data", str)], rename={"data": "_data_"})


def _fields_decoder(fields: frozenset[str]) -> Callable[[bytes], Any]:
    """A JSON decoder of an event's state into ``fields`` (None when absent), its timestamp's
    text and its ``class_version`` (1 when absent); the other keys are parsed, not built."""
    struct = msgspec.defstruct(
        "Fields",
        [("timestamp", _Stamp), ("class_version", int, 1),
         *((name, Any, None) for name in sorted(fields))],
    )
    return msgspec.json.Decoder(struct).decode


_Few = dict[str, tuple[Callable[[bytes], Any], tuple[str, ...]]]


def _few(few: _Few, versions: dict[str, int], version_of: Callable[[str], int],
         decode_all: Callable[[Row], Envelope]) -> Callable[[Row], Envelope]:
    """The decoder of the topics of ``few``: their fields only (see the module's text)."""
    fromiso = datetime.fromisoformat
    new = object.__new__
    make = tuple.__new__

    def decode_few(row: Row) -> Envelope:
        nid, oid, over, topic, state = row
        version = versions.get(topic) or version_of(topic)
        fields, names = few[topic]
        s = fields(state)
        if s.class_version != version:
            return decode_all(row)  # an older version: upcast the whole of it
        at = s.timestamp.data
        time = fromiso(at)
        d = {"timestamp": time, "originator_id": oid, "originator_version": over}
        for name in names:
            v = getattr(s, name)
            d[name] = _unwrap(v) if type(v) is dict and "_type_" in v else v
        ev = new(StoredEvent)
        ev.__dict__ = d
        return make(Envelope, (nid, topic, ev, time, at, oid))

    return decode_few


def decoders(app: Any, partial: Mapping[str, frozenset[str]] | None = None,
             ) -> tuple[Callable[[Any], Envelope], Callable[[Row], Envelope] | None]:
    """For ``app``'s log: a function from a notification to its envelope, and one from a raw
    row (see :data:`Row`; ``None`` when the store has a cipher or compressor). ``partial``:
    topic -> the only fields its readers read (see the module's text); the notifications'
    function decodes every field still."""
    mapper = app.mapper
    if getattr(mapper, "cipher", None) or getattr(mapper, "compressor", None):
        return lambda n: envelope(n.id, mapper.to_domain_event(n), n.topic), None
    loads = _loads
    versions: dict[str, int] = {}
    fromiso = datetime.fromisoformat
    new = object.__new__
    make = tuple.__new__  # an Envelope without its generated (Python) __new__
    marker = b'"_type_"'
    texts: dict[Any, str] = {}  # originator id -> its text (an aggregate has many events)

    def slow(row: Row) -> Envelope:
        nid, oid, over, topic, state = row
        n = Notification(id=nid, originator_id=UUID(oid), originator_version=over, topic=topic,
                         state=state)
        return envelope(nid, mapper.to_domain_event(n), topic)  # needs upcasting

    few: _Few = {topic: (_fields_decoder(fields), tuple(sorted(fields)))
           for topic, fields in (partial or {}).items()}

    def version_of(topic: str) -> int:
        version = versions[topic] = getattr(resolve_topic(topic), "class_version", 1)
        return version

    def decode_row(row: Row) -> Envelope:
        return decode_few(row) if row[3] in few else decode_all(row)

    decode_few = _few(few, versions, version_of, lambda row: decode_all(row))

    def decode_all(row: Row) -> Envelope:
        nid, oid, over, topic, state = row
        version = versions.get(topic) or version_of(topic)
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
        return make(Envelope, (nid, topic, ev, time, at, oid))

    def decode(n: Any) -> Envelope:
        oid = n.originator_id
        text = texts.get(oid)
        if text is None:
            if len(texts) > 100_000:
                texts.clear()
            text = texts[oid] = str(oid)
        return decode_all((n.id, text, n.originator_version, n.topic, n.state))

    if not few:
        return decode, decode_all
    return decode, decode_row
