"""Tracking positions: one row per view in ``rm_tracking``, moved in the view's transaction.

A position moves only from the value the projector read (compare and set), so two projectors, or a
projector restarted after a crash, can neither apply an event twice nor skip one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from domain.errors import FailedPrecondition
from services.projections.gamingday import DAY_SETTING, DEFAULT, SHIFTS_SETTING, in_schema
from services.projections.store import Tx

TRACKING_TABLE = "rm_tracking"


class PositionConflict(Exception):
    """Another projector moved the view's position first; reload and carry on."""


class SchemaChanged(FailedPrecondition):
    """The view's rows were rebuilt by a process with another schema digest (another version of
    the view's code, or another gaming-day setting) since this one read its position: this one
    must not write into them."""

    def __init__(self, view: str, stored: str, mine: str) -> None:
        theirs, ours = in_schema(stored), in_schema(mine)
        setting = ""
        if theirs != ours:
            a = theirs or DEFAULT
            b = ours or DEFAULT
            setting = (f" under gaming day {a.text} with {a.shifts} shifts (this process: "
                       f"{b.text} with {b.shifts} shifts: {DAY_SETTING}, "
                       f"{SHIFTS_SETTING})")
        super().__init__(
            "view", "READ_MODEL_REBUILT",
            f"the read model {view} was rebuilt by another process{setting} or by another "
            "version of the code; restart this process with the same settings as the others, "
            "or run `sabot store projections rebuild` with the settings wanted")


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


def lock(tx: Tx) -> None:
    """PostgreSQL: hold ``rm_tracking`` against every projector's batch (and every other
    set-up) until the transaction ends, before any view's table is touched. A batch moves its
    tracking rows first, then writes the views' tables; a set-up that locked a view's table
    first (``CREATE INDEX IF NOT EXISTS``) and then wanted a tracking row deadlocked with it
    (issue 20: a standby starting beside a busy writer). SQLite: the set-up's ``BEGIN
    IMMEDIATE`` holds the whole file already."""
    if tx.dialect == "postgres":
        tx.execute("LOCK TABLE {s}rm_tracking IN SHARE ROW EXCLUSIVE MODE")


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


def advance(tx: Tx, view: str, old: int, new: int, event_time: str | None,
            schema: str | None = None) -> None:
    """Move ``view`` from ``old`` to ``new`` (``event_time`` None: keep the time), or raise
    PositionConflict (the caller rolls back). With ``schema`` (the digest the caller's view
    code has), raise SchemaChanged if the row holds another one (rebuilt by another process)."""
    if schema is None:
        row = tx.one(
            "UPDATE {s}rm_tracking SET position = ?, event_time = COALESCE(?, event_time) "
            "WHERE view = ? AND position = ? RETURNING position",
            (new, event_time, view, old),
        )
    else:
        row = tx.one(
            "UPDATE {s}rm_tracking SET position = ?, event_time = COALESCE(?, event_time) "
            "WHERE view = ? AND position = ? AND schema = ? RETURNING position",
            (new, event_time, view, old, schema),
        )
    if row is None:
        if schema is not None:
            found = tx.one("SELECT schema FROM {s}rm_tracking WHERE view = ?", (view,))
            if found is not None and str(found[0]) != schema:
                raise SchemaChanged(view, str(found[0]), schema)
        raise PositionConflict(f"view {view}: position is no longer {old}")

