"""TreintaYUnaService: the game's gRPC servicer (``proto/sabot/treinta_y_una/v1``).

The same errors, roles and idempotency as the Trente et Quarante servicers: every request field
checked at the edge (INVALID_ARGUMENT naming it), every command run as the caller's actor with
its request id (a retry answers the first answer), the ledger deciding ownership (a player acts
on its own hand only: PERMISSION_DENIED ``player``) and the turn (FAILED_PRECONDITION ``player``
naming whose turn it is). Answers, streams and recalls carry face-down cards by position only
until shown; ``GetMyHand`` is the holder's alone.

A player's ``WatchRound``, ``RecallRound``, ``GetRound`` and ``GetLatestRound`` show the other
players' names as "" (its own and the house's accounts as they are: ``convert.redact`` with the
round's :data:`NAMES`, as ``WatchTable`` and ``GetCoup`` show a Trente et Quarante table); the
croupier, back office and regulator see every name. A command's answer is the whole round as
recorded, to the one who gave the command. ``RecallRound`` reads the steps from the game's read
model (caught up first).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from functools import cached_property
from typing import Any, Protocol

import grpc

from domain.treinta_y_una.rules import TABLE
from services import topics
from services.api import convert, errors, names
from services.api.game import Played
from services.api.gen.sabot.treinta_y_una.v1 import treinta_y_una_pb2 as pb
from services.api.gen.sabot.treinta_y_una.v1 import treinta_y_una_pb2_grpc as pb_grpc
from services.api.gen.sabot.v1 import common_pb2
from services.api.hub import Hub
from services.api.reports import GameReadModels
from services.api.roles import Principal
from services.api.streams import follow
from services.ledger.remote import AnyLedger
from services.ledger.views import StoredEvent
from services.projections.games import Step
from services.treinta_y_una.commands import GAME, TreintaYUnaLedger
from services.treinta_y_una.reconcile import DayReconciliation
from services.treinta_y_una.views import (
    HandView,
    RoundRecall,
    RoundStakeView,
    RoundStep,
    RoundView,
)

SERVICE = "sabot.treinta_y_una.v1.TreintaYUnaService"
_ROUND = {"round_id": "round", "player": "player", "amount": "amount.amount_minor",
          "bank": "bank.amount_minor", "table_id": "parent", "seats": "seats"}


class _OnRound(Protocol):
    """A request of a command on a round (its request id, the round's name)."""

    @property
    def request_id(self) -> str: ...

    @property
    def round(self) -> str: ...


def round_name(field: str, name: str) -> tuple[str, str]:
    """``tables/{table}/rounds/{round}``: (table id, round id, a UUID)."""
    if not name:
        raise errors.invalid(field, "required")
    parts = name.split("/")
    if len(parts) != 4 or parts[0] != "tables" or parts[2] != "rounds":
        raise errors.invalid(field, "expected tables/{table}/rounds/{round}")
    table_id = names.check_id(field, parts[1])
    from services.api.base import check_uuid

    round_id = check_uuid(field, parts[3])
    if round_id is None:
        raise errors.invalid(field, "expected tables/{table}/rounds/{round}")
    return table_id, round_id


def player_name(field: str, value: str) -> str:
    """``accounts/{account}`` or a bare account id."""
    if value.startswith("accounts/"):
        return names.account_name(field, value)
    return names.check_id(field, value)


def _money(amount: int, currency: str) -> common_pb2.Money:
    return common_pb2.Money(currency_code=currency, amount_minor=amount)


def _account(player: str) -> str:
    """``accounts/{player}``; "" for a name hidden from the caller."""
    return names.account(player) if player else ""


def _stake(s: RoundStakeView, currency: str) -> pb.Stake:
    return pb.Stake(player=_account(s.player), amount=_money(s.amount, currency),
                    held=_money(s.held, currency), carried=s.carried)


def _hand(h: HandView) -> pb.Hand:
    return pb.Hand(
        player=_account(h.player),
        cards=[pb.Card(position=s.position, face_down=s.face_down, code=s.code or "",
                       commitment=s.commitment) for s in h.slots],
        stood=h.stood, out=h.out, shown=h.total is not None, total=h.total or 0,
        real=bool(h.real), bust=bool(h.bust),
    )


def round_message(v: RoundView) -> pb.Round:
    cur = v.currency
    return pb.Round(
        name=f"tables/{v.table_id}/rounds/{v.round_id}", number=v.number,
        shoe=names.shoe(v.table_id, v.shoe_id), commitment=v.commitment, phase=v.phase,
        seats=list(v.seats), banker=v.banker, banker_reason=v.banker_reason,
        lot_index=-1 if v.lot_index is None else v.lot_index, bank=_money(v.bank, cur),
        mano=v.mano, whose_turn=v.whose_turn or "", turn_start_time=v.turn_since or "",
        stakes=[_stake(s, cur) for s in v.stakes], hands=[_hand(h) for h in v.hands],
        results=[pb.Result(player=r.player, outcome=r.outcome, amount=_money(r.amount, cur),
                           multiple=r.multiple, paid=_money(r.paid, cur),
                           short=_money(r.short, cur),
                           commission=_money(r.commission, cur)) for r in v.results],
        movements=[pb.RoundMovement(seq=m.seq, kind=m.kind, player=m.player,
                                    amount=_money(m.amount, cur),
                                    debit_account=m.debit_account,
                                    credit_account=m.credit_account) for m in v.moved],
        next_banker=v.next_banker or "", next_banker_reason=v.next_banker_reason or "",
        carried=[_stake(s, cur) for s in v.carried], preset=v.preset, options=dict(v.options),
    )


# The keys of a round's events and views that hold players' names (besides
# ``convert.IDENTITY_KEYS``): a player sees its own and the house's accounts, the other players'
# as "" (as WatchTable shows a Trente et Quarante table).
NAMES = frozenset({"seats", "banker", "mano", "next_banker", "holder", "carried", "whose_turn"})


def step_message(position: int, version: int, event: str, time: str, data: Any,
                 viewer: str | None = None) -> pb.RoundStep:
    """One step of a round as ``viewer`` may see it (``convert.viewer_of``: None, every name),
    for WatchRound and RecallRound alike."""
    return pb.RoundStep(position=position, version=version, event=event, time=time,
                        data_json=json.dumps(convert.redact(data, viewer, NAMES),
                                             sort_keys=True, default=str))


def _step(s: RoundStep, viewer: str | None = None) -> pb.RoundStep:
    """A step of a recall (its position 0, as the proto says)."""
    return step_message(0, s.version, s.event, s.timestamp, s.data, viewer)


def seen_by(v: RoundView, viewer: str | None) -> RoundView:
    """The round as ``viewer`` may see it: the other players' names "" (None: every name)."""
    return convert.redacted(v, viewer, NAMES)


class TreintaYUnaServicer(GameReadModels, pb_grpc.TreintaYUnaServiceServicer):
    @cached_property
    def rounds(self) -> TreintaYUnaLedger:
        """The game's typed commands on the ledger (``commands.TreintaYUnaLedger``)."""
        return self.ledger.game(TreintaYUnaLedger)

    def _round(self, field: str, name: str) -> tuple[str, str]:
        view = self._round_view(field, name)
        return view.table_id, view.round_id

    def _round_view(self, field: str, name: str) -> RoundView:
        """The round ``name`` names, checked against the table it names (NOT_FOUND)."""
        table_id, round_id = round_name(field, name)
        view: RoundView = self.read({"round_id": field}, self.rounds.get_round, round_id)
        if view.table_id != table_id:
            raise errors.ApiError(grpc.StatusCode.NOT_FOUND, field, "NOT_FOUND",
                                  "no such round at this table")
        return view

    def _amount(self, field: str, money: common_pb2.Money, currency: str, present: bool) -> int:
        if not present:
            raise errors.invalid(field, "required")
        names.check_amount(f"{field}.amount_minor", money.amount_minor)
        if money.currency_code and money.currency_code != currency:
            raise errors.invalid(f"{field}.currency_code", f"the table plays in {currency}")
        return money.amount_minor

    def OpenTable(self, request: pb.OpenTableRequest,
                  context: grpc.ServicerContext) -> pb.Table:
        rid = names.check_request_id(request.request_id)
        table_id = names.check_id("table_id", request.table_id)
        preset = request.preset or TABLE.default_preset
        if preset not in TABLE.presets:
            raise errors.invalid("preset", f"unknown preset (one of {', '.join(TABLE.presets)})")
        if len(request.overrides) > names.MAX_OVERRIDES:
            raise errors.invalid("overrides", f"at most {names.MAX_OVERRIDES} options")
        for key, value in request.overrides.items():
            names.check_text("overrides", key, required=True, limit=64)
            names.check_text(f"overrides.{key}", value, required=True, limit=64)
        view = self.write({"table_id": "table_id"}, self.ledger.open_table, rid, table_id,
                          preset, dict(request.overrides), GAME, actor=self.actor(context))
        return pb.Table(name=names.table(view.table_id), game=GAME, preset=view.preset,
                        options=dict(view.options), currency_code=view.currency)

    def OpenRound(self, request: pb.OpenRoundRequest,
                  context: grpc.ServicerContext) -> pb.Round:
        rid = names.check_request_id(request.request_id)
        table_id = names.table_name("parent", request.parent)
        if not 2 <= len(request.seats) <= 13:
            raise errors.invalid("seats", "2 to 13 seats")
        seats = [player_name(f"seats[{i}]", s) for i, s in enumerate(request.seats)]
        from services.api.base import check_uuid

        round_id = check_uuid("round_id", request.round_id)
        currency = self.table_currency(table_id, "parent")
        bank = self._amount("bank", request.bank, currency, request.HasField("bank"))
        view = self.write(_ROUND, self.rounds.open_round, rid, table_id, ",".join(seats), bank,
                          round_id, actor=self.actor(context))
        return round_message(view)

    def PlaceStake(self, request: pb.PlaceStakeRequest,
                   context: grpc.ServicerContext) -> pb.Round:
        rid = names.check_request_id(request.request_id)
        table_id, round_id = self._round("round", request.round)
        player = player_name("player", request.player)
        amount = self._amount("amount", request.amount, self.table_currency(table_id, "round"),
                              request.HasField("amount"))
        return round_message(self.write(_ROUND, self.rounds.place_stake, rid, round_id, player,
                                        amount, actor=self.actor(context)))

    def _asked(self, request: _OnRound) -> tuple[str, str]:
        """A command's request id and the round it names (checked in that order)."""
        rid = names.check_request_id(request.request_id)
        _, round_id = self._round("round", request.round)
        return rid, round_id

    def Deal(self, request: pb.DealRequest, context: grpc.ServicerContext) -> pb.Round:
        rid, round_id = self._asked(request)
        return round_message(self.write(_ROUND, self.rounds.deal, rid, round_id,
                                        actor=self.actor(context)))

    def Carta(self, request: pb.CartaRequest, context: grpc.ServicerContext) -> pb.Round:
        rid, round_id = self._asked(request)
        return round_message(self.write(_ROUND, self.rounds.carta, rid, round_id,
                                        player_name("player", request.player),
                                        actor=self.actor(context)))

    def MePlanto(self, request: pb.MePlantoRequest, context: grpc.ServicerContext) -> pb.Round:
        rid, round_id = self._asked(request)
        return round_message(self.write(_ROUND, self.rounds.me_planto, rid, round_id,
                                        player_name("player", request.player),
                                        actor=self.actor(context)))

    def StandForAbsent(self, request: pb.StandForAbsentRequest,
                       context: grpc.ServicerContext) -> pb.Round:
        rid, round_id = self._asked(request)
        return round_message(self.write(_ROUND, self.rounds.stand_for_absent, rid, round_id,
                                        player_name("player", request.player),
                                        actor=self.actor(context)))

    def SettleRound(self, request: pb.SettleRoundRequest,
                    context: grpc.ServicerContext) -> pb.Round:
        rid, round_id = self._asked(request)
        return round_message(self.write(_ROUND, self.rounds.settle, rid, round_id,
                                        actor=self.actor(context)))

    def CancelRound(self, request: pb.CancelRoundRequest,
                    context: grpc.ServicerContext) -> pb.Round:
        rid, round_id = self._asked(request)
        return round_message(self.write(_ROUND, self.rounds.cancel_round, rid, round_id,
                                        actor=self.actor(context)))

    def GetRound(self, request: pb.GetRoundRequest, context: grpc.ServicerContext) -> pb.Round:
        view = self._round_view("name", request.name)
        return round_message(seen_by(view, convert.viewer_of(self.caller(context))))

    def GetLatestRound(self, request: pb.GetLatestRoundRequest,
                       context: grpc.ServicerContext) -> pb.Round:
        table_id = names.table_name("parent", request.parent)
        view = self.read({"table_id": "parent"}, self.rounds.latest_round, table_id)
        if view is None:
            raise errors.ApiError(grpc.StatusCode.NOT_FOUND, "parent", "NO_ROUND",
                                  "no round has opened at this table")
        return round_message(seen_by(view, convert.viewer_of(self.caller(context))))

    def GetMyHand(self, request: pb.GetMyHandRequest, context: grpc.ServicerContext) -> pb.Hand:
        _, round_id = self._round("round", request.round)
        player = player_name("player", request.player)
        hand = self.read({"round_id": "round", "player": "player"}, self.rounds.my_hand,
                         round_id, player, self.actor(context))
        return _hand(hand)

    def RecallRound(self, request: pb.RecallRoundRequest,
                    context: grpc.ServicerContext) -> pb.RoundRecall:
        """The round and its steps in order; the steps from the read model, caught up after the
        round was read (so every step the round shows is there, the last one included): the
        ledger's ``tyu_recall`` answer, step for step (``recall_of``)."""
        view = self._round_view("name", request.name)
        steps = self.game_steps(GAME, view.round_id)  # the read model's
        recall = recall_of(view, steps)
        viewer = convert.viewer_of(self.caller(context))  # a player: others' names hidden
        return pb.RoundRecall(round=round_message(seen_by(recall.round, viewer)),
                              steps=[_step(s, viewer) for s in recall.steps])

    def GetReconciliation(self, request: pb.GetReconciliationRequest,
                          context: grpc.ServicerContext) -> pb.Reconciliation:
        """The table's reconciliation per gaming day, from the read models."""
        table_id, cur, found, position = self.game_reconciliation(GAME, request.table,
                                                                  request.gaming_day)
        days: list[DayReconciliation] = [d for d in found if d.gaming_day == request.gaming_day
                                         or not request.gaming_day]
        return pb.Reconciliation(
            table=names.table(table_id), position=position,
            balanced=all(d.balanced for d in days), days=[pb.DayReconciliation(
                gaming_day=d.gaming_day, rounds=d.rounds, stakes=_money(d.stakes, cur),
                collected=_money(d.collected, cur), paid=_money(d.paid, cur),
                commission=_money(d.commission, cur), players_net=_money(d.players_net, cur),
                carried=_money(d.carried, cur), balanced=d.balanced) for d in days])

    def WatchRound(self, request: pb.WatchRoundRequest,
                   context: grpc.ServicerContext) -> Iterator[pb.WatchRoundResponse]:
        _, round_id = self._round("round", request.round)
        if request.after_position < 0:
            raise errors.invalid("after_position", "must not be negative")

        viewer = convert.viewer_of(self.caller(context))  # a player: others' names hidden

        def answer(batch: list[StoredEvent]) -> pb.WatchRoundResponse | None:
            steps = [_stored_step(e, viewer) for e in batch if str(e.originator_id) == round_id]
            return pb.WatchRoundResponse(steps=steps) if steps else None

        def done(batch: list[StoredEvent]) -> bool:
            return any(str(e.originator_id) == round_id and e.topic in _ENDS for e in batch)

        yield from follow(self, context, request.after_position, answer, done=done)

    def ListRounds(self, request: pb.ListRoundsRequest,
                   context: grpc.ServicerContext) -> pb.ListRoundsResponse:
        units, token = self.game_units_asked(GAME, request, context)  # the filters, a page
        viewer = convert.viewer_of(self.caller(context))
        rounds = [round_message(seen_by(self.read({"round_id": "parent"},
                                                  self.rounds.get_round, u.unit_id),
                                        viewer))
                  for u in units]
        return pb.ListRoundsResponse(rounds=rounds, next_page_token=token)


_ENDS = frozenset({topics.TREINTA_Y_UNA_ROUND_SETTLED, topics.TREINTA_Y_UNA_ROUND_CANCELLED})


def recall_of(view: RoundView, steps: Sequence[Step]) -> RoundRecall:
    """A round's recall from its read model's steps (``GameReadModels.game_steps``): what the
    ledger's ``tyu_recall`` answers from the aggregate (the same ``commands.round_step``
    made both)."""
    return RoundRecall(view, tuple(RoundStep(s.version, s.kind, s.at, s.data) for s in steps))


def _stored_step(e: Any, viewer: str | None = None) -> pb.RoundStep:
    state = {k: v for k, v in e.state.items()
             if k not in ("originator_id", "originator_version", "timestamp", "originator_topic")}
    return step_message(e.position, e.version, topics.short(e.topic),
                        e.timestamp.isoformat() if e.timestamp is not None else "", state, viewer)


def add_servicers(server: grpc.Server, ledger: AnyLedger, tokens: Mapping[str, Principal],
                  hub: Hub, played: Played) -> tuple[Any, ...]:
    """The game's servicer on ``server`` (its commands: ``commands.TreintaYUnaLedger``)."""
    servicer = TreintaYUnaServicer(ledger, tokens, hub, played)
    pb_grpc.add_TreintaYUnaServiceServicer_to_server(servicer, server)
    return (servicer,)
