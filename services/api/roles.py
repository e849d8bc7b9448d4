"""Roles, who holds them, and which role may call which RPC: the table is data.

The regulator reads everything and writes nothing; the admin may call everything. A player
token is bound to one account: the servicers refuse another player's account or stake.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Role(StrEnum):
    CROUPIER = "croupier"
    CASHIER = "cashier"
    PLAYER = "player"
    BACK_OFFICE = "back_office"
    REGULATOR = "regulator"
    ADMIN = "admin"


@dataclass(frozen=True, slots=True)
class Principal:
    """Who holds a token: a role, and for a player the account it is bound to."""

    role: Role
    account: str | None
    label: str  # a name for the logs; never the token
    id: str = ""  # the principal's id (``c-0173``, ``cashier-12``, ``terminal-4``, an account)

    @property
    def principal_id(self) -> str:
        """The id recorded as the actor of this principal's commands."""
        return self.id or self.label


C, K, P, B = Role.CROUPIER, Role.CASHIER, Role.PLAYER, Role.BACK_OFFICE
_READERS = frozenset({C, P, B})

# method -> (writes?, roles allowed besides admin, and the regulator for reads)
RPC_ROLES: dict[str, tuple[bool, frozenset[Role]]] = {
    "/sabot.v1.TableService/OpenTable": (True, frozenset({C})),
    "/sabot.v1.TableService/OpenShoe": (True, frozenset({C})),
    "/sabot.v1.TableService/CutShoe": (True, frozenset({C})),
    "/sabot.v1.TableService/CloseShoe": (True, frozenset({C})),
    "/sabot.v1.TableService/OpenCoup": (True, frozenset({C})),
    "/sabot.v1.TableService/CloseBetting": (True, frozenset({C})),
    "/sabot.v1.TableService/DealCoup": (True, frozenset({C})),
    "/sabot.v1.TableService/SettleCoup": (True, frozenset({C})),
    "/sabot.v1.TableService/CloseTable": (True, frozenset({C})),
    "/sabot.v1.TableService/GetTable": (False, _READERS),
    "/sabot.v1.TableService/ListTables": (False, _READERS),
    "/sabot.v1.TableService/GetShoe": (False, _READERS),
    "/sabot.v1.TableService/GetCoup": (False, _READERS),
    "/sabot.v1.TableService/ListCoups": (False, _READERS),
    "/sabot.v1.BettingService/PlaceStake": (True, frozenset({P})),
    "/sabot.v1.BettingService/RaiseStake": (True, frozenset({P})),
    "/sabot.v1.BettingService/WithdrawStake": (True, frozenset({P})),
    "/sabot.v1.BettingService/InsureStake": (True, frozenset({P})),
    "/sabot.v1.BettingService/ChooseRefait31": (True, frozenset({P})),
    "/sabot.v1.BettingService/MoveStake": (True, frozenset({P})),
    "/sabot.v1.BettingService/HalfWithdrawStake": (True, frozenset({P})),
    "/sabot.v1.BettingService/BatchStakes": (True, frozenset({P})),
    "/sabot.v1.BettingService/GetStake": (False, _READERS),
    "/sabot.v1.BettingService/ListStakes": (False, _READERS),
    "/sabot.v1.CashierService/OpenAccount": (True, frozenset({K})),
    "/sabot.v1.CashierService/Deposit": (True, frozenset({K})),
    "/sabot.v1.CashierService/Withdraw": (True, frozenset({K})),
    "/sabot.v1.CashierService/BatchMovements": (True, frozenset({K})),
    "/sabot.v1.CashierService/GetAccount": (False, frozenset({K, P, B})),
    "/sabot.v1.CashierService/ListStatementEntries": (False, frozenset({K, P, B})),
    "/sabot.v1.WatchService/WatchTable": (False, _READERS),
    "/sabot.v1.FeedService/StreamEvents": (False, frozenset({B})),
    "/sabot.v1.ReportService/GetBalanceSheet": (False, frozenset({B})),
    "/sabot.v1.RecallService/ListRecalledCoups": (False, _READERS),
    # the regulator's tools: the regulator (and admin); the back office may read checkpoints
    "/sabot.v1.RegulatorService/ReplayCoup": (False, frozenset()),
    "/sabot.v1.RegulatorService/ReplayShoe": (False, frozenset()),
    "/sabot.v1.RegulatorService/ReplayRound": (False, frozenset()),  # Treinta y Una's
    "/sabot.v1.RegulatorService/ReplayMatch": (False, frozenset()),  # Cuarenta's
    "/sabot.v1.RegulatorService/GetLatestCheckpoint": (False, frozenset({B})),
    "/sabot.v1.RegulatorService/GetInclusionProof": (False, frozenset()),
    "/sabot.v1.RegulatorService/GetConsistencyProof": (False, frozenset()),
    "/sabot.v1.RegulatorService/ExportEvents": (False, frozenset()),
    # reports from the read models: the back office (and regulator, admin). The cashier and a
    # player (its own account: checked by the servicer) read statements, as through the cashier.
    # The gaming-day report is not the croupier's nor the cashier's: who handles the chips and
    # the cash is checked by the reconciliation, and does not read it (separation of duties).
    "/sabot.v1.ReadModelService/GetGamingDayReport": (False, frozenset({B})),
    "/sabot.v1.ReadModelService/GetPlayerStatement": (False, frozenset({K, P, B})),
    "/sabot.v1.ReadModelService/ListShoeHistory": (False, frozenset({B})),
    "/sabot.v1.ReadModelService/RecallCoups": (False, frozenset({B})),
    "/sabot.v1.ReadModelService/Reconcile": (False, frozenset({B})),
    "/sabot.v1.ReadModelService/GetProjectionLag": (False, frozenset({B})),
    # Cuarenta (issue 14): the croupier opens and deals; a player plays (its own seat: the
    # ledger decides) and abandons; the croupier or an opponent claims the turn time; a hand's
    # faces are its holder's only (GetHand: the ledger refuses anyone else)
    "/sabot.cuarenta.v1.CuarentaService/OpenMatch": (True, frozenset({C})),
    "/sabot.cuarenta.v1.CuarentaService/Deal": (True, frozenset({C})),
    "/sabot.cuarenta.v1.CuarentaService/PlayCard": (True, frozenset({P})),
    "/sabot.cuarenta.v1.CuarentaService/Forfeit": (True, frozenset({C, P})),
    "/sabot.cuarenta.v1.CuarentaService/GetMatch": (False, _READERS),
    "/sabot.cuarenta.v1.CuarentaService/GetHand": (False, frozenset({P})),
    "/sabot.cuarenta.v1.CuarentaService/ListMoves": (False, _READERS),
    "/sabot.cuarenta.v1.CuarentaService/WatchMatch": (False, _READERS),
    "/sabot.cuarenta.v1.CuarentaService/ListMatches": (False, _READERS),
    "/sabot.cuarenta.v1.CuarentaService/GetReconciliation": (False, frozenset({B})),
    # Treinta y Una (issue 13): the croupier opens, deals, stands for an absent player and
    # settles; a player stakes and says "carta" or "me planto" (its own hand, in its turn: the
    # ledger decides); a hand's face-down cards are its holder's only (GetMyHand)
    "/sabot.treinta_y_una.v1.TreintaYUnaService/OpenTable": (True, frozenset({C})),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/OpenRound": (True, frozenset({C})),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/PlaceStake": (True, frozenset({P})),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/Deal": (True, frozenset({C})),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/Carta": (True, frozenset({P})),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/MePlanto": (True, frozenset({P})),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/StandForAbsent": (True, frozenset({C})),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/SettleRound": (True, frozenset({C})),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/CancelRound": (True, frozenset({C})),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/GetRound": (False, _READERS),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/GetLatestRound": (False, _READERS),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/GetMyHand": (False, frozenset({P})),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/WatchRound": (False, _READERS),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/RecallRound": (False, _READERS),
    "/sabot.treinta_y_una.v1.TreintaYUnaService/ListRounds": (False, _READERS),
    # the games' reconciliations, from the read models: as the ReadModelService's reports
    "/sabot.treinta_y_una.v1.TreintaYUnaService/GetReconciliation": (False, frozenset({B})),
}

# Served to anyone, without a token (probes and tooling).
PUBLIC_PREFIXES = ("/grpc.health.v1.Health/", "/grpc.reflection.v1alpha.ServerReflection/",
                   "/grpc.reflection.v1.ServerReflection/")


def allowed(method: str, role: Role) -> bool:
    """Whether ``role`` may call ``method`` (an unknown method is refused to all but admin)."""
    if role is Role.ADMIN:
        return True
    entry = RPC_ROLES.get(method)
    if entry is None:
        return False
    writes, roles = entry
    if role is Role.REGULATOR:
        return not writes
    return role in roles


def is_public(method: str) -> bool:
    return method.startswith(PUBLIC_PREFIXES)
