"""Trente et Quarante as the composition root holds it (``services.games.Game``): its part for
each layer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from domain.cards import DeckKind
from domain.trente_et_quarante.deal import CARDS_BEHIND_CUT_CARD
from domain.trente_et_quarante.rules import TABLE
from services import topics
from services.api.base import Base
from services.api.game import ApiGame, RoundPlace
from services.games import Game
from services.ledger.account import AccountKind
from services.ledger.game import LedgerGame
from services.projections.games import ReadGame
from services.regulator.replay import RegulatorGame
from services.trente_et_quarante.commands import GAME as NAME
from services.trente_et_quarante.commands import TrenteEtQuarante, TrenteEtQuaranteLedger
from services.trente_et_quarante.edge import coup_law
from services.trente_et_quarante.transcodings import TRANSCODINGS

# The accounts every table of the game has: its bank, its layout (the stakes on it) and the
# house's revenue from insurance premiums, partages and prisoners.
TABLE_ACCOUNTS = (
    AccountKind.BANK,
    AccountKind.LAYOUT,
    AccountKind.HOUSE_INSURANCE,
    AccountKind.HOUSE_PARTAGE,
    AccountKind.HOUSE_PRISON,
)

def add_servicers(server: Any, ledger: Any, tokens: Mapping[str, Any], hub: Any, played: Any
                  ) -> tuple[Any, ...]:
    """The game's gRPC servicers on ``server``: the betting service and the recall of its coups
    (its coups' commands are in the table service of ``sabot.v1``: ``table_rpcs``)."""
    from services.api.gen.sabot.v1 import betting_pb2_grpc, events_pb2_grpc
    from services.trente_et_quarante.betting import BettingServicer
    from services.trente_et_quarante.recall import RecallServicer

    betting = BettingServicer(ledger, tokens, hub, played)
    betting_pb2_grpc.add_BettingServiceServicer_to_server(betting, server)
    recall = RecallServicer(ledger, tokens, hub, played)
    events_pb2_grpc.add_RecallServiceServicer_to_server(recall, server)
    return (betting, recall)


def table_rpcs() -> tuple[type, ...]:
    """The game's RPCs of ``sabot.v1.TableService`` (its shoes and coups), mixed into the
    service's servicer (``services/trente_et_quarante/tables.py``)."""
    from services.trente_et_quarante.tables import CoupRpcs

    return (CoupRpcs,)


def regulator_rpcs() -> tuple[type, ...]:
    """The game's RPC of ``sabot.v1.RegulatorService`` (ReplayCoup), mixed into the service's
    servicer (``services/trente_et_quarante/regulator.py``)."""
    from services.trente_et_quarante.regulator import CoupReplay

    return (CoupReplay,)


def round_home(servicer: Base, coup_id: str, field: str) -> tuple[str, str]:
    """(table id, shoe id) of a coup, read through the servicer (NOT_FOUND naming ``field``)."""
    view = servicer.read({"coup_id": field},
                         servicer.ledger.game(TrenteEtQuaranteLedger).get_coup, coup_id)
    return str(view.table_id), str(view.shoe_id)


def feed_keys(topic: str, state: Mapping[str, Any], origin: str) -> RoundPlace | None:
    """The coup a stored event of a coup belongs to (its table and shoe: those its opening
    names)."""
    if topic == topics.COUP_OPENED:
        table_id, shoe_id = state.get("table_id"), state.get("shoe_id")
        return RoundPlace(origin, None if table_id is None else str(table_id),
                          None if shoe_id is None else str(shoe_id))
    if topic in topics.COUP_EVENTS:
        return RoundPlace(origin)
    return None


def replay(found: Any, opened: Mapping[str, Any], only: str | None) -> Any:
    """The regulator's replay of a shoe's coups (``services/trente_et_quarante/replay.py``)."""
    from services.trente_et_quarante.replay import replay as replay_coups

    return replay_coups(found, dict(opened), only)


def rerun_ids(command: str, args: Mapping[str, Any], result: Mapping[str, Any]) -> list[str]:
    """The ids a stored command drew, for its re-run (``services.ledger.replay``): a coup's id
    when ``open_coup`` was given none, a stake's when ``place_stake`` was given none and placed
    one; the other commands draw none."""
    if command == "open_coup" and args.get("coup_id") is None:
        return [str(result["coup_id"])]
    if command == "place_stake" and args.get("stake_id") is None and result.get("stake"):
        return [str(result["stake"]["stake_id"])]
    return []


TOPICS = topics.TRENTE_ET_QUARANTE | topics.TRENTE_ET_QUARANTE_AGGREGATES

GAME = Game(
    ledger=LedgerGame(name=NAME, deck_kind=DeckKind.FRENCH_52, options=TABLE,
                      commands=TrenteEtQuarante, face=TrenteEtQuaranteLedger,
                      table_accounts=TABLE_ACCOUNTS, rerun_ids=rerun_ids,
                      transcodings=TRANSCODINGS),
    api=ApiGame(name=NAME, options=TABLE, servicers=add_servicers,
                services=("sabot.v1.BettingService", "sabot.v1.RecallService"),
                table_rpcs=table_rpcs, regulator_rpcs=regulator_rpcs, round_home=round_home,
                feed_keys=feed_keys, topics=TOPICS),
    # its coups' read models are the core's (shoes, recall, reconciliation): its rule book's facts
    read=ReadGame(name=NAME, cards_behind_cut=CARDS_BEHIND_CUT_CARD, coup_law=coup_law),
    regulator=RegulatorGame(name=NAME, replay=replay,
                            round_ends=frozenset({topics.COUP_SETTLED}), topics=TOPICS),
    verify="sabot_verify.shoes",  # the verifier's own game: its coups' check is built in
)
