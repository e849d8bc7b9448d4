"""The ledger's event topics the views read (stable strings recorded with every event)."""

from __future__ import annotations

ACCOUNT_OPENED = "sabot.ledger:Account.Opened"
ACCOUNT_DEBITED = "sabot.ledger:Account.Debited"
ACCOUNT_CREDITED = "sabot.ledger:Account.Credited"
ACCOUNT_CASH_DEPOSITED = "sabot.ledger:Account.CashDeposited"  # a player's side of cash in
ACCOUNT_CASH_WITHDRAWN = "sabot.ledger:Account.CashWithdrawn"  # a player's side of cash out
ACCOUNT_CREDITS = frozenset({ACCOUNT_CREDITED, ACCOUNT_CASH_DEPOSITED})
ACCOUNT_DEBITS = frozenset({ACCOUNT_DEBITED, ACCOUNT_CASH_WITHDRAWN})
ACCOUNT_ENTRIES = ACCOUNT_CREDITS | ACCOUNT_DEBITS

TABLE_OPENED = "sabot.ledger:Table.Opened"
TABLE_SHOE_STARTED = "sabot.ledger:Table.ShoeStarted"
TABLE_SHOE_ENDED = "sabot.ledger:Table.ShoeEnded"
TABLE_COUP_STARTED = "sabot.ledger:Table.CoupStarted"
TABLE_CLOSED = "sabot.ledger:Table.Closed"

SHOE_SHUFFLED = "sabot.ledger:Shoe.Shuffled"
SHOE_CUT = "sabot.ledger:Shoe.Cut"
SHOE_COUP_DEALT = "sabot.ledger:Shoe.CoupDealt"
SHOE_CLOSED = "sabot.ledger:Shoe.Closed"

REQUEST_RECORDED = "sabot.ledger:Request.Recorded"  # a command: its actor and effects

COUP_OPENED = "sabot.ledger:Coup.Opened"
COUP_STAKE_CARRIED_OVER = "sabot.ledger:Coup.StakeCarriedOver"
COUP_LAYOUT_RESTATED = "sabot.ledger:Coup.LayoutRestated"
COUP_MONEY_MOVED = "sabot.ledger:Coup.MoneyMoved"
COUP_BETTING_CLOSED = "sabot.ledger:Coup.BettingClosed"
COUP_CARD_DEALT = "sabot.ledger:Coup.CardDealt"
COUP_RESOLVED = "sabot.ledger:Coup.Resolved"
COUP_SETTLED = "sabot.ledger:Coup.Settled"

# Every event of a stake carries its fate and the stake after it (services.ledger.coup).
STAKE_EVENTS = frozenset(
    "sabot.ledger:Coup." + name
    for name in (
        "StakePlaced", "StakeRaised", "StakeWithdrawn", "InsuranceBought", "Refait31Chosen",
        "StakeHalfWithdrawn", "StakeMoved", "StakeWon", "StakeLost", "StakeVoided",
        "StakePartaged", "StakeImprisoned", "StakeSecondPrison", "StakeReleased",
        "StakeBackToPrison", "StakePrisonLost", "StakeReturned", "StakeHalfReturned",
    )
)
# Fates that are a settlement of a stake in action (the stake was exposed to a decided deal).
SETTLEMENT_FATES = frozenset(
    {"won", "lost", "void", "partage", "imprisoned", "second_prison", "released",
     "back_to_prison", "prison_lost", "returned"}
)
COUP_EVENTS = frozenset(
    {COUP_OPENED, COUP_STAKE_CARRIED_OVER, COUP_LAYOUT_RESTATED, COUP_MONEY_MOVED,
     COUP_BETTING_CLOSED, COUP_CARD_DEALT, COUP_RESOLVED, COUP_SETTLED}
) | STAKE_EVENTS


def short(topic: str) -> str:
    """``sabot.ledger:Coup.StakePlaced`` -> ``Coup.StakePlaced``."""
    return topic.rsplit(":", 1)[-1]
