"""What must never change across the many-games seam (SEAM.md §0), as literal lists: each is
stored or on the wire, so a rename breaks every store or client made before it. Written from
main ``125b87b`` (the last commit before the seam); ``test_frozen_names.py`` holds the code
to them. A list here grows only when a name is added (a new game's topic, a new RPC), never
by editing or removing what is written."""

from __future__ import annotations

# Every stored event TOPIC (the ``topic`` column), the aggregates' own topics (the
# ``originator_topic`` in each Created event's state) and the chained snapshot's.
TOPICS: frozenset[str] = frozenset(
    {
        "sabot.ledger:Account",
        "sabot.ledger:Account.CashDeposited",
        "sabot.ledger:Account.CashWithdrawn",
        "sabot.ledger:Account.Credited",
        "sabot.ledger:Account.Debited",
        "sabot.ledger:Account.Event",
        "sabot.ledger:Account.Opened",
        "sabot.ledger:Chain",
        "sabot.ledger:Chain.Event",
        "sabot.ledger:Chain.Linked",
        "sabot.ledger:Coup",
        "sabot.ledger:Coup.BettingClosed",
        "sabot.ledger:Coup.CardDealt",
        "sabot.ledger:Coup.Event",
        "sabot.ledger:Coup.InsuranceBought",
        "sabot.ledger:Coup.LayoutRestated",
        "sabot.ledger:Coup.MoneyMoved",
        "sabot.ledger:Coup.Opened",
        "sabot.ledger:Coup.Refait31Chosen",
        "sabot.ledger:Coup.Resolved",
        "sabot.ledger:Coup.Settled",
        "sabot.ledger:Coup.StakeBackToPrison",
        "sabot.ledger:Coup.StakeCarriedOver",
        "sabot.ledger:Coup.StakeChanged",
        "sabot.ledger:Coup.StakeHalfReturned",
        "sabot.ledger:Coup.StakeHalfWithdrawn",
        "sabot.ledger:Coup.StakeImprisoned",
        "sabot.ledger:Coup.StakeLost",
        "sabot.ledger:Coup.StakeMoved",
        "sabot.ledger:Coup.StakePartaged",
        "sabot.ledger:Coup.StakePlaced",
        "sabot.ledger:Coup.StakePrisonLost",
        "sabot.ledger:Coup.StakeRaised",
        "sabot.ledger:Coup.StakeReleased",
        "sabot.ledger:Coup.StakeReturned",
        "sabot.ledger:Coup.StakeSecondPrison",
        "sabot.ledger:Coup.StakeVoided",
        "sabot.ledger:Coup.StakeWithdrawn",
        "sabot.ledger:Coup.StakeWon",
        "sabot.ledger:Request",
        "sabot.ledger:Request.Event",
        "sabot.ledger:Request.Recorded",
        "sabot.ledger:Shoe",
        "sabot.ledger:Shoe.Closed",
        "sabot.ledger:Shoe.CoupDealt",
        "sabot.ledger:Shoe.Cut",
        "sabot.ledger:Shoe.Event",
        "sabot.ledger:Shoe.Shuffled",
        "sabot.ledger:Snapshot",
        "sabot.ledger:Table",
        "sabot.ledger:Table.Closed",
        "sabot.ledger:Table.CoupStarted",
        "sabot.ledger:Table.Event",
        "sabot.ledger:Table.Opened",
        "sabot.ledger:Table.ShoeEnded",
        "sabot.ledger:Table.ShoeStarted",
        # Cuarenta (issue 14)
        "sabot.ledger:CuarentaMatch",
        "sabot.ledger:CuarentaMatch.Event",
        "sabot.ledger:CuarentaMatch.Opened",
        "sabot.ledger:CuarentaMatch.HandBegun",
        "sabot.ledger:CuarentaMatch.Dealt",
        "sabot.ledger:CuarentaMatch.RondaScored",
        "sabot.ledger:CuarentaMatch.FourDealt",
        "sabot.ledger:CuarentaMatch.Played",
        "sabot.ledger:CuarentaMatch.Captured",
        "sabot.ledger:CuarentaMatch.HandScored",
        "sabot.ledger:CuarentaMatch.Forfeited",
        "sabot.ledger:CuarentaMatch.Won",
        "sabot.ledger:CuarentaMatch.MoneyMoved",
        # Treinta y Una (issue 13)
        "sabot.ledger:Table.RoundStarted",
        "sabot.ledger:TreintaYUnaRound",
        "sabot.ledger:TreintaYUnaRound.Event",
        "sabot.ledger:TreintaYUnaRound.Opened",
        "sabot.ledger:TreintaYUnaRound.StakeCarried",
        "sabot.ledger:TreintaYUnaRound.CarriedStakeReturned",
        "sabot.ledger:TreintaYUnaRound.StakePlaced",
        "sabot.ledger:TreintaYUnaRound.StakeReturned",
        "sabot.ledger:TreintaYUnaRound.Cancelled",
        "sabot.ledger:TreintaYUnaRound.CardDealt",
        "sabot.ledger:TreintaYUnaRound.TurnBegan",
        "sabot.ledger:TreintaYUnaRound.CardDrawn",
        "sabot.ledger:TreintaYUnaRound.Planted",
        "sabot.ledger:TreintaYUnaRound.HandBust",
        "sabot.ledger:TreintaYUnaRound.ShowdownDue",
        "sabot.ledger:TreintaYUnaRound.HandShown",
        "sabot.ledger:TreintaYUnaRound.StakeSettled",
        "sabot.ledger:TreintaYUnaRound.MoneyMoved",
        "sabot.ledger:TreintaYUnaRound.Settled",
    }
)
ORIGINATOR_TOPICS: frozenset[str] = frozenset(
    {
        "sabot.ledger:Account",
        "sabot.ledger:Chain",
        "sabot.ledger:Coup",
        "sabot.ledger:Request",
        "sabot.ledger:Shoe",
        "sabot.ledger:Table",
        "sabot.ledger:CuarentaMatch",  # Cuarenta (issue 14)
        "sabot.ledger:TreintaYUnaRound",  # Treinta y Una (issue 13)
    }
)
# Events never triggered (abstract bases): no stored row carries them.
ABSTRACT_TOPICS: frozenset[str] = frozenset(
    {
        "sabot.ledger:Account.Event",
        "sabot.ledger:Chain.Event",
        "sabot.ledger:Coup.Event",
        "sabot.ledger:Coup.StakeChanged",
        "sabot.ledger:Request.Event",
        "sabot.ledger:Shoe.Event",
        "sabot.ledger:Table.Event",
        "sabot.ledger:CuarentaMatch.Event",  # Cuarenta (issue 14)
        "sabot.ledger:TreintaYUnaRound.Event",  # Treinta y Una (issue 13)
    }
)

# ``{"_type_": NAME}`` wrappers inside stored states.
TRANSCODINGS: tuple[str, ...] = (
    "sabot_stake",
    "sabot_chance",
    "sabot_row",
    "sabot_stake_status",
    "sabot_refait31_choice",
    "sabot_fate",
    "sabot_movement_kind",
    "sabot_result",
)

# Command name -> the keys of its stored ``arguments`` (``Request.Recorded``; the request's
# digest is over them), in order. An optional argument added later enters ``args`` only when
# not default: ``OPTIONAL_ARGUMENTS``.
COMMAND_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "choose_refait31": ("coup_id", "stake_id", "choice"),
    "close_betting": ("coup_id",),
    "close_shoe": ("shoe_id",),
    "close_table": ("table_id",),
    "cut": ("shoe_id", "position", "cut_by"),
    "deal": ("coup_id",),
    "deposit": ("account_id", "amount"),
    "half_withdraw": ("coup_id", "stake_id"),
    "insure": ("coup_id", "stake_id"),
    "move_imprisoned": ("coup_id", "stake_id", "chance"),
    "open_account": ("account_id", "currency"),
    "open_coup": ("table_id", "coup_id"),
    "open_shoe": ("table_id", "shoe_id", "deck_kind"),
    "open_table": ("table_id", "preset", "overrides"),
    "place_stake": ("coup_id", "account_id", "chance", "amount", "stake_id", "choice"),
    "raise_stake": ("coup_id", "stake_id", "amount"),
    "settle": ("coup_id",),
    "withdraw": ("account_id", "amount"),
    "withdraw_stake": ("coup_id", "stake_id"),
}
OPTIONAL_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "open_coup": ("shoe_id",),
    "open_table": ("game",),  # the seam: a table of another game than Trente et Quarante
}

# Command name -> the class of its stored answer (``Request.Recorded.result``).
COMMAND_ANSWERS: dict[str, str] = {
    "choose_refait31": "StakeResult",
    "close_betting": "CoupView",
    "close_shoe": "ShoeClosed",
    "close_table": "TableClosed",
    "cut": "ShoeView",
    "deal": "CoupView",
    "deposit": "AccountView",
    "half_withdraw": "StakeResult",
    "insure": "StakeResult",
    "move_imprisoned": "StakeResult",
    "open_account": "AccountView",
    "open_coup": "CoupView",
    "open_shoe": "ShoeOpened",
    "open_table": "TableView",
    "place_stake": "StakeResult",
    "raise_stake": "StakeResult",
    "settle": "CoupView",
    "withdraw": "AccountView",
    "withdraw_stake": "StakeResult",
}

# Answer classes (and the classes inside them): the fields without a default, by name and
# type, in order; then those with one (fields added later all have one).
ANSWER_FIELDS: dict[str, tuple[tuple[str, str], ...]] = {
    "AccountView": (
        ("account_id", "str"),
        ("kind", "str"),
        ("currency", "str"),
        ("balance", "int"),
        ("entries", "int"),
    ),
    "CardView": (
        ("row", "str"),
        ("code", "str"),
        ("position", "int"),
        ("running_total", "int"),
    ),
    "CoupView": (
        ("coup_id", "str"),
        ("table_id", "str"),
        ("shoe_id", "str"),
        ("number", "int"),
        ("number_in_shoe", "int"),
        ("phase", "str"),
        ("start_position", "int"),
        ("cards", "tuple[CardView, ...]"),
        ("noir_total", "int | None"),
        ("rouge_total", "int | None"),
        ("result", "str | None"),
        ("refait_total", "int | None"),
        ("couleur", "bool | None"),
        ("winning_chances", "tuple[str, ...]"),
        ("announcement", "str | None"),
        ("cut_card_reached", "bool"),
        ("layout", "tuple[StakeView, ...]"),
        ("movements", "tuple[MovementView, ...]"),
        ("fates", "tuple[FateView, ...]"),
    ),
    "FateView": (
        ("stake_id", "str"),
        ("account_id", "str"),
        ("chance", "str"),
        ("fate", "str"),
        ("amount_before", "int"),
        ("amount_after", "int"),
        ("status_after", "str | None"),
    ),
    "MovementView": (
        ("seq", "int"),
        ("kind", "str"),
        ("stake_id", "str"),
        ("account_id", "str"),
        ("chance", "str"),
        ("amount", "int"),
        ("debit_account", "str"),
        ("credit_account", "str"),
    ),
    "ShoeClosed": (
        ("shoe_id", "str"),
        ("seed", "str"),
        ("commitment", "str"),
        ("cut_position", "int | None"),
        ("order_digest", "str | None"),
        ("returned", "tuple[MovementView, ...]"),
    ),
    "ShoeOpened": (
        ("shoe_id", "str"),
        ("table_id", "str"),
        ("commitment", "str"),
        ("algorithm", "str"),
        ("deck_kind", "str"),
        ("decks", "int"),
    ),
    "ShoeView": (
        ("shoe_id", "str"),
        ("table_id", "str"),
        ("algorithm", "str"),
        ("deck_kind", "str"),
        ("decks", "int"),
        ("size", "int"),
        ("commitment", "str"),
        ("cut_position", "int | None"),
        ("cut_by", "str | None"),
        ("position", "int"),
        ("coups", "int"),
        ("cut_card_reached", "bool"),
        ("closed", "bool"),
        ("seed", "str | None"),
        ("order_digest", "str | None"),
    ),
    "StakeResult": (
        ("coup_id", "str"),
        ("stake", "StakeView | None"),
        ("movements", "tuple[MovementView, ...]"),
        ("balance", "int"),
    ),
    "StakeView": (
        ("stake_id", "str"),
        ("account_id", "str"),
        ("chance", "str"),
        ("amount", "int"),
        ("status", "str"),
        ("insured", "bool"),
        ("choice", "str | None"),
        ("awaiting_choice", "bool"),
    ),
    "TableClosed": (
        ("table_id", "str"),
        ("coup_id", "str | None"),
        ("prisoners_at_close", "str"),
        ("settled", "tuple[MovementView, ...]"),
    ),
    "TableView": (
        ("table_id", "str"),
        ("preset", "str"),
        ("options", "dict[str, str]"),
        ("currency", "str"),
        ("shoe_id", "str | None"),
        ("coup_id", "str | None"),
        ("coups", "int"),
        ("shoes", "int"),
        ("layout", "tuple[StakeView, ...]"),
        ("bank_account", "str"),
        ("layout_account", "str"),
    ),
}
DEFAULTED_FIELDS: dict[str, tuple[tuple[str, str], ...]] = {
    "CoupView": (
        ("create_time", "str | None"),
        ("betting_close_time", "str | None"),
        ("deal_time", "str | None"),
        ("settle_time", "str | None"),
    ),
    "ShoeView": (
        ("create_time", "str | None"),
        ("cut_time", "str | None"),
        ("close_time", "str | None"),
    ),
    "TableView": (
        ("create_time", "str | None"),
        ("coup_shoe_id", "str | None"),
        ("closed", "bool"),
        ("close_time", "str | None"),
    ),
}

# Read models: name -> (schema digest under the default gaming day, its rm_ tables).
READ_MODELS: dict[str, tuple[str, tuple[str, ...]]] = {
    "bankrolls": ("24133116fbd3d83c", ("rm_account", "rm_statement", "rm_bankroll_actor")),
    "shoes": ("da892e5bdbea2360", ("rm_shoe", "rm_shoe_cards", "rm_shoe_coup")),
    "recall": (
        "9f74f87d9c713a1c",
        ("rm_coup", "rm_coup_step", "rm_recall_account", "rm_recall_actor"),
    ),
    "reconciliation": (
        "0c99312d4f694ff9",
        (
            "rm_recon",
            "rm_recon_table",
            "rm_recon_account",
            "rm_recon_coup",
            "rm_recon_prison",
            "rm_recon_stake",
        ),
    ),
    # the games' own (services.games.Game.projections)
    "treinta_y_una_rounds": ("1f2c72374a08afca", ("rm_tyu_round_unit", "rm_tyu_round_step")),
    "cuarenta_matches": (
        "fdefa22ed6ab966d",
        ("rm_cuarenta_match_unit", "rm_cuarenta_match_step"),
    ),
}

# Aggregate ids: the namespace and each derivation, by example.
ID_NAMESPACE = "5a6b0c7e-3e5f-4d0a-9b1c-7a2d8e4f6c10"
ID_EXAMPLES: dict[str, tuple[tuple[str, ...], str]] = {
    "table_uuid": (("t-fr",), "5efe38b2-788a-5187-a326-dcb849d4a5db"),
    "account_uuid": (("ana",), "99335f7e-0a53-5296-ac50-59d89bab7fe2"),
    "request_uuid": (("r-1",), "874d977d-cee1-5b3d-a5e3-23ada1e80636"),
    "request_uuid scoped": (("r-1", "c-0173"), "1803deb8-64ad-5c32-b915-d583a5e0df33"),
    "stake_uuid": (
        ("4a1b2c3d-0000-4000-8000-00000000c001", "ana", "8f3f0c52-6f2b-4c39-9b44-51d2c7e1a001"),
        "f65baf1d-e7c4-52e2-8ae0-26405d511c89",
    ),
}
TABLE_ACCOUNT = ("t-fr", "bank", "table:t-fr:bank")
CAGE_ACCOUNT = ("EUR", "cage:eur")

# The signed checkpoint body's keys (``coup``: the round whose end it marks).
CHECKPOINT_BODY = ("origin", "size", "root", "position", "coup")

# gRPC: method full name -> (writes?, roles allowed besides admin; the regulator reads all).
RPC_ROLES: dict[str, tuple[bool, tuple[str, ...]]] = {
    "/sabot.v1.BettingService/BatchStakes": (True, ("player",)),
    "/sabot.v1.BettingService/ChooseRefait31": (True, ("player",)),
    "/sabot.v1.BettingService/GetStake": (False, ("back_office", "croupier", "player")),
    "/sabot.v1.BettingService/HalfWithdrawStake": (True, ("player",)),
    "/sabot.v1.BettingService/InsureStake": (True, ("player",)),
    "/sabot.v1.BettingService/ListStakes": (False, ("back_office", "croupier", "player")),
    "/sabot.v1.BettingService/MoveStake": (True, ("player",)),
    "/sabot.v1.BettingService/PlaceStake": (True, ("player",)),
    "/sabot.v1.BettingService/RaiseStake": (True, ("player",)),
    "/sabot.v1.BettingService/WithdrawStake": (True, ("player",)),
    "/sabot.v1.CashierService/BatchMovements": (True, ("cashier",)),
    "/sabot.v1.CashierService/Deposit": (True, ("cashier",)),
    "/sabot.v1.CashierService/GetAccount": (False, ("back_office", "cashier", "player")),
    "/sabot.v1.CashierService/ListStatementEntries": (False, ("back_office", "cashier", "player")),
    "/sabot.v1.CashierService/OpenAccount": (True, ("cashier",)),
    "/sabot.v1.CashierService/Withdraw": (True, ("cashier",)),
    "/sabot.v1.FeedService/StreamEvents": (False, ("back_office",)),
    "/sabot.v1.ReadModelService/GetGamingDayReport": (False, ("back_office",)),
    "/sabot.v1.ReadModelService/GetPlayerStatement": (False, ("back_office", "cashier", "player")),
    "/sabot.v1.ReadModelService/GetProjectionLag": (False, ("back_office",)),
    "/sabot.v1.ReadModelService/ListShoeHistory": (False, ("back_office",)),
    "/sabot.v1.ReadModelService/RecallCoups": (False, ("back_office",)),
    "/sabot.v1.ReadModelService/Reconcile": (False, ("back_office",)),
    # Cuarenta (issue 14)
    "/sabot.cuarenta.v1.CuarentaService/OpenMatch": (True, ("croupier",)),
    "/sabot.cuarenta.v1.CuarentaService/Deal": (True, ("croupier",)),
    "/sabot.cuarenta.v1.CuarentaService/PlayCard": (True, ("player",)),
    "/sabot.cuarenta.v1.CuarentaService/Forfeit": (True, ("croupier", "player")),
    "/sabot.cuarenta.v1.CuarentaService/GetMatch": (False, ("back_office", "croupier", "player")),
    "/sabot.cuarenta.v1.CuarentaService/GetHand": (False, ("player",)),
    "/sabot.cuarenta.v1.CuarentaService/ListMoves": (False, ("back_office", "croupier", "player")),
    "/sabot.cuarenta.v1.CuarentaService/WatchMatch": (False, ("back_office", "croupier",
                                                              "player")),
    "/sabot.v1.RecallService/ListRecalledCoups": (False, ("back_office", "croupier", "player")),
    "/sabot.v1.RegulatorService/ExportEvents": (False, ()),
    "/sabot.v1.RegulatorService/GetConsistencyProof": (False, ()),
    "/sabot.v1.RegulatorService/GetInclusionProof": (False, ()),
    "/sabot.v1.RegulatorService/GetLatestCheckpoint": (False, ("back_office",)),
    "/sabot.v1.RegulatorService/ReplayCoup": (False, ()),
    "/sabot.v1.RegulatorService/ReplayShoe": (False, ()),
    "/sabot.v1.ReportService/GetBalanceSheet": (False, ("back_office",)),
    "/sabot.v1.TableService/CloseBetting": (True, ("croupier",)),
    "/sabot.v1.TableService/CloseShoe": (True, ("croupier",)),
    "/sabot.v1.TableService/CloseTable": (True, ("croupier",)),
    "/sabot.v1.TableService/CutShoe": (True, ("croupier",)),
    "/sabot.v1.TableService/DealCoup": (True, ("croupier",)),
    "/sabot.v1.TableService/GetCoup": (False, ("back_office", "croupier", "player")),
    "/sabot.v1.TableService/GetShoe": (False, ("back_office", "croupier", "player")),
    "/sabot.v1.TableService/GetTable": (False, ("back_office", "croupier", "player")),
    "/sabot.v1.TableService/ListCoups": (False, ("back_office", "croupier", "player")),
    "/sabot.v1.TableService/ListTables": (False, ("back_office", "croupier", "player")),
    "/sabot.v1.TableService/OpenCoup": (True, ("croupier",)),
    "/sabot.v1.TableService/OpenShoe": (True, ("croupier",)),
    "/sabot.v1.TableService/OpenTable": (True, ("croupier",)),
    "/sabot.v1.TableService/SettleCoup": (True, ("croupier",)),
    "/sabot.v1.WatchService/WatchTable": (False, ("back_office", "croupier", "player")),
    # Treinta y Una (issue 13)
    "/sabot.treinta_y_una.v1.TreintaYUnaService/OpenTable": (True, ("croupier",)),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/OpenRound": (True, ("croupier",)),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/PlaceStake": (True, ("player",)),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/Deal": (True, ("croupier",)),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/Carta": (True, ("player",)),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/MePlanto": (True, ("player",)),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/StandForAbsent": (True, ("croupier",)),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/SettleRound": (True, ("croupier",)),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/CancelRound": (True, ("croupier",)),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/GetRound": (
        False, ("back_office", "croupier", "player")),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/GetLatestRound": (
        False, ("back_office", "croupier", "player")),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/GetMyHand": (False, ("player",)),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/WatchRound": (
        False, ("back_office", "croupier", "player")),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/RecallRound": (
        False, ("back_office", "croupier", "player")),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/GetReconciliation": (False, ("back_office",)),
    "/sabot.cuarenta.v1.CuarentaService/GetReconciliation": (False, ("back_office",)),
    # Issue 22: a table's rounds and matches; their replays online (the regulator's)
    "/sabot.treinta_y_una.v1.TreintaYUnaService/ListRounds": (
        False, ("back_office", "croupier", "player")),
    "/sabot.cuarenta.v1.CuarentaService/ListMatches": (
        False, ("back_office", "croupier", "player")),
    "/sabot.v1.RegulatorService/ReplayRound": (False, ()),
    "/sabot.v1.RegulatorService/ReplayMatch": (False, ()),
}

# Every ``sabot`` command path (old names stay, as hidden aliases at least).
CLI_PATHS: tuple[str, ...] = (
    "shuffle",
    "deal",
    "odds",
    "rules",
    "rules treinta-y-una",
    "rules treinta-y-una hand",
    "rules treinta-y-una options",
    "rules cuarenta",
    "rules cuarenta captures",
    "rules cuarenta carton",
    "rules cuarenta options",
    "regulator-keygen",
    "checkpoint-keygen",
    "chain-keygen",
    "checkpoint",
    "export",
    "replay",
    "proof",
    "serve",
    "demo",
    "credentials",
    "credentials issue",
    "credentials revoke",
    "credentials list",
    "credentials hash",
    "table",
    "table open",
    "table close",
    "table get",
    "table list",
    "shoe",
    "shoe open",
    "shoe get",
    "shoe cut",
    "shoe close",
    "coup",
    "coup open",
    "coup get",
    "coup list",
    "coup close-betting",
    "coup deal",
    "coup settle",
    "stake",
    "stake place",
    "stake raise",
    "stake withdraw",
    "stake insure",
    "stake choose",
    "stake move",
    "stake half-withdraw",
    "stake get",
    "stake list",
    "account",
    "account open",
    "account get",
    "account deposit",
    "account withdraw",
    "account statement",
    "balance-sheet",
    "watch",
    "feed",
    "recall",
    "health",
    "regulator",
    "regulator replay-coup",
    "regulator replay-shoe",
    "regulator checkpoint",
    "regulator inclusion-proof",
    "regulator consistency-proof",
    "regulator export",
    "reports",
    "reports day",
    "reports statement",
    "reports shoes",
    "reports recall",
    "reports reconcile",
    "reports lag",
    "projections",
    "projections rebuild",
    "projections catch-up",
    "projections run",
    "projections lag",
    "reconcile",
    "report",
    "report day",
    "report statement",
    "report shoes",
    "ledger-schema",
    "ledger-events",
    "ledger-balances",
    "ledger-replay",
)
# Command lines an issue or the tooling spells out: each must parse.
CLI_LINES: tuple[tuple[str, ...], ...] = (
    ("odds", "--game", "trente-et-quarante"),
    ("odds", "--game", "treinta-y-una", "--format", "json"),
    ("rules", "treinta-y-una", "hand", "1O", "12B", "11C", "--format", "json"),
    ("health", "--format", "json"),
    ("table", "open", "t1", "--preset", "italiana", "--option", "decks=8"),
    ("table", "close", "t1"),
    ("ledger-schema", "--store", "sqlite:///x.db", "--server-role", "r", "--reader-role", "q"),
    ("checkpoint", "--store", "sqlite:///x.db", "--key", "k.pem", "--chain-key", "00"),
    ("export", "--store", "sqlite:///x.db", "--key", "k.pem", "--chain-key", "00", "-o", "f"),
    ("replay", "--store", "sqlite:///x.db", "--shoe", "s", "--regulator-key", "r.pem"),
    ("serve", "--store", "sqlite:///x.db", "--dev", "--single-process", "--listen", "h:1"),
    ("serve", "--store", "sqlite:///x.db", "--dev", "--turn-clock", "off"),
    ("demo", "--target", "127.0.0.1:1", "--token", "t"),
)
VERIFY_FLAGS = ("--regulator-key", "--checkpoint-key", "--chain-key", "--chain-head")

# Environment variables read today (an old name stays as an alias of its new one).
ENVIRONMENT: tuple[str, ...] = (
    "SABOT_CHAIN_HEAD",
    "SABOT_CHAIN_KEY",
    "SABOT_CHECKPOINT_KEY",
    "SABOT_CREDENTIALS",
    "SABOT_DEBUG",
    "SABOT_GAMING_DAY",
    "SABOT_LEDGER_PROCESS",
    "SABOT_LISTEN",
    "SABOT_PROJECTIONS",
    "SABOT_REGULATOR_KEY",
    "SABOT_SEAL_KEY",
    "SABOT_SHIFTS",
    "SABOT_STORE",
    "SABOT_STORE_URL",
    "SABOT_STREAMS_PER_PRINCIPAL",
    "SABOT_TARGET",
    "SABOT_TLS_CA",
    "SABOT_TLS_CERT",
    "SABOT_TLS_CLIENT_CA",
    "SABOT_TLS_CLIENT_CERT",
    "SABOT_TLS_CLIENT_KEY",
    "SABOT_TLS_KEY",
    "SABOT_TOKEN",
    "SABOT_TOKENS",
    "SABOT_TURN_CLOCK",
    "SABOT_WORKERS",
)


# The ledger socket's table of methods (SABOT-LEDGER-WIRE-1): the core's and the three games',
# name -> (command or query, its parameters in order as name:wire-type, its answer's type).
# Written from the hand-made tables before issue 21 derived the games' from their commands'
# signatures (``services.ledger.methods.Declared``): a frame of a client made before it must
# still be a call of the same method with the same parameters.
LEDGER_METHODS: dict[str, tuple[str, str, str]] = {
    'open_table': (
        'command',
        'request_id:str table_id:str preset:str overrides:map? game:str? actor:actor',
        'services.ledger.views.TableView'),
    'open_shoe': (
        'command',
        'request_id:str table_id:str shoe_id:str? deck_kind:str actor:actor',
        'services.ledger.views.ShoeOpened'),
    'cut': (
        'command',
        'request_id:str shoe_id:str position:int cut_by:str actor:actor',
        'services.ledger.views.ShoeView'),
    'close_shoe': (
        'command',
        'request_id:str shoe_id:str actor:actor',
        'services.ledger.views.ShoeClosed'),
    'close_table': (
        'command',
        'request_id:str table_id:str actor:actor',
        'services.ledger.views.TableClosed'),
    'open_account': (
        'command',
        'request_id:str account_id:str currency:str actor:actor',
        'services.ledger.views.AccountView'),
    'deposit': (
        'command',
        'request_id:str account_id:str amount:int actor:actor',
        'services.ledger.views.AccountView'),
    'withdraw': (
        'command',
        'request_id:str account_id:str amount:int actor:actor',
        'services.ledger.views.AccountView'),
    'cash_batch': (  # issue 25 item 2: added after the table was written
        'command',
        'request_id:str movements:items atomic:bool actor:actor',
        'services.ledger.batch.CashBatchResult'),
    'get_table': (
        'query',
        'table_id:str',
        'services.ledger.views.TableView'),
    'get_shoe': (
        'query',
        'shoe_id:str',
        'services.ledger.views.ShoeView'),
    'list_tables': (
        'query',
        'page_size:int page_token:str',
        'tuple[list[services.ledger.views.TableView], str]'),
    'get_account': (
        'query',
        'account_id:str',
        'services.ledger.views.AccountView'),
    'statement': (
        'query',
        'account_id:str after:int limit:int',
        'services.ledger.views.Statement'),
    'read_events': (
        'query',
        'after_position:int limit:int topics:words?',
        'list[services.ledger.views.StoredEvent]'),
    'balances': (
        'query',
        '',
        'dict[str, int]'),
    'audit_balances': (
        'query',
        '',
        'dict[str, int]'),
    'writer_status': (
        'query',
        '',
        'dict[str, Any]'),
    'writer_state': (
        'query',
        '',
        'dict[str, Any]'),
    'writer_metrics': (
        'query',
        '',
        'str'),
    'open_coup': (
        'command',
        'request_id:str table_id:str coup_id:str? shoe_id:str? actor:actor',
        'services.trente_et_quarante.views.CoupView'),
    'place_stake': (
        'command',
        'request_id:str coup_id:str account_id:str chance:str amount:int stake_id:str? '
        'choice:str? actor:actor',
        'services.trente_et_quarante.views.StakeResult'),
    'raise_stake': (
        'command',
        'request_id:str coup_id:str stake_id:str amount:int actor:actor',
        'services.trente_et_quarante.views.StakeResult'),
    'withdraw_stake': (
        'command',
        'request_id:str coup_id:str stake_id:str actor:actor',
        'services.trente_et_quarante.views.StakeResult'),
    'insure': (
        'command',
        'request_id:str coup_id:str stake_id:str actor:actor',
        'services.trente_et_quarante.views.StakeResult'),
    'choose_refait31': (
        'command',
        'request_id:str coup_id:str stake_id:str choice:str actor:actor',
        'services.trente_et_quarante.views.StakeResult'),
    'half_withdraw': (
        'command',
        'request_id:str coup_id:str stake_id:str actor:actor',
        'services.trente_et_quarante.views.StakeResult'),
    'move_imprisoned': (
        'command',
        'request_id:str coup_id:str stake_id:str chance:str actor:actor',
        'services.trente_et_quarante.views.StakeResult'),
    'stake_batch': (  # issue 25 item 2: added after the table was written
        'command',
        'request_id:str coup_id:str items:items atomic:bool actor:actor',
        'services.trente_et_quarante.stake_batch.StakeBatchResult'),
    'close_betting': (
        'command',
        'request_id:str coup_id:str actor:actor',
        'services.trente_et_quarante.views.CoupView'),
    'deal': (
        'command',
        'request_id:str coup_id:str actor:actor',
        'services.trente_et_quarante.views.CoupView'),
    'settle': (
        'command',
        'request_id:str coup_id:str actor:actor',
        'services.trente_et_quarante.views.CoupView'),
    'get_coup': (
        'query',
        'coup_id:str',
        'services.trente_et_quarante.views.CoupView'),
    'stake_account': (
        'query',
        'coup_id:str stake_id:str',
        'str'),
    'list_coups': (
        'query',
        'table_id:str shoe_id:str? page_size:int page_token:str',
        'tuple[list[services.trente_et_quarante.views.CoupView], str]'),
    'last_coups': (
        'query',
        'table_id:str n:int',
        'list[services.trente_et_quarante.views.CoupSteps]'),
    'tyu_open_round': (
        'command',
        'request_id:str table_id:str seats:str bank:int round_id:str? actor:actor',
        'services.treinta_y_una.views.RoundView'),
    'tyu_place_stake': (
        'command',
        'request_id:str round_id:str player:str amount:int actor:actor',
        'services.treinta_y_una.views.RoundView'),
    'tyu_deal': (
        'command',
        'request_id:str round_id:str actor:actor',
        'services.treinta_y_una.views.RoundView'),
    'tyu_carta': (
        'command',
        'request_id:str round_id:str player:str actor:actor',
        'services.treinta_y_una.views.RoundView'),
    'tyu_me_planto': (
        'command',
        'request_id:str round_id:str player:str actor:actor',
        'services.treinta_y_una.views.RoundView'),
    'tyu_stand_for_absent': (
        'command',
        'request_id:str round_id:str player:str turn:int? actor:actor',
        'services.treinta_y_una.views.RoundView'),
    'tyu_turn': (
        'query',
        'round_id:str',
        'services.ledger.views.TurnView'),
    'tyu_settle': (
        'command',
        'request_id:str round_id:str actor:actor',
        'services.treinta_y_una.views.RoundView'),
    'tyu_cancel_round': (
        'command',
        'request_id:str round_id:str actor:actor',
        'services.treinta_y_una.views.RoundView'),
    'tyu_get_round': (
        'query',
        'round_id:str',
        'services.treinta_y_una.views.RoundView'),
    'tyu_latest_round': (
        'query',
        'table_id:str',
        'None | services.treinta_y_una.views.RoundView'),
    'tyu_list_rounds': (
        'query',
        'table_id:str',
        'list[str]'),
    'tyu_my_hand': (
        'query',
        'round_id:str player:str actor:actor',
        'services.treinta_y_una.views.HandView'),
    'tyu_recall': (
        'query',
        'round_id:str',
        'services.treinta_y_una.views.RoundRecall'),
    'tyu_reconcile': (
        'query',
        'table_id:str',
        'list[services.treinta_y_una.reconcile.DayReconciliation]'),
    'cuarenta_open_match': (
        'command',
        'request_id:str table_id:str seats:words stake:int? preset:str? overrides:map? '
        'dealer:int? match_id:str? actor:actor',
        'services.cuarenta.views.MatchStep'),
    'cuarenta_deal': (
        'command',
        'request_id:str match_id:str actor:actor',
        'services.cuarenta.views.MatchStep'),
    'cuarenta_play': (
        'command',
        'request_id:str match_id:str seat:int card:str capture:words? actor:actor',
        'services.cuarenta.views.MatchStep'),
    'cuarenta_forfeit': (
        'command',
        'request_id:str match_id:str seat:int reason:str turn:int? actor:actor',
        'services.cuarenta.views.MatchStep'),
    'cuarenta_turn': (
        'query',
        'match_id:str',
        'services.ledger.views.TurnView'),
    'cuarenta_match': (
        'query',
        'match_id:str',
        'services.cuarenta.views.MatchView'),
    'cuarenta_hand': (
        'query',
        'match_id:str seat:int actor:actor',
        'services.cuarenta.views.HandView'),
    'cuarenta_moves': (
        'query',
        'match_id:str',
        'list[services.cuarenta.views.MoveView]'),
    'cuarenta_reconcile': (
        'query',
        'table_id:str',
        'services.cuarenta.reconcile.Reconciliation'),
}
