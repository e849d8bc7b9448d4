"""Treinta y Una keeps its rounds on the core's table through the neutral mechanism
(``Table.round_started`` under ``round_ids``, read with ``Table.rounds``), its event of the table
stored as it always was (``sabot.ledger:Table.RoundStarted``, one field ``round_id``); its
``table_rounds`` hook makes a table view show its latest round and how many (before issue 13
a Treinta y Una table view showed none: ``coup_id`` None, ``coups`` 0). A stored answer still
answers its retry, byte for byte; Cuarenta records no match on its table, and its table views
show none. Over gRPC: ``sabot.v1`` GetTable counts the rounds (``coups``; ``current_coup`` stays
"", a round is no coup) and WatchTable follows a Treinta y Una table with rounds."""

from __future__ import annotations

import json

from services.api.client import new_request_id
from services.api.gen.sabot.v1 import events_pb2, table_pb2
from services.ledger.ids import table_uuid
from services.ledger.table import Table
from services.ledger.views import to_dict
from services.treinta_y_una.round import ROUND_IDS, RoundStarted, round_ids
from tests.api.support import Api
from tests.cuarenta.support import Referee, fund, ledger_on
from tests.treinta_y_una.support import CROUPIER, Croupier, table_ledger
from tests.treinta_y_una.test_grpc import open_round, open_tyu_table

ROUND_STARTED = "sabot.ledger:Table.RoundStarted"


def test_a_tables_rounds_are_kept_by_the_neutral_table(store_url: str) -> None:
    assert RoundStarted.TOPIC == ROUND_STARTED and RoundStarted.class_version == 1
    assert set(RoundStarted.__annotations__) == {"round_id"}
    with table_ledger(store_url) as (ledger, tyu):
        first_answer = ledger.open_table("open-tyu-1", "tyu-1", "clasica", {},
                                         "treinta-y-una")  # the retry of the table's opening
        assert (first_answer.coup_id, first_answer.coups) == (None, 0)
        assert (ledger.get_table("tyu-1").coup_id, ledger.get_table("tyu-1").coups) == (None, 0)
        croupier = Croupier(ledger, tyu)
        one = croupier.play()
        two = croupier.open()
        view = ledger.get_table("tyu-1")
        assert (view.coup_id, view.coups, view.coup_shoe_id) == (two.round_id, 2, None)
        assert tyu.list_rounds("tyu-1") == [one.round_id, two.round_id]
        table: Table = ledger.app.repository.get(table_uuid("tyu-1"))
        assert round_ids(table) == table.rounds(ROUND_IDS) == [one.round_id, two.round_id]
        assert table.latest_round(ROUND_IDS) == (two.round_id, 2)
        stored = [e for e in ledger.app.recorder.select_events(table_uuid("tyu-1"))
                  if e.topic == ROUND_STARTED]
        assert [{k: v for k, v in json.loads(e.state).items() if k != "timestamp"}
                for e in stored] == [{"round_id": one.round_id}, {"round_id": two.round_id}]
        # a stored answer answers its retry as it was first given (nothing stored again)
        before = ledger.app.recorder.max_notification_id()
        again = ledger.open_table("open-tyu-1", "tyu-1", "clasica", {}, "treinta-y-una")
        assert to_dict(again) == to_dict(first_answer)
        assert json.dumps(to_dict(again), sort_keys=True) == json.dumps(
            to_dict(first_answer), sort_keys=True)
        reopened = tyu.open_round("r1", "tyu-1", "ana,bea,carl,dani", 50_000, actor=CROUPIER)
        assert reopened.round_id == one.round_id and reopened.number == 1
        assert ledger.app.recorder.max_notification_id() == before


def test_cuarenta_records_no_match_on_its_table(store_url: str) -> None:
    with ledger_on(store_url) as (ledger, game):
        fund(ledger, ["ana", "beto"])
        opened = game.open_match("open", "mesa-1", ["ana", "beto"], stake=5_000)
        Referee(game, opened.match).finish()
        view = ledger.get_table("mesa-1")
        assert (view.coup_id, view.coups, view.game) == (None, 0, "cuarenta")
        topics = [e.topic for e in ledger.app.recorder.select_events(table_uuid("mesa-1"))]
        assert topics == ["sabot.ledger:Table.Opened"]


def test_get_table_counts_the_rounds_and_watch_table_follows_them(api: Api) -> None:
    table = open_tyu_table(api)
    tables = api.as_("croupier").tables
    assert tables.GetTable(table_pb2.GetTableRequest(name=table)).coups == 0
    first = open_round(api, table)
    shown = tables.GetTable(table_pb2.GetTableRequest(name=table))
    assert (shown.coups, shown.current_coup) == (1, "")
    listed = [t for t in _all_tables(api) if t.name == table]
    assert [(t.coups, t.current_coup) for t in listed] == [(1, "")]
    # WatchTable of a table whose latest round is Treinta y Una's (no coup to look up)
    stream = api.as_("croupier").watch.WatchTable(
        events_pb2.WatchTableRequest(table=table, after_position=1), timeout=5)
    try:
        types: list[str] = []
        for got in stream:
            assert all(e.table == table for e in got.events)
            types += [e.type for e in got.events]
            if ROUND_STARTED in types:
                break
        assert types[0] == "sabot.ledger:Table.Opened" and types.count(ROUND_STARTED) == 1
    finally:
        stream.cancel()
    assert first.name.startswith(table + "/rounds/")
    # a retry of the table's opening through sabot.v1 answers the first answer's bytes
    rid = new_request_id()
    opened = tables.OpenTable(table_pb2.OpenTableRequest(
        request_id=rid, table_id=table.split("/")[1] + "-v1", game="treinta-y-una"))
    open_round(api, opened.name)
    again = tables.OpenTable(table_pb2.OpenTableRequest(
        request_id=rid, table_id=table.split("/")[1] + "-v1", game="treinta-y-una"))
    assert again.SerializeToString() == opened.SerializeToString()
    assert tables.GetTable(table_pb2.GetTableRequest(name=opened.name)).coups == 1


def _all_tables(api: Api) -> list[table_pb2.Table]:
    found: list[table_pb2.Table] = []
    token = ""
    while True:
        page = api.as_("croupier").tables.ListTables(
            table_pb2.ListTablesRequest(page_size=1000, page_token=token))
        found += page.tables
        token = page.next_page_token
        if not token:
            return found

