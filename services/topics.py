"""Every topic the ledger stores, once: the stable strings in each stored event's ``topic``
column, in each ``Created`` event's ``originator_topic`` and in each stored snapshot's topic.

Data only (no import): the aggregates keep their literal ``TOPIC``s (``services/ledger/…``);
every reader (the regulator, the projections, the streams, each game's readers) takes them from
here; ``tests/contracts/test_topics.py`` equates the two, and this module with the standalone
verifier's own copy (``ops/sabot_verify/topics.py``). A constant is named after its topic:
``sabot.ledger:Coup.StakePlaced`` is ``COUP_STAKE_PLACED``. A new game adds its section (its
topics name their game, ``sabot.ledger:TreintaYUna.…``, so two games never collide) and joins
``EVENTS``/``AGGREGATES`` below.
"""

from __future__ import annotations

P = "sabot.ledger:"


def short(topic: str) -> str:
    """``sabot.ledger:Coup.StakePlaced`` -> ``Coup.StakePlaced``."""
    return topic.rsplit(":", 1)[-1]


# --- core: services/ledger/{account,table,shoe,request,evidence}.py -----------------------------

ACCOUNT = P + "Account"
ACCOUNT_OPENED = P + "Account.Opened"
ACCOUNT_DEBITED = P + "Account.Debited"
ACCOUNT_CREDITED = P + "Account.Credited"
ACCOUNT_CASH_DEPOSITED = P + "Account.CashDeposited"  # a player's side of cash in
ACCOUNT_CASH_WITHDRAWN = P + "Account.CashWithdrawn"  # a player's side of cash out
ACCOUNT_CREDITS = frozenset({ACCOUNT_CREDITED, ACCOUNT_CASH_DEPOSITED})
ACCOUNT_DEBITS = frozenset({ACCOUNT_DEBITED, ACCOUNT_CASH_WITHDRAWN})
ACCOUNT_ENTRIES = ACCOUNT_CREDITS | ACCOUNT_DEBITS  # the postings

TABLE = P + "Table"
TABLE_OPENED = P + "Table.Opened"
TABLE_SHOE_STARTED = P + "Table.ShoeStarted"
TABLE_SHOE_ENDED = P + "Table.ShoeEnded"
TABLE_CLOSED = P + "Table.Closed"  # its stakes settled on its latest round (``coup_id``)

SHOE = P + "Shoe"
SHOE_SHUFFLED = P + "Shoe.Shuffled"  # a shoe's first event: its commitment, sealed seed
SHOE_CUT = P + "Shoe.Cut"
SHOE_CLOSED = P + "Shoe.Closed"  # the seed revealed

REQUEST = P + "Request"
REQUEST_RECORDED = P + "Request.Recorded"  # a command: its answer, actor and effects

CHAIN = P + "Chain"
CHAIN_LINKED = P + "Chain.Linked"  # the writer's evidence, one per saved batch (SABOT-CHAIN-1)
CHAINED_SNAPSHOT = P + "Snapshot"  # the topic of a snapshot row of the chain's era

CORE_AGGREGATES = frozenset({ACCOUNT, TABLE, SHOE, REQUEST, CHAIN})
CORE = frozenset({
    ACCOUNT_OPENED, ACCOUNT_DEBITED, ACCOUNT_CREDITED, ACCOUNT_CASH_DEPOSITED,
    ACCOUNT_CASH_WITHDRAWN,
    TABLE_OPENED, TABLE_SHOE_STARTED, TABLE_SHOE_ENDED, TABLE_CLOSED,
    SHOE_SHUFFLED, SHOE_CUT, SHOE_CLOSED,
    REQUEST_RECORDED,
    CHAIN_LINKED,
})

# --- Trente et Quarante: services/trente_et_quarante/coup.py, and two events of core aggregates --

TABLE_COUP_STARTED = P + "Table.CoupStarted"  # the table's next coup (``coup_id``)
SHOE_COUP_DEALT = P + "Shoe.CoupDealt"  # a coup's cards taken from the shoe (``next_position``)

COUP = P + "Coup"
COUP_OPENED = P + "Coup.Opened"
COUP_STAKE_CARRIED_OVER = P + "Coup.StakeCarriedOver"
COUP_STAKE_PLACED = P + "Coup.StakePlaced"
COUP_STAKE_RAISED = P + "Coup.StakeRaised"
COUP_STAKE_WITHDRAWN = P + "Coup.StakeWithdrawn"
COUP_INSURANCE_BOUGHT = P + "Coup.InsuranceBought"
COUP_REFAIT31_CHOSEN = P + "Coup.Refait31Chosen"
COUP_STAKE_HALF_WITHDRAWN = P + "Coup.StakeHalfWithdrawn"
COUP_STAKE_MOVED = P + "Coup.StakeMoved"
COUP_STAKE_WON = P + "Coup.StakeWon"
COUP_STAKE_LOST = P + "Coup.StakeLost"
COUP_STAKE_VOIDED = P + "Coup.StakeVoided"
COUP_STAKE_PARTAGED = P + "Coup.StakePartaged"
COUP_STAKE_IMPRISONED = P + "Coup.StakeImprisoned"
COUP_STAKE_SECOND_PRISON = P + "Coup.StakeSecondPrison"
COUP_STAKE_RELEASED = P + "Coup.StakeReleased"
COUP_STAKE_BACK_TO_PRISON = P + "Coup.StakeBackToPrison"
COUP_STAKE_PRISON_LOST = P + "Coup.StakePrisonLost"
COUP_STAKE_RETURNED = P + "Coup.StakeReturned"
COUP_STAKE_HALF_RETURNED = P + "Coup.StakeHalfReturned"
COUP_LAYOUT_RESTATED = P + "Coup.LayoutRestated"
COUP_MONEY_MOVED = P + "Coup.MoneyMoved"
COUP_BETTING_CLOSED = P + "Coup.BettingClosed"
COUP_CARD_DEALT = P + "Coup.CardDealt"
COUP_RESOLVED = P + "Coup.Resolved"
COUP_SETTLED = P + "Coup.Settled"  # the coup's end: the notary signs a checkpoint

# Every stored event of a stake: its fate and the stake after it. (Their base class,
# ``Coup.StakeChanged``, is abstract: never stored, so not here.)
STAKE_EVENTS = frozenset({
    COUP_STAKE_PLACED, COUP_STAKE_RAISED, COUP_STAKE_WITHDRAWN, COUP_INSURANCE_BOUGHT,
    COUP_REFAIT31_CHOSEN, COUP_STAKE_HALF_WITHDRAWN, COUP_STAKE_MOVED, COUP_STAKE_WON,
    COUP_STAKE_LOST, COUP_STAKE_VOIDED, COUP_STAKE_PARTAGED, COUP_STAKE_IMPRISONED,
    COUP_STAKE_SECOND_PRISON, COUP_STAKE_RELEASED, COUP_STAKE_BACK_TO_PRISON,
    COUP_STAKE_PRISON_LOST, COUP_STAKE_RETURNED, COUP_STAKE_HALF_RETURNED,
})
COUP_EVENTS = frozenset({  # every event of a Coup aggregate
    COUP_OPENED, COUP_STAKE_CARRIED_OVER, COUP_LAYOUT_RESTATED, COUP_MONEY_MOVED,
    COUP_BETTING_CLOSED, COUP_CARD_DEALT, COUP_RESOLVED, COUP_SETTLED,
}) | STAKE_EVENTS

TRENTE_ET_QUARANTE_AGGREGATES = frozenset({COUP})
TRENTE_ET_QUARANTE = COUP_EVENTS | {TABLE_COUP_STARTED, SHOE_COUP_DEALT}

# --- Cuarenta: services/cuarenta/match.py (and the core's Shoe, one per hand) -------------------

CUARENTA_MATCH = P + "CuarentaMatch"
CUARENTA_MATCH_OPENED = P + "CuarentaMatch.Opened"  # the seats, the ruleset, the first dealer
CUARENTA_MATCH_HAND_BEGUN = P + "CuarentaMatch.HandBegun"  # the hand's committed shoe
CUARENTA_MATCH_DEALT = P + "CuarentaMatch.Dealt"  # five cards to a seat, by position only
CUARENTA_MATCH_RONDA_SCORED = P + "CuarentaMatch.RondaScored"
CUARENTA_MATCH_FOUR_DEALT = P + "CuarentaMatch.FourDealt"
CUARENTA_MATCH_PLAYED = P + "CuarentaMatch.Played"  # a card's position and, now public, face
CUARENTA_MATCH_CAPTURED = P + "CuarentaMatch.Captured"
CUARENTA_MATCH_HAND_SCORED = P + "CuarentaMatch.HandScored"  # the cartón; the pack's digest
CUARENTA_MATCH_FORFEITED = P + "CuarentaMatch.Forfeited"
CUARENTA_MATCH_WON = P + "CuarentaMatch.Won"  # the match's end: the pot's movements follow
CUARENTA_MATCH_MONEY_MOVED = P + "CuarentaMatch.MoneyMoved"

CUARENTA_AGGREGATES = frozenset({CUARENTA_MATCH})
CUARENTA = frozenset({
    CUARENTA_MATCH_OPENED, CUARENTA_MATCH_HAND_BEGUN, CUARENTA_MATCH_DEALT,
    CUARENTA_MATCH_RONDA_SCORED, CUARENTA_MATCH_FOUR_DEALT, CUARENTA_MATCH_PLAYED,
    CUARENTA_MATCH_CAPTURED, CUARENTA_MATCH_HAND_SCORED, CUARENTA_MATCH_FORFEITED,
    CUARENTA_MATCH_WON, CUARENTA_MATCH_MONEY_MOVED,
})

# --- Treinta y Una: services/treinta_y_una/round.py, and one event of the core's Table ---------

TABLE_ROUND_STARTED = P + "Table.RoundStarted"  # the table's next round (``round_id``)

TREINTA_Y_UNA_ROUND = P + "TreintaYUnaRound"
TREINTA_Y_UNA_ROUND_OPENED = P + "TreintaYUnaRound.Opened"
TREINTA_Y_UNA_ROUND_STAKE_CARRIED = P + "TreintaYUnaRound.StakeCarried"
TREINTA_Y_UNA_ROUND_CARRIED_STAKE_RETURNED = P + "TreintaYUnaRound.CarriedStakeReturned"
TREINTA_Y_UNA_ROUND_STAKE_PLACED = P + "TreintaYUnaRound.StakePlaced"
TREINTA_Y_UNA_ROUND_STAKE_RETURNED = P + "TreintaYUnaRound.StakeReturned"
TREINTA_Y_UNA_ROUND_CANCELLED = P + "TreintaYUnaRound.Cancelled"
TREINTA_Y_UNA_ROUND_CARD_DEALT = P + "TreintaYUnaRound.CardDealt"  # face down: a position only
TREINTA_Y_UNA_ROUND_TURN_BEGAN = P + "TreintaYUnaRound.TurnBegan"
TREINTA_Y_UNA_ROUND_CARD_DRAWN = P + "TreintaYUnaRound.CardDrawn"  # "carta": face up
TREINTA_Y_UNA_ROUND_PLANTED = P + "TreintaYUnaRound.Planted"  # "me planto"
TREINTA_Y_UNA_ROUND_HAND_BUST = P + "TreintaYUnaRound.HandBust"  # shown: over 31
TREINTA_Y_UNA_ROUND_SHOWDOWN_DUE = P + "TreintaYUnaRound.ShowdownDue"
TREINTA_Y_UNA_ROUND_HAND_SHOWN = P + "TreintaYUnaRound.HandShown"  # the faces, with proofs
TREINTA_Y_UNA_ROUND_STAKE_SETTLED = P + "TreintaYUnaRound.StakeSettled"
TREINTA_Y_UNA_ROUND_MONEY_MOVED = P + "TreintaYUnaRound.MoneyMoved"
TREINTA_Y_UNA_ROUND_SETTLED = P + "TreintaYUnaRound.Settled"  # the round's end

TREINTA_Y_UNA_ROUND_EVENTS = frozenset({  # every event of a TreintaYUnaRound aggregate
    TREINTA_Y_UNA_ROUND_OPENED, TREINTA_Y_UNA_ROUND_STAKE_CARRIED,
    TREINTA_Y_UNA_ROUND_CARRIED_STAKE_RETURNED, TREINTA_Y_UNA_ROUND_STAKE_PLACED,
    TREINTA_Y_UNA_ROUND_STAKE_RETURNED, TREINTA_Y_UNA_ROUND_CANCELLED,
    TREINTA_Y_UNA_ROUND_CARD_DEALT, TREINTA_Y_UNA_ROUND_TURN_BEGAN,
    TREINTA_Y_UNA_ROUND_CARD_DRAWN, TREINTA_Y_UNA_ROUND_PLANTED, TREINTA_Y_UNA_ROUND_HAND_BUST,
    TREINTA_Y_UNA_ROUND_SHOWDOWN_DUE, TREINTA_Y_UNA_ROUND_HAND_SHOWN,
    TREINTA_Y_UNA_ROUND_STAKE_SETTLED, TREINTA_Y_UNA_ROUND_MONEY_MOVED,
    TREINTA_Y_UNA_ROUND_SETTLED,
})
TREINTA_Y_UNA_AGGREGATES = frozenset({TREINTA_Y_UNA_ROUND})
TREINTA_Y_UNA = TREINTA_Y_UNA_ROUND_EVENTS | {TABLE_ROUND_STARTED}

# --- every game's --------------------------------------------------------------------------------

AGGREGATES = (CORE_AGGREGATES | TRENTE_ET_QUARANTE_AGGREGATES | CUARENTA_AGGREGATES
              | TREINTA_Y_UNA_AGGREGATES)  # originator topics
EVENTS = CORE | TRENTE_ET_QUARANTE | CUARENTA | TREINTA_Y_UNA  # the events table's topics
SNAPSHOTS = frozenset({CHAINED_SNAPSHOT})  # the snapshots table's (since the chain began)
ALL = EVENTS | SNAPSHOTS

# The events of each core aggregate, whichever game records them.
TABLE_EVENTS = frozenset(t for t in EVENTS if t.startswith(TABLE + "."))
SHOE_EVENTS = frozenset(t for t in EVENTS if t.startswith(SHOE + "."))
