"""Roles, who holds them, and which role may call which RPC: the table is data.

The regulator reads everything and writes nothing; the admin may call everything. A player
token is bound to one account: the servicers refuse another player's account or stake.

The table (``RoleTable``, built by ``role_table`` when the server starts, from what the
composition root hands it) has two sources:

- ``CORE_ROLES``, written here: the read-only RPCs, and the RPCs that call the core's commands
  (tables, shoes, accounts, cash: ``services.ledger.methods.CORE_METHODS``), whichever service
  serves them (Trente et Quarante's OpenShoe, Treinta y Una's OpenTable);
- the rows of the RPCs that call a game's commands, derived from the commands' declarations
  (``services.ledger.methods.command(..., roles=..., rpcs=...)``: each names the roles that may
  call it and the RPCs that do): an RPC that calls commands of different roles, or that is
  both declared and in ``CORE_ROLES``, or a role that is not one of ``Role`` (or the admin's
  or the regulator's, who are not granted writes row by row) is a ``RoleError`` at start.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (the commands' declarations are handed in: a principal's module stays light)
    from services.ledger.methods import Declared


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

Row = tuple[bool, frozenset[Role]]  # (writes?, roles allowed besides admin; the regulator reads)

# method -> its row: the core's RPCs and the read-only ones (the games' commands' RPCs: their
# declarations)
CORE_ROLES: dict[str, Row] = {
    "/sabot.v1.TableService/OpenTable": (True, frozenset({C})),
    "/sabot.v1.TableService/OpenShoe": (True, frozenset({C})),
    "/sabot.v1.TableService/CutShoe": (True, frozenset({C})),
    "/sabot.v1.TableService/CloseShoe": (True, frozenset({C})),
    "/sabot.v1.TableService/CloseTable": (True, frozenset({C})),
    "/sabot.v1.TableService/GetTable": (False, _READERS),
    "/sabot.v1.TableService/ListTables": (False, _READERS),
    "/sabot.v1.TableService/GetShoe": (False, _READERS),
    "/sabot.v1.TableService/GetCoup": (False, _READERS),
    "/sabot.v1.TableService/ListCoups": (False, _READERS),
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
    # Cuarenta (issue 14; who plays: its commands' declarations): a hand's faces are its
    # holder's only (GetHand: the ledger refuses anyone else)
    "/sabot.cuarenta.v1.CuarentaService/GetMatch": (False, _READERS),
    "/sabot.cuarenta.v1.CuarentaService/GetHand": (False, frozenset({P})),
    "/sabot.cuarenta.v1.CuarentaService/ListMoves": (False, _READERS),
    "/sabot.cuarenta.v1.CuarentaService/WatchMatch": (False, _READERS),
    "/sabot.cuarenta.v1.CuarentaService/ListMatches": (False, _READERS),
    "/sabot.cuarenta.v1.CuarentaService/GetReconciliation": (False, frozenset({B})),
    # Treinta y Una (issue 13; who plays: its commands' declarations): the croupier opens a
    # table (the core's open_table); a hand's face-down cards are its holder's only (GetMyHand)
    "/sabot.treinta_y_una.v1.TreintaYUnaService/OpenTable": (True, frozenset({C})),
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


class RoleError(ValueError):
    """A role table the declarations and ``CORE_ROLES`` cannot make (see the module's text)."""


class RoleTable:
    """Which role may call which RPC: ``rows``, method -> (writes?, roles allowed besides the
    admin; the regulator reads everything and writes nothing). Immutable: read by every
    call's interceptor without a lock."""

    __slots__ = ("rows",)

    def __init__(self, rows: Mapping[str, Row]) -> None:
        self.rows: Mapping[str, Row] = dict(rows)

    def allowed(self, method: str, role: Role) -> bool:
        """Whether ``role`` may call ``method`` (an unknown method is refused to all but
        admin)."""
        if role is Role.ADMIN:
            return True
        entry = self.rows.get(method)
        if entry is None:
            return False
        writes, roles = entry
        if role is Role.REGULATOR:
            return not writes
        return role in roles


def _declared_roles(declared: Declared[Any, Any]) -> frozenset[Role]:
    try:
        found = frozenset(Role(name) for name in declared.roles)
    except ValueError:
        raise RoleError(f"{declared.stored}: roles {sorted(declared.roles)} are not all among "
                        f"{[r.value for r in Role]}") from None
    if found & {Role.ADMIN, Role.REGULATOR}:
        raise RoleError(f"{declared.stored}: the admin calls everything and the regulator "
                        "writes nothing: neither is declared")
    return found


def role_table(commands: Iterable[Declared[Any, Any]] = (),
               core: Mapping[str, Row] = CORE_ROLES) -> RoleTable:
    """The role table: ``core``'s rows and those of the RPCs that call ``commands`` (the games'
    declarations, ``services.api.game.Served.commands``), each a writing row of its command's
    roles; ``RoleError`` for an RPC calling commands of different roles or one named both by
    a declaration and by ``core``, or a declared role that is not one (see the module's
    text)."""
    from services.ledger.methods import COMMAND

    derived: dict[str, Row] = {}
    caller: dict[str, str] = {}  # RPC -> the first command declared as called by it
    for declared in commands:
        if declared.kind != COMMAND or not declared.rpcs:
            continue
        row = (True, _declared_roles(declared))
        for rpc in declared.rpcs:
            if rpc in core:
                raise RoleError(f"{rpc}: its row is the core's and {declared.stored}'s "
                                "declaration's (one source only)")
            if rpc in derived and derived[rpc] != row:
                raise RoleError(
                    f"{rpc} calls {caller[rpc]} ({sorted(derived[rpc][1])}) and "
                    f"{declared.stored} ({sorted(row[1])}): commands of different roles")
            derived[rpc] = row
            caller.setdefault(rpc, declared.stored)
    return RoleTable({**core, **derived})


def is_public(method: str) -> bool:
    return method.startswith(PUBLIC_PREFIXES)
