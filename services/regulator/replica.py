"""A read store: a copy of the event store that the readers read instead of the primary (a
streaming standby on PostgreSQL, a copy of the file on SQLite), and how far behind it is.

``measure(read, primary)`` says where the read store's log ends (its last position), where the
primary's does (a few queries on the primary), the events between and how long ago the first of
them was stored, and on a PostgreSQL standby its
own figures: the replay lag (seconds since the last transaction it replayed, while WAL it
received waits to be replayed; 0 when it has replayed all it received) and the WAL bytes the
primary has written beyond what it replayed. It also checks that the read store is a copy of the
primary at all (the event at the last position both hold is the same row), so that a
mistyped URL, another site's store or a standby of another cluster is refused rather than
reported on: ``NotACopy``.

Nothing here writes. A read store proves nothing by itself: what it holds is checked as the
primary's would be (the evidence chain, the notary's signed checkpoints, sabot-verify), and a
copy that is behind only ends earlier (docs/operations.md, "Reads off the primary").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from services.regulator.source import Database, EventTable, RawEvent


class NotACopy(ValueError):
    """The read store's log is not the primary's (another store, or one that forked)."""


@dataclass(frozen=True)
class ReadLag:
    """How far a read store is behind the primary, as measured once."""

    position: int  # the last log position the read store holds (0: none)
    primary: int | None = None  # the primary's last log position (None: not known, ``why``)
    standby: bool = False  # PostgreSQL: the read store is a standby (in recovery)
    replay_seconds: float | None = None  # a standby's replay lag (None: not a standby)
    wal_bytes: int | None = None  # WAL the primary wrote beyond what the standby replayed
    why: str = ""  # why the primary's position is not known
    seconds_behind: float | None = None  # age of the first event it lacks (0: it lacks none)

    @property
    def events_behind(self) -> int | None:
        return None if self.primary is None else max(0, self.primary - self.position)

    def text(self) -> str:
        """One line: ``a standby at log position 412 of the store's 415 (3 events behind);
        replay lag 0.12 s, 1.3 kB of WAL``."""
        kind = "a standby" if self.standby else "a copy"
        if self.primary is None:
            where = f"log position {self.position}; the store's unknown ({self.why})"
        else:
            behind = f"{self.events_behind} events"
            if self.events_behind and self.seconds_behind is not None:
                behind += f", {self.seconds_behind:.2f} s"
            where = f"log position {self.position} of the store's {self.primary} ({behind} behind)"
        out = f"{kind} at {where}"
        if self.replay_seconds is not None:
            out += f"; replay lag {self.replay_seconds:.2f} s"
            if self.wal_bytes is not None:
                out += f", {_size(self.wal_bytes)} of WAL"
        return out

    def as_json(self) -> dict[str, Any]:
        return {"position": self.position, "primary_position": self.primary,
                "events_behind": self.events_behind,
                "seconds_behind": None if self.seconds_behind is None
                else round(self.seconds_behind, 3), "standby": self.standby,
                "replay_lag_seconds": None if self.replay_seconds is None
                else round(self.replay_seconds, 3),
                "wal_bytes_behind": self.wal_bytes, "primary_unknown": self.why or None}


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} kB"
    return f"{n / 1024 / 1024:.1f} MB"


def _lsn(text: Any) -> int | None:
    """A WAL position (``16/B374D848``) as a number of bytes."""
    if not text:
        return None
    high, _, low = str(text).partition("/")
    return (int(high, 16) << 32) + int(low, 16)


def _stored_at(event: RawEvent) -> datetime | None:
    """When the ledger stored ``event`` (its state's ``timestamp``)."""
    try:
        stamp = json.loads(event.state.decode("utf-8")).get("timestamp")
        if isinstance(stamp, dict):  # the transcoder's {"_type_": ..., "_data_": ...}
            stamp = stamp.get("_data_")
        found = datetime.fromisoformat(str(stamp)) if stamp else None
    except (ValueError, TypeError, AttributeError):
        return None
    return found if found is None or found.tzinfo else found.replace(tzinfo=UTC)


def _head(table: EventTable) -> RawEvent | None:
    found = table.read_back(2**62, 1)
    return found[0] if found else None


def _standby(db: Database) -> tuple[bool, float | None, int | None]:
    """A PostgreSQL read store's own figures: in recovery, its replay lag, its replayed WAL
    position."""
    if not db.is_postgres:
        return False, None, None
    recovery, received, replayed, age = db.rows(
        "SELECT pg_is_in_recovery(), pg_last_wal_receive_lsn()::text, "
        "pg_last_wal_replay_lsn()::text, "
        "extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())")[0]
    if not recovery:
        return False, None, None
    if received is not None and received == replayed:
        seconds = 0.0  # it has replayed everything it received
    else:
        seconds = max(0.0, float(age)) if age is not None else 0.0
    return True, seconds, _lsn(replayed)


def _primary_wal(db: Database) -> int | None:
    if not db.is_postgres:
        return None
    found = db.rows("SELECT CASE WHEN pg_is_in_recovery() THEN NULL "
                    "ELSE pg_current_wal_lsn()::text END")[0][0]
    return _lsn(found)


def measure(read: Database, primary: Database | None, why: str = "") -> ReadLag:
    """The read store's lag behind ``primary`` (None: not known, for the reason ``why``);
    ``NotACopy`` when the two logs differ at the last position both hold, or the read store
    holds more than the primary."""
    events = EventTable(read)
    head = _head(events)
    position = head.position if head is not None else 0
    standby, seconds, replayed = _standby(read)
    if primary is None:
        return ReadLag(position, None, standby, seconds, None, why or "no store given")
    theirs = EventTable(primary)
    wal = _primary_wal(primary)  # before the head: a WAL position at least the head's
    primary_head = _head(theirs)
    last = primary_head.position if primary_head is not None else 0
    if position > last:
        raise NotACopy(f"the read store holds the log to position {position}, the store only "
                       f"to {last}: it is not a copy of this store (or the store lost its "
                       "end: docs/operations.md, Backup and restore)")
    if head is not None:
        mine = theirs.at([position]).get(position)
        if mine is None or (mine.originator_id, mine.version, mine.topic, mine.state) != (
                head.originator_id, head.version, head.topic, head.state):
            raise NotACopy(f"the event at log position {position} differs from the store's: "
                           "the read store is not a copy of this store")
    behind = None if wal is None or replayed is None else max(0, wal - replayed)
    age: float | None = 0.0
    if last > position:  # how long ago the first event it lacks was stored (None: unknown)
        first = theirs.read(position, 1)
        at = _stored_at(first[0]) if first else None
        age = None if at is None else max(0.0, (datetime.now(UTC) - at).total_seconds())
    return ReadLag(position, last, standby, seconds, behind if standby else None,
                   seconds_behind=age)


__all__ = ["NotACopy", "ReadLag", "measure"]
