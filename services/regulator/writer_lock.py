"""Only one notary may write a store: the writer's lock on the notary's tables.

PostgreSQL: a session-level advisory lock (``pg_try_advisory_lock``) on a key derived from the
tables' name and schema, taken on the notary's own connection, so that it goes when the session
ends (a clean stop, a killed process, a lost connection). SQLite: an exclusive ``flock`` on a lock
file next to the database (``PATH.notary-lock``), released when its descriptor closes (a clean
stop or a killed process alike). Neither ever blocks: ``try_acquire`` answers at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from urllib.parse import parse_qs, urlparse

from services.regulator.source import Database

LOCK_NAME = "sabot_notary:regulator_leaves"  # the PostgreSQL key: hashtext of it, of the schema


class NotaryBusy(RuntimeError):
    """Another notary holds the store: this one must not write its tables."""

    def __init__(self, where: str) -> None:
        super().__init__(
            f"another notary is writing {where} (a server with a checkpoint key, or "
            "`sabot store checkpoint --follow`): only one notary may write a store"
        )
        self.where = where


class WriterLock:
    """The store's notary lock, held through ``db`` (PostgreSQL) or a lock file (SQLite)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._fd: int | None = None
        self._held = False
        if db.is_postgres:
            query = parse_qs(urlparse(db.url).query)
            self.schema = query.get("schema", ["public"])[0]
            self.where = f"the tables in schema {self.schema!r}"
            self.path: str | None = None
        else:
            self.schema = ""
            memory = db.path == ":memory:" or db.path.startswith("file::memory:")
            self.path = None if memory else db.path + ".notary-lock"
            self.where = f"the store {db.path!r}"

    @property
    def held(self) -> bool:
        return self._held

    def try_acquire(self) -> bool:
        """Take the lock if it is free (True), or say it is not (False); True if already held."""
        if self._held:
            return True
        if self.db.is_postgres:
            got = self.db.rows(
                "SELECT pg_try_advisory_lock(hashtext(?), hashtext(?))", (LOCK_NAME, self.schema)
            )[0][0]
            self._held = bool(got)
        elif self.path is None:  # a private in-memory database: no other writer can see it
            self._held = True
        else:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return False
            except BaseException:
                os.close(fd)
                raise
            self._fd, self._held = fd, True
        return self._held

    def release(self) -> None:
        """Let the lock go (a lost PostgreSQL session has let it go already)."""
        if not self._held:
            return
        self._held = False
        if self.db.is_postgres:
            with contextlib.suppress(Exception):  # a lost session has let it go already
                self.db.rows(
                    "SELECT pg_advisory_unlock(hashtext(?), hashtext(?))",
                    (LOCK_NAME, self.schema),
                )
        elif self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the descriptor drops the flock
