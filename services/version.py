"""Sabot's version, as the installed package states it (pyproject.toml ``version``): shown by
``sabot --version``, in ``/health`` and in the server's start log line."""

from __future__ import annotations

from functools import cache
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _installed


@cache
def version() -> str:
    """The installed ``sabot`` package's version (``0+unknown`` when run from a tree that was
    never installed)."""
    try:
        return _installed("sabot")
    except PackageNotFoundError:
        return "0+unknown"
