"""docs/sources/ holds the rules, the shuffle and the source documents the docs cite; they are
copies of the project's own (its shared folder), byte for byte as received."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "docs" / "sources"


def test_the_cited_documents_are_in_the_repository() -> None:
    names = {p.relative_to(SOURCES).as_posix() for p in SOURCES.rglob("*") if p.is_file()}
    assert {"RULES.md", "SHUFFLE.md", "README.md", "seeds/README.md"} <= names
    assert len([n for n in names if n.startswith("seeds/") and n.endswith(".txt")]) == 5
