"""The ledger's topics this verifier reads (docs/export-format.md, "The ledger's events").

The verifier's own copy, on purpose: it shares no code with the server. The names and values
are the server's (``services/topics.py``); ``tests/contracts/test_topics.py`` keeps them equal.
"""

from __future__ import annotations

P = "sabot.ledger:"

# core
ACCOUNT_OPENED = P + "Account.Opened"
ACCOUNT_DEBITED = P + "Account.Debited"
ACCOUNT_CREDITED = P + "Account.Credited"
ACCOUNT_CASH_DEPOSITED = P + "Account.CashDeposited"
ACCOUNT_CASH_WITHDRAWN = P + "Account.CashWithdrawn"
ACCOUNT_DEBITS = frozenset({ACCOUNT_DEBITED, ACCOUNT_CASH_WITHDRAWN})
ACCOUNT_CREDITS = frozenset({ACCOUNT_CREDITED, ACCOUNT_CASH_DEPOSITED})
ACCOUNT_ENTRIES = ACCOUNT_DEBITS | ACCOUNT_CREDITS
TABLE_OPENED = P + "Table.Opened"
TABLE_CLOSED = P + "Table.Closed"
SHOE_SHUFFLED = P + "Shoe.Shuffled"
SHOE_CUT = P + "Shoe.Cut"
SHOE_CLOSED = P + "Shoe.Closed"
REQUEST_RECORDED = P + "Request.Recorded"
CHAIN_LINKED = P + "Chain.Linked"
CHAINED_SNAPSHOT = P + "Snapshot"
SHOE_PREFIX = P + "Shoe."  # every event of a shoe

# Trente et Quarante
SHOE_COUP_DEALT = P + "Shoe.CoupDealt"
COUP_OPENED = P + "Coup.Opened"
COUP_STAKE_CARRIED_OVER = P + "Coup.StakeCarriedOver"
COUP_STAKE_PLACED = P + "Coup.StakePlaced"
COUP_LAYOUT_RESTATED = P + "Coup.LayoutRestated"
COUP_MONEY_MOVED = P + "Coup.MoneyMoved"
COUP_CARD_DEALT = P + "Coup.CardDealt"
COUP_RESOLVED = P + "Coup.Resolved"
COUP_SETTLED = P + "Coup.Settled"
COUP_PREFIX = P + "Coup."  # every event of a coup
STAKE_EVENTS = frozenset(
    P + "Coup." + n
    for n in (
        "StakePlaced", "StakeRaised", "StakeWithdrawn", "InsuranceBought", "Refait31Chosen",
        "StakeHalfWithdrawn", "StakeMoved", "StakeWon", "StakeLost", "StakeVoided",
        "StakePartaged", "StakeImprisoned", "StakeSecondPrison", "StakeReleased",
        "StakeBackToPrison", "StakePrisonLost", "StakeReturned", "StakeHalfReturned",
    )
)

# Cuarenta
CUARENTA_MATCH_OPENED = P + "CuarentaMatch.Opened"
CUARENTA_MATCH_HAND_BEGUN = P + "CuarentaMatch.HandBegun"
CUARENTA_MATCH_DEALT = P + "CuarentaMatch.Dealt"
CUARENTA_MATCH_RONDA_SCORED = P + "CuarentaMatch.RondaScored"
CUARENTA_MATCH_FOUR_DEALT = P + "CuarentaMatch.FourDealt"
CUARENTA_MATCH_PLAYED = P + "CuarentaMatch.Played"
CUARENTA_MATCH_CAPTURED = P + "CuarentaMatch.Captured"
CUARENTA_MATCH_HAND_SCORED = P + "CuarentaMatch.HandScored"
CUARENTA_MATCH_FORFEITED = P + "CuarentaMatch.Forfeited"
CUARENTA_MATCH_WON = P + "CuarentaMatch.Won"
CUARENTA_MATCH_MONEY_MOVED = P + "CuarentaMatch.MoneyMoved"

# Treinta y Una
TREINTA_Y_UNA_ROUND_OPENED = P + "TreintaYUnaRound.Opened"
TREINTA_Y_UNA_ROUND_STAKE_PLACED = P + "TreintaYUnaRound.StakePlaced"
TREINTA_Y_UNA_ROUND_CARD_DEALT = P + "TreintaYUnaRound.CardDealt"
TREINTA_Y_UNA_ROUND_CARD_DRAWN = P + "TreintaYUnaRound.CardDrawn"
TREINTA_Y_UNA_ROUND_PLANTED = P + "TreintaYUnaRound.Planted"
TREINTA_Y_UNA_ROUND_HAND_BUST = P + "TreintaYUnaRound.HandBust"
TREINTA_Y_UNA_ROUND_HAND_SHOWN = P + "TreintaYUnaRound.HandShown"
TREINTA_Y_UNA_ROUND_STAKE_SETTLED = P + "TreintaYUnaRound.StakeSettled"
TREINTA_Y_UNA_ROUND_MONEY_MOVED = P + "TreintaYUnaRound.MoneyMoved"
TREINTA_Y_UNA_ROUND_SETTLED = P + "TreintaYUnaRound.Settled"
