"""The floor's gaming-day report: every game's tables, per table and shift, in one report.

Per game, per table and shift and for the whole day: the units played (coups, rounds, matches),
the **handle**, the **house win**, the **hold** (house win / handle), what the house's
commission is **levied** on where the game has one, the **theoretical win** with its 95 %
interval where it has one, and the game's own **reconciliation** of the day:

- Trente et Quarante (``rm_recon``, as in ``reports.gaming_day``): handle = the stakes in
  action at decided coups; house win = bank + premiums + partage + prison losses; the
  theoretical win and its interval from the exact law of each stake's state (``edge``),
  compared with the game win (premiums excluded), flag ``ok`` / ``OUTSIDE_95`` / ``unknown``;
  reconciled = the bank check (the bank's movement equals its coups' results).
- The games with read models of their own (``games.UnitsView``: Treinta y Una's rounds,
  Cuarenta's matches): a unit counts in the shift of its end (``UnitsView.floor``); handle =
  the stakes put up; house win = the house's commission; theoretical win = the table's
  commission rate x what it is levied on, or ``none`` when the rate is 0 (the players play
  each other: the house has no edge); no interval (given what it is levied on, the
  commission is certain); reconciled = the game's reconciliation of the day
  (``UnitsView.reconcile``).

Then a total per game and currency, a total across games per currency, and the cage
(deposits, withdrawals). A table's game is the registered game whose table accounts it has
(``UnitsView.table_accounts``, from ``rm_recon_account``).

Money stays in integer minor units of the row's currency (the ``currency`` column, ISO 4217):
the CSV's money columns end in ``_minor`` and the JSON states its ``unit``; the text shows major
units, the currency named in each section's heading. Exact fractions (theoretical win,
interval, hold %) are shown with two decimals, rounded half to even.
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from fractions import Fraction
from math import isqrt
from typing import Any

from domain.currency import format_minor
from domain.errors import InvalidArgument
from services.projections.games import CoupLaw, Unit, UnitsView
from services.projections.reconciliation import stored_setting
from services.projections.reports import (
    CHANCES,
    ROOT_SCALE,
    TOTAL,
    TRENTE_ET_QUARANTE,
    Z95_PERCENT,
    _check_day,
    _dec,
    _laws,
    _metrics,
    _table_options,
    coup_law_of,
    table_games,
)
from services.projections.store import ReadStore

ALL_GAMES = "all"  # the game of the totals across games
CAGE = "cage"  # the game of the cage's rows
UNIT = "minor units of the row's currency (currency: ISO 4217)"
COLUMNS = (
    "game", "table_id", "shift", "units", "handle_minor", "house_win_minor", "hold_pct",
    "levied_minor", "edge", "theoretical_win_minor", "interval_low_minor", "interval_high_minor",
    "flag", "reconciled", "deposits_minor", "withdrawals_minor", "currency",
)
LAYOUTS = ("floor", "chances")  # the floor's report; Trente et Quarante's per-chance detail
_NAMES = {TRENTE_ET_QUARANTE: ("Trente et Quarante", "coups")}


@dataclass(frozen=True, slots=True)
class Line:
    """One row of a game's section (a table's shift or day, or a total). ``theo`` None: no
    theoretical win (``edge`` says why: ``none``, no house edge; ``unknown``, no odds);
    ``var`` None: no interval (a commission is certain given what it is levied on)."""

    game: str
    table_id: str
    shift: str  # "1".."n", or "day"
    units: int
    handle: int
    house_win: int
    levied: int | None
    edge: str
    theo: Fraction | None
    var: Fraction | None
    game_win: int  # what the theoretical win is compared with
    reconciled: str  # "ok", "DIFF", or "" (not checked on its own)
    currency: str

    @property
    def hold(self) -> str | None:
        return _dec(Fraction(100 * self.house_win, self.handle)) if self.handle else None

    def interval(self) -> tuple[Fraction, Fraction] | None:
        if self.theo is None or self.var is None or not self.handle:
            return None
        root = isqrt(self.var.numerator * ROOT_SCALE**2 // self.var.denominator)
        half = Fraction(Z95_PERCENT * root, 100 * ROOT_SCALE)
        return self.theo - half, self.theo + half

    @property
    def flag(self) -> str:
        if not self.handle:
            return ""
        if self.theo is None:
            return self.edge if self.edge in ("none", "unknown") else ""
        bounds = self.interval()
        if bounds is None:
            return ""
        return "ok" if bounds[0] <= self.game_win <= bounds[1] else "OUTSIDE_95"

    def record(self) -> dict[str, Any]:
        bounds = self.interval()
        return {
            "game": self.game, "table_id": self.table_id, "shift": self.shift,
            "units": self.units, "handle_minor": self.handle, "house_win_minor": self.house_win,
            "hold_pct": self.hold, "levied_minor": self.levied, "edge": self.edge,
            "theoretical_win_minor": None if self.theo is None else _dec(self.theo),
            "interval_low_minor": None if bounds is None else _dec(bounds[0]),
            "interval_high_minor": None if bounds is None else _dec(bounds[1]),
            "flag": self.flag, "reconciled": self.reconciled, "deposits_minor": None,
            "withdrawals_minor": None, "currency": self.currency,
        }


@dataclass(frozen=True, slots=True)
class CageLine:
    cage: str  # the cage account, e.g. cage:eur
    deposits: int
    withdrawals: int
    currency: str

    def record(self) -> dict[str, Any]:
        row: dict[str, Any] = dict.fromkeys(COLUMNS)
        row.update(game=CAGE, table_id=self.cage, shift="day", deposits_minor=self.deposits,
                   withdrawals_minor=self.withdrawals, currency=self.currency)
        return row


@dataclass(frozen=True, slots=True)
class Section:
    """One game's rows (its tables' shifts and days, in table order) and its totals (one per
    currency)."""

    game: str
    title: str
    unit_name: str
    lines: tuple[Line, ...]
    totals: tuple[Line, ...]


@dataclass(frozen=True, slots=True)
class FloorReport:
    title: str
    facts: dict[str, Any]
    sections: tuple[Section, ...]
    totals: tuple[Line, ...]  # across games, one per currency
    cage: tuple[CageLine, ...]
    cage_totals: tuple[CageLine, ...] = field(default=())

    def records(self) -> list[dict[str, Any]]:
        """Every row, as the CSV has them: the sections' rows and totals, the cage, the totals
        across games."""
        out = [ln.record() for s in self.sections for ln in (*s.lines, *s.totals)]
        out += [c.record() for c in self.cage]
        cash = {c.currency: c for c in self.cage_totals}
        for t in self.totals:
            row = t.record()
            c = cash.pop(t.currency, None)
            if c is not None:
                row.update(deposits_minor=c.deposits, withdrawals_minor=c.withdrawals)
            out.append(row)
        for c in cash.values():  # a currency with cash but no table
            row = c.record()
            row.update(game=ALL_GAMES, table_id=TOTAL)
            out.append(row)
        return out


# --- building -----------------------------------------------------------------------------


def floor_day(store: ReadStore, day: str, views: Iterable[Any] = (),
              table_id: str | None = None) -> FloorReport:
    """The floor's report of the gaming ``day`` (``table_id``: that table only, no cage), from
    the reconciliation read model and the games' own read models among ``views``."""
    _check_day(day)
    try:
        date.fromisoformat(day)
    except ValueError:
        raise InvalidArgument("gaming_day", "BAD_DATE", f"no such date {day!r}") from None
    setting = stored_setting(store)
    views = tuple(views)
    law = coup_law_of(views)  # Trente et Quarante's theoretical win (None: unknown)
    units = {v.game: v for v in views if isinstance(v, UnitsView)}
    games_of = table_games(store, units.values())
    options = _table_options(store)
    metrics = _metrics(store, day, table_id)
    sections: list[Section] = []

    tq: list[Line] = []
    for t in sorted({t for t, _ in metrics if not t.startswith("cage:")}):
        if games_of.get(t, TRENTE_ET_QUARANTE) != TRENTE_ET_QUARANTE:
            continue  # another game's table: its bank moves players' money, not the house's
        tq += _tq_lines(t, {s: m for (tt, s), m in metrics.items() if tt == t}, options.get(t),
                        law)
    sections.append(_section(TRENTE_ET_QUARANTE, *_NAMES[TRENTE_ET_QUARANTE], tq))
    for game, view in units.items():
        lines = _unit_lines(store, view, day, setting, options, table_id)
        sections.append(_section(game, _title(game), view.unit_name, lines))
    sections = [s for s in sections if s.lines]

    cage = tuple(
        CageLine(t, sum(m.get(("cash_in", ""), 0) for m in ms),
                 sum(m.get(("cash_out", ""), 0) for m in ms), t.removeprefix("cage:").upper())
        for t in sorted({t for t, _ in metrics if t.startswith("cage:")})
        for ms in [[m for (tt, _), m in metrics.items() if tt == t]])
    cash: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for c in cage:
        cash[c.currency][0] += c.deposits
        cash[c.currency][1] += c.withdrawals
    cage_totals = tuple(CageLine(TOTAL, d, w, cur) for cur, (d, w) in sorted(cash.items()))
    day_lines = [ln for s in sections for ln in s.lines if ln.shift == "day"]
    totals = _totals(ALL_GAMES, day_lines)
    facts = {
        "gaming_day": day, "hours": setting.describe(), "unit": UNIT,
        "games": [s.game for s in sections],
        "tables": len({(ln.game, ln.table_id) for ln in day_lines}),
        "flags": sum(ln.flag == "OUTSIDE_95" for ln in day_lines),
        "not_reconciled": sum(ln.reconciled == "DIFF" for ln in day_lines),
    }
    return FloorReport(f"Gaming day {day}: the floor", facts, tuple(sections), totals, cage,
                       cage_totals)


def _title(game: str) -> str:
    return " ".join(w.capitalize() if w not in ("y", "et") else w for w in game.split("-"))


def _section(game: str, title: str, unit_name: str, lines: list[Line]) -> Section:
    return Section(game, title, unit_name, tuple(lines),
                   _totals(game, [ln for ln in lines if ln.shift == "day"]))


def _totals(game: str, lines: Iterable[Line]) -> tuple[Line, ...]:
    """Per currency, the day lines added up: the theoretical win and the variance add (the
    tables' results are independent), each only if every line with handle has one."""
    by: dict[str, list[Line]] = defaultdict(list)
    for ln in lines:
        by[ln.currency].append(ln)
    out = []
    for currency, group in sorted(by.items()):
        live = [ln for ln in group if ln.handle]
        theo: Fraction | None = Fraction(0)
        var: Fraction | None = None
        for ln in live:
            if ln.theo is None and ln.edge != "none":
                theo = None
            elif theo is not None and ln.theo is not None:
                theo += ln.theo
            if ln.var is not None:
                var = (var or Fraction(0)) + ln.var
        edges = {ln.edge for ln in live}
        edge = edges.pop() if len(edges) == 1 else "mixed" if edges else ""
        if theo is not None and not any(ln.theo is not None for ln in live):
            theo = None  # no line has a theoretical win: none to add up
        levied = [ln.levied for ln in group if ln.levied is not None]
        out.append(Line(
            game, TOTAL, "day", sum(ln.units for ln in group), sum(ln.handle for ln in group),
            sum(ln.house_win for ln in group), sum(levied) if levied else None, edge, theo,
            None if theo is None else var, sum(ln.game_win for ln in group),
            "DIFF" if any(ln.reconciled == "DIFF" for ln in group) else (
                "ok" if any(ln.reconciled == "ok" for ln in group) else ""),
            currency))
    return tuple(out)


def _tq_lines(table: str, shifts: Mapping[int, Mapping[tuple[str, str], int]],
              options: dict[str, str] | None, law: CoupLaw | None) -> list[Line]:
    currency = (options or {}).get("currency", "")
    whole: dict[tuple[str, str], int] = defaultdict(int)
    out = []
    for s in sorted(shifts):
        for k, v in shifts[s].items():
            if k[0] != "prison_outstanding":
                whole[k] += v
        out.append(_tq_line(table, str(s), shifts[s], options, currency, law))
    out.append(_tq_line(table, "day", whole, options, currency, law))
    return out


def _tq_line(table: str, shift: str, m: Mapping[tuple[str, str], int],
             options: dict[str, str] | None, currency: str, law: CoupLaw | None) -> Line:
    def g(metric: str) -> int:
        return m.get((metric, ""), 0)

    handle = sum(m.get(("handle", c), 0) for c in CHANCES)
    laws = _laws(dict(m), options, law) if options is not None and handle else None
    bank = g("bank_net")
    return Line(
        TRENTE_ET_QUARANTE, table, shift, g("coups"), handle,
        bank + g("premiums") + g("partage") + g("prison_loss"), None,
        "odds" if laws is not None or not handle else "unknown",
        None if laws is None else laws[0], None if laws is None else laws[1],
        bank + g("partage") + g("prison_loss"), "ok" if bank == g("coup_result") else "DIFF",
        currency)


def _rate(text: str | None) -> Fraction | None:
    """A commission rate as a table's options record it ("1/20", "0.05", "5%")."""
    if text is None:
        return None
    try:
        t = text.strip()
        return Fraction(t[:-1]) / 100 if t.endswith("%") else Fraction(t)
    except (ValueError, ZeroDivisionError):
        return None


def _unit_lines(store: ReadStore, view: UnitsView, day: str, setting: Any,
                options: Mapping[str, dict[str, str]], table_id: str | None) -> list[Line]:
    sums: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0] * 4))
    for u in _ended_near(store, view, day, table_id):
        f = view.floor(u.facts)
        if f is None:
            continue
        d, shift = setting.of(datetime.fromisoformat(f.at))
        if d != day:
            continue
        acc = sums[u.table_id][shift]
        for i, v in enumerate((1, f.handle, f.house_win, f.levied)):
            acc[i] += v
    out: list[Line] = []
    for table in sorted(sums):
        opts = options.get(table, {})
        currency = opts.get("currency", "")
        rate = _rate(opts.get(view.commission_option)) if view.commission_option else Fraction(0)
        edge = ("unknown" if rate is None else "none" if rate == 0
                else f"commission {rate.numerator}/{rate.denominator}")
        reconciled = _day_balanced(view.reconcile(store, table, setting), day)
        whole = [0] * 4
        for shift in sorted(sums[table]):
            acc = sums[table][shift]
            whole = [a + b for a, b in zip(whole, acc, strict=True)]
            out.append(_unit_line(view.game, table, str(shift), acc, rate, edge, "", currency))
        out.append(_unit_line(view.game, table, "day", whole, rate, edge, reconciled, currency))
    return out


def _ended_near(store: ReadStore, view: UnitsView, day: str,
                table_id: str | None) -> list[Unit]:
    """The units that ended from two days before ``day`` to three after (UTC): every gaming
    day ``day`` in any zone lies within (the others' facts are not read)."""
    d = date.fromisoformat(day)
    sql = (f"SELECT unit_id, table_id, position, opened_at, ended_at, steps, facts "
           f"FROM {{s}}{view.unit_table} WHERE ended_at >= ? AND ended_at < ?")
    params: list[Any] = [(d - timedelta(days=2)).isoformat(), (d + timedelta(days=3)).isoformat()]
    if table_id is not None:
        sql += " AND table_id = ?"
        params.append(table_id)
    with store.read() as tx:
        rows = tx.query(sql + " ORDER BY position", params)
    return [Unit(str(r[0]), str(r[1]), int(r[2]), str(r[3]), r[4], int(r[5]), json.loads(r[6]))
            for r in rows]


def _unit_line(game: str, table: str, shift: str, acc: list[int], rate: Fraction | None,
               edge: str, reconciled: str, currency: str) -> Line:
    units, handle, win, levied = acc
    theo = None if rate is None or rate == 0 else rate * levied
    return Line(game, table, shift, units, handle, win, levied, edge, theo, None, win,
                reconciled, currency)


def _day_balanced(answer: Any, day: str) -> str:
    days = answer if isinstance(answer, list) else list(getattr(answer, "days", ()))
    found = [d for d in days if d.gaming_day == day]
    if not found:
        return ""
    return "ok" if all(d.balanced for d in found) else "DIFF"


# --- rendering ----------------------------------------------------------------------------

TEXT_WIDTH = 100


def render_floor(report: FloorReport, fmt: str) -> str:
    if fmt == "json":
        return to_json(report)
    if fmt == "csv":
        return to_csv(report)
    return to_text(report)


def to_csv(report: FloorReport) -> str:
    """The header row (money columns in minor units: ``_minor``; each row's ``currency``),
    then every row: the games' tables and totals, the cage, the totals across games."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for r in report.records():
        writer.writerow(["" if r[c] is None else r[c] for c in COLUMNS])
    return out.getvalue()


def to_json(report: FloorReport) -> str:
    def rows(lines: Iterable[Line | CageLine]) -> list[dict[str, Any]]:
        return [{k: v for k, v in ln.record().items() if v is not None} for ln in lines]

    doc = {
        "title": report.title, "unit": UNIT, "facts": report.facts,
        "sections": [{"game": s.game, "title": s.title, "units": s.unit_name,
                      "rows": rows(s.lines), "totals": rows(s.totals)}
                     for s in report.sections],
        "cage": rows(report.cage),
        "totals": [r for r in report.records() if r["game"] == ALL_GAMES],
    }
    return json.dumps(doc, indent=2, default=str) + "\n"


def _major(amount: Any, currency: str) -> str:
    """Minor units (an int, or a decimal text) in major units, without the code (the section's
    heading names the currency)."""
    if amount is None or amount == "":
        return ""
    from decimal import Decimal

    shown = format_minor(amount if isinstance(amount, int) else Decimal(str(amount)), currency)
    return shown.removesuffix(f" {currency}") if currency else shown


def to_text(report: FloorReport) -> str:
    """A section per game and currency with that game's columns (Trente et Quarante's 95 %
    interval as its half-width around the theoretical win: the CSV and JSON give both ends),
    the totals across games and the cage; at most ``TEXT_WIDTH`` columns (``rich``: two spaces
    between columns, one when two do not fit; a cell too wide for its column then folds onto
    the next line, nothing is cut)."""
    lines = [report.title]
    lines += [f"{k}: {', '.join(v) if isinstance(v, list) else v}"
              for k, v in report.facts.items() if k != "unit"]
    lines.append("amounts: in major units of the currency each section names")
    if not report.sections and not report.cage:
        lines.append("(no table played and no cash moved this gaming day)")
    text = "\n".join(lines) + "\n"
    wide = _tables(report, 1, None)
    if max((len(ln) for ln in wide.splitlines()), default=0) > TEXT_WIDTH:
        wide = _tables(report, 0, TEXT_WIDTH)
    return text + wide


def _tables(report: FloorReport, pad: int, width: int | None) -> str:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = Console(width=width or 2 * TEXT_WIDTH, file=io.StringIO(), color_system=None,
                      force_terminal=False, record=True, highlight=False, emoji=False,
                      markup=False)

    def table(title: str, heads: list[str]) -> Table:
        t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                  padding=(0, 0, 0, pad), show_edge=False, title_style="", header_style="")
        for i, h in enumerate(heads):
            # nothing is ever cut: a cell too wide for its column folds onto the next line
            t.add_column(h, justify="left" if i < 1 else "right", overflow="fold")
        return t

    for s in report.sections:
        for currency in sorted({ln.currency for ln in s.lines}):
            tq = s.game == TRENTE_ET_QUARANTE
            heads = ["table", "shift", s.unit_name, "handle", "house win", "hold %"]
            heads += (["theo win", "± 95%", "flag", "bank"] if tq
                      else ["levied", "edge", "theo win", "reconciled"])
            t = table(f"{s.title} ({currency})", heads)
            rows = [ln for ln in s.lines if ln.currency == currency]
            for i, ln in enumerate(rows):
                first = i == 0 or rows[i - 1].table_id != ln.table_id
                t.add_row(*_cells(ln, tq, ln.table_id if first else ""),
                          end_section=ln.shift == "day")
            for ln in s.totals:
                if ln.currency == currency:
                    t.add_row(*_cells(ln, tq, TOTAL))
            console.print()
            console.print(t)
    t = table("All games", ["currency", "handle", "house win", "hold %", "theo win",
                            "deposits", "withdrawals"])
    cash = {c.currency: c for c in report.cage_totals}
    for ln in report.totals:
        c = cash.get(ln.currency)
        cur = ln.currency
        t.add_row(cur, _major(ln.handle, cur), _major(ln.house_win, cur), ln.hold or "",
                  "none" if ln.theo is None and ln.edge == "none" else
                  _major(None if ln.theo is None else _dec(ln.theo), cur),
                  _major(c.deposits if c else 0, cur), _major(c.withdrawals if c else 0, cur))
    if report.totals:
        console.print()
        console.print(t)
    if report.cage:
        t = table("Cage", ["cage", "deposits", "withdrawals", "net in"])
        for c in report.cage:
            t.add_row(c.cage, format_minor(c.deposits, c.currency),
                      format_minor(c.withdrawals, c.currency),
                      format_minor(c.deposits - c.withdrawals, c.currency))
        console.print()
        console.print(t)
    body = console.export_text()
    return "\n".join(ln.rstrip() for ln in body.splitlines()) + "\n"


def _cells(ln: Line, tq: bool, name: str) -> list[str]:
    cur = ln.currency
    r = ln.record()
    cells = [name, ln.shift, str(ln.units), _major(ln.handle, cur), _major(ln.house_win, cur),
             ln.hold or ""]
    theo = "none" if ln.edge == "none" else _major(r["theoretical_win_minor"], cur)
    if tq:
        bounds = ln.interval()  # shown as its half-width around the theoretical win
        half = "" if bounds is None else _major(_dec((bounds[1] - bounds[0]) / 2), cur)
        return [*cells, theo, half, ln.flag, ln.reconciled]
    return [*cells, _major(ln.levied, cur), ln.edge.removeprefix("commission "), theo,
            ln.reconciled]
