"""Treinta y Una as the composition root holds it (``services.games.Game``): its part for each
layer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from domain.cards import DeckKind
from domain.treinta_y_una.rules import TABLE
from services import topics
from services.api.game import ApiGame
from services.games import Game
from services.ledger.actor import Actor
from services.ledger.game import LedgerGame
from services.ledger.remote import AnyLedger
from services.ledger.views import TurnView
from services.projections.games import ReadGame
from services.projections.view import View
from services.regulator.replay import RegulatorGame
from services.treinta_y_una.commands import GAME as NAME
from services.treinta_y_una.commands import ROLES, TreintaYUna, TreintaYUnaLedger
from services.turn_clock import TurnGame


def turn(ledger: AnyLedger, round_id: str) -> TurnView:
    """The turn a round waits on (the turn clock's query)."""
    return ledger.game(TreintaYUnaLedger).turn(round_id)


def turn_time(ledger: AnyLedger, request_id: str, round_id: str, view: TurnView, actor: Actor
              ) -> object:
    """The turn clock's command once a player let the turn time pass: the croupier's "me
    planto" for the absent player (RULES.md §2)."""
    assert view.player is not None  # (a turn the clock acts on names its player)
    return ledger.game(TreintaYUnaLedger).stand_for_absent(
        request_id, round_id, view.player, view.turn, actor=actor)


def add_servicers(*deps: Any) -> tuple[Any, ...]:
    """The game's gRPC servicer (``services/treinta_y_una/servicer.py``)."""
    from services.treinta_y_una.servicer import add_servicers as add

    return add(*deps)


def regulator_rpcs() -> tuple[type, ...]:
    """The game's RPC of ``sabot.v1.RegulatorService`` (ReplayRound)."""
    from services.treinta_y_una.regulator import regulator_rpcs as rpcs

    return rpcs()


def replay(found: Any, opened: Mapping[str, Any], only: str | None) -> Any:
    """The regulator's replay of a shoe's round (``services/treinta_y_una/replay.py``)."""
    from services.treinta_y_una.replay import replay as replay_round

    return replay_round(found, dict(opened), only)


def views() -> Sequence[View]:
    """The game's read models (``services/treinta_y_una/projection.py``)."""
    from services.treinta_y_una.projection import views as made

    return made()


TOPICS = topics.TREINTA_Y_UNA | topics.TREINTA_Y_UNA_AGGREGATES
# a round ends settled, or called off before the deal (its stakes returned)
ROUND_ENDS = frozenset({topics.TREINTA_Y_UNA_ROUND_SETTLED, topics.TREINTA_Y_UNA_ROUND_CANCELLED})

GAME = Game(
    ledger=LedgerGame(name=NAME, deck_kind=DeckKind.SPANISH_40, options=TABLE,
                      commands=TreintaYUna, face=TreintaYUnaLedger, table_accounts=ROLES),
    api=ApiGame(name=NAME, options=TABLE, servicers=add_servicers,
                services=("sabot.treinta_y_una.v1.TreintaYUnaService",),
                regulator_rpcs=regulator_rpcs, topics=TOPICS),  # ReplayRound
    read=ReadGame(name=NAME, views=views),
    regulator=RegulatorGame(name=NAME, replay=replay, round_ends=ROUND_ENDS, topics=TOPICS),
    turns=TurnGame(name=NAME, aggregates=topics.TREINTA_Y_UNA_AGGREGATES, topics=TOPICS,
                   round_ends=ROUND_ENDS, query=turn, act=turn_time),
)
