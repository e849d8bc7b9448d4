"""The back-office feed resumes from its position with no gap and no duplicate, even when cut
off mid-stream while stakes are being placed; the live watch of a table shows its events as they
happen, and only its own."""

from __future__ import annotations

import threading
import time

import grpc

from services.api.client import new_request_id
from services.api.gen.sabot.v1 import betting_pb2, common_pb2, events_pb2, table_pb2

from .support import PLAYERS, Api, money, open_coup, open_shoe, open_table

CHANCE = {"anne": common_pb2.CHANCE_NOIR, "bruno": common_pb2.CHANCE_ROUGE,
          "chiara": common_pb2.CHANCE_COULEUR, "dora": common_pb2.CHANCE_INVERSE}


def _place_many(api: Api, coup: str, player: str, count: int, errors: list[str]) -> None:
    betting = api.as_(player).betting
    for _ in range(count):
        try:
            betting.PlaceStake(betting_pb2.PlaceStakeRequest(
                request_id=new_request_id(), coup=coup, account=f"accounts/{player}",
                chance=CHANCE[player], amount=money(100)))
        except grpc.RpcError as exc:  # pragma: no cover - reported below
            errors.append(f"{exc.code()}: {exc.details()}")


def test_the_feed_resumes_without_gap_or_duplicate_under_concurrent_stakes(api: Api) -> None:
    table = open_table(api)
    coup = open_coup(api, open_shoe(api, table.name).name)
    feed = api.as_("back_office").feed
    start = api.running.hub.position
    errors: list[str] = []
    writers = [threading.Thread(target=_place_many, args=(api, coup.name, p, 40, errors))
               for p in PLAYERS]
    for w in writers:
        w.start()

    seen: list[int] = []
    position = start
    cuts = 0
    while any(w.is_alive() for w in writers) or cuts < 3:
        writing = any(w.is_alive() for w in writers)
        # A deadline: a stream that has read everything waits for more, and the last writer
        # may have finished just after the check above (then nothing more comes).
        stream = feed.StreamEvents(events_pb2.StreamEventsRequest(
            after_position=position, batch_size=7), timeout=3)
        idle = True
        try:
            for taken, batch in enumerate(stream):
                idle = False
                assert batch.last_position == batch.events[-1].position
                seen.extend(e.position for e in batch.events)
                position = batch.last_position
                if taken == 2:  # cut off mid-stream, resume from the last position received
                    stream.cancel()
                    cuts += 1
                    break
        except grpc.RpcError as exc:
            assert exc.code() is grpc.StatusCode.DEADLINE_EXCEEDED, exc
        if idle and not writing:
            break  # everything was read and nothing more will come
        time.sleep(0.01)
    for w in writers:
        w.join()
    for batch in feed.StreamEvents(events_pb2.StreamEventsRequest(
            after_position=position, batch_size=50, stop_at_end=True)):
        seen.extend(e.position for e in batch.events)
    assert not errors

    everything = [e.position for batch in feed.StreamEvents(events_pb2.StreamEventsRequest(
        after_position=start, batch_size=1000, stop_at_end=True)) for e in batch.events]
    assert cuts >= 3
    assert seen == everything  # the same events, in the same order: no gap, no duplicate
    assert len(set(seen)) == len(seen) and seen == sorted(seen)
    placed = [e for batch in feed.StreamEvents(events_pb2.StreamEventsRequest(
        after_position=start, batch_size=1000, stop_at_end=True)) for e in batch.events
        if e.type == "sabot.ledger:Coup.StakePlaced"]
    assert len(placed) == 40 * len(PLAYERS)
    assert {e.coup for e in placed} == {coup.name}


def test_the_feed_follows_the_log_live(api: Api) -> None:
    table = open_table(api)
    feed = api.as_("regulator").feed
    stream = feed.StreamEvents(events_pb2.StreamEventsRequest(
        after_position=api.running.hub.position, batch_size=100))
    got: list[events_pb2.Event] = []

    def read() -> None:
        for batch in stream:
            got.extend(batch.events)
            if any(e.type == "sabot.ledger:Shoe.Shuffled" for e in got):
                return

    reader = threading.Thread(target=read)
    reader.start()
    api.as_("croupier").tables.OpenShoe(table_pb2.OpenShoeRequest(
        request_id=new_request_id(), parent=table.name))
    reader.join(timeout=5)
    stream.cancel()
    assert not reader.is_alive()
    shuffled = [e for e in got if e.type == "sabot.ledger:Shoe.Shuffled"]
    assert shuffled and shuffled[0].table == table.name
    assert '"seed"' not in shuffled[0].data_json  # sealed until the shoe closes


def test_watching_a_table_shows_its_events_as_they_happen(api: Api) -> None:
    table = open_table(api)
    elsewhere = open_table(api)
    shoe = open_shoe(api, table.name)
    watcher = api.as_("anne").watch
    stream = watcher.WatchTable(events_pb2.WatchTableRequest(table=table.name))
    got: list[events_pb2.Event] = []
    done = threading.Event()

    def read() -> None:
        try:
            for response in stream:
                got.extend(response.events)
                if any(e.type == "sabot.ledger:Coup.Resolved" for e in got):
                    done.set()
                    return
        except grpc.RpcError:
            pass

    reader = threading.Thread(target=read)
    reader.start()
    time.sleep(0.3)  # the watch starts from now
    coup = open_coup(api, shoe.name)
    open_coup(api, open_shoe(api, elsewhere.name).name)  # another table's events
    api.as_("anne").betting.PlaceStake(betting_pb2.PlaceStakeRequest(
        request_id=new_request_id(), coup=coup.name, account="accounts/anne",
        chance=common_pb2.CHANCE_NOIR, amount=money(300)))
    api.as_("croupier").tables.DealCoup(table_pb2.DealCoupRequest(
        request_id=new_request_id(), name=coup.name))
    assert done.wait(5)
    stream.cancel()
    reader.join(2)
    kinds = [e.type for e in got]
    assert kinds[0] == "sabot.ledger:Table.CoupStarted"
    assert "sabot.ledger:Coup.StakePlaced" in kinds
    placed = kinds.index("sabot.ledger:Coup.StakePlaced")
    assert placed < kinds.index("sabot.ledger:Coup.BettingClosed")
    assert {e.table for e in got} == {table.name}
    positions = [e.position for e in got]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)


def test_streams_may_hold_only_half_of_the_workers(api: Api) -> None:
    table = open_table(api)
    watch = api.as_("croupier").watch
    open_streams = []
    try:
        refused = None
        for _ in range(20):
            stream = watch.WatchTable(events_pb2.WatchTableRequest(table=table.name), timeout=5)
            open_streams.append(stream)
            time.sleep(0.05)
            if stream.done() and stream.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
                refused = len(open_streams)
                break
        assert refused is not None and refused > 1
    finally:
        for stream in open_streams:
            stream.cancel()
    time.sleep(0.3)  # the slots come back once the streams are cancelled
    stream = watch.WatchTable(events_pb2.WatchTableRequest(table=table.name), timeout=0.5)
    try:
        next(iter(stream))
    except grpc.RpcError as exc:
        assert exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED
