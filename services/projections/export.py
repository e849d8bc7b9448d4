"""Reports as tables of plain values, exported as CSV or JSON, or shown as text.

Money is in integer minor units in the rows, the CSV and the JSON; the text shows it in major
units with its currency (``500.00 EUR``), taken from the row's ``currency`` column or the
report's ``currency`` fact. The CSV is the header row and the rows alone (a spreadsheet reads
it as it is); the facts and the totals are in the JSON and the text."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from domain.currency import format_minor


@dataclass(frozen=True, slots=True)
class Report:
    """A titled table: column names, rows of text/integers/None, and header facts; ``money``
    names the columns and facts in minor units; ``totals``: rows of the same columns that add
    the others up (a grand total)."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    facts: dict[str, Any] = field(default_factory=dict)
    money: frozenset[str] = frozenset()
    totals: tuple[tuple[Any, ...], ...] = ()

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, r, strict=True)) for r in self.rows]

    def total_records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, r, strict=True)) for r in self.totals]


def to_json(report: Report) -> str:
    doc: dict[str, Any] = {"title": report.title, "facts": report.facts,
                           "rows": report.records()}
    if report.totals:
        doc["totals"] = report.total_records()
    return json.dumps(doc, indent=2, sort_keys=False, default=str) + "\n"


def to_csv(report: Report) -> str:
    """The header row, then the rows (no comment lines: the facts are in the JSON)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(report.columns)
    for row in report.rows:
        writer.writerow(["" if v is None else v for v in row])
    return out.getvalue()


def to_text(report: Report) -> str:
    """Aligned columns for a terminal, money in major units with its currency; the totals
    under a rule of their own."""
    currency = str(report.facts.get("currency", ""))
    body = [_shown(report, r, currency) for r in report.rows]
    totals = [_shown(report, r, currency) for r in report.totals]
    cells = [list(report.columns), *body, *totals]
    widths = [max(len(row[i]) for row in cells) for i in range(len(report.columns))]
    rule = "  ".join("-" * w for w in widths)
    lines = [report.title]
    lines += [f"{k}: {_money(v, currency) if k in report.money else v}"
              for k, v in report.facts.items()]
    for i, row in enumerate(cells):
        if totals and i == len(body) + 1:
            lines.append(rule)
        pairs = zip(row, widths, strict=True)
        lines.append("  ".join(c.rjust(w) if _num(c) else c.ljust(w) for c, w in pairs))
        if i == 0:
            lines.append(rule)
    return "\n".join(lines) + "\n"


def _shown(report: Report, row: tuple[Any, ...], currency: str) -> list[str]:
    if "currency" in report.columns:
        currency = str(row[report.columns.index("currency")] or currency)
    return ["" if v is None else _money(v, currency) if c in report.money else str(v)
            for c, v in zip(report.columns, row, strict=True)]


def _money(value: Any, currency: str) -> str:
    """Minor units (an int, or a decimal text such as a theoretical win) in major units."""
    if value is None or value == "":
        return ""
    try:
        amount = value if isinstance(value, int) else Decimal(str(value))
    except InvalidOperation:
        return str(value)
    return format_minor(amount, currency)


def _num(text: str) -> bool:
    head = text.split(" ", 1)[0]  # "500.00 EUR" aligns as a number
    return head.lstrip("-").replace(".", "", 1).isdigit()


def render(report: Report, fmt: str) -> str:
    if fmt == "json":
        return to_json(report)
    if fmt == "csv":
        return to_csv(report)
    return to_text(report)


def rows_of(items: Sequence[Sequence[Any]]) -> tuple[tuple[Any, ...], ...]:
    return tuple(tuple(r) for r in items)
