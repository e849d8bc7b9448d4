"""The log tailer: follows the ledger's event log and wakes the streams (watch, feed) waiting
for new events. Commands served here poke it, so their events go out at once; writes by other
processes are seen within one polling interval.

A poke costs no query when the hub knows the position of the last event its ledger saved
(``saved``): the store commits in log order, so everything up to it is readable. The tailer
then reads the log's end only once per polling interval (for writes of other processes).
Without ``saved``, pokes wake the tailer, which reads the log's end at most once per
``MIN_INTERVAL``."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Protocol

from services.ledger.views import StoredEvent

POLL_SECONDS = 0.2
MIN_INTERVAL = 0.02
SCAN_LIMIT = 10_000


class EventLog(Protocol):
    def read_events(self, after_position: int = 0, limit: int = 100) -> list[StoredEvent]: ...


class Hub:
    """The last log position seen, and a condition to wait on for a later one."""

    def __init__(
        self,
        log: EventLog,
        streams: int = 16,
        end: Callable[[], int | None] | None = None,
        saved: Callable[[], int] | None = None,
    ) -> None:
        self._log = log
        self._end = end  # the log's last position, read directly (else found by reading)
        self._saved = saved  # the last position this process saved (no query)
        self.stream_slots = threading.BoundedSemaphore(streams)  # streams at once
        self._cond = threading.Condition()  # streams wait on it for a later position
        self._wake = threading.Event()  # the tailer waits on it (poked, or closing)
        self._position = 0
        self._closed = False
        self._thread: threading.Thread | None = None

    @property
    def position(self) -> int:
        with self._cond:
            return self._position

    @property
    def closed(self) -> bool:
        return self._closed

    def start(self) -> None:
        self._advance()
        self._thread = threading.Thread(target=self._run, name="sabot-hub", daemon=True)
        self._thread.start()

    def poke(self) -> None:
        """Something was written: move to the last saved position at once (no query), or wake
        the tailer to look at the log (bursts are coalesced)."""
        if self._saved is not None:
            self._note(self._saved())
        else:
            self._wake.set()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def wait_beyond(self, position: int, timeout: float,
                    stop: Callable[[], bool] | None = None) -> bool:
        """Wait until the log goes past ``position`` (True) or the timeout, close, or ``stop()``
        after a ``nudge`` (False)."""
        with self._cond:
            if stop is None:
                self._cond.wait_for(lambda: self._position > position or self._closed, timeout)
            else:
                self._cond.wait_for(
                    lambda: self._position > position or self._closed or stop(), timeout)
            return self._position > position

    def nudge(self) -> None:
        """Wake the waiting streams to look at their ``stop`` (a stream ended: its RPC was
        cancelled or ran out of time), so that it frees its slot at once."""
        with self._cond:
            self._cond.notify_all()

    def catch_up(self) -> int:
        """Read the log to its end now (not at the next tick): the position of its last event."""
        self._advance()
        return self.position

    def _advance(self) -> None:
        position = self.position
        if self._end is not None:
            position = max(position, self._end() or 0)
        else:
            position = self._scan(position)
        self._note(position)

    def _note(self, position: int) -> None:
        with self._cond:
            if position > self._position:
                self._position = position
                self._cond.notify_all()

    def _scan(self, position: int) -> int:
        while True:
            events = self._log.read_events(position, SCAN_LIMIT)
            if not events:
                break
            position = events[-1].position
            if len(events) < SCAN_LIMIT:
                break
        return position

    def _run(self) -> None:
        while not self._closed:
            self._wake.wait(POLL_SECONDS)
            self._wake.clear()
            with contextlib.suppress(Exception):  # the store may be briefly down: next tick
                self._advance()
            time.sleep(MIN_INTERVAL)  # under load: at most one look at the log per interval
