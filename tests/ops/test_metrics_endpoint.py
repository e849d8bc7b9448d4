"""``sabot serve --dev --demo --metrics-listen HOST:PORT``, scraped as Prometheus would after the
demo: every series of the issue is there with values that say what happened (the demo's RPCs by
method and code, its stored commands and batches, the store up with a round trip, the read
models and the notary caught up, a checkpoint signed, the health SERVING), and ``/health``
answers over HTTP. On SQLite and PostgreSQL (the server's default: its ledger in a process of
its own, whose series come through the server's page)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from services import metrics

from .support import Served, clean_env, create_store, drop_database, url


def scrape(port: int) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Every sample of the page, by sample name (``_count``, ``_sum``, ``_bucket`` apart)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        assert reply.status == 200
        assert reply.headers["Content-Type"].startswith("text/plain")
        text = reply.read().decode()
    found: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return found


def value(found: dict[str, list[tuple[dict[str, str], float]]], name: str,
          **labels: str) -> float:
    for got, v in found.get(name, []):
        if all(got.get(k) == x for k, x in labels.items()):
            return v
    raise AssertionError(f"no {name} {labels} in the page: {sorted(found)[:80]}")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/demo.db"
        return
    name = create_store()
    try:
        yield url(name)
    finally:
        drop_database(name)


def test_the_metrics_after_a_demo(store: str, tmp_path: Path) -> None:
    served = Served.dev(store, tmp_path, "--demo", "--metrics-listen", "127.0.0.1:0")
    try:
        served.wait_listening()
        port = served.metrics_port()
        deadline = time.monotonic() + 90  # a loaded machine: the notary may be behind
        while True:  # the read models and the notary catch up within a few looks
            found = scrape(port)
            lags = found.get("sabot_projection_lag_events", [])
            caught_up = bool(lags) and all(v == 0 for _, v in lags) \
                and "sabot_notary_last_checkpoint_age_seconds" in found \
                and value(found, "sabot_notary_lag_events") == 0
            if caught_up or time.monotonic() > deadline:
                break
            time.sleep(0.5)

        # every series the operations contract names (services/metrics.py:SERIES) is served
        names = set(found)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as reply:
            facts = json.loads(reply.read())["facts"]
        assert "sabot_notary_last_checkpoint_age_seconds" in names, facts
        for name, (kind, _) in metrics.SERIES.items():
            if name == "sabot_notary_last_checkpoint_age_seconds" or kind == "gauge":
                assert name in names, name
            elif kind == "counter":
                assert name in names, name  # prometheus_client's name: ..._total
            else:
                assert f"{name}_count" in names and f"{name}_bucket" in names, name

        # the demo's RPCs, by method and code
        stakes = value(found, "sabot_rpc_duration_seconds_count",
                       method="/sabot.v1.BettingService/PlaceStake", code="OK")
        deals = value(found, "sabot_rpc_duration_seconds_count",
                      method="/sabot.v1.TableService/DealCoup", code="OK")
        assert stakes >= 30 and deals >= 10
        assert value(found, "sabot_rpc_duration_seconds_sum",
                     method="/sabot.v1.BettingService/PlaceStake", code="OK") > 0
        assert value(found, "sabot_rpc_in_flight") >= 0
        assert value(found, "sabot_streams_open") == 0
        assert value(found, "sabot_stream_slots") == 16  # half of the 32 workers

        # the writer (in the ledger process): every command stored, in batches, none lost
        stored = value(found, "sabot_writer_commands_total", outcome="stored")
        assert stored >= stakes + deals
        assert value(found, "sabot_writer_commands_total", outcome="unavailable") == 0
        assert value(found, "sabot_writer_commands_total", outcome="failed") == 0
        batches = value(found, "sabot_writer_commit_seconds_count")
        assert 0 < batches <= stored
        assert value(found, "sabot_writer_batch_commands_sum") == stored
        assert value(found, "sabot_writer_batch_events_sum") >= stored
        assert 0 < value(found, "sabot_writer_commit_seconds_sum") < batches * 5
        assert value(found, "sabot_writer_queue_depth") == 0
        assert value(found, "sabot_writer_store_outages_total") == 0

        # the store, the ledger process, the health
        assert value(found, "sabot_store_up") == 1
        assert value(found, "sabot_store_down_seconds") == 0
        assert value(found, "sabot_store_round_trip_seconds_count") >= 1
        assert value(found, "sabot_store_round_trip_seconds_sum") < \
            value(found, "sabot_store_round_trip_seconds_count")  # under a second each
        assert value(found, "sabot_writer_active") == 1
        assert value(found, "sabot_ledger_process_up") == 1
        assert value(found, "sabot_ledger_process_restarts_total") == 0
        assert value(found, "sabot_ledger_process_start_time_seconds") <= time.time()
        for service in ("", "sabot.store", "sabot.writer", "sabot.read_models", "sabot.notary",
                        "sabot.v1.BettingService", "sabot.v1.ReadModelService"):
            assert value(found, "sabot_health_serving", service=service) == 1, service

        # the read models per view and the notary, caught up; a checkpoint signed at coup end
        views = {labels["view"] for labels, _ in found["sabot_projection_lag_events"]}
        assert {"recall", "shoes"} <= views
        assert all(v == 0 for _, v in found["sabot_projection_lag_events"])
        assert all(v < 60 for _, v in found["sabot_projection_lag_seconds"])
        assert value(found, "sabot_notary_active") == 1
        assert value(found, "sabot_notary_lag_events") == 0
        signed = value(found, "sabot_notary_last_checkpoint_timestamp_seconds")
        assert time.time() - 600 < signed <= time.time() + 1
        assert 0 <= value(found, "sabot_notary_last_checkpoint_age_seconds") < 600
        assert value(found, "process_resident_memory_bytes") > 0

        # the health over HTTP, on the endpoint's own threads
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health/sabot.writer",
                                    timeout=5) as reply:
            shown = json.loads(reply.read())
        assert reply.status == 200 and shown["status"] == "SERVING"
        assert shown["facts"]["store_up"] is True and shown["facts"]["ledger"]["active"]
        with pytest.raises(urllib.error.HTTPError) as unknown:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health/no.such.Service", timeout=5)
        assert unknown.value.code == 404
    finally:
        assert served.stop() == 0


def test_a_metrics_address_that_is_not_host_port_is_refused_in_one_line(tmp_path: Path) -> None:
    from .support import sabot

    done = sabot("serve", "--dev", "--store", f"sqlite:///{tmp_path}/s.db", "--env-file",
                 str(tmp_path / "none.env"), "--metrics-listen", "nowhere", cwd=tmp_path,
                 env=clean_env())
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--metrics-listen" in lines[0] and "HOST:PORT" in lines[0]
