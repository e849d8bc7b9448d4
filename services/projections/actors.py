"""The actor of a read model's rows: who ran the command behind the event a row comes from.

A command's ``Request.Recorded`` is saved in its transaction after the events it caused, and
names them (``effects``) and its actor. A transaction's events take consecutive positions, its
requests last; so a view sees a row's event first, and its actor in the next run of consecutive
``Request.Recorded`` positions, usually in the same batch.

A row holds its actor as a number (``actor_id``: the first 63 bits of the SHA-256 of the actor's
canonical JSON), the view's actor table (``ActorColumn.names``) the JSON once: a row stays 8
bytes longer, not a hundred. ``ActorColumn`` (one per view instance) keeps the rows written
without their actor (their request came in a later batch) by primary key until that run of
requests has passed; rows an earlier process left without one are found by a partial index
(``actor IS NULL``), for the first run of requests this instance sees only."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

from services.projections.store import Tx

try:
    import orjson

    def actor_text(actor: Any) -> str | None:
        """An actor as the views keep it: canonical JSON (None: not recorded)."""
        if not isinstance(actor, dict):
            return None
        return orjson.dumps(actor, option=orjson.OPT_SORT_KEYS).decode()

except ImportError:  # pragma: no cover - orjson is a dependency
    import json

    def actor_text(actor: Any) -> str | None:
        if not isinstance(actor, dict):
            return None
        return json.dumps(actor, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# The fields of a ``Request.Recorded`` that an actor column reads (a view's ``reads``).
REQUEST_FIELDS = frozenset({"actor", "effects"})
UNRECORDED = {"principal": "unrecorded", "role": "unrecorded", "peer": ""}
MAX_WAITING = 100_000  # rows kept waiting for their request, at most
Key = tuple[str, int]  # (originator id, version) of a row's event


def actor_id(text: str) -> int:
    """The number a row holds for an actor (the same on every store and every rebuild)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


class ActorColumn:
    """The ``actor`` column of ``table`` (index ``index`` in a row; primary key ``key``, made
    by ``pk(row)``) in one view instance, across its batches; ``names`` is the view's table
    of actors (``actor_id``, ``actor``). ``unattributed(tx)`` gives the rows an earlier process
    left without an actor, each as (key of its event, primary key)."""

    def __init__(self, table: str, key: Sequence[str], index: int,
                 pk: Callable[[list[Any]], tuple[Any, ...]], names: str,
                 unattributed: Callable[[Tx], list[tuple[Key, tuple[Any, ...]]]]) -> None:
        self.table = table
        self.key = tuple(key)
        self.index = index
        self.pk = pk
        self.names = names
        self.unattributed = unattributed
        self.ids: dict[str, int] = {}  # actor text -> its id (a cache of ``actor_id``)
        self.waiting: dict[Key, tuple[tuple[Any, ...], int]] = {}  # -> (pk, position)
        self.run: tuple[int, int] | None = None  # the current run of requests: first, last
        self.first_run = True  # no run of requests has ended since this instance started

    def batch(self) -> Batch:
        return Batch(self)

    def _run_ended(self) -> None:
        """The run of requests is over: rows from before it will get no actor any more."""
        assert self.run is not None
        start = self.run[0]
        if self.waiting:
            self.waiting = {k: v for k, v in self.waiting.items() if v[1] > start}
        self.run = None
        self.first_run = False


class Batch:
    """One batch of a view: its new rows, and the actors found for rows of earlier batches."""

    def __init__(self, column: ActorColumn) -> None:
        self.column = column
        self.rows: dict[Key, tuple[list[Any], int]] = {}  # event -> (row, position)
        self.by_key: list[tuple[Any, ...]] = []  # (actor id, *pk) to update
        self.earlier: dict[Key, int] = {}  # effects perhaps of an earlier process's rows
        self.names: dict[int, str] = {}  # the batch's actors: id -> text (stored with it)

    def event(self, position: int) -> None:
        """A visible event that is not a request: it ends a run of requests."""
        if self.column.run is not None:
            self.column._run_ended()

    def add(self, oid: str, version: int, row: list[Any], position: int) -> None:
        """A new row, from the event ``(oid, version)`` at ``position``."""
        self.rows[(oid, version)] = (row, position)

    def _id(self, actor: Any) -> int:
        text = actor_text(actor if isinstance(actor, dict) else UNRECORDED)
        assert text is not None
        ids = self.column.ids
        found = ids.get(text)
        if found is None:
            if len(ids) > 10_000:
                ids.clear()
            found = ids[text] = actor_id(text)
        self.names[found] = text
        return found

    def request(self, event: Any, position: int) -> None:
        """A ``Request.Recorded`` at ``position``: its actor on the rows of its effects."""
        col = self.column
        if col.run is not None and position != col.run[1] + 1:
            col._run_ended()
        col.run = (position, position) if col.run is None else (col.run[0], position)
        ident = self._id(getattr(event, "actor", None))
        rows, waiting, index = self.rows, col.waiting, col.index
        for oid, version in getattr(event, "effects", None) or ():
            key = (oid, version)
            found = rows.get(key)
            if found is not None:
                found[0][index] = ident
                continue
            if not waiting and not col.first_run:
                continue
            held = waiting.pop(key, None)
            if held is not None:
                self.by_key.append((ident, *held[0]))
            elif col.first_run:  # perhaps a row an earlier process wrote
                self.earlier[key] = ident

    def finish(self, tx: Tx) -> None:
        """Store the new actors' names; update the earlier rows whose actor came in this
        batch; keep this batch's rows that still wait for theirs."""
        col = self.column
        if self.names:
            tx.executemany(f"INSERT INTO {{s}}{col.names} (actor_id, actor) VALUES (?, ?) "
                           "ON CONFLICT (actor_id) DO NOTHING", list(self.names.items()))
        if self.earlier:
            for key, pk in col.unattributed(tx):
                ident = self.earlier.get(key)
                if ident is not None:
                    self.by_key.append((ident, *pk))
        where = " AND ".join(f"{k} = ?" for k in col.key)
        tx.executemany(f"UPDATE {{s}}{col.table} SET actor = ? WHERE {where}", self.by_key)
        index = col.index
        for key, (row, position) in self.rows.items():
            if row[index] is None:
                col.waiting[key] = (col.pk(row), position)
        if len(col.waiting) > MAX_WAITING:  # requests that name no effects (version 1)
            col.waiting = dict(list(col.waiting.items())[-MAX_WAITING // 2:])


def unattributed_index(table: str, column: str) -> str:
    """The partial index of a table's rows without an actor (few: they wait for a request)."""
    return (f"CREATE INDEX IF NOT EXISTS {table}_unattributed ON {{s}}{table} ({column}) "
            "WHERE actor IS NULL")
