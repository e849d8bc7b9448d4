"""The floor's gaming-day report (``floor.floor_day``) on a played Trente et Quarante ledger
(several days and shifts, three tables, the cage): each table's shifts and day carry the figures
of the report by chance (itself checked against the domain in test_reports.py), the totals add
the tables up; and the text stays within 100 columns whatever it holds."""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from decimal import Decimal
from fractions import Fraction

import pytest

from domain.currency import format_minor
from domain.errors import InvalidArgument
from services.bootstrap import READ_GAMES
from services.projections import default_views
from services.projections.floor import (
    COLUMNS,
    CageLine,
    FloorReport,
    Line,
    Section,
    floor_day,
    render_floor,
)
from services.projections.projector import Projector
from services.projections.reports import gaming_day

from .game import Game

TQ = "trente-et-quarante"


def _projector(game: Game) -> Projector:
    p = Projector(game.ledger.app, default_views(games=READ_GAMES))
    p.catch_up()
    return p


def test_floor_rows_are_the_report_by_chance(game: Game) -> None:
    p = _projector(game)
    days = sorted({k[1] for k in game.exp.recon if not k[0].startswith("cage:")})
    assert len(days) >= 2
    for day in days:
        floor = floor_day(p.store, day, p.views)
        chances = gaming_day(p.store, day, views=p.views)
        by_chance = {(r["table_id"], r["shift"]): r for r in chances.records()}
        assert [s.game for s in floor.sections] == [TQ]
        lines = floor.sections[0].lines
        assert {(ln.table_id, ln.shift) for ln in lines} == {
            k for k in by_chance if not k[0].startswith("cage:")}
        for ln in lines:
            r = ln.record()
            old = by_chance[(ln.table_id, ln.shift)]
            assert (ln.units, ln.handle, ln.house_win) == (old["coups"], old["handle"],
                                                           old["house_win"])
            assert r["hold_pct"] == old["hold_pct"]
            assert r["theoretical_win_minor"] == old["theoretical_win"]
            assert (r["interval_low_minor"], r["interval_high_minor"]) == (
                old["interval_low"], old["interval_high"])
            assert (r["flag"] or "") == (old["flag"] or "")
            assert ln.reconciled == old["bank_check"] and ln.currency == old["currency"]
            assert r["levied_minor"] is None and ln.edge in ("odds", "unknown")
        # the game's totals and the totals across games: the day rows added up, per currency
        for totals in (floor.sections[0].totals, floor.totals):
            assert len(totals) == 1
            t = totals[0]
            days_ = [ln for ln in lines if ln.shift == "day"]
            assert t.handle == sum(ln.handle for ln in days_)
            assert t.house_win == sum(ln.house_win for ln in days_)
            old_total = chances.total_records()[0]
            assert t.house_win == old_total["house_win"] and t.handle == old_total["handle"]
            assert t.record()["theoretical_win_minor"] == old_total["theoretical_win"]
        cash: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for (t_, d, _, metric, _), v in game.exp.recon.items():
            if d == day and t_.startswith("cage:") and metric in ("cash_in", "cash_out"):
                cash[t_][metric == "cash_out"] += v
        assert {c.cage: [c.deposits, c.withdrawals] for c in floor.cage} == dict(cash)
        # one table only: its rows, no cage
        one = floor_day(p.store, day, p.views, "t-fr")
        assert {ln.table_id for s in one.sections for ln in s.lines} <= {"t-fr"}
        assert not one.cage
        # CSV: the header row, every row, units in the header; JSON: its unit
        rows = list(csv.DictReader(io.StringIO(render_floor(floor, "csv"))))
        assert tuple(rows[0]) == COLUMNS
        assert [r["game"] for r in rows].count("all") == 1
        doc = json.loads(render_floor(floor, "json"))
        assert doc["unit"].startswith("minor units") and doc["facts"]["gaming_day"] == day
    with pytest.raises(InvalidArgument) as bad:
        floor_day(p.store, "2026-02-30", p.views)
    assert bad.value.field == "gaming_day"


def _line(game: str, table: str, shift: str, amount: int, currency: str, edge: str) -> Line:
    theo = Fraction(amount, 37) if edge != "none" else None
    return Line(game, table, shift, 123456, amount * 40, amount, amount * 3 if edge != "odds"
                else None, edge, theo, Fraction(abs(amount) * 1000) if edge == "odds" else None,
                amount, "DIFF", currency)


def _report(big: int, name: str) -> FloorReport:
    sections = []
    for game, edge in ((TQ, "odds"), ("treinta-y-una", "none"),
                       ("cuarenta", "commission 1/20")):
        lines = tuple(_line(game, name.format(game=game[:5], cur=cur.lower()), shift, -big, cur,
                            edge)
                      for cur in ("EUR", "JPY", "KWD") for shift in ("1", "2", "3", "day"))
        sections.append(Section(game, game.title(), "units", lines, ()))
    return FloorReport("Gaming day 2026-12-01: the floor", {"gaming_day": "2026-12-01"},
                       tuple(sections), (), (CageLine("cage:eur", big, big, "EUR"),))


def test_the_text_fits_one_screen_width() -> None:
    """Every game, several currencies: at most 100 columns. With table ids of 20 characters
    and amounts up to a million, every id and amount is whole on its line; with longer ones, a
    cell folds onto the next line, nothing is cut."""
    report = _report(2_499_999, "{game}-table-{cur}-0001")  # handle: 999,999.60
    text = render_floor(report, "text")
    assert max(len(line) for line in text.splitlines()) <= 100
    assert "(EUR)" in text and "(JPY)" in text and "(KWD)" in text
    words = set(text.split())
    for s in report.sections:
        for ln in s.lines:
            assert len(ln.table_id) <= 20 and ln.table_id in words
            r = ln.record()
            for amount in (ln.handle, ln.house_win):
                assert format_minor(amount, ln.currency).split()[0] in words
            if r["theoretical_win_minor"] is not None:
                shown = format_minor(Decimal(r["theoretical_win_minor"]), ln.currency)
                assert shown.split()[0] in words
    huge = render_floor(_report(987_654_321_098_765, "{game}-a-very-long-table-name-{cur}"),
                        "text")
    assert max(len(line) for line in huge.splitlines()) <= 100
    assert "\u2026" not in huge  # no cell cut short with an ellipsis
