"""ListRounds of ``sabot.treinta_y_una.v1.TreintaYUnaService``: a table's rounds in the order
they opened, one page, from the game's read model (``services/treinta_y_una/projection.py``),
each round as GetRound shows it to the caller (a player: the other players' names "").

A mixin of the game's servicer (``services/treinta_y_una/servicer.py``), kept apart from it."""

from __future__ import annotations

import grpc

from services.api import convert, errors, names
from services.api.gen.sabot.treinta_y_una.v1 import treinta_y_una_pb2 as pb
from services.api.reports import GameReadModels
from services.treinta_y_una.commands import GAME


class RoundList(GameReadModels):
    def ListRounds(self, request: pb.ListRoundsRequest,
                   context: grpc.ServicerContext) -> pb.ListRoundsResponse:
        from services.treinta_y_una.servicer import round_message, seen_by

        table_id = names.table_name("parent", request.parent)
        offset, size = names.page(request.page_size, request.page_token)
        table = self.read({"table_id": "parent"}, self.ledger.get_table, table_id)
        if table.game != GAME:
            raise errors.ApiError(grpc.StatusCode.INVALID_ARGUMENT, "parent", "WRONG_GAME",
                                  f"not a {GAME} table: it plays {table.game}")
        units = self.read_models().game_units(GAME, table_id)
        viewer = convert.viewer_of(self.caller(context))
        rounds = [round_message(seen_by(self.read({"round_id": "parent"},
                                                  self.ledger.tyu_get_round, u.unit_id),
                                        viewer))
                  for u in units[offset:offset + size]]
        return pb.ListRoundsResponse(rounds=rounds,
                                     next_page_token=names.next_token(offset, size, len(units)))
