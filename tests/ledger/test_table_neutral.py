"""The core's ``Table`` is game-neutral: it declares the events of every table (opened, shoe
started and ended, closed) and keeps no game's rounds; Trente et Quarante's coups are its own
event of the table, ``CoupStarted`` (``services/trente_et_quarante/coup.py``), under the topic it
was always stored with, and a table's stored events load into the same state as before."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from eventsourcing.domain import DomainEvent
from eventsourcing.utils import resolve_topic

from services.bootstrap import LEDGER_GAMES
from services.ledger import table as table_module
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig
from services.ledger.ids import table_uuid
from services.ledger.table import Table
from services.trente_et_quarante import coup as tq_coup

ROOT = Path(__file__).resolve().parents[2]
KEY = bytes(range(32))


def test_the_table_declares_only_game_neutral_events() -> None:
    declared = {name for name, value in vars(Table).items()
                if inspect.isclass(value) and issubclass(value, DomainEvent)}
    assert declared - {"Created"} == {"Event", "Opened", "ShoeStarted", "ShoeEnded", "Closed"}
    tree = ast.parse(Path(table_module.__file__).read_text())
    code = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert not {"coup_ids", "last_coup_id", "CoupStarted"} & code


def test_coup_started_keeps_its_topic_and_is_trente_et_quarantes() -> None:
    assert tq_coup.CoupStarted.TOPIC == "sabot.ledger:Table.CoupStarted"
    assert resolve_topic("sabot.ledger:Table.CoupStarted") is tq_coup.CoupStarted
    assert issubclass(tq_coup.CoupStarted, Table.Event)
    assert tq_coup.CoupStarted.class_version == 1
    assert set(tq_coup.CoupStarted.__annotations__) == {"coup_id"}


def test_a_tables_coups_load_from_its_events(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/t.db"
    ledger = Ledger(LedgerConfig(store_url=url, seal_key=KEY), games=LEDGER_GAMES)
    try:
        ledger.open_table("r-t", "t1", "francaise", {})
        shoe = ledger.open_shoe("r-s", "t1")
        ledger.cut("r-c", shoe.shoe_id, 100, "anne")
        first = ledger.open_coup("r-o1", "t1")
        ledger.deal("r-d1", first.coup_id)
        ledger.settle("r-x1", first.coup_id)
        second = ledger.open_coup("r-o2", "t1")
        view = ledger.get_table("t1")
        assert (view.coup_id, view.coups, view.game) == (second.coup_id, 2, "trente-et-quarante")
        other = ledger.open_table("r-u", "u1", None, {}, game="cuarenta")
        assert (other.coup_id, other.coups, other.game) == (None, 0, "cuarenta")
    finally:
        ledger.close()
    again = Ledger(LedgerConfig(store_url=url, seal_key=KEY), games=LEDGER_GAMES)
    try:
        loaded: Table = again.app.repository.get(table_uuid("t1"))
        assert tq_coup.coup_ids(loaded) == [first.coup_id, second.coup_id]
        assert tq_coup.last_coup_id(loaded) == second.coup_id
        assert loaded.rounds("no game's key") == []
        topics = [e.topic for e in again.app.recorder.select_events(table_uuid("t1"))]
        assert topics.count("sabot.ledger:Table.CoupStarted") == 2
        assert again.get_table("t1").coups == 2
        cuarenta: Table = again.app.repository.get(table_uuid("u1"))
        assert tq_coup.coup_ids(cuarenta) == []
    finally:
        again.close()
