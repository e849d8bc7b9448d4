"""A store written before the seam still works: the pre-seam log (``pre_seam.py``), inserted row
by row into a fresh SQLite and PostgreSQL store (through the recorder: no aggregate code), is
opened by the code under test, which loads every aggregate and answers as the old code did;
reads every stored answer back and answers a retry of each stored command with it (storing
nothing); re-runs the stored commands into an empty store with identical events; notarises,
exports and verifies it (``sabot-verify`` VERIFIED, evidence chain included) and replays each
shoe beside its events; rebuilds the read models with the same schema and content digests.
Played again, the demo stores the same rows and refuses the same commands.

"Identical" allows one thing: an event whose class version was raised since (its upcaster
reads the old row) may be stored by the new code in its new version; the two rows must then
decode to the same event, and the batch's chain link differs with it."""

from __future__ import annotations

import contextlib
import io
import json
import sqlite3
import subprocess
import sys
import typing
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse
from uuid import UUID

import psycopg
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from eventsourcing.persistence import StoredEvent
from psycopg.conninfo import conninfo_to_dict

from services.bootstrap import LEDGER_GAMES, READ_GAMES, TRANSCODINGS
from services.cli import main as sabot
from services.ledger.actor import Actor
from services.ledger.api import Ledger
from services.ledger.application import LedgerApplication
from services.ledger.config import LedgerConfig, store_env
from services.ledger.evidence import LINKED_TOPIC
from services.ledger.replay import replay
from services.ledger.views import from_dict, to_dict
from services.projections.service import ReadModels
from tests.contracts.test_frozen_names import ledger_method

from . import frozen
from .pre_seam import (
    CHAIN_KEY,
    REGULATOR_PRIVATE,
    SEAL_KEY,
    answers,
    expected,
    play,
    raw_rows,
    regulator_public,
    rows,
)

REQUEST_RECORDED = "sabot.ledger:Request.Recorded"
CHAIN_PUBLIC = Ed25519PrivateKey.from_private_bytes(CHAIN_KEY).public_key().public_bytes_raw()
CHECKPOINT_KEY = Ed25519PrivateKey.from_private_bytes(bytes([0x0D]) * 32)
CHECKPOINT_PUBLIC = CHECKPOINT_KEY.public_key().public_bytes_raw()

ROWS = rows()
EXPECTED = expected()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def new_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], str]:
    """Makes empty stores of one kind (SQLite files, or PostgreSQL schemas of the session's
    database): their URLs."""
    made = iter(range(1000))
    if request.param == "sqlite":
        return lambda: f"sqlite:///{tmp_path}/store-{next(made)}.db"
    dsn = str(request.getfixturevalue("postgres_dsn"))
    where = conninfo_to_dict(dsn)

    def postgres() -> str:
        schema = "c_" + uuid.uuid4().hex[:12]
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
        return (f"postgresql://{where['user']}@{where['host']}:{where['port']}/"
                f"{where['dbname']}?schema={schema}")

    return postgres


def load(url: str) -> None:
    """The pre-seam rows, inserted as they were stored (same positions)."""
    app = LedgerApplication(env=store_env(url))
    try:
        app.recorder.insert_events([
            StoredEvent(originator_id=UUID(r["originator_id"]), originator_version=r["version"],
                        topic=r["topic"], state=r["state"].encode("utf-8"))
            for r in ROWS
        ])
        positions = [n.id for n in app.recorder.select_notifications(0, len(ROWS) + 1)]
    finally:
        app.close()
    assert positions == [r["position"] for r in ROWS]


@pytest.fixture
def loaded(new_store: Callable[[], str]) -> Iterator[tuple[Ledger, Callable[[], str]]]:
    """A ledger (the code under test) on a store holding the pre-seam log."""
    url = new_store()
    load(url)
    ledger = Ledger(LedgerConfig(store_url=url, seal_key=SEAL_KEY, chain_key=CHAIN_KEY,
                                 regulator_key=regulator_public()), games=LEDGER_GAMES)
    try:
        yield ledger, new_store
    finally:
        ledger.close()


def contains(old: Any, new: Any, where: str = "") -> None:
    """``new`` holds ``old``: the same values, and dicts may have gained keys."""
    if isinstance(old, dict):
        assert isinstance(new, dict), where
        for key, value in old.items():
            assert key in new, f"{where}.{key} is gone"
            contains(value, new[key], f"{where}.{key}")
    elif isinstance(old, list):
        assert isinstance(new, list | tuple) and len(new) == len(old), where
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            contains(a, b, f"{where}[{i}]")
    else:
        assert old == new, f"{where}: {old!r} != {new!r}"


def test_every_aggregate_loads_and_the_queries_answer_as_before(
    loaded: tuple[Ledger, Callable[[], str]],
) -> None:
    ledger, _ = loaded
    created = [r for r in ROWS if r["version"] == 1 and r["topic"] != LINKED_TOPIC]
    assert len(created) > 100
    for r in created:
        aggregate = ledger.app.repository.get(UUID(r["originator_id"]))
        state = json.loads(r["state"])
        assert state["originator_topic"] == type(aggregate).TOPIC, r  # type: ignore[attr-defined]
    now = answers(ledger)
    for key in ("tables", "shoes", "coups", "accounts", "statements", "last_coups", "balances",
                "audit_balances"):
        contains(EXPECTED[key], now[key], key)
    assert sum(ledger.balances().values()) == 0


def _requests(ledger: Ledger) -> Iterator[dict[str, Any]]:
    decode = ledger.app.mapper.transcoder.decode
    for r in ROWS:
        if r["topic"] == REQUEST_RECORDED:
            yield dict(decode(r["state"].encode("utf-8")))


def test_every_stored_answer_reads_back_and_answers_its_retry(
    loaded: tuple[Ledger, Callable[[], str]],
) -> None:
    ledger, _ = loaded
    head = ledger.app.recorder.max_notification_id()
    requests = list(_requests(ledger))
    assert {r["command"] for r in requests} == set(frozen.COMMAND_ARGUMENTS)
    for request in requests:
        command = request["command"]
        keys = set(request["arguments"])
        assert set(frozen.COMMAND_ARGUMENTS[command]) <= keys
        assert keys <= {*frozen.COMMAND_ARGUMENTS[command],
                        *frozen.OPTIONAL_ARGUMENTS.get(command, ())}
        answer_type = typing.get_type_hints(ledger_method(command))["return"]
        contains(request["result"], to_dict(from_dict(answer_type, request["result"])), command)
        again = getattr(ledger, command)(request["request_id"], **request["arguments"],
                                         actor=Actor.from_dict(request["actor"]))
        contains(request["result"], to_dict(again), f"retry of {command}")
    assert ledger.app.recorder.max_notification_id() == head  # the retries stored nothing


def same_rows(old: list[dict[str, Any]], new: list[dict[str, Any]], app: LedgerApplication
              ) -> None:
    """The same events in the same order: byte for byte, or (an event stored in a raised
    class version) decoding to the same event. A chain link is byte for byte the same until a
    batch differs; then that batch's link differs but for its number and count, and every later
    link in its signature and previous link's hash only."""
    assert len(new) == len(old)
    to_event = app.mapper.to_domain_event
    batch_differs = chain_differs = False
    for a, b in zip(old, new, strict=True):
        where = f"position {a['position']} ({a['topic']})"
        assert (a["originator_id"], a["version"], a["topic"]) == (
            b["originator_id"], b["version"], b["topic"]), where
        if a["topic"] == LINKED_TOPIC:
            link_a, link_b = json.loads(a["state"]), json.loads(b["state"])
            if batch_differs:
                assert (link_a["seq"], link_a["count"]) == (link_b["seq"], link_b["count"])
            elif chain_differs:
                for link in (link_a, link_b):
                    del link["prev"], link["signature"]
                assert link_a == link_b, where
            else:
                assert a["state"] == b["state"], where
            chain_differs = chain_differs or batch_differs
            batch_differs = False
            continue
        if a["state"] == b["state"]:
            continue
        events = [to_event(StoredEvent(originator_id=UUID(r["originator_id"]),
                                       originator_version=r["version"], topic=r["topic"],
                                       state=r["state"].encode("utf-8"))) for r in (a, b)]
        assert json.loads(a["state"]).get("class_version") != json.loads(b["state"]).get(
            "class_version"), f"{where}: stored differently in the same class version"
        assert vars(events[0]) == vars(events[1]), where
        batch_differs = True


def test_the_stored_commands_rerun_into_identical_events(
    loaded: tuple[Ledger, Callable[[], str]],
) -> None:
    ledger, new_store = loaded
    target = replay(ledger, new_store())
    try:
        same_rows(ROWS, list(raw_rows(target)), target.app)
    finally:
        target.close()


def test_the_demo_played_again_stores_the_same_rows(new_store: Callable[[], str]) -> None:
    ledger, demo = play(new_store(), EXPECTED["seeds"])
    try:
        same_rows(ROWS, list(raw_rows(ledger)), ledger.app)
        assert sorted(demo.used) == EXPECTED["commands"]
        assert demo.refused == EXPECTED["refused"]
    finally:
        ledger.close()


def _pem(path: Path, key: Ed25519PrivateKey | X25519PrivateKey) -> str:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    return str(path)


def test_it_exports_verifies_and_replays(loaded: tuple[Ledger, Callable[[], str]],
                                         tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                         ) -> None:
    ledger, _ = loaded
    url = ledger.config.store_url
    key = _pem(tmp_path / "checkpoint.key", CHECKPOINT_KEY)
    regulator = _pem(tmp_path / "regulator.key",
                     X25519PrivateKey.from_private_bytes(REGULATOR_PRIVATE))
    chain = CHAIN_PUBLIC.hex()
    out = tmp_path / "export.jsonl"
    assert sabot(["checkpoint", "--store", url, "--key", key, "--chain-key", chain]) == 0
    assert sabot(["export", "--store", url, "--key", key, "-o", str(out), "--chain-key",
                  chain]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["position"] for r in records if r["kind"] == "event"} == {
        r["position"] for r in ROWS}
    checkpoints = [r for r in records if r["kind"] == "checkpoint"]
    assert checkpoints and all(set(frozen.CHECKPOINT_BODY) <= set(c) for c in checkpoints)
    verified = subprocess.run(
        [sys.executable, "-m", "sabot_verify", str(out), "--checkpoint-key",
         CHECKPOINT_PUBLIC.hex(), "--regulator-key", regulator, "--chain-key", chain],
        capture_output=True, text=True, timeout=300)
    text = verified.stdout
    assert verified.returncode == 0, text + verified.stderr
    last = text.strip().splitlines()[-1]
    assert last.startswith("VERIFIED") and " links" in last, text
    shoes = sorted({r["originator_id"] for r in ROWS if r["topic"] == "sabot.ledger:Shoe.Shuffled"})
    assert len(shoes) == 3
    for shoe in shoes:  # the one in play through the regulator's escrow key
        assert sabot(["replay", "--store", url, "--key", key, "--shoe", shoe, "--regulator-key",
                      regulator, "--chain-key", chain]) == 0, capsys.readouterr()


def _tracking(url: str) -> dict[str, str]:
    query = "SELECT view, schema FROM rm_tracking"
    if url.startswith("sqlite:///"):
        with contextlib.closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as conn:
            return {str(v): str(s) for v, s in conn.execute(query).fetchall()}
    parsed = urlparse(url)
    schema = parse_qs(parsed.query)["schema"][0]
    with psycopg.connect(host=parsed.hostname, port=parsed.port, user=parsed.username,
                         dbname=parsed.path.lstrip("/"),
                         options=f"-csearch_path={schema}") as conn:
        return {str(v): str(s) for v, s in conn.execute(query).fetchall()}


def test_the_read_models_rebuild_to_the_same_digests(
    loaded: tuple[Ledger, Callable[[], str]],
) -> None:
    ledger, _ = loaded
    url = ledger.config.store_url
    models = ReadModels.open(url, games=READ_GAMES, transcodings=TRANSCODINGS)
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            digests = models.rebuild()
    finally:
        models.close()
    assert digests == EXPECTED["read_model_digests"]
    assert _tracking(url) == {name: d for name, (d, _) in frozen.READ_MODELS.items()}
