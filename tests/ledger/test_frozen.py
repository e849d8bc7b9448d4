"""``services/ledger/frozen.py``: the library's records made without their frozen ``__init__``
are the objects their classes make (equal, the same attributes in the same order, the same
hash); ``LedgerMapper`` stores an event as the library's ``Mapper`` does; the ledger's
application uses it."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any
from uuid import UUID

from eventsourcing.application import Recording
from eventsourcing.persistence import Mapper, Notification, StoredEvent
from hypothesis import given, settings
from hypothesis import strategies as st

from services.bootstrap import TRANSCODINGS
from services.ledger.account import Account
from services.ledger.application import LedgerApplication, LedgerMapper, recording, stored_event
from services.ledger.frozen import fields_of, make
from services.ledger.request import Request

APP = LedgerApplication(env={"PERSISTENCE_MODULE": "eventsourcing.sqlite",
                             "SQLITE_DBNAME": ":memory:"}, transcodings=TRANSCODINGS)
LIBRARY = Mapper(transcoder=APP.mapper.transcoder)
T0 = datetime.datetime(2026, 12, 4, 18, 0, tzinfo=datetime.UTC)
jsons = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=20)


def _alike(made: Any, built: Any) -> None:
    assert type(made) is type(built)
    assert made == built and hash(made) == hash(built)
    assert list(vars(made).items()) == list(vars(built).items())


def test_the_application_uses_the_ledgers_mapper() -> None:
    assert type(APP.mapper) is LedgerMapper
    assert APP.mapper.transcoder is LIBRARY.transcoder


@settings(max_examples=200, deadline=None)
@given(oid=st.uuids(), version=st.integers(1, 2**40), topic=st.text(max_size=30),
       state=st.binary(max_size=64), position=st.integers(1, 2**62))
def test_records_are_their_classes(oid: UUID, version: int, topic: str, state: bytes,
                                   position: int) -> None:
    made = stored_event(oid, version, topic, state)
    _alike(made, StoredEvent(originator_id=oid, originator_version=version, topic=topic,
                             state=state))
    event = object()
    kept = recording(event, made, position)
    _alike(kept.notification, Notification(originator_id=oid, originator_version=version,
                                           topic=topic, state=state, id=position))
    assert kept.domain_event is event and type(kept) is Recording


@settings(max_examples=200, deadline=None)
@given(amount=st.integers(), balance=st.integers(), cause=st.text(), stake=st.none() | st.text(),
       ts=st.datetimes(timezones=st.just(datetime.UTC)), version=st.integers(2, 2**40))
def test_a_posting_is_stored_as_the_library_stores_it(amount: int, balance: int, cause: str,
                                                      stake: str | None, ts: datetime.datetime,
                                                      version: int) -> None:
    event = Account.Debited(originator_id=UUID(int=7), originator_version=version, timestamp=ts,
                            amount=amount, counter_account="table:t1:layout", kind="stake",
                            cause=cause, stake_id=stake, balance=balance)
    _alike(APP.mapper.to_stored_event(event), LIBRARY.to_stored_event(event))


@settings(max_examples=100, deadline=None)
@given(arguments=st.dictionaries(st.text(max_size=6), jsons, max_size=5),
       result=st.dictionaries(st.text(max_size=6), jsons, max_size=5))
def test_a_request_is_stored_as_the_library_stores_it(arguments: dict[str, Any],
                                                      result: dict[str, Any]) -> None:
    request = Request._create(Request.Recorded, id=UUID(int=9), request_id="r", command="c",
                              arguments=arguments, result=result, actor={"principal": "p"},
                              effects=[["x", 1]], timestamp=T0)
    (event,) = request.collect_events()  # a version 3 event: its class_version stored
    _alike(APP.mapper.to_stored_event(event), LIBRARY.to_stored_event(event))


def test_what_make_may_make() -> None:
    assert fields_of(StoredEvent) == ("originator_id", "originator_version", "topic", "state")

    @dataclasses.dataclass(frozen=True)
    class Checked:
        x: int

        def __post_init__(self) -> None:
            assert self.x > 0

    @dataclasses.dataclass(frozen=True, slots=True)
    class Slotted:
        x: int

    @dataclasses.dataclass(frozen=True)
    class Derived:
        x: int
        y: int = dataclasses.field(init=False, default=0)

    assert fields_of(Checked) is None and fields_of(Slotted) is None
    assert fields_of(Derived) is None and fields_of(int) is None
    _alike(make(StoredEvent, {"originator_id": "a", "originator_version": 1, "topic": "t",
                              "state": b""}),
           StoredEvent(originator_id="a", originator_version=1, topic="t", state=b""))
