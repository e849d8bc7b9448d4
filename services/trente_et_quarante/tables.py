"""Trente et Quarante's RPCs of ``sabot.v1.TableService``: its shoes and coups.

The service is a frozen contract (clients call its methods by these names); its game-neutral
part (tables: OpenTable, GetTable, ListTables, CloseTable) is ``services/api/tables.py``. This
mixin is the game's own part, plugged in through its registry entry (``Game.table_rpcs`` in
``services/trente_et_quarante/game.py``): the server mixes it into the one servicer of the
service (``services.api.tables.servicer``).

Commands check only their own fields before the ledger; every check of the state is the
ledger's, after the request id is looked up, so a retry always gets the first answer. To a
player token other players' account ids are hidden (``convert.viewer_of``).
"""

from __future__ import annotations

from functools import cached_property
from typing import Protocol

import grpc

from domain.errors import NotFound
from services.api import convert, names
from services.api.base import Base, check_uuid
from services.api.errors import invalid
from services.api.gen.sabot.v1 import table_pb2
from services.ledger.actor import Actor
from services.trente_et_quarante import convert as tq_convert
from services.trente_et_quarante.commands import TrenteEtQuaranteLedger
from services.trente_et_quarante.views import CoupView

_SHOE = {"shoe_id": "name", "position": "cut_position", "table_id": "name"}
_COUP = {"coup_id": "name", "table_id": "name", "shoe_id": "name"}


class _CoupStep(Protocol):
    """A ledger command on a coup (close betting, deal, settle: ``TrenteEtQuaranteLedger``)."""

    def __call__(self, request_id: str, coup_id: str, *, actor: Actor) -> CoupView: ...


class CoupRpcs(Base):
    """ListCoups, the shoe RPCs (OpenShoe, GetShoe, CutShoe, CloseShoe) and the coup RPCs
    (OpenCoup, GetCoup, CloseBetting, DealCoup, SettleCoup) of ``sabot.v1.TableService``."""

    @cached_property
    def coups(self) -> TrenteEtQuaranteLedger:
        """The game's typed commands on the ledger (``commands.TrenteEtQuaranteLedger``)."""
        return self.ledger.game(TrenteEtQuaranteLedger)

    def ListCoups(
        self, request: table_pb2.ListCoupsRequest, context: grpc.ServicerContext
    ) -> table_pb2.ListCoupsResponse:
        table_id, shoe_id = names.coups_parent("parent", request.parent)
        if shoe_id is not None:
            check_uuid("parent", shoe_id)
        size, token = names.list_page(request.page_size, request.page_token)
        found, next_token = self.read(
            {"table_id": "parent", "shoe_id": "parent"},
            self.coups.list_coups,
            table_id,
            shoe_id,
            size,
            token,
        )
        currency = self.table_currency(table_id, "parent")
        viewer = convert.viewer_of(self.caller(context))
        return table_pb2.ListCoupsResponse(
            coups=[tq_convert.coup(v, currency, viewer) for v in found],
            next_page_token=next_token,
        )

    def OpenShoe(
        self, request: table_pb2.OpenShoeRequest, context: grpc.ServicerContext
    ) -> table_pb2.Shoe:
        rid = names.check_request_id(request.request_id)
        table_id = names.table_name("parent", request.parent)
        shoe_id = check_uuid("shoe_id", request.shoe_id)
        deck = names.check_text("deck_kind", request.deck_kind, limit=16) or "FRENCH-52"
        opened = self.write(
            {"table_id": "parent", "deck_kind": "deck_kind"},
            self.ledger.open_shoe,
            rid,
            table_id,
            shoe_id,
            deck,
            actor=self.actor(context),
        )
        # The shoe's size and creation time never change: read them back (a retry answers the
        # same); the rest is the shoe as it opened (not cut, no card dealt).
        created = self.read({"shoe_id": "shoe_id"}, self.ledger.get_shoe, opened.shoe_id)
        return table_pb2.Shoe(
            name=names.shoe(opened.table_id, opened.shoe_id),
            algorithm=opened.algorithm,
            deck_kind=opened.deck_kind,
            decks=opened.decks,
            size=created.size,
            commitment=opened.commitment,
            create_time=convert.timestamp(created.create_time),
        )

    def _shoe_of_table(self, name: str, field: str) -> tuple[str, str]:
        table_id, shoe_id = names.shoe_name(field, name)
        view = self.read({"shoe_id": field}, self.ledger.get_shoe, shoe_id)
        if view.table_id != table_id:
            raise NotFound(field, "NOT_FOUND", "no such shoe at this table")
        return table_id, shoe_id

    def GetShoe(
        self, request: table_pb2.GetShoeRequest, context: grpc.ServicerContext
    ) -> table_pb2.Shoe:
        table_id, shoe_id = names.shoe_name("name", request.name)
        view = self.read({"shoe_id": "name"}, self.ledger.get_shoe, shoe_id)
        if view.table_id != table_id:
            raise NotFound("name", "NOT_FOUND", "no such shoe at this table")
        return convert.shoe(view, convert.viewer_of(self.caller(context)))

    def CutShoe(
        self, request: table_pb2.CutShoeRequest, context: grpc.ServicerContext
    ) -> table_pb2.Shoe:
        rid = names.check_request_id(request.request_id)
        if request.cut_position <= 0:
            raise invalid("cut_position", "must be positive (1..size-1)")
        cut_by = names.check_text("cut_by", request.cut_by, required=True, limit=64)
        _, shoe_id = self._shoe_of_table(request.name, "name")
        view = self.write(
            {**_SHOE, "cut_by": "cut_by"},
            self.ledger.cut,
            rid,
            shoe_id,
            request.cut_position,
            cut_by,
            actor=self.actor(context),
        )
        return convert.shoe(view)

    def CloseShoe(
        self, request: table_pb2.CloseShoeRequest, context: grpc.ServicerContext
    ) -> table_pb2.Shoe:
        rid = names.check_request_id(request.request_id)
        table_id, shoe_id = self._shoe_of_table(request.name, "name")
        closed = self.write(_SHOE, self.ledger.close_shoe, rid, shoe_id,
                          actor=self.actor(context))
        currency = self.table_currency(table_id, "name")
        # Once closed, a shoe never changes: read it back whole (a retry answers the same),
        # with the stakes this close returned.
        answer = convert.shoe(self.read(_SHOE, self.ledger.get_shoe, shoe_id),
                              convert.viewer_of(self.caller(context)))
        answer.returned.extend(convert.movement(table_id, m, currency) for m in closed.returned)
        return answer

    def OpenCoup(
        self, request: table_pb2.OpenCoupRequest, context: grpc.ServicerContext
    ) -> table_pb2.Coup:
        rid = names.check_request_id(request.request_id)
        table_id, shoe_id = names.shoe_name("parent", request.parent)
        check_uuid("parent", shoe_id)
        coup_id = check_uuid("coup_id", request.coup_id)
        # The shoe is checked by the ledger after the request id: a retry after the shoe has
        # closed still gets the first answer.
        view = self.write(
            {"table_id": "parent", "shoe_id": "parent", "coup_id": "coup_id"},
            self.coups.open_coup,
            rid,
            table_id,
            coup_id,
            shoe_id,
            actor=self.actor(context),
        )
        return tq_convert.coup(view, self.table_currency(table_id, "parent"))

    def _coup(self, name: str) -> tuple[str, str, str]:
        table_id, shoe_id, coup_id = names.coup_name("name", name)
        self.check_round(table_id, shoe_id, coup_id, "name", "coup")
        return table_id, shoe_id, coup_id

    def GetCoup(
        self, request: table_pb2.GetCoupRequest, context: grpc.ServicerContext
    ) -> table_pb2.Coup:
        table_id, _, coup_id = self._coup(request.name)
        view = self.read(_COUP, self.coups.get_coup, coup_id)
        viewer = convert.viewer_of(self.caller(context))
        return tq_convert.coup(view, self.table_currency(table_id, "name"), viewer)

    def _coup_step(
        self, context: grpc.ServicerContext, request_id: str, name: str,
        step: _CoupStep,
    ) -> table_pb2.Coup:
        """A coup's state transition (close betting, deal, settle): one ledger command."""
        rid = names.check_request_id(request_id)
        table_id, _, coup_id = self._coup(name)
        view = self.write(_COUP, step, rid, coup_id,
                          actor=self.actor(context))
        return tq_convert.coup(view, self.table_currency(table_id, "name"))

    def CloseBetting(
        self, request: table_pb2.CloseBettingRequest, context: grpc.ServicerContext
    ) -> table_pb2.Coup:
        return self._coup_step(context, request.request_id, request.name,
                               self.coups.close_betting)

    def DealCoup(
        self, request: table_pb2.DealCoupRequest, context: grpc.ServicerContext
    ) -> table_pb2.Coup:
        return self._coup_step(context, request.request_id, request.name,
                               self.coups.deal)

    def SettleCoup(
        self, request: table_pb2.SettleCoupRequest, context: grpc.ServicerContext
    ) -> table_pb2.Coup:
        return self._coup_step(context, request.request_id, request.name,
                               self.coups.settle)

