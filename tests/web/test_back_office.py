"""The back office's pages in a real browser (Debian's chromium, Playwright) on the played
server: the floor's gaming day as tables with totals equal to the API's figures, the chart of
the win against the theoretical win (a mark per table), the CSV byte for byte as the API exports
it, the printable page, a statement and the reconciliation; a croupier is refused the report,
a player another's statement."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from domain.currency import format_minor
from services.api.client import Client
from services.api.gen.sabot.v1 import reports_pb2
from services.projections.reconciliation import gaming_day_and_shift

from .conftest import HIDDEN, Played, shot
from .test_console import sign_in


@pytest.fixture(scope="module")
def day() -> str:
    """The gaming day the fixture's shoe was played on, as the report computes it (06:00 UTC)."""
    return gaming_day_and_shift(datetime.now(UTC).replace(tzinfo=None))[0]


@pytest.fixture(scope="module")
def games(played: Played) -> dict[str, str]:
    """The Treinta y Una and Cuarenta tables the shared fixture played a round and a match at
    (tests/web/conftest.py), so that the day has a section per game."""
    return {"treinta-y-una": played.tyu_table, "cuarenta": played.cuarenta_table}


def _api_report(played: Played, day: str,
                fmt: reports_pb2.ExportFormat.ValueType = reports_pb2.EXPORT_FORMAT_UNSPECIFIED,
                layout: reports_pb2.GamingDayLayout.ValueType = (
                    reports_pb2.GAMING_DAY_LAYOUT_FLOOR)) -> reports_pb2.GamingDayReport:
    client = Client(played.target, played.tokens["back_office"])
    try:
        found: reports_pb2.GamingDayReport = client.read_models.GetGamingDayReport(
            reports_pb2.GetGamingDayReportRequest(gaming_day=day, format=fmt,
                                                  layout=layout))
        return found
    finally:
        client.close()


def test_the_back_office_reads_the_day_with_totals_and_chart(
        browser: Any, console: str, played: Played, day: str, games: dict[str, str]) -> None:
    api = _api_report(played, day)
    assert api.floor_totals
    assert {s.game for s in api.sections} >= {"trente-et-quarante", *games}
    page = sign_in(browser, console, played.tokens["back_office"])
    try:
        page.get_by_role("navigation").get_by_role("link", name="Gaming day").click()
        page.get_by_label("Day").fill(day)
        page.get_by_role("button", name="Show").click()
        page.wait_for_selector("#floor-totals")
        shot(page, "day-back_office")
        total = api.floor_totals[0]
        cur = total.currency_code
        across = page.locator("#floor-totals tbody tr").first.inner_text()
        assert format_minor(total.handle_minor, cur) in across
        assert format_minor(total.house_win_minor, cur) in across
        assert str(total.units) in across
        if total.hold_percent:
            assert f"{total.hold_percent} %" in across
        tq = next(s for s in api.sections if s.game == "trente-et-quarante")
        section = page.locator('table.floor[data-game="trente-et-quarante"]')
        assert section.locator("tbody tr").count() == len(tq.rows)
        game_total = section.locator("tfoot tr").first.inner_text()
        assert format_minor(tq.totals[0].house_win_minor, cur) in game_total
        table_id = played.table.split("/", 1)[1]
        day_row = next(r for r in tq.rows if r.table == played.table and r.shift == 0)
        row = section.locator("tbody tr", has_text=table_id).filter(has_text="day").inner_text()
        assert format_minor(day_row.handle_minor, cur) in row
        assert day_row.reconciled in row
        # the chart: an svg with a title, one win mark and one interval per table of the day
        tables = {r.table for s in api.sections for r in s.rows if r.shift == 0 and r.table}
        chart = page.locator("svg#hold-chart")
        title = chart.locator("title").first.text_content() or ""
        assert title.startswith("House win of the day")
        assert chart.locator("circle.chart-win").count() == len(tables)
        assert chart.locator("rect.chart-interval").count() == len(
            {r.table for s in api.sections for r in s.rows
             if r.shift == 0 and r.table and r.interval_low})
        for game, name in games.items():  # every game's section, its table's day and total
            rows = page.locator(f'table.floor[data-game="{game}"]')
            found = next(s for s in api.sections if s.game == game)
            mine = next(r for r in found.rows if r.table == name and r.shift == 0)
            text = rows.locator("tbody tr", has_text=name.split("/", 1)[1]).filter(
                has_text="day").inner_text()
            assert format_minor(mine.handle_minor, mine.currency_code) in text
            assert format_minor(mine.house_win_minor, mine.currency_code) in text
            assert format_minor(found.totals[0].house_win_minor, mine.currency_code) in \
                rows.locator("tfoot").inner_text()
            assert chart.locator(f'g[data-table="{name.split("/", 1)[1]}"] circle').count() == 1
        assert page.locator("#chart-data tbody tr").count() == len(tables)
        # the printable page: no navigation, no form, no download link
        page.emulate_media(media="print")
        assert not page.get_by_role("navigation").is_visible()
        assert not page.get_by_role("button", name="Show").is_visible()
        assert not page.locator(".downloads").is_visible()
        shot(page, "day-print")
        page.emulate_media(media="screen")
    finally:
        page.close()


@pytest.mark.parametrize("layout", ["floor", "chances"])
def test_the_csv_is_the_apis_export(layout: str, browser: Any, console: str, played: Played,
                                    day: str) -> None:
    api = _api_report(played, day, reports_pb2.EXPORT_FORMAT_CSV,
                      reports_pb2.GAMING_DAY_LAYOUT_FLOOR if layout == "floor"
                      else reports_pb2.GAMING_DAY_LAYOUT_CHANCES)
    assert api.export
    page = sign_in(browser, console, played.tokens["back_office"])
    try:
        page.goto(f"{console}/reports/day?day={day}")
        with page.expect_download() as info:
            page.locator(f'a[href="/reports/day.csv?day={day}&layout={layout}"]').click()
        download = info.value
        assert download.suggested_filename == f"sabot-gaming-day-{day}-{layout}.csv"
        assert Path(download.path()).read_bytes() == api.export
    finally:
        page.close()


def test_a_statement_and_the_reconciliation(browser: Any, console: str, played: Played,
                                            games: dict[str, str]) -> None:
    client = Client(played.target, played.tokens["back_office"])
    try:
        api = client.read_models.GetPlayerStatement(
            reports_pb2.GetPlayerStatementRequest(account="accounts/anne", page_size=100))
    finally:
        client.close()
    page = sign_in(browser, console, played.tokens["back_office"])
    try:
        page.get_by_role("navigation").get_by_role("link", name="Statements").click()
        page.get_by_label("Account").fill("anne")
        page.get_by_role("button", name="Show").click()
        page.wait_for_selector("#statement")
        shot(page, "statement-back_office")
        assert page.locator("#statement tbody tr").count() == len(api.lines) > 0
        facts = page.locator(".facts").inner_text()
        assert format_minor(api.closing_balance_minor, api.currency_code) in facts
        last = page.locator("#statement tbody tr").last.inner_text()
        assert format_minor(api.lines[-1].balance_after_minor, api.currency_code) in last
        page.get_by_role("navigation").get_by_role("link", name="Reconciliation").click()
        page.wait_for_selector("#balances-verdict")
        shot(page, "reconciliation-back_office")
        assert page.locator("#balances-verdict").inner_text().startswith("Every balance agrees")
        assert page.locator("#differences tbody").inner_text() == "No difference."
        for game, name in games.items():  # each game's own reconciliation, by gaming day
            shown = page.locator(f'table.game-reconciliation[data-table="{name}"]')
            assert f"({game}): balanced" in shown.locator("caption").inner_text()
            assert shown.locator("tbody tr").count() >= 1
            assert "NO" not in shown.locator("tbody").inner_text()
    finally:
        page.close()


def test_a_croupier_is_refused_the_report_and_a_player_sees_only_its_own(
        browser: Any, console: str, played: Played, day: str) -> None:
    page = sign_in(browser, console, played.tokens["croupier"])
    try:
        for path in (f"/reports/day?day={day}", f"/reports/day.csv?day={day}",
                     "/reconciliation"):
            answer = page.goto(f"{console}{path}")
            assert answer is not None and answer.status == 403
            assert "PERMISSION_DENIED" in page.get_by_role("alert").inner_text()
        shot(page, "day-croupier-refused")
    finally:
        page.close()
    page = sign_in(browser, console, played.tokens["anne"], "anne")
    try:
        page.goto(f"{console}/statements")
        assert page.get_by_label("Account").input_value() == "anne"
        page.get_by_role("button", name="Show").click()
        page.wait_for_selector("#statement")
        assert page.locator("#statement tbody tr").count() > 0
        answer = page.goto(f"{console}/statements?account=bruno")
        assert answer is not None and answer.status == 403
        answer = page.goto(f"{console}/reports/day?day=tomorrow")
        assert answer is not None and answer.status == 400
    finally:
        page.close()


def test_the_back_office_pages_are_safe(console: str, played: Played, day: str) -> None:
    """No token and no unrevealed seed on the new pages or downloads; the CSP headers on each;
    the download is an attachment with a plain file name."""
    with httpx.Client(base_url=console, follow_redirects=False) as http:
        first = http.get("/signin")
        csrf = re.search(r'name="csrf" value="([^"]+)"', first.text)
        assert csrf
        assert http.get(f"/reports/day?day={day}").status_code == 303  # not signed in
        done = http.post("/signin", data={"token": played.tokens["back_office"],
                                          "csrf": csrf.group(1)})
        assert done.status_code == 303
        answers = [http.get(p) for p in (f"/reports/day?day={day}",
                                          f"/reports/day.csv?day={day}&layout=floor",
                                          f"/reports/day.csv?day={day}&layout=chances",
                                          "/statements?account=anne",
                                          "/statements.csv?account=anne", "/reconciliation")]
        assert [a.status_code for a in answers] == [200] * 6
        assert answers[1].headers["content-disposition"] == \
            f'attachment; filename="sabot-gaming-day-{day}-floor.csv"'
        assert answers[1].headers["content-type"].startswith("text/csv")
        assert answers[4].headers["content-disposition"] == \
            'attachment; filename="sabot-statement-anne.csv"'
        assert "<svg" in answers[0].text and " style=" not in answers[0].text  # CSP: no inline
        for a in answers:
            assert "script-src 'self'" in a.headers["content-security-policy"]
            assert HIDDEN.hex() not in a.text
            for token in played.tokens.values():
                assert token not in a.text
        bad = [http.get(p).status_code for p in ("/reports/day?day=2026-13",
                                                 "/reports/day.csv?day=x%0d%0aSet-Cookie:a",
                                                 f"/reports/day.csv?day={day}&layout=nope",
                                                 "/statements?account=nobody-here")]
        assert bad == [400, 400, 400, 404]


def test_the_chart_marks_a_win_outside_its_interval() -> None:
    """The chart's geometry from a report: one scale over every mark and zero, a win outside
    the interval marked, a commission game's tick without a bar (no interval)."""
    from services.web.app import _chart

    report = reports_pb2.GamingDayReport(sections=[
        reports_pb2.FloorSection(game="trente-et-quarante", rows=[
            reports_pb2.FloorRow(table="tables/a", shift=1, house_win_minor=1),
            reports_pb2.FloorRow(table="tables/a", shift=0, house_win_minor=90_000,
                                 theoretical_win="1000.00", interval_low="-20000.00",
                                 interval_high="22000.00", flag="OUTSIDE_95",
                                 currency_code="EUR")]),
        reports_pb2.FloorSection(game="cuarenta", rows=[
            reports_pb2.FloorRow(table="tables/b", shift=0, house_win_minor=-500,
                                 theoretical_win="100.00", currency_code="EUR")])])
    chart = _chart(report)
    a, b = chart["rows"]
    assert (a["table"], a["outside"], str(a["win"]), str(a["low"])) == ("a", True, "900.00",
                                                                         "-200.00")
    assert (str(chart["low"]), str(chart["high"])) == ("-200.00", "900.00")
    assert a["x_low"] == chart["left"] and a["x_win"] == chart["right"]
    assert a["x_low"] < chart["x_zero"] < a["x_theo"] < a["x_high"] < a["x_win"]
    assert not b["outside"] and b["x_low"] is None and b["x_win"] < chart["x_zero"] < b["x_theo"]


def test_a_cashier_reads_a_statement_but_not_the_day(browser: Any, console: str,
                                                     played: Played, day: str) -> None:
    page = sign_in(browser, console, played.tokens["cashier"])
    try:
        page.goto(f"{console}/statements?account=bruno")
        assert page.locator("#statement tbody tr").count() > 0
        assert page.locator("#statement tbody tr").first.inner_text().split("\t")[2] == "cash_in"
        shot(page, "statement-cashier")
        answer = page.goto(f"{console}/reports/day?day={day}")
        assert answer is not None and answer.status == 403
    finally:
        page.close()
