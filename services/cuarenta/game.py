"""Cuarenta as the composition root holds it (``services.games.Game``): a table opened with
``game="cuarenta"`` holds the match defaults (the rule book's options: ``domain/cuarenta/``),
its stakes account and the house's commission account; its matches are ``CuarentaMatch``
aggregates, each hand dealt from its own committed FRENCH-40 shoe."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from domain.cards import DeckKind
from domain.cuarenta.rules import TABLE
from services import topics
from services.api.game import ApiGame
from services.cuarenta.commands import GAME_NAME, TABLE_ACCOUNTS, Cuarenta, CuarentaLedger
from services.games import Game
from services.ledger.actor import Actor
from services.ledger.game import LedgerGame
from services.ledger.remote import AnyLedger
from services.ledger.views import TurnView
from services.projections.games import ReadGame
from services.projections.view import View
from services.regulator.replay import RegulatorGame
from services.turn_clock import TurnGame

CUARENTA = GAME_NAME

SERVICE = "sabot.cuarenta.v1.CuarentaService"


def turn(ledger: AnyLedger, match_id: str) -> TurnView:
    """The turn a match waits on (the turn clock's query)."""
    return ledger.game(CuarentaLedger).turn(match_id)


def turn_time(ledger: AnyLedger, request_id: str, match_id: str, view: TurnView, actor: Actor
              ) -> object:
    """The turn clock's command once the seat to play let the turn time pass: its side forfeits
    the match (RULES.md §3)."""
    assert view.seat is not None
    return ledger.game(CuarentaLedger).forfeit(request_id, match_id, view.seat, "turn_time",
                                               view.turn, actor=actor)


def add_servicers(*deps: Any) -> tuple[Any, ...]:
    """The game's gRPC servicer (``services/cuarenta/servicer.py``)."""
    from services.cuarenta.servicer import add_servicers as add

    return add(*deps)


def regulator_rpcs() -> tuple[type, ...]:
    """The game's RPC of ``sabot.v1.RegulatorService`` (ReplayMatch)."""
    from services.cuarenta.regulator import regulator_rpcs as rpcs

    return rpcs()


def views() -> Sequence[View]:
    """The game's read models (``services/cuarenta/projection.py``)."""
    from services.cuarenta.projection import views as made

    return made()


TOPICS = topics.CUARENTA | topics.CUARENTA_AGGREGATES
# a match ends won (a forfeit too); its pot's movements follow on the match, and the notary
# signs after them (the end of the aggregate's run). Its hands move no money.
ROUND_ENDS = frozenset({topics.CUARENTA_MATCH_WON})

GAME = Game(
    ledger=LedgerGame(name=CUARENTA, deck_kind=DeckKind.FRENCH_40, options=TABLE,
                      commands=Cuarenta, face=CuarentaLedger, table_accounts=TABLE_ACCOUNTS),
    api=ApiGame(name=CUARENTA, options=TABLE, servicers=add_servicers, services=(SERVICE,),
                regulator_rpcs=regulator_rpcs, topics=TOPICS),  # ReplayMatch
    read=ReadGame(name=CUARENTA, views=views),
    # its matches are replayed by its own RPC (``services/cuarenta/replay.py``, ReplayMatch),
    # not as a shoe's rounds
    regulator=RegulatorGame(name=CUARENTA, round_ends=ROUND_ENDS, topics=TOPICS),
    turns=TurnGame(name=CUARENTA, aggregates=topics.CUARENTA_AGGREGATES, topics=TOPICS,
                   round_ends=ROUND_ENDS, query=turn, act=turn_time),
)
