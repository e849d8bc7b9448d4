"""Fair streams: one player holding 40 WatchTable streams gets its share (4) and
RESOURCE_EXHAUSTED for the rest (logged at warning), while another player's watch and the back
office's feed are served; players together never take the slots kept for the staff."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest

from services.api import logs
from services.api.client import new_request_id
from services.api.gen.sabot.v1 import betting_pb2, common_pb2, events_pb2
from services.api.roles import Principal, Role
from services.api.stream_quota import StreamQuota

from .support import Api, money, open_coup, open_shoe, open_table


def _await(check: Callable[[], bool], what: str, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def _principal(api: Api, who: str) -> Principal:
    assert api.running.credentials is not None
    pid = api.principals[who]
    return next(c.principal for c in api.running.credentials.credentials()
                if c.principal.principal_id == pid)


class Streams:
    """Streams opened in a test, all cancelled (and their slots seen free) at its end."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.calls: list[Any] = []

    def watch(self, who: str, table: str) -> Any:
        call = self.api.as_(who).watch.WatchTable(events_pb2.WatchTableRequest(table=table),
                                                  timeout=60)
        self.calls.append(call)
        return call

    def feed(self, who: str = "back_office") -> Any:
        call = self.api.as_(who).feed.StreamEvents(events_pb2.StreamEventsRequest(
            after_position=self.api.running.hub.catch_up()), timeout=60)
        self.calls.append(call)
        return call

    def close(self) -> None:
        for call in self.calls:
            call.cancel()
        quota = self.api.running.streams
        _await(lambda: not quota._open, "the cancelled streams did not free their slots")


@pytest.fixture
def streams(api: Api) -> Iterator[Streams]:
    opened = Streams(api)
    try:
        yield opened
    finally:
        opened.close()


def _refused(call: Any) -> bool:
    return bool(call.done()) and call.code() is grpc.StatusCode.RESOURCE_EXHAUSTED


def test_one_player_holding_40_watches_starves_no_one(api: Api, streams: Streams) -> None:
    quota = api.running.streams
    assert quota.per_principal == 4 and quota.total == 8  # 16 workers: 8 stream slots
    table = open_table(api)
    coup = open_coup(api, open_shoe(api, table.name).name)
    anne = _principal(api, "anne")
    hogs = [streams.watch("anne", table.name) for _ in range(40)]
    _await(lambda: quota.held(anne) == 4 and sum(map(_refused, hogs)) == 36,
           "anne should hold 4 streams and be refused 36")
    for call in hogs:
        if _refused(call):
            assert "at most 4 per principal" in call.details()
    watcher = streams.watch("bruno", table.name)
    feed = streams.feed()
    _await(lambda: quota.held(_principal(api, "bruno")) == 1
           and quota.held(_principal(api, "back_office")) == 1, "bruno and the office wait")
    placed = api.as_("chiara").betting.PlaceStake(betting_pb2.PlaceStakeRequest(
        request_id=new_request_id(), coup=coup.name, account="accounts/chiara",
        chance=common_pb2.CHANCE_ROUGE, amount=money(200)))
    seen = next(iter(watcher))  # bruno's watch is served: it shows chiara's stake
    assert any(e.type == "sabot.ledger:Coup.StakePlaced" for e in seen.events), seen
    batch = next(iter(feed))
    assert batch.events and placed.stake.name
    logs.flush()
    lines = [json.loads(x) for x in api.log.getvalue().splitlines()
             if '"RESOURCE_EXHAUSTED"' in x]
    mine = [x for x in lines if x.get("principal") == "anne"
            and x["method"].endswith("/WatchTable")]
    assert len(mine) >= 36
    assert all(x["level"] == "warning" and x["peer"] and x["streams"] == 4 for x in mine)


def test_players_together_leave_the_staff_its_slots(api: Api, streams: Streams) -> None:
    quota = api.running.streams
    table = open_table(api)
    anne, bruno = _principal(api, "anne"), _principal(api, "bruno")
    for _ in range(4):
        streams.watch("anne", table.name)
    for _ in range(2):
        streams.watch("bruno", table.name)
    _await(lambda: quota.held(anne) == 4 and quota.held(bruno) == 2, "players' streams")
    late = streams.watch("chiara", table.name)
    _await(lambda: _refused(late), "the players' share (6 of 8) is used")
    assert "kept for the staff" in late.details()
    office = [streams.feed(), streams.watch("croupier", table.name)]
    _await(lambda: quota.held(_principal(api, "back_office")) == 1
           and quota.held(_principal(api, "croupier")) == 1, "the staff is served")
    assert not any(call.done() for call in office)


def test_a_share_is_counted_per_principal_not_per_credential() -> None:
    quota = StreamQuota(per_principal=2, total=None)
    same = [Principal(Role.PLAYER, "anne", "anne", id="anne") for _ in range(2)]
    assert quota.enter(same[0]) is None and quota.enter(same[1]) is None
    assert quota.enter(same[0]) is not None
    quota.leave(same[1])
    assert quota.enter(same[0]) is None


def test_unauthenticated_streams_take_a_share_per_peer_host(api: Api, streams: Streams) -> None:
    """Health Watch needs no token, and holds a worker while it lasts: 4 per host."""
    from grpc_health.v1 import health_pb2

    quota = api.running.streams
    client = api.anonymous()
    try:
        watches = [client.health.Watch(health_pb2.HealthCheckRequest(service=""), timeout=30)
                   for _ in range(6)]
        streams.calls.extend(watches)
        anonymous = Principal(Role.PLAYER, None, "anonymous", id="anonymous@127.0.0.1")
        _await(lambda: quota.held(anonymous) == 4 and sum(map(_refused, watches)) == 2,
               "4 health watches served, 2 refused")
        served = [w for w in watches if not w.done()]
        assert len(served) == 4 and all(
            next(iter(w)).status == health_pb2.HealthCheckResponse.SERVING for w in served)
    finally:
        streams.close()
        client.close()


def test_the_share_is_a_setting() -> None:
    from services.api.config import ConfigError
    from services.settings import Settings

    def load(env: dict[str, str]) -> Settings:
        return Settings.load(env=env, env_file=None)

    assert load({}).streams_per_principal == 4
    assert load({"SABOT_STREAMS_PER_PRINCIPAL": "12"}).streams_per_principal == 12
    for bad in ("0", "x", "-1", "100000"):
        with pytest.raises(ConfigError, match=r"^SABOT_STREAMS_PER_PRINCIPAL: "):
            load({"SABOT_STREAMS_PER_PRINCIPAL": bad})
