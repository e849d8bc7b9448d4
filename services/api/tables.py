"""TableService: the croupier's operations on tables, game-neutral (OpenTable, GetTable,
ListTables, CloseTable).

``sabot.v1.TableService`` is a frozen contract: its method names stay, and a game's own RPCs of
it (Trente et Quarante's shoes and coups: ``services/trente_et_quarante/tables.py``) are
mixins its API port names (``ApiGame.table_rpcs``); ``servicer`` builds the one servicer of
the service from this class and the mixins of every game the server serves. A method no such
game implements answers UNIMPLEMENTED (the generated base's).

Commands check only their own fields before the ledger; every check of the state is the
ledger's, after the request id is looked up, so a retry always gets the first answer. To a
player token other players' account ids are hidden (``convert.viewer_of``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import grpc

from services.api import convert, names
from services.api.base import Base, mixed
from services.api.errors import invalid
from services.api.game import ApiGame, Played
from services.api.gen.sabot.v1 import table_pb2, table_pb2_grpc
from services.api.hub import Hub
from services.api.roles import Principal
from services.ledger.remote import AnyLedger
from services.ledger.table import UNRECORDED_GAME


class TableServicer(Base, table_pb2_grpc.TableServiceServicer):
    def OpenTable(
        self, request: table_pb2.OpenTableRequest, context: grpc.ServicerContext
    ) -> table_pb2.Table:
        rid = names.check_request_id(request.request_id)
        table_id = names.check_id("table_id", request.table_id)
        game = names.check_text("game", request.game, limit=64) or None
        book = self.games.named(game or UNRECORDED_GAME).options  # UNKNOWN_GAME: ``game``
        preset = request.preset or book.default_preset
        # A table that names no game plays the default one, whose presets are checked here (as
        # they always were); a named game's rule book checks its own presets and options.
        if game is None and preset not in book.presets:
            raise invalid("preset", f"unknown preset (one of {', '.join(book.presets)})")
        if len(request.overrides) > names.MAX_OVERRIDES:
            raise invalid("overrides", f"at most {names.MAX_OVERRIDES} options")
        for key, value in request.overrides.items():
            names.check_text("overrides", key, required=True, limit=64)
            names.check_text(f"overrides.{key}", value, required=True, limit=64)
        view = self.write(
            {"table_id": "table_id"},
            self.ledger.open_table,
            rid,
            table_id,
            preset,
            dict(request.overrides),
            game,
            actor=self.actor(context),
        )
        return convert.table(view)

    def GetTable(
        self, request: table_pb2.GetTableRequest, context: grpc.ServicerContext
    ) -> table_pb2.Table:
        table_id = names.table_name("name", request.name)
        view = self.read({"table_id": "name"}, self.ledger.get_table, table_id)
        return convert.table(view, convert.viewer_of(self.caller(context)))

    def ListTables(
        self, request: table_pb2.ListTablesRequest, context: grpc.ServicerContext
    ) -> table_pb2.ListTablesResponse:
        size, token = names.list_page(request.page_size, request.page_token)
        found, next_token = self.read({}, self.ledger.list_tables, size, token)
        viewer = convert.viewer_of(self.caller(context))
        return table_pb2.ListTablesResponse(
            tables=[convert.table(v, viewer) for v in found], next_page_token=next_token
        )

    def CloseTable(
        self, request: table_pb2.CloseTableRequest, context: grpc.ServicerContext
    ) -> table_pb2.Table:
        rid = names.check_request_id(request.request_id)
        table_id = names.table_name("name", request.name)
        closed = self.write({"table_id": "name"}, self.ledger.close_table, rid, table_id,
                            actor=self.actor(context))
        # Once closed, a table never changes: read it back (a retry answers the same).
        view = self.read({"table_id": "name"}, self.ledger.get_table, table_id)
        answer = convert.table(view)
        currency = view.currency
        answer.settled.extend(convert.movement(table_id, m, currency) for m in closed.settled)
        return answer


def servicer_class(mixins: tuple[type, ...]) -> type[TableServicer]:
    """The servicer of ``sabot.v1.TableService``: ``TableServicer`` with the games' ``mixins``
    (their own RPCs of the service) before it; ValueError if two of them define one RPC."""
    return mixed(TableServicer, mixins, "sabot.v1.TableService")


def servicer(ledger: AnyLedger, tokens: Mapping[str, Principal], hub: Hub, *,
             games: Played) -> TableServicer:
    """The one servicer of ``sabot.v1.TableService``: the game-neutral RPCs and those of each of
    ``games`` (``ApiGame.table_rpcs``)."""
    return servicer_class(games.mixins(_table_rpcs))(ledger, tokens, hub, games)


def _table_rpcs(game: ApiGame) -> Any:
    return game.table_rpcs
