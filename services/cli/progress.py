"""Progress of long work, on standard error only: a bar redrawn in place on a terminal, a line
every few seconds otherwise (a log, a pipe), nothing with ``--quiet``. Standard output stays
the command's answer alone.

    with Progress("monte-carlo", total=n, quiet=args.quiet) as progress:
        for ...:
            progress.update(done)
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import IO

BAR = 30  # characters of the bar
REDRAW_SECONDS = 0.2  # a terminal's bar is redrawn at most this often
LINE_SECONDS = 5.0  # elsewhere, one line this often


def quiet_argument(p: argparse.ArgumentParser) -> None:
    """``-q/--quiet``: no progress on standard error."""
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress on standard error (a bar on a terminal, else a line "
                        f"every {LINE_SECONDS:g} s)")


class Progress:
    """How far ``what`` is: ``update(done)`` (of ``total``, when known) as often as you like;
    the output is paced by time. ``close()`` (or the end of the ``with``) says the last count
    and the time taken, and ends the bar's line."""

    def __init__(self, what: str, total: int | None = None, *, unit: str = "",
                 quiet: bool = False, stream: IO[str] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.what = what
        self.total = total
        self.unit = f" {unit}" if unit else ""
        self.stream = stream if stream is not None else sys.stderr
        self.quiet = quiet
        self.clock = clock
        self.tty = _is_tty(self.stream)
        self.started = clock()
        self.done = 0
        self._shown_at = self.started
        self._drawn = False
        self._closed = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close(failed=kind is not None)

    def update(self, done: int) -> None:
        self.done = done
        if self.quiet or self._closed:
            return
        now = self.clock()
        if now - self._shown_at >= (REDRAW_SECONDS if self.tty else LINE_SECONDS):
            self._shown_at = now
            self._show(now)

    def advance(self, n: int = 1) -> None:
        self.update(self.done + n)

    def clear(self) -> None:
        """Take a terminal's bar off its line before the command prints (it comes back at the
        next update)."""
        if self.tty and self._drawn and not self.quiet and not self._closed:
            self.stream.write("\r\033[K")
            self.stream.flush()

    def close(self, failed: bool = False) -> None:
        """The last count (the line of a bar ends); silent when quiet, or when the work took
        less than a line's pace and no line was shown (nothing to say)."""
        if self._closed:
            return
        self._closed = True
        if self.quiet:
            return
        now = self.clock()
        if not self.tty and not self._drawn and now - self.started < LINE_SECONDS:
            return
        self._show(now, end=" (stopped)" if failed else " done")
        if self.tty:
            self.stream.write("\n")
        self.stream.flush()

    def _show(self, now: float, end: str = "") -> None:
        seconds = now - self.started
        count = f"{self.done:,}{'/' + format(self.total, ',') if self.total else ''}{self.unit}"
        if self.total:
            share = min(1.0, self.done / self.total)
            left = "" if end or not self.done else \
                f", {seconds * (self.total - self.done) / self.done:.0f} s left"
            text = f"{self.what}: {count} ({share:.0%}) in {seconds:.0f} s{left}{end}"
            if self.tty:
                filled = int(BAR * share)
                text = f"{self.what} [{'#' * filled}{'.' * (BAR - filled)}] " + text[
                    len(self.what) + 2:]
        else:
            text = f"{self.what}: {count} in {seconds:.0f} s{end}"
        if self.tty:
            self.stream.write("\r" + text + "\033[K")  # clear what a longer line left
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
        self._drawn = True


def _is_tty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
