"""Derived state an aggregate may hold beside its events: a game's rule-book state rebuilt from
the aggregate's recorded inputs, as of the aggregate's ``version``. Equal to any other (an
aggregate loaded from its events equals the live one) and never stored (snapshots skip it:
nothing in it is the aggregate's own)."""

from __future__ import annotations

from typing import Any


class Derived:
    """``value`` as of the aggregate's ``version`` (None, -1: not made yet)."""

    __slots__ = ("value", "version")

    def __init__(self) -> None:
        self.value: Any = None
        self.version = -1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Derived)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return "Derived()"
