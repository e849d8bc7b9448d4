"""The head office's gaming day: every site's floor report (``services.projections.floor``), per
site and across sites (docs/operations.md, "Many sites").

Each site's part is its own floor report of the day, read from its store's read models with
its own gaming-day hours (a site in another zone keeps its own day): the site's rows are the
total rows of that report (per game and currency, all games per currency with the cage's
cash), exactly as ``sabot store report day`` gives them for that store; then the rows of the
group: per game and currency, and all games per currency, added up across sites as the floor
adds up its tables (units, handle, house win, levied, theoretical win and its variance, the
cage's deposits and withdrawals). Money stays in integer minor units of each row's currency;
currencies are never added together.

A site's store is the site's: its evidence chain's links name the site (``store_site``); the
head office refuses a store that names another site, or none once written (a single site's
store, which belongs to no group yet). It reads and writes nothing else: the read models as the
site's server keeps them (a replica's too), and how far behind the log they are (``lag``).
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from services.ledger.evidence import CHAIN_ID, Link
from services.projections import tracking
from services.projections.floor import (
    ALL_GAMES,
    COLUMNS,
    UNIT,
    CageLine,
    FloorReport,
    Line,
    _major,
    _totals,
    floor_day,
)
from services.projections.reports import TOTAL
from services.projections.store import ReadStore

ALL_SITES = "all"  # the site of the group's rows
HEAD_COLUMNS = ("site", *COLUMNS)


class NotTheSite(ValueError):
    """The store named for a site belongs to another site (or to none)."""


class NoReadModels(ValueError):
    """The site's store holds no read models (its server keeps none)."""


def store_site(app: Any) -> str | None:
    """The site a store's evidence chain names (its last link's; None: none, or no link)."""
    rows = app.recorder.select_events(CHAIN_ID, desc=True, limit=1)
    if not rows:
        return None
    try:
        return Link.parse(rows[0].state).site
    except (ValueError, KeyError, TypeError):
        return None  # a malformed link: the chain's own check names it


def check_site(app: Any, site: str) -> None:
    """``NotTheSite`` unless the store's chain names ``site`` (a store with no link yet, which
    holds nothing, passes)."""
    found = store_site(app)
    if found == site:
        return
    if found is not None:
        raise NotTheSite(f"its store belongs to site {found!r} (its evidence chain's last link "
                         "names it)")
    if app.recorder.select_events(CHAIN_ID, limit=1):
        raise NotTheSite("its store names no site (a single site's store: its server has not "
                         f"written with SABOT_SITE={site} yet)")


def lag(store: ReadStore, app: Any, views: Iterable[Any]) -> tuple[int, int]:
    """(the position the read models have all applied, the log's last position)."""
    head = int(app.recorder.max_notification_id() or 0)
    if not store.table_exists("rm_tracking"):
        return 0, head
    with store.read() as tx:
        found = tracking.read(tx, [v.name for v in views])
    return min((p.position for p in found.values()), default=head), head


@dataclass(frozen=True, slots=True)
class SiteDay:
    """One site's floor report of the day, and how far its read models were behind."""

    site: str
    report: FloorReport
    position: int  # the log position the read models had applied
    head: int  # the site's log's last position

    @property
    def behind(self) -> int:
        return max(0, self.head - self.position)

    def records(self, tables: bool = False) -> list[dict[str, Any]]:
        """The site's rows: the report's totals (``tables``: every row)."""
        rows = self.report.records()
        if not tables:
            rows = [r for r in rows if r["table_id"] == TOTAL]
        return [{"site": self.site, **r} for r in rows]


@dataclass(frozen=True, slots=True)
class HeadOffice:
    day: str
    sites: tuple[SiteDay, ...]
    games: tuple[Line, ...]  # per game and currency, across sites
    totals: tuple[Line, ...]  # all games, per currency, across sites
    cash: tuple[CageLine, ...]  # the cages' cash per currency, across sites

    def group_records(self) -> list[dict[str, Any]]:
        """The group's rows (site ``all``): per game and currency, then all games per
        currency with the cash, as a site's report has them."""
        out = [{"site": ALL_SITES, **ln.record()} for ln in self.games]
        cash = {c.currency: c for c in self.cash}
        for t in self.totals:
            row = {"site": ALL_SITES, **t.record()}
            c = cash.pop(t.currency, None)
            if c is not None:
                row.update(deposits_minor=c.deposits, withdrawals_minor=c.withdrawals)
            out.append(row)
        for c in cash.values():  # a currency with cash but no table
            row = {"site": ALL_SITES, **c.record()}
            row.update(game=ALL_GAMES, table_id=TOTAL)
            out.append(row)
        return out

    def records(self, tables: bool = False) -> list[dict[str, Any]]:
        return [r for s in self.sites for r in s.records(tables)] + self.group_records()


def head_office(day: str, sites: Sequence[SiteDay]) -> HeadOffice:
    """The sites' reports of ``day`` and the group's totals."""
    by_game: dict[str, list[Line]] = defaultdict(list)
    for s in sites:
        for section in s.report.sections:
            by_game[section.game] += section.totals
    games = tuple(t for game, lines in by_game.items() for t in _totals(game, lines))
    totals = _totals(ALL_GAMES, [t for s in sites for t in s.report.totals])
    cash: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for s in sites:
        for c in s.report.cage_totals:
            cash[c.currency][0] += c.deposits
            cash[c.currency][1] += c.withdrawals
    cage = tuple(CageLine(TOTAL, d, w, cur) for cur, (d, w) in sorted(cash.items()))
    return HeadOffice(day, tuple(sites), games, totals, cage)


def site_day(site: str, day: str, app: Any, views: Sequence[Any],
             store: ReadStore | None = None) -> SiteDay:
    """``site``'s floor report of ``day`` from the read models of its store (``app``'s) as
    they are, kept by ``views`` (the read models of the games it plays); ``store``: a
    projector's, caught up first."""
    store = store or ReadStore.of(app)
    if not store.table_exists("rm_tracking"):
        raise NoReadModels("its store holds no read models (its server keeps them with "
                           "SABOT_PROJECTIONS=on; or give --catch-up)")
    views = list(views)
    report = floor_day(store, day, views)
    position, head = lag(store, app, views)
    return SiteDay(site, report, position, head)


# --- rendering ----------------------------------------------------------------------------


def render(report: HeadOffice, fmt: str, tables: bool = False) -> str:
    if fmt == "json":
        return to_json(report, tables)
    if fmt == "csv":
        return to_csv(report, tables)
    return to_text(report)


def to_csv(report: HeadOffice, tables: bool = False) -> str:
    """The header row (``site``, then the floor report's columns), each site's rows, then the
    group's (site ``all``)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEAD_COLUMNS)
    for r in report.records(tables):
        writer.writerow(["" if r[c] is None else r[c] for c in HEAD_COLUMNS])
    return out.getvalue()


def _facts(s: SiteDay) -> dict[str, Any]:
    return {**{k: v for k, v in s.report.facts.items() if k != "unit"},
            "read_models_position": s.position, "log_position": s.head,
            "events_behind": s.behind}


def to_json(report: HeadOffice, tables: bool = False) -> str:
    def clean(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in r.items() if v is not None} for r in rows]

    doc = {
        "title": f"Gaming day {report.day}: the head office", "gaming_day": report.day,
        "unit": UNIT,
        "sites": [{"site": s.site, "facts": _facts(s), "rows": clean(s.records(tables))}
                  for s in report.sites],
        "totals": clean(report.group_records()),
    }
    return json.dumps(doc, indent=2, default=str) + "\n"


def to_text(report: HeadOffice) -> str:
    """A line per site (its hours, tables, flags, how far behind its read models are), then a
    table per currency: each site's games and all games, then the group's."""
    lines = [f"Gaming day {report.day}: the head office, {len(report.sites)} site(s)"]
    for s in report.sites:
        f = s.report.facts
        behind = (f"read models {s.behind} events behind the log" if s.behind
                  else "read models up to date")
        lines.append(f"site {s.site}: {f.get('hours')}; {f.get('tables')} table(s); "
                     f"{f.get('flags')} flag(s), {f.get('not_reconciled')} not reconciled; "
                     f"{behind} (position {s.head})")
    lines.append("amounts: in major units of the currency each table names")
    rows = report.records()
    if not [r for r in rows if r["currency"]]:
        lines.append("(no table played and no cash moved this gaming day)")
    return "\n".join(lines) + "\n" + _tables(rows)


def _tables(rows: list[dict[str, Any]]) -> str:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = Console(width=160, file=io.StringIO(), color_system=None, force_terminal=False,
                      record=True, highlight=False, emoji=False, markup=False)
    heads = ["site", "game", "units", "handle", "house win", "hold %", "theo win", "deposits",
             "withdrawals"]
    for currency in sorted({r["currency"] for r in rows if r["currency"]}):
        t = Table(title=f"Sites and group ({currency})", title_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, title_style="",
                  header_style="")
        for i, h in enumerate(heads):
            t.add_column(h, justify="left" if i < 2 else "right", overflow="fold")
        mine = [r for r in rows if r["currency"] == currency]
        for i, r in enumerate(mine):
            last = i + 1 == len(mine) or mine[i + 1]["site"] != r["site"]
            t.add_row(r["site"], r["game"], "" if r["units"] is None else str(r["units"]),
                      _major(r["handle_minor"], currency),
                      _major(r["house_win_minor"], currency), r["hold_pct"] or "",
                      "none" if r["edge"] == "none" else _major(r["theoretical_win_minor"],
                                                                currency),
                      _major(r["deposits_minor"], currency),
                      _major(r["withdrawals_minor"], currency), end_section=last)
        console.print()
        console.print(t)
    body = console.export_text()
    return "\n".join(ln.rstrip() for ln in body.splitlines()) + "\n"


__all__ = ["ALL_SITES", "HEAD_COLUMNS", "HeadOffice", "NoReadModels", "NotTheSite", "SiteDay",
           "check_site", "head_office", "lag", "render", "site_day", "store_site"]
