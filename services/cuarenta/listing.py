"""ListMatches of ``sabot.cuarenta.v1.CuarentaService``: a table's matches in the order they
opened, one page, from the game's read model (``services/cuarenta/projection.py``), each match
as GetMatch shows it to the caller (a player not seated at it: the seats' names "").

A mixin of the game's servicer (``services/cuarenta/servicer.py``), kept apart from it."""

from __future__ import annotations

import grpc

from services.api import convert, errors, names
from services.api.gen.sabot.cuarenta.v1 import cuarenta_pb2 as pb
from services.api.reports import GameReadModels
from services.cuarenta.commands import GAME_NAME


class MatchList(GameReadModels):
    def ListMatches(self, request: pb.ListMatchesRequest,
                    context: grpc.ServicerContext) -> pb.ListMatchesResponse:
        from services.cuarenta.servicer import NAMES, match_message

        table_id = names.table_name("parent", request.parent)
        offset, size = names.page(request.page_size, request.page_token)
        table = self.read({"table_id": "parent"}, self.ledger.get_table, table_id)
        if table.game != GAME_NAME:
            raise errors.ApiError(grpc.StatusCode.INVALID_ARGUMENT, "parent", "WRONG_GAME",
                                  f"not a {GAME_NAME} table: it plays {table.game}")
        units = self.read_models().game_units(GAME_NAME, table_id)
        viewer = convert.viewer_of(self.caller(context))
        matches = []
        for u in units[offset:offset + size]:
            view = self.read({"match_id": "parent"}, self.ledger.cuarenta_match, u.unit_id)
            seen = None if viewer is None or viewer in view.seats else viewer
            matches.append(match_message(convert.redacted(view, seen, NAMES)))
        return pb.ListMatchesResponse(
            matches=matches, next_page_token=names.next_token(offset, size, len(units)))
