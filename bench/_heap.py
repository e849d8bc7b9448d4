"""Heap snapshots of the ledger process during a soak (``python -m bench.soak --heap DIR``).

``environment(folder)`` gives the variables that make every Python process the server starts
import ``sitecustomize`` from ``folder/site`` (the ledger process inherits every variable not
named ``SABOT_*``); in the ledger process only (its command line holds ``--socket`` and
``--own-dir``) that starts ``tracemalloc`` (one frame: file and line) and a thread that, every
``INTERVAL`` seconds, writes ``folder/heap-mNN.txt``: what is traced in all, the largest lines,
and the lines that grew most since the first snapshot (taken after the first interval, when the
server has warmed up) and since the previous one. Tracing costs the ledger process processor
time: a soak run with ``--heap`` finds what grows; its CPU figures are not the ones to quote.
"""

from __future__ import annotations

import os
import threading
import time
import tracemalloc
from pathlib import Path

INTERVAL = 60.0  # seconds between snapshots (the soak's minute)
TOP = 25  # lines shown in each list
FOLDER = "BENCH_HEAP_DIR"  # the variable naming the folder (not SABOT_*: the child gets it)
ROOT = Path(__file__).resolve().parent.parent

_SITE = '''"""Written by bench._heap: the soak's heap snapshots (the ledger process only)."""
import bench._heap

bench._heap.start_if_ledger()
'''


def environment(folder: Path) -> dict[str, str]:
    """The variables that make the server's ledger process take heap snapshots into
    ``folder``."""
    site = folder / "site"
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(_SITE)
    path = [str(site), str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {"PYTHONPATH": os.pathsep.join(path), FOLDER: str(folder),
            "BENCH_HEAP_INTERVAL": os.environ.get("BENCH_HEAP_INTERVAL", str(INTERVAL))}


def _is_ledger_process() -> bool:
    try:
        with open("/proc/self/cmdline", "rb") as cmdline:
            args = cmdline.read().split(b"\0")
    except OSError:
        return False
    return b"--socket" in args and b"--own-dir" in args


def start_if_ledger() -> None:
    """In the ledger process (and only with ``BENCH_HEAP_DIR`` set): trace and snapshot."""
    folder = os.environ.get(FOLDER)
    if not folder or not _is_ledger_process():
        return
    tracemalloc.start(1)
    interval = float(os.environ.get("BENCH_HEAP_INTERVAL", str(INTERVAL)))
    threading.Thread(target=_snapshots, args=(Path(folder), interval), daemon=True,
                     name="bench-heap").start()


def _snapshot() -> tracemalloc.Snapshot:
    return tracemalloc.take_snapshot().filter_traces(
        (tracemalloc.Filter(False, tracemalloc.__file__),
         tracemalloc.Filter(False, __file__)))


def _snapshots(folder: Path, interval: float) -> None:
    first: tracemalloc.Snapshot | None = None
    previous: tracemalloc.Snapshot | None = None
    started = time.monotonic()
    minute = 0
    while True:  # a snapshot takes seconds under load: the next one is due an interval later
        time.sleep(interval)
        minute += 1
        now = _snapshot()
        first = first or now
        report(folder / f"heap-m{minute:02d}.txt", minute, now, first, previous or now,
               time.monotonic() - started)
        previous = now


def report(path: Path, minute: int, now: tracemalloc.Snapshot, first: tracemalloc.Snapshot,
           previous: tracemalloc.Snapshot, elapsed: float = 0.0) -> None:
    """One snapshot's file: the total, the largest lines, the growth since ``first`` and
    since ``previous``."""
    stats = now.statistics("lineno")
    total = sum(s.size for s in stats)
    lines = [f"snapshot {minute} ({elapsed:.0f} s after the ledger process started): "
             f"{total / 2**20:.1f} MiB traced in {len(stats)} lines",
             "", f"largest {TOP}:"]
    lines += [f"  {s.size / 1024:10.1f} KiB {s.count:9d} blocks  {_where(s.traceback)}"
              for s in stats[:TOP]]
    for name, base in (("since snapshot 1", first), ("since the previous snapshot", previous)):
        diff = now.compare_to(base, "lineno")
        grown = sum(d.size_diff for d in diff)
        lines += ["", f"growth {name}: {grown / 2**20:+.2f} MiB; top {TOP}:"]
        lines += [f"  {d.size_diff / 1024:+10.1f} KiB {d.count_diff:+9d} blocks  "
                  f"(now {d.size / 1024:.1f} KiB)  {_where(d.traceback)}"
                  for d in diff[:TOP]]
    path.write_text("\n".join(lines) + "\n")


def _where(traceback: tracemalloc.Traceback) -> str:
    frame = traceback[0]
    name = frame.filename
    root = str(ROOT) + os.sep
    return f"{name[len(root):] if name.startswith(root) else name}:{frame.lineno}"
