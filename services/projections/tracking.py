"""Tracking positions: one row per view in ``rm_tracking``, moved in the view's transaction.

A position moves only from the value the projector read (compare and set), so two projectors, or a
projector restarted after a crash, can neither apply an event twice nor skip one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from services.projections.store import Tx

TRACKING_TABLE = "rm_tracking"


class PositionConflict(Exception):
    """Another projector moved the view's position first; reload and carry on."""


@dataclass(frozen=True, slots=True)
class Position:
    view: str
    position: int  # last applied notification id (0: none)
    event_time: str  # ISO time of the last applied event ("" if none)


def create(tx: Tx) -> None:
    """``schema``: the digest of the view's tables and version its rows were built with."""
    tx.execute(
        "CREATE TABLE IF NOT EXISTS {s}rm_tracking (view TEXT PRIMARY KEY, "
        "position BIGINT NOT NULL, event_time TEXT NOT NULL, schema TEXT NOT NULL)"
    )
    if "schema" not in tx.columns("rm_tracking"):  # made by a first version of this module
        tx.execute("ALTER TABLE {s}rm_tracking ADD COLUMN schema TEXT NOT NULL DEFAULT ''")


def ensure(tx: Tx, views: Mapping[str, str]) -> None:
    """A row at position 0 for each view (name -> schema digest) that has none."""
    for view, schema in views.items():
        tx.execute(
            "INSERT INTO {s}rm_tracking (view, position, event_time, schema) "
            "VALUES (?, 0, '', ?) ON CONFLICT (view) DO NOTHING",
            (view, schema),
        )


def schemas(tx: Tx) -> dict[str, str]:
    return {str(r[0]): str(r[1]) for r in tx.query("SELECT view, schema FROM {s}rm_tracking")}


def restart(tx: Tx, view: str, schema: str) -> None:
    """Back to position 0 (the view's rows were just dropped or emptied)."""
    tx.execute(
        "INSERT INTO {s}rm_tracking (view, position, event_time, schema) VALUES (?, 0, '', ?) "
        "ON CONFLICT (view) DO UPDATE SET position = 0, event_time = '', schema = excluded.schema",
        (view, schema),
    )


def read(tx: Tx, views: Iterable[str]) -> dict[str, Position]:
    wanted = list(views)
    rows = tx.query("SELECT view, position, event_time FROM {s}rm_tracking")
    found = {r[0]: Position(r[0], int(r[1]), str(r[2])) for r in rows}
    return {v: found.get(v, Position(v, 0, "")) for v in wanted}


def advance(tx: Tx, view: str, old: int, new: int, event_time: str | None) -> None:
    """Move ``view`` from ``old`` to ``new`` (``event_time`` None: keep the time), or raise
    PositionConflict (the caller rolls back)."""
    row = tx.one(
        "UPDATE {s}rm_tracking SET position = ?, event_time = COALESCE(?, event_time) "
        "WHERE view = ? AND position = ? RETURNING position",
        (new, event_time, view, old),
    )
    if row is None:
        raise PositionConflict(f"view {view}: position is no longer {old}")

