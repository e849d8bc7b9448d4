"""The settings table holds every ``SABOT_*`` variable the code reads, once, and the fields of
``Settings`` are its rows."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

from services.settings import NOT_SETTINGS, SETTINGS, Settings, markdown_table

ROOT = Path(__file__).resolve().parents[2]
VARIABLE = re.compile(r"\bSABOT_[A-Z0-9_]*[A-Z0-9]\b")


def _named_in_code() -> set[str]:
    found: set[str] = set()
    for folder in ("services", "domain", "ops", "bench"):
        for path in (ROOT / folder).rglob("*.py"):
            if "gen" in path.relative_to(ROOT).parts:
                continue
            found.update(VARIABLE.findall(path.read_text(encoding="utf-8")))
    found.update(VARIABLE.findall((ROOT / "Makefile").read_text(encoding="utf-8")))
    return found


def test_every_variable_the_code_names_is_in_the_table() -> None:
    known = {v for s in SETTINGS for v in (s.variable, *s.aliases) if v}
    missing = {v for v in _named_in_code() - known
               if not any(v.startswith(n) for n in NOT_SETTINGS)}
    assert not missing, f"settings not in services/settings.py:SETTINGS: {sorted(missing)}"


def test_the_fields_are_the_rows() -> None:
    rows = {s.name for s in SETTINGS} - {"shifts"}  # shifts and the day make one GamingDay
    assert {f.name for f in fields(Settings)} - {"sources"} == rows


def test_the_markdown_table_has_a_row_per_setting() -> None:
    table = markdown_table().splitlines()
    assert len(table) == 2 + len(SETTINGS)
    for s, line in zip(SETTINGS, table[2:], strict=True):
        assert line.startswith(f"| `{s.variable}`" if s.variable else "| — (a flag only)")
        assert line.count(" | ") == 4, line  # five cells: no | left unescaped
