"""Finding a round, a match or a coup (issue 24, item 1): ListRounds and ListMatches filtered by
player, time range and log position (of any of the unit's events, as the back office's feed
gives them), newest first, across every table of the game (``tables/-``), a page at a time; a
player filters by its own account only; RecallCoups by log position. On both stores."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from services.api.client import new_request_id
from services.api.gen.sabot.cuarenta.v1 import cuarenta_pb2
from services.api.gen.sabot.treinta_y_una.v1 import treinta_y_una_pb2 as tyu_pb2
from services.api.gen.sabot.v1 import events_pb2, reports_pb2, table_pb2

from .support import Api, failure, fresh, open_shoe, open_table


def _stamp(at: datetime) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(at)
    return stamp


def _positions(api: Api, name: str) -> list[int]:
    """The log positions of the events of the round or match ``name``, from the feed."""
    unit = name.rsplit("/", 1)[-1]
    feed = api.as_("back_office").feed.StreamEvents(events_pb2.StreamEventsRequest(
        batch_size=1000, stop_at_end=True))
    return [e.position for batch in feed for e in batch.events if e.aggregate_id == unit]


def test_rounds_by_player_time_and_position(api: Api) -> None:
    croupier = api.as_("croupier")
    tables = [croupier.rounds.open_table(fresh("tyu-find")).name for _ in range(2)]
    ours = croupier.rounds.open_round(tables[0], ["anne", "bruno"], 20_000)
    between = datetime.now(UTC)
    theirs = croupier.rounds.open_round(tables[1], ["chiara", "dora"], 20_000)
    stub = api.as_("back_office").treinta_y_una

    def names(**asked: object) -> list[str]:
        found = stub.ListRounds(tyu_pb2.ListRoundsRequest(**asked))  # type: ignore[arg-type]
        return [r.name for r in found.rounds if r.name in (ours.name, theirs.name)]

    assert names(parent=tables[0]) == [ours.name]
    assert names(parent="tables/-") == [ours.name, theirs.name]  # every table, as opened
    assert names(parent="tables/-", newest_first=True) == [theirs.name, ours.name]
    assert names(parent="tables/-", player="accounts/dora") == [theirs.name]
    assert names(parent="tables/-", player="accounts/anne") == [ours.name]
    assert names(parent="tables/-", start_time=_stamp(between)) == [theirs.name]
    assert names(parent="tables/-", end_time=_stamp(between)) == [ours.name]
    assert names(parent=tables[1], player="accounts/anne") == []
    positions = _positions(api, theirs.name)
    assert len(positions) >= 2
    for at in positions:
        assert names(parent="tables/-", position=at) == [theirs.name]
    assert names(parent="tables/-", position=positions[0] - 1) != [theirs.name]
    # a page at a time, with the filters
    page = stub.ListRounds(tyu_pb2.ListRoundsRequest(parent="tables/-", page_size=1,
                                                     newest_first=True))
    assert page.rounds[0].name == theirs.name and page.next_page_token
    # a player: its own rounds; another player's account is refused, naming the field
    anne = api.as_("anne").treinta_y_una
    mine = anne.ListRounds(tyu_pb2.ListRoundsRequest(parent="tables/-", player="accounts/anne"))
    assert theirs.name not in [r.name for r in mine.rounds]
    assert ours.name in [r.name for r in mine.rounds]
    code, field, _ = failure(anne.ListRounds, tyu_pb2.ListRoundsRequest(
        parent="tables/-", player="accounts/dora"))
    assert (code, field) == (grpc.StatusCode.PERMISSION_DENIED, "player")
    for bad, named in ((dict(parent="tables/-", position=-1), "position"),
                       (dict(parent="tables/-", start_time=_stamp(between),
                             end_time=_stamp(between - timedelta(seconds=1))), "end_time"),
                       (dict(parent="tables/-", player="accounts/NOT ONE"), "player"),
                       (dict(parent="tables/*"), "parent")):
        code, field, _ = failure(stub.ListRounds, tyu_pb2.ListRoundsRequest(**bad))  # type: ignore[arg-type]
        assert (code, field) == (grpc.StatusCode.INVALID_ARGUMENT, named), bad
    for r in (ours, theirs):
        croupier.rounds.cancel(r.name)


def test_matches_by_player_and_position_and_coups_by_position(api: Api) -> None:
    croupier = api.as_("croupier")
    table = croupier.matches.open_table(fresh("cu-find")).name
    one = croupier.matches.open(table, ["anne", "bruno"], 1_000).match
    two = croupier.matches.open(table, ["chiara", "dora"], 1_000).match
    stub = api.as_("regulator").cuarenta

    def names(**asked: object) -> list[str]:
        found = stub.ListMatches(cuarenta_pb2.ListMatchesRequest(**asked))  # type: ignore[arg-type]
        return [m.name for m in found.matches if m.name in (one.name, two.name)]

    assert names(parent=table) == [one.name, two.name]
    assert names(parent=table, newest_first=True) == [two.name, one.name]
    assert names(parent="tables/-", player="accounts/chiara") == [two.name]
    positions = _positions(api, two.name)
    assert len(positions) >= 3
    for at in positions:
        assert names(parent="tables/-", position=at) == [two.name]
    assert names(parent=table, position=_positions(api, one.name)[0]) == [one.name]
    code, field, _ = failure(api.as_("bruno").cuarenta.ListMatches, cuarenta_pb2.ListMatchesRequest(
        parent=table, player="accounts/chiara"))
    assert (code, field) == (grpc.StatusCode.PERMISSION_DENIED, "player")
    code, field, reason = failure(stub.ListMatches, cuarenta_pb2.ListMatchesRequest(
        parent=croupier.rounds.open_table(fresh("tyu-not")).name))
    assert (code, field, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "parent", "WRONG_GAME")
    # a coup by the log position of one of its steps (the back office's and regulator's recall)
    tq = open_table(api).name
    shoe = open_shoe(api, tq, cut=60)
    coup = croupier.tables.OpenCoup(table_pb2.OpenCoupRequest(request_id=new_request_id(),
                                                              parent=shoe.name))
    office = api.as_("back_office").read_models
    found = office.RecallCoups(reports_pb2.RecallCoupsRequest(coup=coup.name))
    at = found.coups[0].steps[0].position
    by_position = office.RecallCoups(reports_pb2.RecallCoupsRequest(position=at))
    assert [c.coup for c in by_position.coups] == [coup.name]
    assert not office.RecallCoups(reports_pb2.RecallCoupsRequest(position=at, table=table)).coups
    code, field, _ = failure(office.RecallCoups, reports_pb2.RecallCoupsRequest(position=-3))
    assert (code, field) == (grpc.StatusCode.INVALID_ARGUMENT, "position")
