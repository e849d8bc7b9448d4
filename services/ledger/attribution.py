"""Who caused each stored event: the actor of the command whose ``Request.Recorded`` lists it.

Every command is saved in one transaction: the events it caused, then (at the end of the
batch's save) one ``Request.Recorded`` per command of the batch, whose ``effects`` name those
events (``[originator_id, version]``) and whose ``actor`` says who ran it. A transaction's events
take consecutive log positions, its requests last; so the requests of the transaction holding
the event at position ``p`` are the first run of consecutive ``Request.Recorded`` positions after
``p``. ``Attributor`` reads that run (one query per transaction, by topic) and remembers what it
learnt (stored events never change). A request stored before actors were (version 1) names no
effects: its events are attributed to no one (None). The evidence chain's link that closes each
transaction (``Chain.Linked``, after its requests) is the ledger's own: ``SYSTEM``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from typing import Any
from uuid import UUID

from services.ledger.actor import SYSTEM, UNRECORDED
from services.ledger.evidence import LINKED_TOPIC
from services.ledger.request import Request

REQUEST_RECORDED = Request.Recorded.TOPIC
BLOCK = 257  # a batch saves at most 256 commands (``Writer.max_batch``)
REMEMBERED = 200_000
Key = tuple[str, int]  # (originator id, version)


def request_actor(state: dict[str, Any]) -> dict[str, Any]:
    """The actor a ``Request.Recorded`` state records (version 1: ``UNRECORDED``)."""
    actor = state.get("actor")
    return dict(actor) if isinstance(actor, dict) else UNRECORDED.to_dict()


class Attributor:
    """Finds the actor of stored events, on one application's recorder (thread-safe)."""

    def __init__(self, recorder: Any) -> None:
        self.recorder = recorder
        self._known: dict[Key, dict[str, Any] | None] = {}
        self._lock = threading.Lock()

    def actors(self, events: Iterable[tuple[int, Any, int, str, dict[str, Any] | None]]
               ) -> dict[Key, dict[str, Any] | None]:
        """The actor of each event ``(position, originator_id, version, topic, state)`` (state:
        needed only for the requests among them, None otherwise), keyed by (id text, version).
        Requests among the events attribute their effects without a query."""
        todo: list[tuple[int, Key]] = []
        found: dict[Key, dict[str, Any] | None] = {}
        with self._lock:
            known = self._known
            for position, oid, version, topic, state in events:
                key = (str(oid), version)
                if topic == LINKED_TOPIC:  # the writer's evidence, of no command
                    found[key] = SYSTEM.to_dict()
                    continue
                if topic == REQUEST_RECORDED and state is not None:
                    actor = request_actor(state)
                    found[key] = actor
                    for effect in state.get("effects") or ():
                        found[(str(effect[0]), int(effect[1]))] = actor
                    continue
                if key in known:
                    found.setdefault(key, known[key])
                else:
                    todo.append((position, key))
        todo = sorted(t for t in todo if t[1] not in found)
        for position, key in todo:
            if key in found:
                continue
            for effect_key, actor in self._block_after(position).items():
                found.setdefault(effect_key, actor)
            found.setdefault(key, None)
        with self._lock:
            if len(self._known) + len(found) > REMEMBERED:
                self._known.clear()
            self._known.update(found)
        return found

    def _block_after(self, position: int) -> dict[Key, dict[str, Any]]:
        """The effects of the requests saved with the event at ``position`` (see the module)."""
        out: dict[Key, dict[str, Any]] = {}
        start, last = position, None
        while True:
            notes = self.recorder.select_notifications(
                start, BLOCK, topics=(REQUEST_RECORDED,), inclusive_of_start=False)
            for n in notes:
                if last is not None and n.id != last + 1:
                    return out
                last = n.id
                state = json.loads(n.state)
                actor = request_actor(state)
                out[(str(n.originator_id), n.originator_version)] = actor
                for effect in state.get("effects") or ():
                    out[(str(effect[0]), int(effect[1]))] = actor
            if len(notes) < BLOCK or last is None:
                return out
            start = last

    def positions(self, originator_id: UUID, versions: Sequence[int] | None = None
                  ) -> dict[int, int]:
        """The log positions of an aggregate's events: version -> position."""
        return event_positions(self.recorder, originator_id, versions)


def event_positions(recorder: Any, originator_id: UUID, versions: Sequence[int] | None = None
                    ) -> dict[int, int]:
    """version -> log position of an aggregate's stored events (all, or ``versions``' range),
    read from the recorder's own table (SQLite: ``rowid``; PostgreSQL: ``notification_id``)."""
    lo, hi = (min(versions), max(versions)) if versions else (None, None)
    table = recorder.events_table_name
    datastore = recorder.datastore
    if hasattr(datastore, "schema"):  # PostgreSQL
        from psycopg.sql import SQL, Identifier

        sql = SQL("SELECT originator_version, notification_id FROM {}.{} "
                  "WHERE originator_id = %s").format(Identifier(datastore.schema),
                                                    Identifier(table))
        params: list[Any] = [originator_id]
        if lo is not None:
            sql += SQL(" AND originator_version BETWEEN %s AND %s")
            params += [lo, hi]
        with datastore.get_connection() as conn, conn.cursor() as curs:
            curs.execute(sql, params)
            rows = curs.fetchall()
        return {int(r["originator_version"]): int(r["notification_id"]) for r in rows}
    text = (f"SELECT originator_version, rowid FROM {table} "
            "WHERE originator_id = ?")
    args: list[Any] = [originator_id.hex]
    if lo is not None:
        text += " AND originator_version BETWEEN ? AND ?"
        args += [lo, hi]
    with datastore.transaction(commit=False) as c:
        c.execute(text, args)
        return {int(r[0]): int(r[1]) for r in c.fetchall()}
