"""``FastTrigger.trigger_event`` (services/ledger/trigger.py) makes the very event the library's
``trigger_event`` makes: equal, with the same attributes in the same order, stored as the same
bytes, the aggregate left in the same state; and refuses what the library refuses. Over
generated values of the fields of the stake path's events (the postings, ``StakePlaced``)."""

from __future__ import annotations

import datetime
from typing import Any
from uuid import UUID

import pytest
from eventsourcing.domain import BaseAggregate, ProgrammingError
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.trente_et_quarante.chances import Chance
from domain.trente_et_quarante.layout import Stake, StakeStatus
from services.bootstrap import TRANSCODINGS
from services.ledger.account import Account
from services.ledger.application import LedgerApplication
from services.ledger.trigger import FastTrigger
from services.trente_et_quarante.coup import Coup

APP = LedgerApplication(env={"PERSISTENCE_MODULE": "eventsourcing.sqlite",
                             "SQLITE_DBNAME": ":memory:"}, transcodings=TRANSCODINGS)
ID = UUID("00000000-0000-4000-8000-000000000001")
T0 = datetime.datetime(2026, 12, 4, 18, 0, tzinfo=datetime.UTC)

texts = st.text(max_size=20)
ints = st.integers(min_value=-(2**70), max_value=2**70)
times = st.datetimes(timezones=st.just(datetime.UTC))
stakes = st.builds(Stake, texts, texts, st.sampled_from(Chance), st.integers(1, 10**9),
                   st.sampled_from(StakeStatus), st.booleans())


def _account() -> Account:
    return Account._create(Account.Opened, id=ID, timestamp=T0, account_id="ana",
                           kind="player", currency="EUR", table_id=None)


def _coup() -> Coup:
    return Coup._create(Coup.Opened, id=ID, timestamp=T0, table_id="t1", shoe_id="s",
                        number=1, number_in_shoe=1, start_position=0)


def _both(make: Any, event_class: type[Any], **kwargs: Any) -> tuple[Any, Any]:
    """The aggregate after the event triggered fast, and after the library's trigger."""
    fast, slow = make(), make()
    fast.trigger_event(event_class, **kwargs)
    BaseAggregate.trigger_event(slow, event_class, **kwargs)
    return fast, slow


def _same(fast: Any, slow: Any) -> None:
    assert len(fast.pending_events) == len(slow.pending_events)
    for a, b in zip(fast.pending_events, slow.pending_events, strict=True):
        assert type(a) is type(b)
        assert a == b
        assert list(vars(a).items()) == list(vars(b).items())  # the same order too
        assert APP.mapper.to_stored_event(a) == APP.mapper.to_stored_event(b)
    fast_state = {k: v for k, v in vars(fast).items() if k != "_pending_events"}
    slow_state = {k: v for k, v in vars(slow).items() if k != "_pending_events"}
    assert fast_state == slow_state


@settings(max_examples=200, deadline=None)
@given(event=st.sampled_from([Account.Debited, Account.Credited, Account.CashDeposited,
                              Account.CashWithdrawn]),
       amount=ints, counter=texts, kind=texts, cause=texts,
       stake_id=st.none() | texts, balance=ints, ts=times)
def test_a_posting_is_the_librarys(event: type[Any], amount: int, counter: str, kind: str,
                                   cause: str, stake_id: str | None, balance: int,
                                   ts: datetime.datetime) -> None:
    fast, slow = _both(_account, event, timestamp=ts, amount=amount, counter_account=counter,
                       kind=kind, cause=cause, stake_id=stake_id, balance=balance)
    _same(fast, slow)
    assert fast.balance == slow.balance and fast.version == 2


@settings(max_examples=200, deadline=None)
@given(event=st.sampled_from([Coup.StakePlaced, Coup.StakeRaised, Coup.StakeWithdrawn]),
       sid=texts, player=texts, chance=st.sampled_from(Chance), before=ints, after=ints,
       status=st.none() | st.sampled_from([s.value for s in StakeStatus]),
       stake=st.none() | stakes, ts=times)
def test_a_stake_event_is_the_librarys(event: type[Any], sid: str, player: str, chance: Chance,
                                       before: int, after: int, status: str | None,
                                       stake: Stake | None, ts: datetime.datetime) -> None:
    fast, slow = _both(_coup, event, timestamp=ts, stake_id=sid, account_id=player,
                       chance=chance.value, fate="placed", amount_before=before,
                       amount_after=after, status_after=status, stake=stake)
    _same(fast, slow)
    assert fast.owners == slow.owners and fast.domain_layout() == slow.domain_layout()


def test_two_events_in_a_row_and_a_layout_restated() -> None:
    stake = Stake("s1", "ana", Chance.NOIR, 100)
    fast, slow = _coup(), _coup()
    for agg in (fast, slow):
        trigger = agg.trigger_event if agg is fast else (
            lambda cls, **kw: BaseAggregate.trigger_event(slow, cls, **kw))
        trigger(Coup.StakePlaced, timestamp=T0, stake_id="s1", account_id="ana",
                chance="noir", fate="placed", amount_before=0, amount_after=100,
                status_after="free", stake=stake)
        trigger(Coup.LayoutRestated, timestamp=T0, stakes=(stake,))
    _same(fast, slow)
    assert fast.version == 3


def test_what_the_fast_path_leaves_to_the_library() -> None:
    # no time given: the library makes one
    fast = _account()
    fast.trigger_event(Account.Debited, timestamp=None, amount=1, counter_account="x",
                       kind="k", cause="c", stake_id=None, balance=-1)
    assert fast.pending_events[-1].timestamp is not None
    # an argument the event does not have, or one missing: the library's TypeError
    for kwargs in ({"amount": 1, "surplus": 2}, {"amount": 1}):
        with pytest.raises(TypeError):
            _account().trigger_event(Account.Debited, timestamp=T0, **kwargs)
    # the base Event class: refused as the library refuses it
    with pytest.raises(ProgrammingError):
        _account().trigger_event(Account.Event, timestamp=T0)


def test_the_stake_paths_aggregates_trigger_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    assert issubclass(Account, FastTrigger) and issubclass(Coup, FastTrigger)
    account = _account()

    def library(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the library's trigger_event was called")

    monkeypatch.setattr(BaseAggregate, "trigger_event", library)
    account.trigger_event(Account.Credited, timestamp=T0, amount=5, counter_account="x",
                          kind="k", cause="c", stake_id=None, balance=5)
    assert account.balance == 5 and account.version == 2
