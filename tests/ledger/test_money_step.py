"""The ledger's one money step (``services.ledger.core``: ``Core.transfer``, ``Transfer``), which
every game's movements go through: it refuses, before anything is stored, a transfer of a
non-positive amount, a transfer from an account to itself, a step in two currencies, and a
command whose postings do not sum to zero (``check_balanced``); a refused command leaves every
balance and the log as they were, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from domain.errors import FailedPrecondition, InvalidArgument, RuleViolation
from services.bootstrap import LEDGER_GAMES
from services.ledger.account import Account
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig
from services.ledger.core import Transfer
from services.ledger.writer import UnitOfWork

KEY = bytes(range(32))


@pytest.fixture
def ledger(store_url: str) -> Iterator[Ledger]:
    ledger = Ledger(LedgerConfig(store_url=store_url, seal_key=KEY), games=LEDGER_GAMES)
    try:
        ledger.open_account("o-ana", "ana")
        ledger.open_account("o-beto", "beto")
        ledger.open_account("o-cruz", "cruz", "USD")
        ledger.open_account("o-dora", "dora", "USD")
        for name in ("ana", "cruz"):
            ledger.deposit(f"d-{name}", name, 1_000)
        yield ledger
    finally:
        ledger.close()


@dataclass(frozen=True)
class Done:
    """The test command's answer (a stored answer is an object)."""

    done: str = "done"


def _run(ledger: Ledger, rid: str, step: Callable[[UnitOfWork, Callable[[str], Account]], Any]
         ) -> str:
    """A command whose ``decide`` is ``step(unit, account)``."""
    core = ledger.core

    def decide(unit: UnitOfWork) -> Done:
        step(unit, lambda name: core.account(unit, name))
        return Done()

    return core.run("money_step_test", rid, {}, decide, Done).done


def _state(ledger: Ledger) -> tuple[int, dict[str, int]]:
    """How many events the log holds, and every balance."""
    count, after = 0, 0
    while batch := ledger.read_events(after, 1000):
        count += len(batch)
        after = batch[-1].position
    names = ("ana", "beto", "cruz", "dora", "cage:eur", "cage:usd")
    return count, {n: ledger.get_account(n).balance for n in names}


def _transfer(ledger: Ledger, rid: str, *moves: tuple[str, str, Any]) -> str:
    def step(unit: UnitOfWork, account: Callable[[str], Account]) -> None:
        transfers: list[Transfer[None]] = [Transfer(account(d), account(c), amount, "test")
                                           for d, c, amount in moves]
        ledger.core.transfer(transfers, rid, unit.now)

    return _run(ledger, rid, step)


def test_a_transfer_moves_the_money_and_its_two_entries(ledger: Ledger) -> None:
    count, before = _state(ledger)
    assert _transfer(ledger, "t1", ("ana", "beto", 300), ("ana", "beto", 200)) == "done"
    _, after = _state(ledger)
    assert (after["ana"], after["beto"]) == (before["ana"] - 500, before["beto"] + 500)
    entries = [e for e in ledger.read_events(count, 10) if e.topic.startswith(
        "sabot.ledger:Account.")]
    assert [(e.topic.rsplit(".", 1)[1], e.state["amount"]) for e in entries] == [
        ("Debited", 300), ("Debited", 200), ("Credited", 300), ("Credited", 200)]  # by account


@pytest.mark.parametrize("amount", [0, -5, True, 10**16])
def test_a_non_positive_or_absurd_amount_is_refused_before_anything(ledger: Ledger,
                                                                    amount: Any) -> None:
    before = _state(ledger)
    with pytest.raises(InvalidArgument) as caught:
        _transfer(ledger, f"bad-{amount}", ("ana", "beto", 100), ("ana", "beto", amount))
    assert (caught.value.field, caught.value.reason) == ("amount", "OUT_OF_RANGE")
    assert _state(ledger) == before  # not even the first, good transfer


def test_a_transfer_to_the_same_account_is_refused(ledger: Ledger) -> None:
    before = _state(ledger)
    with pytest.raises(FailedPrecondition) as caught:
        _transfer(ledger, "same", ("ana", "ana", 100))
    assert (caught.value.field, caught.value.reason) == ("account_id", "SAME_ACCOUNT")
    assert _state(ledger) == before


@pytest.mark.parametrize("moves", [
    (("ana", "dora", 100),),  # one transfer across two currencies
    (("ana", "beto", 100), ("cruz", "dora", 100)),  # each in its own: one step, two currencies
])
def test_two_currencies_are_refused(ledger: Ledger, moves: tuple[tuple[str, str, int], ...]
                                    ) -> None:
    before = _state(ledger)
    with pytest.raises(FailedPrecondition) as caught:
        _transfer(ledger, f"fx-{len(moves)}", *moves)
    assert (caught.value.field, caught.value.reason) == ("amount", "CURRENCY_MISMATCH")
    assert _state(ledger) == before


def test_a_command_whose_postings_do_not_sum_to_zero_stores_nothing(ledger: Ledger) -> None:
    """A command that moves money by a lone entry (not a whole transfer) is refused after its
    ``decide`` (``check_balanced``): nothing of it is stored, and the ledger goes on."""
    before = _state(ledger)

    def lone_credit(unit: UnitOfWork, account: Callable[[str], Account]) -> None:
        beto = account("beto")
        beto.trigger_event(Account.Credited, timestamp=unit.now, amount=70,
                           counter_account="nobody", kind="test", cause="lone",
                           stake_id=None, balance=beto.balance + 70)

    with pytest.raises(RuleViolation):
        _run(ledger, "lone", lone_credit)
    assert _state(ledger) == before
    assert _transfer(ledger, "after", ("ana", "beto", 10)) == "done"  # the ledger goes on
    _, after = _state(ledger)
    assert after["beto"] == before[1]["beto"] + 10  # not + 80: the lone credit is gone


def test_check_balanced_names_the_currency_and_the_imbalance(ledger: Ledger) -> None:
    """The refusal itself, as ``decide`` sees it (a unit that got the lone entry)."""
    from services.ledger.core import check_balanced

    seen: list[RuleViolation] = []

    def lone_debit(unit: UnitOfWork, account: Callable[[str], Account]) -> None:
        ana = account("ana")
        ana.trigger_event(Account.Debited, timestamp=unit.now, amount=40,
                          counter_account="nobody", kind="test", cause="lone",
                          stake_id=None, balance=ana.balance - 40)
        try:
            check_balanced(unit)
        except RuleViolation as exc:
            seen.append(exc)
        raise FailedPrecondition("amount", "STOP", "stop here")

    with pytest.raises(RuleViolation):
        _run(ledger, "lone-debit", lone_debit)
    assert [(e.field, e.reason) for e in seen] == [("amount", "UNBALANCED")]
    assert "EUR -40" in str(seen[0])
