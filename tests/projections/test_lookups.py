"""The search by log position on the read models (issue 24's /search): each step table has a
lookup index on ``position`` (created if missing, outside the schema digest: adding it
rebuilds no view), the query finds the coup, round or match by it, and the plan uses it."""

from __future__ import annotations

from services.bootstrap import READ_GAMES
from services.projections import default_views, gamingday
from services.projections.games import unit_tables
from services.projections.projector import Projector
from services.projections.recall import STEP, RecallView, recall
from services.projections.view import Table

from .game import Game


def test_lookups_stay_out_of_the_schema_digest() -> None:
    assert STEP.lookups == (("position",),)
    for table in (unit_tables("tyu_round")[1], unit_tables("cuarenta_match")[1]):
        assert table.lookups == (("position",),)  # a round's or match's unit_at
        assert f"{table.name}_l0" in " ".join(table.create_sql())
    assert any("rm_coup_step_l0" in sql for sql in RecallView().create_sql())
    bare = Table(STEP.name, STEP.columns, STEP.key, indexes=STEP.indexes)

    without = type("Bare", (RecallView,), {"tables": tuple(
        bare if t.name == STEP.name else t for t in RecallView.tables)})()
    assert without.schema_digest() == RecallView().schema_digest()  # no rebuild on upgrade


def test_a_coup_is_found_by_a_log_position_through_its_index(game: Game) -> None:
    p = Projector(game.ledger.app, default_views(gamingday.DEFAULT, games=READ_GAMES))
    p.catch_up()
    coups = recall(p.store, limit=10_000)
    with p.store.read() as tx:
        if p.store.dialect == "sqlite":
            names = {r[0] for r in tx.query(
                "SELECT name FROM sqlite_master WHERE type = 'index'")}
        else:
            names = {r[0] for r in tx.query(
                "SELECT indexname FROM pg_indexes WHERE schemaname = ?",
                (p.store.schema or "public",))}
        assert {"rm_coup_step_l0"} <= names, names
        if p.store.dialect == "sqlite":
            plan = " ".join(str(r[3]) for r in tx.query(
                "EXPLAIN QUERY PLAN SELECT coup_id FROM rm_coup_step WHERE position = ?", (1,)))
            assert "USING INDEX rm_coup_step_l0" in plan, plan
    for c in coups[:: max(1, len(coups) // 10)]:
        for s in c.steps[:: max(1, len(c.steps) // 3)]:
            found = recall(p.store, position=s.position)
            assert [f.coup_id for f in found] == [c.coup_id]
            assert [f.coup_id for f in recall(p.store, position=s.position,
                                              table_id=c.table_id)] == [c.coup_id]
    assert recall(p.store, position=10**12) == []
