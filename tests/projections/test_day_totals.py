"""The gaming-day report's grand total across tables (issue 12 item 9), its CSV (the header row
first, no comment lines) and its text (money in major units with the currency)."""

from __future__ import annotations

import csv
import io
import json
from fractions import Fraction

from services.bootstrap import READ_GAMES
from services.projections import default_views
from services.projections.export import to_csv, to_json, to_text
from services.projections.projector import Projector
from services.projections.reports import DAY_MONEY, TOTAL, gaming_day

from .game import Game

ADDED = ("coups", "void_coups", "handle_noir", "handle_rouge", "handle_couleur",
         "handle_inverse", "handle", "collections", "payments", "bank_win", "coup_results",
         "premiums", "partage", "prison_loss", "house_win", "cash_in", "cash_out")


def _report_days(game: Game) -> list[str]:
    return sorted({k[1] for k in game.exp.recon if not k[0].startswith("cage:")})


def test_the_grand_total_adds_every_table_and_cage(game: Game) -> None:
    p = Projector(game.ledger.app, default_views(games=READ_GAMES))
    p.catch_up()
    for day in _report_days(game):
        report = gaming_day(p.store, day, views=p.views)
        days = [r for r in report.records() if r["shift"] == "day"]
        (total,) = report.total_records()  # one currency at these tables: one total
        assert (total["table_id"], total["shift"], total["currency"]) == (TOTAL, "day", "EUR")
        for column in ADDED:
            assert total[column] == sum(r[column] for r in days), column
        assert total["prison_outstanding"] == sum(r["prison_outstanding"] or 0 for r in days)
        assert total["bank_check"] == "ok"
        if total["handle"]:
            hold = Fraction(100 * total["house_win"], total["handle"])
            assert abs(Fraction(total["hold_pct"]) - hold) <= Fraction(1, 200)
            theo = sum(Fraction(r["theoretical_win"]) for r in days if r["theoretical_win"])
            assert abs(Fraction(total["theoretical_win"]) - theo) <= Fraction(len(days), 200)
            low, high = Fraction(total["interval_low"]), Fraction(total["interval_high"])
            # the tables' variances add: the total's interval is narrower than their sum
            widths = sum(Fraction(r["interval_high"]) - Fraction(r["interval_low"])
                         for r in days if r["interval_high"])
            assert 0 < high - low <= widths
            win = total["bank_win"] + total["partage"] + total["prison_loss"]
            assert total["flag"] == ("ok" if low <= win <= high else "OUTSIDE_95")


def test_the_csv_starts_with_its_header_and_the_json_has_facts_and_totals(game: Game) -> None:
    p = Projector(game.ledger.app, default_views(games=READ_GAMES))
    p.catch_up()
    report = gaming_day(p.store, _report_days(game)[0], views=p.views)
    text = to_csv(report)
    assert text.splitlines()[0] == ",".join(report.columns)
    assert not any(line.startswith("#") for line in text.splitlines())
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["table_id"] for r in rows] == [r["table_id"] for r in report.records()]
    doc = json.loads(to_json(report))
    assert doc["facts"]["gaming_day"] == report.facts["gaming_day"]
    assert doc["totals"] == json.loads(json.dumps(report.total_records(), default=str))


def test_the_text_shows_money_in_major_units(game: Game) -> None:
    p = Projector(game.ledger.app, default_views(games=READ_GAMES))
    p.catch_up()
    report = gaming_day(p.store, _report_days(game)[0], views=p.views)
    shown = to_text(report)
    (total,) = report.total_records()
    last = shown.splitlines()[-1].split()
    assert last[0] == TOTAL
    handle = total["handle"]
    assert f"{handle // 100}.{handle % 100:02d}" in last  # 12345 minor: 123.45 (EUR)
    assert "EUR" in last
    assert str(handle) not in last or handle < 100
    assert "handle" in DAY_MONEY and "coups" not in DAY_MONEY
