"""Treinta y Una's entry in the registry of games (``services.games``)."""

from __future__ import annotations

from typing import Any

from domain.cards import DeckKind
from domain.treinta_y_una.rules import TABLE
from services import topics
from services.games import Game, TurnRule, lazy
from services.ledger.actor import Actor
from services.ledger.methods import ACTOR, INT, OPT_INT, OPT_STR, STR, Method, command, query
from services.ledger.views import TurnView
from services.treinta_y_una.commands import GAME as NAME
from services.treinta_y_una.commands import ROLES, TreintaYUna
from services.treinta_y_una.reconcile import DayReconciliation
from services.treinta_y_una.views import HandView, RoundRecall, RoundView

_ROUND = ("round_id", STR)
_PLAYER = ("player", STR)
METHODS: dict[str, Method] = {
    "tyu_open_round": command(("table_id", STR), ("seats", STR), ("bank", INT),
                              ("round_id", OPT_STR), answer=RoundView),
    "tyu_place_stake": command(_ROUND, _PLAYER, ("amount", INT), answer=RoundView),
    "tyu_deal": command(_ROUND, answer=RoundView),
    "tyu_carta": command(_ROUND, _PLAYER, answer=RoundView),
    "tyu_me_planto": command(_ROUND, _PLAYER, answer=RoundView),
    "tyu_stand_for_absent": command(_ROUND, _PLAYER, ("turn", OPT_INT), answer=RoundView),
    "tyu_turn": query(_ROUND, answer=TurnView),
    "tyu_settle": command(_ROUND, answer=RoundView),
    "tyu_cancel_round": command(_ROUND, answer=RoundView),
    "tyu_get_round": query(_ROUND, answer=RoundView),
    "tyu_latest_round": query(("table_id", STR), answer=RoundView | None),
    "tyu_list_rounds": query(("table_id", STR), answer=list[str]),
    "tyu_my_hand": query(_ROUND, _PLAYER, ("actor", ACTOR), answer=HandView),
    "tyu_recall": query(_ROUND, answer=RoundRecall),
    "tyu_reconcile": query(("table_id", STR), answer=list[DayReconciliation]),
}


def turn_time(ledger: Any, request_id: str, round_id: str, view: TurnView, actor: Actor
              ) -> object:
    """The turn clock's command once a player let the turn time pass: the croupier's "me
    planto" for the absent player (RULES.md §2)."""
    return ledger.tyu_stand_for_absent(request_id, round_id, view.player, view.turn,
                                       actor=actor)


GAME = Game(
    name=NAME,
    deck_kind=DeckKind.SPANISH_40,
    options=TABLE,
    table_accounts=ROLES,
    commands=TreintaYUna,
    methods=METHODS,
    servicers=lazy("services.treinta_y_una.servicer", "add_servicers"),
    regulator_rpcs=lazy("services.treinta_y_una.regulator", "regulator_rpcs"),  # ReplayRound
    services=("sabot.treinta_y_una.v1.TreintaYUnaService",),
    topics=topics.TREINTA_Y_UNA | topics.TREINTA_Y_UNA_AGGREGATES,
    # a round ends settled, or called off before the deal (its stakes returned)
    round_ends=frozenset({topics.TREINTA_Y_UNA_ROUND_SETTLED,
                          topics.TREINTA_Y_UNA_ROUND_CANCELLED}),
    turns=TurnRule(topics.TREINTA_Y_UNA_AGGREGATES, "tyu_turn", turn_time),
    replay=lazy("services.treinta_y_una.replay", "replay"),
    projections=lazy("services.treinta_y_una.projection", "views"),
)
