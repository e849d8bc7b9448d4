"""structlog JSON logs: one line per RPC. Tokens and unrevealed seeds are never logged.

Lines are handed to one writer thread that writes them in batches every 50 ms: an RPC thread
never blocks on I/O (under load, a write per line costs a GIL hand-over per RPC). The per-RPC
line (``info``, ``warning``) is not even rendered by the RPC's thread: it hands over its fields
and the time, and the writer thread renders the JSON, the same line, when it writes the batch.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import sys
import threading
import time
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, TextIO

import structlog

_SECRET_KEYS = frozenset({"token", "authorization", "seed", "seal_key", "secret"})
_MUTED = threading.Event()


def _redact(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    for key in _SECRET_KEYS & event.keys():
        event[key] = "[redacted]"
    return event


def _mute(_: Any, method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    if _MUTED.is_set() and method in ("debug", "info"):
        raise structlog.DropEvent
    return event


@contextmanager
def muted() -> Iterator[None]:
    """Info lines dropped meanwhile (the demo's narration stays readable); warnings still pass."""
    _MUTED.set()
    try:
        yield
    finally:
        _MUTED.clear()


# a line not rendered yet: its level, event, fields and time (``time.time()``)
_Fields = tuple[str, str, dict[str, Any], float]


class _Sink:
    """Lines waiting to be written to one stream, by one writer thread: rendered ones, and the
    fields of per-RPC lines it renders itself (``_render_fields``)."""

    INTERVAL = 0.05

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._lines: list[str | _Fields] = []
        self._lock = threading.Lock()
        self._writing = threading.Lock()  # a flush returns once the lines added before are out
        self._wake = threading.Event()
        threading.Thread(target=self._run, name="sabot-log", daemon=True).start()

    def add(self, line: str | _Fields) -> None:
        with self._lock:
            self._lines.append(line)

    def flush(self) -> None:
        with self._writing:
            with self._lock:
                lines, self._lines = self._lines, []
            if lines:
                self.stream.write("\n".join(
                    line if isinstance(line, str) else _render_fields(*line) for line in lines)
                    + "\n")
                self.stream.flush()

    def _run(self) -> None:
        while True:
            self._wake.wait(self.INTERVAL)
            with contextlib.suppress(OSError, ValueError):  # the stream closed: drop the batch
                self.flush()


class _SinkLogger:
    """The structlog logger: hands the rendered line to the sink."""

    def __init__(self, sink: _Sink) -> None:
        self._sink = sink

    def msg(self, message: str) -> None:
        self._sink.add(message)

    debug = info = warning = warn = error = critical = exception = fatal = log = msg


_sink: _Sink | None = None
_level = logging.INFO
_encode = json.JSONEncoder().encode  # json.dumps' defaults, as JSONRenderer renders
_render = structlog.processors.JSONRenderer()


def flush() -> None:
    """Write out the lines waiting (tests, shutdown)."""
    if _sink is not None:
        _sink.flush()


atexit.register(flush)


def configure(stream: TextIO | None = None, level: int = logging.INFO) -> None:
    """JSON lines on ``stream`` (stderr by default). Loggers taken before keep their settings."""
    global _sink, _level
    flush()
    sink = _Sink(stream or sys.stderr)
    _sink = sink
    _level = level
    structlog.configure(
        processors=[
            _mute,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            _redact,
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=lambda *args: _SinkLogger(sink),
        cache_logger_on_first_use=True,
    )


def get_logger(name: str = "sabot.api") -> Any:
    return structlog.get_logger(name)


def info(event: str, fields: dict[str, Any]) -> None:
    """``get_logger().info(event, **fields)`` without structlog's pipeline (the per-RPC line,
    the hot path): the same line, keys in the same order, the same JSON. Takes ``fields``."""
    sink = _sink
    if sink is None:  # configured elsewhere (or not at all): structlog decides
        get_logger().info(event, **fields)
        return
    if _level > logging.INFO or _MUTED.is_set():
        return
    _add(sink, "info", event, fields)


def warning(event: str, fields: dict[str, Any]) -> None:
    """As ``info``, at ``warning`` (security events); never muted."""
    sink = _sink
    if sink is None:
        get_logger().warning(event, **fields)
        return
    if _level > logging.WARNING:
        return
    _add(sink, "warning", event, fields)


def _add(sink: _Sink, level: str, event: str, fields: dict[str, Any]) -> None:
    sink.add((level, event, fields, time.time()))


def _render_fields(level: str, event: str, fields: dict[str, Any], at: float) -> str:
    """The line structlog's pipeline would render for ``fields`` logged at ``at``."""
    fields["event"] = event
    fields["level"] = level
    fields["timestamp"] = datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")
    if not _SECRET_KEYS.isdisjoint(fields):
        _redact(None, level, fields)
    try:
        return _encode(fields)
    except (TypeError, ValueError):  # not plain JSON: structlog's fallback (repr) renders it
        rendered = _render(None, level, fields)
        return rendered if isinstance(rendered, str) else rendered.decode()
