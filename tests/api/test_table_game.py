"""A table says which game it plays (``sabot.v1.Table.game``) beside its full options, in every
answer that shows it: OpenTable, GetTable, ListTables, CloseTable; a retry answers the first
answer's bytes. The stored answer of a Trente et Quarante table is what it always was (the game
is implied: ``views.IMPLIED``), so an answer stored before the field reads back as that game."""

from __future__ import annotations

from services.api import convert
from services.api.client import new_request_id
from services.api.gen.sabot.v1 import table_pb2
from services.ledger import writer
from services.ledger.table import UNRECORDED_GAME
from services.ledger.views import TableView, from_dict, to_dict

from .support import Api, fresh, open_table

GAMES = {"trente-et-quarante": "francaise", "treinta-y-una": "clasica", "cuarenta": "seed"}


def test_every_table_names_its_game_and_a_retry_answers_the_same_bytes(api: Api) -> None:
    croupier = api.as_("croupier").tables
    opened = {}
    for game in GAMES:
        request = table_pb2.OpenTableRequest(request_id=new_request_id(), table_id=fresh("g"),
                                             game=game)
        first = croupier.OpenTable(request)
        assert first.game == game and first.preset == GAMES[game] and first.options
        assert croupier.OpenTable(request).SerializeToString() == first.SerializeToString()
        got = croupier.GetTable(table_pb2.GetTableRequest(name=first.name))
        assert (got.game, dict(got.options)) == (game, dict(first.options))
        opened[first.name] = game
    unnamed = open_table(api)  # no game named: the default one
    assert unnamed.game == UNRECORDED_GAME == "trente-et-quarante"
    opened[unnamed.name] = unnamed.game
    seen: dict[str, str] = {}
    token = ""
    while True:
        page = croupier.ListTables(table_pb2.ListTablesRequest(page_size=50, page_token=token))
        seen.update((t.name, t.game) for t in page.tables)
        if not (token := page.next_page_token):
            break
    assert all(seen[name] == game for name, game in opened.items())
    assert all(seen.values())  # every table, whoever opened it, names its game
    request = table_pb2.CloseTableRequest(request_id=new_request_id(), name=unnamed.name)
    closed = croupier.CloseTable(request)
    assert closed.game == "trente-et-quarante" and closed.closed
    assert croupier.CloseTable(request).SerializeToString() == closed.SerializeToString()


def _view(game: str) -> TableView:
    return TableView("t", "francaise", {"currency": "EUR"}, "EUR", None, None, 0, 0, (),
                     "table:t:bank", "table:t:layout", game=game)


def test_the_stored_answer_of_a_trente_et_quarante_table_is_unchanged() -> None:
    tq, other = _view("trente-et-quarante"), _view("treinta-y-una")
    for stored in (to_dict(tq), writer.plain(tq)):  # the writer stores with its fast twin
        assert "game" not in stored  # as stored before the field was
        assert from_dict(TableView, stored) == tq
    for stored in (to_dict(other), writer.plain(other)):
        assert stored["game"] == "treinta-y-una"
        assert from_dict(TableView, stored) == other
    # An answer stored before the field: a Trente et Quarante table's (the only game then).
    old = {k: v for k, v in to_dict(tq).items() if k != "game"}
    answer = convert.table(from_dict(TableView, old))
    assert answer.game == "trente-et-quarante"
    assert answer.SerializeToString() == convert.table(tq).SerializeToString()
