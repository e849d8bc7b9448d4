"""``vocabulary.state`` remembers what it decoded by the stored bytes: for any bytes (JSON or
not, wrapped values, nested), the answer is the one ``RawEvent.content()`` gives, asked once
or again, and other bytes (an edit) are decoded anew."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from services.ledger.core import unwrapped
from services.regulator import vocabulary
from services.regulator.source import RawEvent
from services.regulator.vocabulary import state

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["a", "b", "_type_", "_data_"]), inner, max_size=3)
    | st.builds(lambda t, d: {"_type_": t, "_data_": d}, st.text(max_size=4), inner),
    max_leaves=12)


def _as_before(ev: RawEvent) -> dict[str, Any]:
    """``state`` as it was: the content's state, unwrapped, {} when not a JSON object."""
    data = unwrapped(ev.content().get("state", {}))
    return data if isinstance(data, dict) else {}


def _event(stored: bytes) -> RawEvent:
    return RawEvent(7, "00000000-0000-0000-0000-000000000001", 1, "t", stored)


@given(value=_json)
def test_state_is_the_contents_state(value: Any) -> None:
    ev = _event(json.dumps(value).encode())
    assert state(ev) == _as_before(ev)
    assert state(_event(bytes(ev.state))) == _as_before(ev)  # remembered: the same answer


@given(stored=st.binary(max_size=40))
def test_any_bytes_as_the_content(stored: bytes) -> None:
    ev = _event(stored)
    assert state(ev) == _as_before(ev)


def test_an_edit_is_decoded_anew() -> None:
    vocabulary._decoded.cache_clear()
    ev = _event(b'{"amount":{"_type_":"int","_data_":5}}')
    assert state(ev) == {"amount": 5}
    assert state(_event(ev.state.replace(b"5", b"6"))) == {"amount": 6}
    assert vocabulary._decoded.cache_info().misses == 2
