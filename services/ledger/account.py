"""The Account aggregate: one side of every double-entry movement.

The balance is credits minus debits. Players' accounts never go below zero (the commands check
before they move money); the table's bank, layout and house accounts and the cage may.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventsourcing.domain import Aggregate

from services.ledger.trigger import FastTrigger


class AccountKind:
    PLAYER = "player"
    BANK = "bank"
    LAYOUT = "layout"
    HOUSE_INSURANCE = "house_insurance"
    HOUSE_PARTAGE = "house_partage"
    HOUSE_PRISON = "house_prison"
    CAGE = "cage"


class Account(FastTrigger, Aggregate):
    TOPIC = "sabot.ledger:Account"

    if TYPE_CHECKING:
        account_id: str
        kind: str
        currency: str
        table_id: str | None
        balance: int
        entries: int

    class Event(Aggregate.Event):
        TOPIC = "sabot.ledger:Account.Event"

    class Opened(Aggregate.Created):
        TOPIC = "sabot.ledger:Account.Opened"
        class_version = 1
        account_id: str
        kind: str
        currency: str
        table_id: str | None

        def apply(self, agg: Account) -> None:
            agg.account_id = self.account_id
            agg.kind = self.kind
            agg.currency = self.currency
            agg.table_id = self.table_id
            agg.balance = 0
            agg.entries = 0

    class Debited(Event):
        """``amount`` left this account for ``counter_account``."""

        TOPIC = "sabot.ledger:Account.Debited"
        class_version = 1
        amount: int
        counter_account: str
        kind: str
        cause: str
        stake_id: str | None
        balance: int  # after the entry

        def apply(self, agg: Account) -> None:
            agg.balance -= self.amount
            agg.entries += 1

    class Credited(Event):
        """``amount`` came into this account from ``counter_account``."""

        TOPIC = "sabot.ledger:Account.Credited"
        class_version = 1
        amount: int
        counter_account: str
        kind: str
        cause: str
        stake_id: str | None
        balance: int  # after the entry

        def apply(self, agg: Account) -> None:
            agg.balance += self.amount
            agg.entries += 1

    class CashDeposited(Credited):
        """Cash in at the cage: the player's side (the cage's side is Debited)."""

        TOPIC = "sabot.ledger:Account.CashDeposited"

    class CashWithdrawn(Debited):
        """Cash out at the cage: the player's side (the cage's side is Credited)."""

        TOPIC = "sabot.ledger:Account.CashWithdrawn"


DEBIT_TOPICS = frozenset({Account.Debited.TOPIC, Account.CashWithdrawn.TOPIC})
ENTRY_TOPICS = DEBIT_TOPICS | {Account.Credited.TOPIC, Account.CashDeposited.TOPIC}
