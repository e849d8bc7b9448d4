"""Request ids: a retry returns the first answer and stores nothing; reuse with other arguments
is refused; refused commands store nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from domain.errors import FailedPrecondition, InvalidArgument, NotFound
from services.bootstrap import LEDGER_GAMES
from services.ledger.api import Ledger
from services.ledger.errors import AlreadyExists, RequestIdReused

from .play import FixedInputs, cut_table


def last_position(ledger: Ledger) -> int:
    return ledger.app.recorder.max_notification_id() or 0


@pytest.fixture
def ledger(store_url: str) -> Iterator[Ledger]:
    ledger = cut_table(store_url)
    yield ledger
    ledger.close()


def test_retry_returns_first_answer_without_effect(ledger: Ledger, store_url: str) -> None:
    coup = ledger.open_coup("oc", "t1")
    first = ledger.place_stake("p1", coup.coup_id, "ana", "noir", 1000)
    mark = last_position(ledger)
    again = ledger.place_stake("p1", coup.coup_id, "ana", "noir", 1000)
    assert again == first
    assert last_position(ledger) == mark
    assert ledger.get_account("ana").balance == 9000
    assert len(ledger.get_coup(coup.coup_id).layout) == 1
    assert ledger.deposit("d", "ana", 10_000).balance == 10_000  # the first answer
    assert ledger.get_account("ana").balance == 9000
    ledger.close()
    # after a restart too
    reopened = Ledger(FixedInputs().config(store_url), games=LEDGER_GAMES)
    assert reopened.place_stake("p1", coup.coup_id, "ana", "noir", 1000) == first
    assert reopened.get_account("ana").balance == 9000
    assert last_position(reopened) == mark
    reopened.close()


def test_reused_request_id_with_other_arguments(ledger: Ledger) -> None:
    coup = ledger.open_coup("oc", "t1")
    ledger.place_stake("p1", coup.coup_id, "ana", "noir", 1000)
    mark = last_position(ledger)
    with pytest.raises(RequestIdReused) as err:
        ledger.place_stake("p1", coup.coup_id, "ana", "noir", 2000)
    assert err.value.field == "request_id"
    with pytest.raises(AlreadyExists):
        ledger.deposit("p1", "ana", 5)
    assert last_position(ledger) == mark


@pytest.mark.parametrize(
    ("call", "error", "field"),
    [
        (lambda L, c: L.place_stake("x", c, "ana", "noir", 20_000), FailedPrecondition, "amount"),
        (lambda L, c: L.place_stake("x", c, "ana", "blue", 1000), InvalidArgument, "chance"),
        (lambda L, c: L.place_stake("x", c, "ana", "noir", 0), InvalidArgument, "amount"),
        (lambda L, c: L.place_stake("x", c, "nobody", "noir", 100), NotFound, "account_id"),
        (lambda L, c: L.place_stake("x", c, "Bad Id", "noir", 100), InvalidArgument,
         "account_id"),
        (lambda L, c: L.place_stake("x", "not-a-uuid", "ana", "noir", 100), InvalidArgument,
         "coup_id"),
        (lambda L, c: L.withdraw_stake("x", c, "00000000-0000-0000-0000-00000000ffff"),
         NotFound, "stake_id"),
        (lambda L, c: L.settle("x", c), FailedPrecondition, "coup_id"),
        (lambda L, c: L.open_coup("x", "t1"), FailedPrecondition, "table_id"),
        (lambda L, c: L.open_table("x", "t1"), AlreadyExists, "table_id"),
        (lambda L, c: L.open_table("x", "t2", "klondike"), InvalidArgument, "preset"),
        (lambda L, c: L.open_shoe("x", "t1"), FailedPrecondition, "table_id"),
        (lambda L, c: L.withdraw("x", "ana", 10_001), FailedPrecondition, "amount"),
        (lambda L, c: L.open_account("x", "ana"), AlreadyExists, "account_id"),
        (lambda L, c: L.deposit("", "ana", 1), InvalidArgument, "request_id"),
        (lambda L, c: L.get_table("nope"), NotFound, "table_id"),
    ],
)
def test_refused_commands_store_nothing(ledger: Ledger, call, error, field) -> None:  # type: ignore[no-untyped-def]
    coup = ledger.open_coup("oc", "t1")
    mark = last_position(ledger)
    with pytest.raises(error) as err:
        call(ledger, coup.coup_id)
    assert err.value.field == field
    assert err.value.message
    assert last_position(ledger) == mark
    # the same request id is free for a valid command afterwards
    ledger.place_stake("x", coup.coup_id, "ana", "noir", 100)
    assert ledger.get_account("ana").balance == 9900


def test_betting_closed_after_deal(ledger: Ledger) -> None:
    coup = ledger.open_coup("oc", "t1")
    stake = ledger.place_stake("p", coup.coup_id, "ana", "rouge", 1000).stake
    assert stake is not None
    ledger.deal("dl", coup.coup_id)
    for call in (
        lambda: ledger.place_stake("p2", coup.coup_id, "ana", "rouge", 100),
        lambda: ledger.withdraw_stake("w", coup.coup_id, stake.stake_id),
        lambda: ledger.deal("dl2", coup.coup_id),
    ):
        with pytest.raises(FailedPrecondition) as err:
            call()
        assert err.value.field == "coup_id"
