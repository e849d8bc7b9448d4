"""The ledger's transcoder (``services/ledger/transcoder.py``) writes exactly the bytes the
library's ``JSONTranscoder`` with sorted keys wrote before it (the stored states, and so the
evidence chain's hashes, are unchanged), and refuses exactly what it refused: over generated
values of every kind a state can hold (texts of any code point, integers of any size, floats,
UUIDs, times, enum members of every sort, the games' value objects, subclasses of the builtins,
keys of other types) and over every event a played session stores."""

from __future__ import annotations

import collections
import datetime
import enum
import json
from typing import Any
from uuid import UUID

from eventsourcing.persistence import JSONTranscoder
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.trente_et_quarante.chances import Chance
from domain.trente_et_quarante.layout import Refait31Choice, Stake, StakeStatus
from services.bootstrap import LEDGER_GAMES, TRANSCODINGS
from services.ledger.api import Ledger
from services.ledger.application import LedgerApplication
from services.ledger.config import LedgerConfig
from services.ledger.transcoder import CanonicalTranscoder, orjson_writes_alike


class Colour(enum.Enum):  # a plain enum: the library's default refuses it, orjson would not
    RED = "red"


class Odd(str, enum.Enum):  # noqa: UP042  # a text enum made of an integer (its value: the text "1")
    ONE = 1


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2**40


class Text(str):
    pass


class Whole(int):
    pass


Pair = collections.namedtuple("Pair", "a b")


def _application() -> LedgerApplication:
    return LedgerApplication(env={"PERSISTENCE_MODULE": "eventsourcing.sqlite",
                                  "SQLITE_DBNAME": ":memory:"}, transcodings=TRANSCODINGS)


APP = _application()


def _reference(canonical: JSONTranscoder) -> JSONTranscoder:
    """The transcoder as the ledger built it before: the library's, keys sorted."""
    ref = JSONTranscoder()
    for transcoding in canonical.types.values():
        ref.register(transcoding)
    ref.encoder = json.JSONEncoder(default=ref._encode_obj, separators=(",", ":"),
                                   ensure_ascii=False, sort_keys=True)
    return ref


CANONICAL = APP.mapper.transcoder
REFERENCE = _reference(CANONICAL)


def _outcome(encode: Any, value: Any) -> tuple[str, Any]:
    try:
        return "bytes", encode(value)
    except Exception as exc:  # the same refusal, of the same class
        return "refused", type(exc)


def assert_alike(value: Any) -> None:
    assert _outcome(CANONICAL.encode, value) == _outcome(REFERENCE.encode, value)


stakes = st.builds(Stake, st.text(max_size=8), st.text(max_size=8), st.sampled_from(Chance),
                   st.integers(1, 10**12), st.sampled_from(StakeStatus), st.booleans(),
                   st.none() | st.sampled_from(Refait31Choice), st.booleans())
any_text = st.text(st.characters(blacklist_categories=()), max_size=12)  # surrogates too
leaves = (
    st.none() | st.booleans() | st.integers() | st.integers(-2**64, 2**64)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text() | any_text | st.uuids()
    | st.datetimes(timezones=st.none() | st.just(datetime.UTC)) | st.dates()
    | st.decimals(allow_nan=False, places=3) | stakes
    | st.sampled_from([*Chance, *StakeStatus, *Refait31Choice, *Colour, *Odd, *Level])
    | st.builds(Text, st.text(max_size=4)) | st.builds(Whole, st.integers(-9, 9))
    | st.builds(Pair, st.integers(), st.text(max_size=3))
)
keys = st.text() | any_text | st.sampled_from([*Chance, Text("k")]) | st.integers(0, 3) | st.none()
values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=5) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=6), inner, max_size=5)
    | st.dictionaries(keys, inner, max_size=3),
    max_leaves=30,
)


@settings(max_examples=1500, deadline=None)
@given(values)
def test_same_bytes_or_same_refusal_as_the_library(value: Any) -> None:
    assert_alike(value)
    assert_alike({"state": value, "timestamp": datetime.datetime(2026, 1, 1)})


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(st.text(), st.text() | st.integers(-2**63, 2**64 - 1) | st.booleans()
                       | st.none() | stakes, max_size=8))
def test_plain_states_take_the_fast_path(state: dict[str, Any]) -> None:
    """What the ledger's events hold is written by orjson (not by the fallback), alike."""
    assert orjson_writes_alike(state)
    assert CANONICAL.encode(state) == REFERENCE.encode(state)


def test_values_orjson_writes_its_own_way_are_left_to_the_library() -> None:
    for value in (1.5, 1e16, float("nan"), UUID(int=7), Colour.RED, [[{"a": 0.1}]]):
        assert not orjson_writes_alike({"x": value})
        assert_alike({"x": value})
    for value in (Chance.NOIR, Level.HIGH, Odd.ONE, {"k": [Chance.ROUGE, (1, "x")]}):
        assert orjson_writes_alike(value)
        assert_alike(value)
    assert CANONICAL.encode({"b": 1, "a": "é\n\x00\u2028"}) == (
        '{"a":"é\\n\\u0000\u2028","b":1}'.encode())


def test_the_ledger_builds_it() -> None:
    assert type(CANONICAL) is CanonicalTranscoder


def test_every_state_of_the_pre_seam_log_is_written_alike() -> None:
    """Every state the code before the seam stored (tests/data/pre_seam: every event class of
    its demo), decoded and written again, is its stored bytes, by both transcoders."""
    from tests.contracts.pre_seam import rows

    topics = set()
    for row in rows():
        if row["topic"].startswith("sabot.ledger:Chain"):
            continue  # the chain's links: written by evidence.canonical, not the transcoder
        stored = row["state"].encode("utf-8")
        state = CANONICAL.decode(stored)
        assert CANONICAL.encode(state) == stored == REFERENCE.encode(state), row["topic"]
        topics.add(row["topic"])
    assert len(topics) >= 20


def test_a_batch_of_stakes_is_stored_alike(tmp_path: Any) -> None:
    """The batch call's events (its request holds every item and every answer) as stored, and
    decoded and written again, by both transcoders."""
    url = f"sqlite:///{tmp_path}/s.db"
    ledger = Ledger(LedgerConfig(store_url=url, seal_key=bytes(32)), games=LEDGER_GAMES)
    try:
        ledger.open_table("t", "t1", "francaise")
        shoe = ledger.open_shoe("s", "t1")
        ledger.cut("c", shoe.shoe_id, 100, "croupier")
        coup = ledger.open_coup("o", "t1").coup_id
        ledger.open_account("a", "ana")
        ledger.deposit("d", "ana", 10**6)
        items = [{"action": "place", "account_id": "ana", "chance": ("noir", "couleur")[k % 2],
                  "amount": 100 + k} for k in range(20)]
        assert ledger.stake_batch("b", coup, items).accepted == 20
        states = [n.state for n in ledger.app.recorder.select_notifications(start=1, limit=10**4)
                  if not n.topic.startswith("sabot.ledger:Chain")]
        assert len(states) > 60
        for stored in states:
            state = CANONICAL.decode(stored)
            assert CANONICAL.encode(state) == stored == REFERENCE.encode(state)
    finally:
        ledger.close()
