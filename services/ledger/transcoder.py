"""The ledger's transcoder: the library's ``JSONTranscoder`` writing sorted keys, no spaces, UTF-8
(a stored state is the canonical JSON of its content: ``evidence.canonical``), with ``orjson``
doing the writing wherever it writes the very same bytes as the standard library's encoder.

``orjson`` writes exactly what ``json.dumps(sort_keys=True, separators=(",", ":"),
ensure_ascii=False)`` writes for dicts with text keys, lists, tuples, texts, integers of at most
64 bits, booleans and None (tests/ledger/test_transcoder.py holds it to that, byte for byte, over
generated values and every event the ledger stores). It writes some other values its own way,
where the standard library calls the transcoder's ``default`` (``_encode_obj``: the registered
``Transcoding``) or writes them otherwise: a ``UUID``, an ``Enum`` member (by its value), a
float (``1e16`` for ``1e+16``). So a state is written by ``orjson`` only when none of those
is in it (``orjson_writes_alike``: one walk over its containers), the values it hands to
``default`` (datetimes, dataclasses, any other registered type: ``OPT_PASSTHROUGH_*``) go
through the same ``Transcoding`` and their encoded data is walked the same way; any other case
(a value no transcoding knows, a key that is not a text, an integer past 64 bits, nesting past
``orjson``'s limit) falls back to the standard library's encoder, which writes it, or raises,
as it always did. Decoding is the library's.
"""

from __future__ import annotations

import enum
import json
from datetime import datetime
from typing import Any
from uuid import UUID

import orjson
from eventsourcing.persistence import JSONTranscoder

_OPTIONS = (orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATETIME
            | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS)
_LEAVES = frozenset({str, int, bool, type(None)})  # written alike (an int: or refused)
_CONTAINERS = frozenset({dict, list, tuple})
_WRITTEN_OTHERWISE = (float, UUID, enum.Enum)  # orjson writes these itself, its own way
_ALIKE_MEMBERS: dict[type[Any], frozenset[int]] = {}  # per Enum class: its members written alike


class Unlike(TypeError):
    """A value that ``orjson`` would write otherwise than the standard library (``default``)."""


def _members_alike(cls: type[Any]) -> frozenset[int]:
    """The ids of the members of the Enum ``cls`` that ``orjson`` writes as the standard library
    does: a text or integer member whose value is that very text or integer (``orjson`` writes
    a member's value, the standard library the text or integer it is)."""
    found = _ALIKE_MEMBERS.get(cls)
    if found is None:
        alike = set()
        for member in cls.__members__.values():
            value = member._value_
            text = isinstance(member, str) and type(value) is str and value == str.__str__(member)
            whole = (isinstance(member, int) and not isinstance(member, bool)
                     and type(value) is int and value == int.__int__(member))
            if text or whole:
                alike.add(id(member))
        found = _ALIKE_MEMBERS[cls] = frozenset(alike)
    return found


def orjson_writes_alike(value: Any) -> bool:
    """Whether nothing in ``value`` (through dicts' values, lists and tuples) is written by
    ``orjson`` otherwise than by the standard library: no float, UUID, or Enum member other than
    a text or integer one whose value it is. Any other value is left to ``default``."""
    stack = [value]
    pop, extend = stack.pop, stack.extend
    leaves, containers = _LEAVES, _CONTAINERS
    while stack:
        v = pop()
        t = type(v)
        if t in leaves:
            continue
        if t in containers:
            extend(v.values() if t is dict else v)
            continue
        if isinstance(v, _WRITTEN_OTHERWISE) and (
                not isinstance(v, enum.Enum) or id(v) not in _members_alike(t)):
            return False
    return True


class CanonicalTranscoder(JSONTranscoder):
    """``JSONTranscoder`` writing sorted keys (see the module's text); the same bytes, faster."""

    def __init__(self) -> None:
        super().__init__()
        self._last_time: tuple[Any, dict[str, Any]] = (None, {})  # (a datetime, its encoding)
        self.encoder = json.JSONEncoder(default=self._encode_obj, separators=(",", ":"),
                                        ensure_ascii=False, sort_keys=True)

    def encode(self, obj: Any) -> bytes:
        if orjson_writes_alike(obj):
            try:
                return orjson.dumps(obj, default=self._alike, option=_OPTIONS)
            except TypeError:  # orjson.JSONEncodeError (Unlike included): the library writes it
                pass
        return self.encoder.encode(obj).encode("utf8")

    def _alike(self, o: Any) -> dict[str, Any]:
        """``default`` for ``orjson``: a registered type's transcoding, as ``_encode_obj``
        gives it, if ``orjson`` writes its data alike too; else ``Unlike`` (the fallback). The
        last time encoded is kept: every event of a command has the same one."""
        last = self._last_time
        if last[0] is o:
            return last[1]
        cls = type(o)
        transcoding = self.types.get(cls)
        if transcoding is None or isinstance(o, str | int | float | dict | list | tuple):
            raise Unlike  # the library writes a subclass of these itself, or refuses the value
        data = transcoding.encode(o)
        if type(data) is not str and not orjson_writes_alike(data):
            raise Unlike
        encoded = {"_type_": transcoding.name, "_data_": data}
        if cls is datetime:  # immutable: the same object, the same encoding
            self._last_time = (o, encoded)
        return encoded
