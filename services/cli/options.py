"""What the rule-book commands of every game read alike: ``--option K=V`` (repeatable), whole
numbers (``--monte-carlo 10_000``) and the Monte-Carlo ``--seed HEX``."""

from __future__ import annotations

from collections.abc import Sequence

from domain.errors import InvalidArgument
from services.cli import CliError


def overrides(items: Sequence[str]) -> dict[str, str]:
    """``--option K=V`` items as the rule book's text overrides (keys and values stripped)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"--option: expected K=V, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def whole(text: str, field: str) -> int:
    """A whole number, ``_`` allowed between digits; InvalidArgument naming ``field``."""
    try:
        return int(str(text).replace("_", ""))
    except ValueError:
        raise InvalidArgument(field, "NOT_A_NUMBER", f"not a whole number: {text!r}") from None


def parse_seed(text: str) -> int:
    """A Monte-Carlo seed: 1 to 64 hexadecimal digits, ``0x`` allowed."""
    word = text.strip().lower().removeprefix("0x")
    if not 1 <= len(word) <= 64 or any(ch not in "0123456789abcdef" for ch in word):
        raise InvalidArgument("--seed", "BAD_SEED", f"must be 1 to 64 hexadecimal digits: {text!r}")
    return int(word, 16)
