"""Reports as tables of plain values, exported as CSV or JSON."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Report:
    """A titled table: column names, rows of text/integers/None, and header facts."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    facts: dict[str, Any] = field(default_factory=dict)

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, r, strict=True)) for r in self.rows]


def to_json(report: Report) -> str:
    doc = {"title": report.title, "facts": report.facts, "rows": report.records()}
    return json.dumps(doc, indent=2, sort_keys=False, default=str) + "\n"


def to_csv(report: Report) -> str:
    """The rows under a header line; facts first as ``# key: value`` comment lines."""
    out = io.StringIO()
    for key, value in report.facts.items():
        out.write(f"# {key}: {value}\n")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(report.columns)
    for row in report.rows:
        writer.writerow(["" if v is None else v for v in row])
    return out.getvalue()


def to_text(report: Report) -> str:
    """Aligned columns for a terminal."""
    cells = [list(report.columns)] + [["" if v is None else str(v) for v in r] for r in report.rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(report.columns))]
    lines = [report.title]
    lines += [f"{k}: {v}" for k, v in report.facts.items()]
    for i, row in enumerate(cells):
        pairs = zip(row, widths, strict=True)
        lines.append("  ".join(c.rjust(w) if _num(c) else c.ljust(w) for c, w in pairs))
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"


def _num(text: str) -> bool:
    return text.lstrip("-").replace(".", "", 1).isdigit()


def render(report: Report, fmt: str) -> str:
    if fmt == "json":
        return to_json(report)
    if fmt == "csv":
        return to_csv(report)
    return to_text(report)


def rows_of(items: Sequence[Sequence[Any]]) -> tuple[tuple[Any, ...], ...]:
    return tuple(tuple(r) for r in items)
