"""The read models kept up to date in a process of their own, beside ``sabot serve``.

Why: applying the log to the read models costs about 0.1 ms of processor time per stake (its
four events and its request decoded, the views' rows written). In the server's process that
time is taken under the interpreter lock the 32 gRPC worker threads need; in a process of its
own it is not (``sabot serve``'s default with the ledger process; ``--single-process`` keeps
the thread in the server, ``services.api.reports.ProjectionKeeper``).

- ``follow``: the loop, every ``CATCH_UP_SECONDS``: when the log's head is past the read
  models' lowest position, one catch-up in big batches (the same ``Projector.catch_up``, each
  batch and its positions in ``rm_tracking`` in one transaction: exactly once, whoever applies
  it; a report that catches up in the server meanwhile is safe, ``PositionConflict``);
- ``child_main``: the process (``python -m services.bootstrap --read-models``, the composition
  root's, which builds the read models of the games it holds): its settings (the store's URL,
  which may hold a password, the read store, the gaming day) come as one JSON line on standard
  input, never on the command line or in the environment; it prints ``ready`` once the read
  models are set up, then one JSON line ``{"positions": {view: position}, "errors": N}`` after
  each catch-up; it stops when its standard input ends (its parent stopped or died) or its
  parent is gone (looked at every ``PARENT_POLL`` s), and exits anyway ``EXIT_GRACE`` s later
  (a store that does not answer);
- ``ReadModelsProcess``: the parent's side (in ``sabot serve``, the ledger process: the server
  keeps one child, and the read models end with the ledger): it starts the child, reads its
  lines, and starts it again (after ``RESTART_BACKOFF`` s, counted in ``restarts``) whenever it
  ends until closed. The server reads the positions from ``rm_tracking`` itself
  (``services.api.reports.ProjectionKeeper.kept_elsewhere``).

Store connections: the child holds one pool of ``POOL_SIZE`` (+ ``MAX_OVERFLOW`` while busy)
on the store, and as many on the read store when one is given.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from services.projections.service import ReadModels

CATCH_UP_SECONDS = 0.5  # the child looks at the log this often (one query when idle)
ERROR_BACKOFF = 1.0
RESTART_BACKOFF = 1.0  # seconds before a child that ended is started again
PARENT_POLL = 0.5
EXIT_GRACE = 10.0  # seconds the child may take to close once told to stop
START_TIMEOUT = 60.0
POOL_SIZE = 1  # the child's PostgreSQL connections (one catch-up at a time)
MAX_OVERFLOW = 1
FLAG = "--read-models"  # the composition root's main runs ``child_main`` given this

Report = Callable[[Mapping[str, int], int], None]
Event = Callable[[str, dict[str, Any]], None]  # (what happened, its fields): a log line


def follow(models: ReadModels, stop: threading.Event, report: Report,
           interval: float = CATCH_UP_SECONDS,
           on_error: Callable[[BaseException], None] | None = None) -> int:
    """Catch ``models`` up whenever the log moved past them, every ``interval`` s until
    ``stop`` is set; ``report(positions, errors)`` once at the start and after each catch-up
    or failure (a failure is retried after ``ERROR_BACKOFF`` s). Returns the failures."""
    projector = models.projector
    errors = 0
    report(dict(projector.positions), errors)
    while not stop.wait(interval):
        try:
            if projector.head() > min(projector.positions.values(), default=0):
                models.catch_up()
                report(dict(projector.positions), errors)
        except Exception as exc:  # the store may be down for a while: retry
            errors += 1
            if on_error is not None:
                on_error(exc)
            report(dict(projector.positions), errors)
            stop.wait(ERROR_BACKOFF)
    return errors


def child_main(open_models: Callable[[Mapping[str, Any]], ReadModels]) -> int:
    """The read models' process: ``open_models(settings)`` (the settings of its standard
    input's first line) followed until its standard input ends or its parent is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server stops us, once it has drained
    settings = json.loads(sys.stdin.readline() or "null")
    if not isinstance(settings, dict):
        print("read models: no settings on standard input", file=sys.stderr)
        return 2
    stop = threading.Event()

    def ending(why: str) -> None:
        stop.set()
        time.sleep(EXIT_GRACE)
        with contextlib.suppress(Exception):
            print(f"read models: {why}; not closed within {EXIT_GRACE:g} s: exiting",
                  file=sys.__stderr__, flush=True)
        os._exit(3)

    def watch_input() -> None:
        while sys.stdin.read(4096):
            pass
        ending("standard input ended")

    parent = settings.get("parent")

    def watch_parent() -> None:
        while not stop.wait(PARENT_POLL):
            if os.getppid() != parent:
                ending(f"its server (pid {parent}) is gone")
                return

    threading.Thread(target=watch_input, name="sabot-rm-input", daemon=True).start()
    if type(parent) is int:
        threading.Thread(target=watch_parent, name="sabot-rm-parent", daemon=True).start()
    try:
        models = open_models(settings)
    except Exception as exc:  # never the URL: it may hold a password
        print(f"read models: cannot open the read models: {type(exc).__name__}: {exc}",
              file=sys.stderr, flush=True)
        return 2
    out = sys.stdout
    print("ready", file=out, flush=True)
    sys.stdout = sys.stderr  # our standard output is the server's channel only

    def report(positions: Mapping[str, int], errors: int) -> None:
        with contextlib.suppress(OSError, ValueError):
            out.write(json.dumps({"positions": dict(positions), "errors": errors}) + "\n")
            out.flush()

    def failed(exc: BaseException) -> None:
        print(f"read models: catch-up failed; retrying: {exc!r}", file=sys.stderr, flush=True)

    try:
        follow(models, stop, report, on_error=failed)
    finally:
        with contextlib.suppress(Exception):
            models.close()
    return 0


class ReadModelsProcess:
    """The read models' process (``python -m host --read-models``, ``settings`` on its
    standard input), started by ``start`` (on a thread: nothing waits for it) and started again
    whenever it ends until ``close``; what it last reported: ``positions`` (each view's),
    ``errors`` (its failed catch-ups so far); ``restarts``, its starts after the first."""

    def __init__(self, settings: Mapping[str, Any], host: str,
                 on_event: Event | None = None, start_timeout: float = START_TIMEOUT) -> None:
        self.settings = {**settings, "parent": os.getpid()}
        self.host = host
        self.on_event = on_event
        self.start_timeout = start_timeout
        self.positions: dict[str, int] = {}
        self.errors = 0
        self.restarts = 0
        self.process: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="sabot-rm-watch",
                                         daemon=True)

    def start(self) -> ReadModelsProcess:
        self._watcher.start()
        return self

    @property
    def running(self) -> bool:
        """The child serves (it said ready and has not ended)."""
        process = self.process
        return process is not None and process.poll() is None

    def _start(self) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, "-m", self.host, FLAG],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            start_new_session=True,  # a Ctrl-C is the server's, which stops us after
            env={k: v for k, v in os.environ.items() if not k.startswith("SABOT_")},
        )
        assert process.stdin is not None and process.stdout is not None
        with self._lock:
            self.process = process
        if self._closing.is_set():  # closed meanwhile
            _end(process, 0)
            raise OSError("closed")
        try:
            process.stdin.write(json.dumps(self.settings) + "\n")
            process.stdin.flush()
        except OSError:
            pass  # it died at once: it says why on standard error; "ready" never comes
        if _readline(process.stdout, self.start_timeout).strip() != "ready":
            _end(process, 0)
            raise OSError("the read models' process did not start (its error is above)")
        threading.Thread(target=self._read, args=(process,), name="sabot-rm-read",
                         daemon=True).start()
        return process

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            try:
                found = json.loads(line)
                positions = found["positions"]
                errors = int(found["errors"])
            except (ValueError, KeyError, TypeError):
                continue
            if isinstance(positions, dict):
                self.positions = {str(k): int(v) for k, v in positions.items()}
                self.errors = errors

    def _watch(self) -> None:
        """Start the child, and again (after ``RESTART_BACKOFF`` s) whenever it ends or does
        not start, until ``close``."""
        first = True
        while not self._closing.is_set():
            if not first:
                if self._closing.wait(RESTART_BACKOFF):
                    return
                self.restarts += 1
            first = False
            try:
                process = self._start()
            except OSError as exc:
                if not self._closing.is_set():
                    self._event("the read models' process did not start; trying again",
                                level="error", error=str(exc))
                continue
            code = process.wait()
            if not self._closing.is_set():
                self._event("the read models' process ended; starting it again",
                            level="error", exit_code=code, restarts=self.restarts + 1)

    def _event(self, what: str, **fields: Any) -> None:
        if self.on_event is not None:
            self.on_event(what, fields)

    def close(self, timeout: float = 15.0) -> None:
        """Stop the child (it finishes the batch it applies) and do not start it again."""
        self._closing.set()
        with self._lock:
            process = self.process
        if process is not None:
            _end(process, timeout)
        if self._watcher.is_alive():
            self._watcher.join(timeout)


def _end(process: subprocess.Popen[str], timeout: float) -> None:
    with contextlib.suppress(OSError):
        if process.stdin is not None:
            process.stdin.close()  # the child stops when its input ends
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _readline(stream: Any, timeout: float) -> str:
    """A line from ``stream``, or "" when none comes within ``timeout`` seconds."""
    lines: queue.SimpleQueue[str] = queue.SimpleQueue()
    threading.Thread(target=lambda: lines.put(stream.readline()), daemon=True).start()
    try:
        return lines.get(timeout=timeout)
    except queue.Empty:
        return ""


__all__ = ["CATCH_UP_SECONDS", "FLAG", "ReadModelsProcess", "child_main", "follow"]
