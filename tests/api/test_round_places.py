"""The servicers locate a game's rounds of a shoe (Trente et Quarante's coups) through the
game's API port: ``ApiGame.round_home`` (their table and shoe, cached by ``Base``) and
``ApiGame.feed_keys`` (the round a stored event belongs to: the feed's names, WatchTable's
filter); services/api names no game's topic for it."""

from __future__ import annotations

import ast
from pathlib import Path

from services import topics
from services.api.game import RoundPlace
from services.bootstrap import SERVED

ROOT = Path(__file__).resolve().parents[2]


def test_the_api_names_no_coup_topic() -> None:
    for name in ("base.py", "streams.py", "reports.py", "regulator.py"):
        tree = ast.parse((ROOT / "services/api" / name).read_text())
        used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        assert not {a for a in used if a.startswith("COUP_")}, name


def test_trente_et_quarante_places_its_coups_events() -> None:
    tq = next(g for g in SERVED.api if g.name == "trente-et-quarante")
    assert tq.feed_keys is not None and tq.round_home is not None
    opened = tq.feed_keys(topics.COUP_OPENED, {"table_id": "t1", "shoe_id": "s1"}, "c1")
    assert opened == RoundPlace("c1", "t1", "s1")
    for topic in topics.COUP_EVENTS - {topics.COUP_OPENED}:
        assert tq.feed_keys(topic, {}, "c1") == RoundPlace("c1")
    assert tq.feed_keys(topics.SHOE_SHUFFLED, {"table_id": "t1"}, "s1") is None
    others = [g for g in SERVED.api if g is not tq]
    assert all(g.feed_keys is None and g.round_home is None for g in others)
