"""The actor of a read model's rows: who ran the command behind the event a row comes from.

A command's ``Request.Recorded`` is saved in its transaction after the events it caused, and
names them (``effects``) and its actor. A transaction's events take consecutive positions, its
requests last; so a view sees a row's event first, and its actor in the next run of consecutive
``Request.Recorded`` positions, usually in the same batch. ``ActorColumn`` (one per view
instance) keeps the rows written without their actor (their request came in a later batch) by
primary key until that run has passed; the rows an earlier process wrote are found by their
``event`` column (``originator id/version``), for the first run of requests this instance sees
only (one scan of the table at a start, never per batch)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from services.projections.store import Tx

try:
    import orjson

    def actor_text(actor: Any) -> str | None:
        """An actor as the views store it: canonical JSON (None: not recorded)."""
        if not isinstance(actor, dict):
            return None
        return orjson.dumps(actor, option=orjson.OPT_SORT_KEYS).decode()

except ImportError:  # pragma: no cover - orjson is a dependency
    import json

    def actor_text(actor: Any) -> str | None:
        if not isinstance(actor, dict):
            return None
        return json.dumps(actor, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


UNRECORDED = actor_text({"principal": "unrecorded", "role": "unrecorded", "peer": ""})
MAX_WAITING = 100_000  # rows kept waiting for their request, at most


def event_key(oid: str, version: int) -> str:
    """The ``event`` column: ``originator id/version``."""
    return f"{oid}/{version}"


class ActorColumn:
    """The ``actor`` column (``index`` in a row, ``table``'s primary key ``key`` made by
    ``pk(row)``) of one view instance, across its batches."""

    def __init__(self, table: str, key: Sequence[str], index: int,
                 pk: Callable[[list[Any]], tuple[Any, ...]]) -> None:
        self.table = table
        self.key = tuple(key)
        self.index = index
        self.pk = pk
        self.waiting: dict[tuple[str, int], tuple[tuple[Any, ...], int]] = {}  # -> (pk, pos)
        self.run: tuple[int, int] | None = None  # the current run of requests: first, last
        self.first_run = True  # no run of requests has ended since this instance started

    def batch(self) -> Batch:
        return Batch(self)

    def _run_ended(self) -> None:
        """The run of requests is over: rows from before it will get no actor any more."""
        assert self.run is not None
        start = self.run[0]
        self.waiting = {k: v for k, v in self.waiting.items() if v[1] > start}
        self.run = None
        self.first_run = False


class Batch:
    """One batch of a view: its new rows, and the actors found for rows of earlier batches."""

    def __init__(self, column: ActorColumn) -> None:
        self.column = column
        self.rows: dict[tuple[str, int], tuple[list[Any], int]] = {}  # (id, version) -> row
        self.by_key: list[tuple[Any, ...]] = []  # (actor, *pk) to update
        self.by_event: dict[str | None, list[str]] = {}  # actor -> event keys to update

    def event(self, position: int) -> None:
        """A visible event that is not a request: it ends a run of requests."""
        if self.column.run is not None:
            self.column._run_ended()

    def add(self, oid: str, version: int, row: list[Any], position: int) -> str:
        """A new row (its event key, for the ``event`` column)."""
        self.rows[(oid, version)] = (row, position)
        return event_key(oid, version)

    def request(self, event: Any, position: int) -> None:
        """A ``Request.Recorded`` at ``position``: its actor on the rows of its effects."""
        col = self.column
        if col.run is not None and position != col.run[1] + 1:
            col._run_ended()
        col.run = (position, position) if col.run is None else (col.run[0], position)
        actor = getattr(event, "actor", None)
        text = actor_text(actor) if actor is not None else UNRECORDED
        rows, waiting, index = self.rows, col.waiting, col.index
        for oid, version in getattr(event, "effects", None) or ():
            key = (oid, version)
            found = rows.get(key)
            if found is not None:
                found[0][index] = text
                continue
            if not waiting and not col.first_run:
                continue
            held = waiting.pop(key, None)
            if held is not None:
                self.by_key.append((text, *held[0]))
            elif col.first_run:  # perhaps a row an earlier process wrote
                self.by_event.setdefault(text, []).append(event_key(oid, version))

    def finish(self, tx: Tx) -> None:
        """Update the earlier rows whose actor came in this batch; keep this batch's rows that
        still wait for theirs."""
        col = self.column
        where = " AND ".join(f"{k} = ?" for k in col.key)
        tx.executemany(f"UPDATE {{s}}{col.table} SET actor = ? WHERE {where}", self.by_key)
        for text, keys in self.by_event.items():
            for i in range(0, len(keys), 500):
                chunk = keys[i:i + 500]
                tx.execute(f"UPDATE {{s}}{col.table} SET actor = ? WHERE actor IS NULL AND "
                           f"event IN ({', '.join('?' * len(chunk))})", (text, *chunk))
        index = col.index
        for key, (row, position) in self.rows.items():
            if row[index] is None:
                col.waiting[key] = (col.pk(row), position)
        if len(col.waiting) > MAX_WAITING:  # requests that name no effects (version 1)
            col.waiting = dict(list(col.waiting.items())[-MAX_WAITING // 2:])
