"""Trente et Quarante's ``sabot.v1.RecallService``: the last coups of a table, each step in
order (ListRecalledCoups), served by the game's registry entry (``Game.servicers``,
``services/trente_et_quarante/game.py``); the service's name and bytes are the frozen ones.
A player token sees other players' stakes without their account ids (``convert.viewer_of``)."""

from __future__ import annotations

from functools import cached_property

import grpc

from services.api import convert, errors, names
from services.api.base import Base
from services.api.gen.sabot.v1 import events_pb2, events_pb2_grpc
from services.trente_et_quarante import convert as tq_convert
from services.trente_et_quarante.commands import TrenteEtQuaranteLedger


class RecallServicer(Base, events_pb2_grpc.RecallServiceServicer):
    @cached_property
    def coups(self) -> TrenteEtQuaranteLedger:
        """The game's typed commands on the ledger (``commands.TrenteEtQuaranteLedger``)."""
        return self.ledger.game(TrenteEtQuaranteLedger)

    def ListRecalledCoups(
        self, request: events_pb2.ListRecalledCoupsRequest, context: grpc.ServicerContext
    ) -> events_pb2.ListRecalledCoupsResponse:
        table_id = names.table_name("parent", request.parent)
        offset, size = names.page(request.page_size, request.page_token, default=10)
        if offset + size > 10_000:
            raise errors.invalid("page_token", "recall reaches back 10,000 coups at most")
        currency = self.table_currency(table_id, "parent")
        viewer = convert.viewer_of(self.caller(context))
        coups = self.read(
            {"table_id": "parent", "n": "page_size"},
            self.coups.last_coups,
            table_id,
            offset + size + 1,
        )
        page = coups[offset : offset + size]
        return events_pb2.ListRecalledCoupsResponse(
            coups=[
                events_pb2.RecalledCoup(
                    coup=tq_convert.coup(c.coup, currency, viewer),
                    steps=[
                        tq_convert.step(table_id, c.coup.shoe_id, c.coup.coup_id, s, viewer)
                        for s in c.steps
                    ],
                    dealt_by=convert.actor(c.dealt_by, viewer),
                )
                for c in page
            ],
            next_page_token=names.next_token(offset, size, len(coups)),
        )
