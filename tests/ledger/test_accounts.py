"""Double entry: cage movements, statements, premiums, snapshots of busy accounts."""

from __future__ import annotations

from services.bootstrap import LEDGER_GAMES
from services.ledger.api import Ledger

from .play import FixedInputs


def test_cage_statement_and_insurance(store_url: str) -> None:
    ledger = Ledger(FixedInputs().config(store_url), games=LEDGER_GAMES)
    ledger.open_table("t", "t1", "espanola", {"insurance_rate": "1/100"})
    ledger.open_account("a", "ana")
    assert ledger.deposit("d1", "ana", 5000).balance == 5000
    assert ledger.withdraw("w1", "ana", 1200).balance == 3800
    shoe = ledger.open_shoe("s", "t1")
    ledger.cut("c", shoe.shoe_id, 60, "ana")
    coup = ledger.open_coup("o", "t1")
    stake = ledger.place_stake("p", coup.coup_id, "ana", "noir", 1050).stake
    assert stake is not None
    insured = ledger.insure("i", coup.coup_id, stake.stake_id)
    assert insured.stake is not None and insured.stake.insured
    assert [(m.kind, m.amount, m.credit_account) for m in insured.movements] == [
        ("premium", 11, "table:t1:house_insurance")  # ceil(1050 * 1 %)
    ]
    assert insured.balance == 3800 - 1050 - 11
    steps = ledger.last_coups("t1", 1)[0].steps
    bought = [s for s in steps if s.topic.endswith("InsuranceBought")]
    assert bought and bought[0].state["premium"] == 11

    statement = ledger.statement("ana")
    assert [(e.number, e.amount, e.balance, e.kind) for e in statement.entries] == [
        (1, 5000, 5000, "cash_in"),
        (2, -1200, 3800, "cash_out"),
        (3, -1050, 2750, "stake"),
        (4, -11, 2739, "premium"),
    ]
    assert statement.entries[0].counter_account == "cage:eur"
    assert [e.number for e in ledger.statement("ana", after=2, limit=1).entries] == [3]
    assert ledger.get_account("cage:eur").balance == -3800
    assert ledger.get_account("table:t1:house_insurance").balance == 11
    topics = {e.topic.rsplit(".", 1)[-1] for e in ledger.read_events(0, 1000)}
    assert {"CashDeposited", "CashWithdrawn", "Debited", "Credited"} <= topics
    ledger.close()


def test_busy_account_is_snapshotted_and_reloads(sqlite_store_url: str) -> None:
    inputs = FixedInputs()
    ledger = Ledger(inputs.config(sqlite_store_url), games=LEDGER_GAMES)
    ledger.open_account("a", "ana")
    for i in range(520):
        ledger.deposit(f"d{i}", "ana", 1)
    assert ledger.app.snapshots is not None
    from services.ledger.ids import account_uuid

    assert list(ledger.app.snapshots.get(account_uuid("ana")))
    ledger.close()
    reopened = Ledger(inputs.config(sqlite_store_url), games=LEDGER_GAMES)
    assert reopened.get_account("ana").balance == 520
    assert reopened.get_account("ana").entries == 520
    assert reopened.withdraw("w", "ana", 20).balance == 500
    assert sum(reopened.balances().values()) == 0
    reopened.close()
