"""CuarentaService (``proto/sabot/cuarenta/v1/cuarenta.proto``): Cuarenta's matches over gRPC.

The same edge as the Trente et Quarante servicers: names checked here (``tables/{table}/
matches/{match}``, ``accounts/{account}``), roles by the table in ``services/api/roles.py``,
errors as ``google.rpc.Status`` naming the request's field, request ids scoped by principal.
Who may play or see a seat is decided by the ledger from the caller's actor: a player plays
its own seat only, and only its holder gets a hand's faces (``GetHand``); every other answer and
stream holds a hand as how many cards it has.

Names: the players seated at a match (opponents and partners, two sides face to face) know
each other, so a seated player reads every seat's name, as the house does; a player not seated
at it reads the others' names as "" (the seats, the money's accounts: ``convert.redacted``, as
Treinta y Una's rounds and Trente et Quarante's tables show a player), the house's accounts as
they are.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import Any

import grpc

from services.api import convert, errors, names
from services.api.base import check_uuid
from services.api.gen.sabot.cuarenta.v1 import cuarenta_pb2, cuarenta_pb2_grpc
from services.api.reports import GameReadModels
from services.api.streams import Turn, stream
from services.cuarenta.commands import GAME_NAME, CuarentaLedger
from services.cuarenta.projection import move
from services.cuarenta.reconcile import Reconciliation
from services.cuarenta.views import HandView, MatchStep, MatchView, MoveView

_FIELDS = {
    "table_id": "table",
    "match_id": "match",
    "seats": "seats",
    "stake": "stake.amount_minor",
    "card": "card",
    "capture": "capture",
    "seat": "seat",
    "reason": "reason",
    "dealer": "dealer",
    "preset": "preset",
}


def match_name(table_id: str, match_id: str) -> str:
    return f"tables/{table_id}/matches/{match_id}"


def parse_match(field: str, name: str) -> tuple[str, str]:
    table_id, match_id = names._parts(field, name, ("tables", "matches"))
    return table_id, check_uuid(field, match_id) or ""


def _int(value: int | None) -> int:
    return -1 if value is None else value


# The keys of a match's views that hold players' names (besides ``convert.IDENTITY_KEYS``).
NAMES = frozenset({"seats"})


def match_message(m: MatchView) -> cuarenta_pb2.Match:
    return cuarenta_pb2.Match(
        name=match_name(m.table_id, m.match_id),
        seats=[names.account(s) if s else "" for s in m.seats],
        preset=m.preset, options=m.options, stake=convert.money(m.stake, m.currency),
        phase=m.phase, hand=m.hand, deal=m.deal, turn=m.turn, dealer=m.dealer,
        to_act=_int(m.to_act), points=list(m.points), table_cards=list(m.table),
        last_played=m.last_played or "", last_played_seat=_int(m.last_played_seat),
        held=list(m.held), won=list(m.won), stock=m.stock, winner=_int(m.winner),
        end_reason=m.end or "", shoe=names.shoe(m.table_id, m.shoe_id) if m.shoe_id else "",
        hands=m.hands, stakes_account=m.stakes_account,
        commission_account=m.commission_account,
    )


def move_message(number: int, mv: MoveView, table_id: str, currency: str
                 ) -> cuarenta_pb2.Move:
    return cuarenta_pb2.Move(
        number=number, kind=mv.kind, hand=mv.hand, deal=mv.deal, turn=mv.turn,
        seat=_int(mv.seat), side=_int(mv.side), card=mv.card or "",
        position=_int(mv.position), taken=list(mv.taken), capture_kind=mv.capture_kind or "",
        points=mv.points, withheld=mv.withheld, total=_int(mv.total), totals=list(mv.totals),
        cards=list(mv.cards), carton=list(mv.carton), reason=mv.reason or "",
        amount=convert.money(mv.amount, currency) if mv.kind == "money" else None,
        debit_account=mv.debit_account or "", credit_account=mv.credit_account or "",
        shoe=names.shoe(table_id, mv.shoe_id) if mv.shoe_id else "",
        commitment=mv.commitment or "", time=mv.time or "",
    )


def step_message(step: MatchStep, first: int = 0) -> cuarenta_pb2.MatchStep:
    """``first``: the number of the step's first move, when known (0: numbered from 1)."""
    m = step.match
    return cuarenta_pb2.MatchStep(
        match=match_message(m),
        moves=[move_message((first or 1) + i, mv, m.table_id, m.currency)
               for i, mv in enumerate(step.moves)],
    )


def hand_message(m: HandView, table_id: str) -> cuarenta_pb2.Hand:
    return cuarenta_pb2.Hand(
        match=match_name(table_id, m.match_id), seat=m.seat, hand=m.hand,
        cards=[cuarenta_pb2.HeldCard(position=c.position, card=c.card) for c in m.cards],
        to_act=m.to_act,
        legal=[cuarenta_pb2.LegalPlay(card=p.card, capture=list(p.capture), kind=p.kind or "",
                                      points=p.points) for p in m.legal],
    )


class CuarentaServicer(GameReadModels, cuarenta_pb2_grpc.CuarentaServiceServicer):
    """The ledger's Cuarenta commands (``commands.CuarentaLedger``) over gRPC."""

    @cached_property
    def game(self) -> CuarentaLedger:
        """The game's typed commands on the ledger (``commands.CuarentaLedger``)."""
        return self.ledger.game(CuarentaLedger)

    def _match(self, field: str, name: str) -> tuple[str, MatchView]:
        """The match a name names, checked against the table it names (NOT_FOUND)."""
        table_id, match_id = parse_match(field, name)
        if not match_id:
            raise errors.invalid(field, "required")
        view: MatchView = self.read({"match_id": field}, self.game.get_match, match_id)
        if view.table_id != table_id:
            raise errors.ApiError(grpc.StatusCode.NOT_FOUND, field, "UNKNOWN_MATCH",
                                  f"no match {match_id} at table {table_id}")
        return match_id, view

    def _viewer(self, context: grpc.ServicerContext, view: MatchView) -> str | None:
        """Whom a read of the match is for (``convert.viewer_of``): None, every name, for the
        house and for a player seated at it; else the player's account (others' names "")."""
        viewer = convert.viewer_of(self.caller(context))
        return None if viewer is None or viewer in view.seats else viewer

    def _moves(self, match_id: str, field: str) -> Sequence[MoveView]:
        moves: Sequence[MoveView] = self.read({"match_id": field}, self.game.history,
                                              match_id)
        return moves

    def OpenMatch(self, request: cuarenta_pb2.OpenMatchRequest,
                  context: grpc.ServicerContext) -> cuarenta_pb2.MatchStep:
        rid = names.check_request_id(request.request_id)
        table_id = names.table_name("table", request.table)
        match_id = check_uuid("match_id", request.match_id)
        seats = [names.account_name(f"seats[{i}]", s) for i, s in enumerate(request.seats)]
        stake: int | None = None
        if request.HasField("stake"):
            stake = names.check_amount("stake.amount_minor", request.stake.amount_minor)
        options = {names.check_text("options", k, required=True):
                   names.check_text(f"options[{k}]", v) for k, v in request.options.items()}
        dealer = request.dealer if request.HasField("dealer") else None
        step: MatchStep = self.write(
            _FIELDS, self.game.open_match, rid, table_id, seats, stake,
            request.preset or None, options or None, dealer, match_id,
            actor=self.actor(context))
        return step_message(step)

    def Deal(self, request: cuarenta_pb2.DealRequest,
             context: grpc.ServicerContext) -> cuarenta_pb2.MatchStep:
        rid = names.check_request_id(request.request_id)
        match_id, _ = self._match("match", request.match)
        step: MatchStep = self.write(_FIELDS, self.game.deal, rid, match_id,
                                     actor=self.actor(context))
        return step_message(step)

    def PlayCard(self, request: cuarenta_pb2.PlayCardRequest,
                 context: grpc.ServicerContext) -> cuarenta_pb2.MatchStep:
        rid = names.check_request_id(request.request_id)
        match_id, _ = self._match("match", request.match)
        card = names.check_text("card", request.card, required=True, limit=4)
        codes = [names.check_text(f"capture[{i}]", c, required=True, limit=4)
                 for i, c in enumerate(request.capture)]
        if request.leave_on_table and codes:
            raise errors.invalid("capture", "leave_on_table takes no capture")
        capture: list[str] | None = codes if codes or request.leave_on_table else None
        step: MatchStep = self.write(_FIELDS, self.game.play, rid, match_id,
                                     request.seat, card, capture, actor=self.actor(context))
        return step_message(step)

    def Forfeit(self, request: cuarenta_pb2.ForfeitRequest,
                context: grpc.ServicerContext) -> cuarenta_pb2.MatchStep:
        rid = names.check_request_id(request.request_id)
        match_id, _ = self._match("match", request.match)
        reason = names.check_text("reason", request.reason, required=True, limit=32)
        step: MatchStep = self.write(_FIELDS, self.game.forfeit, rid, match_id,
                                     request.seat, reason, actor=self.actor(context))
        return step_message(step)

    def GetMatch(self, request: cuarenta_pb2.GetMatchRequest,
                 context: grpc.ServicerContext) -> cuarenta_pb2.Match:
        _, view = self._match("name", request.name)
        return match_message(convert.redacted(view, self._viewer(context, view), NAMES))

    def GetHand(self, request: cuarenta_pb2.GetHandRequest,
                context: grpc.ServicerContext) -> cuarenta_pb2.Hand:
        match_id, view = self._match("match", request.match)
        hand: HandView = self.read(_FIELDS, self.game.hand, match_id, request.seat,
                                   self.actor(context))
        return hand_message(hand, view.table_id)

    def ListMoves(self, request: cuarenta_pb2.ListMovesRequest,
                  context: grpc.ServicerContext) -> cuarenta_pb2.ListMovesResponse:
        match_id, view = self._match("match", request.match)
        if request.after < 0:
            raise errors.invalid("after", "must not be negative")
        moves = [move(s) for s in self.game_steps(GAME_NAME, match_id)]  # the read model's
        viewer = self._viewer(context, view)
        return cuarenta_pb2.ListMovesResponse(moves=[
            move_message(n, convert.redacted(mv, viewer), view.table_id, view.currency)
            for n, mv in enumerate(moves, 1) if n > request.after])

    def GetReconciliation(self, request: cuarenta_pb2.GetReconciliationRequest,
                          context: grpc.ServicerContext) -> cuarenta_pb2.Reconciliation:
        """The table's reconciliation with the commission, from the read models."""
        table_id, cur, found, position = self.game_reconciliation(GAME_NAME, request.table,
                                                                  request.gaming_day)
        r: Reconciliation = found
        return cuarenta_pb2.Reconciliation(
            table=names.table(table_id), in_play=r.in_play, held=convert.money(r.held, cur),
            stakes_account=convert.money(r.stakes_account, cur),
            commission_account=convert.money(r.commission_account, cur),
            balanced=r.balanced, position=position, days=[cuarenta_pb2.DayReconciliation(
                gaming_day=d.gaming_day, matches=d.matches, stakes=convert.money(d.stakes, cur),
                payouts=convert.money(d.payouts, cur),
                commission=convert.money(d.commission, cur),
                players_net=convert.money(d.players_net, cur), balanced=d.balanced)
                for d in r.days if d.gaming_day == request.gaming_day or not request.gaming_day])

    def WatchMatch(self, request: cuarenta_pb2.WatchMatchRequest,
                   context: grpc.ServicerContext) -> Iterator[cuarenta_pb2.WatchMatchResponse]:
        """The match's moves after ``after``, then each as it is stored, until the match is
        over and every move was sent (or the call ends)."""
        match_id, view = self._match("match", request.match)
        if request.after < 0:
            raise errors.invalid("after", "must not be negative")
        sent = request.after
        viewer = self._viewer(context, view)

        def turn() -> Turn[cuarenta_pb2.WatchMatchResponse]:
            nonlocal sent
            position = self.hub.catch_up()
            over = self.game.get_match(match_id).phase == "over"
            moves = self._moves(match_id, "match")  # read after: all of them, when over
            send = []
            if len(moves) > sent:
                send.append(cuarenta_pb2.WatchMatchResponse(moves=[
                    move_message(n, convert.redacted(mv, viewer), view.table_id, view.currency)
                    for n, mv in enumerate(moves, 1) if n > sent]))
                sent = len(moves)
            return Turn(send=send, over=over, wait=position)

        yield from stream(self, context, turn)

    def ListMatches(self, request: cuarenta_pb2.ListMatchesRequest,
                    context: grpc.ServicerContext) -> cuarenta_pb2.ListMatchesResponse:
        units, token = self.game_units_asked(GAME_NAME, request, context)  # filters, a page
        viewer = convert.viewer_of(self.caller(context))
        matches = []
        for u in units:
            view = self.read({"match_id": "parent"}, self.game.get_match, u.unit_id)
            seen = None if viewer is None or viewer in view.seats else viewer
            matches.append(match_message(convert.redacted(view, seen, NAMES)))
        return cuarenta_pb2.ListMatchesResponse(matches=matches, next_page_token=token)


def add_servicers(server: Any, ledger: Any, tokens: Any, hub: Any, played: Any
                  ) -> tuple[Any, ...]:
    """The game's gRPC servicers on ``server`` (``ApiGame.servicers``)."""
    servicer = CuarentaServicer(ledger, tokens, hub, played)
    cuarenta_pb2_grpc.add_CuarentaServiceServicer_to_server(servicer, server)
    return (servicer,)
