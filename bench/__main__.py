"""``python -m bench [MODULE ...]``: run every benchmark module (or the named ones) and print a
table of their figures.

Each module runs in its own interpreter (a hung or crashing benchmark, or one that leaves threads
or pools behind, cannot take the others down), with a time limit (``--timeout``, default 900 s,
or env ``BENCH_TIMEOUT``). A module that fails or times out is reported and the others still run;
the exit status is 1 if any failed. ``--in-process`` runs them all in this interpreter instead.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PACKAGE = "bench"
Result = tuple[str, list[tuple[str, str]], float, str | None]  # module, rows, seconds, error


# Modules run only when named (``python -m bench soak``): they run for minutes.
BY_NAME_ONLY = frozenset({"soak"})


def discover() -> list[str]:
    """The benchmark modules of this package, by name, sorted (but ``BY_NAME_ONLY``)."""
    here = Path(__file__).resolve().parent
    return sorted(m.name for m in pkgutil.iter_modules([str(here)])
                  if not m.name.startswith("_") and m.name not in BY_NAME_ONLY)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != value:  # NaN
            return "n/a"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        if abs(value) >= 1:
            return f"{value:,.2f}"
        return f"{value:.4g}"
    return str(value)


def rows_of(result: Any) -> list[tuple[str, str]]:
    """Normalise what a module's ``run()`` returned into (name, text) rows."""
    if isinstance(result, dict):
        result = list(result.items())
    out: list[tuple[str, str]] = []
    for row in result or ():
        if isinstance(row, (tuple, list)) and row:
            out.append((str(row[0]), " ".join(_value(v) for v in row[1:])))
        else:
            out.append((str(row), ""))
    return out


def run_module(name: str) -> Result:
    """Run one module here: its rows, the seconds taken and the error (None when it ran)."""
    start = time.perf_counter()
    try:
        module = importlib.import_module(f"{PACKAGE}.{name}")
        run = getattr(module, "run", None)
        if run is None:
            return name, [], 0.0, "no run()"
        rows = rows_of(run())
    except BaseException as exc:  # one failing benchmark must not stop the others
        if isinstance(exc, KeyboardInterrupt):
            raise
        traceback.print_exc(file=sys.stderr)
        error = f"{type(exc).__name__}: {exc}".splitlines()[0]
        return name, [], time.perf_counter() - start, error
    return name, rows, time.perf_counter() - start, None


def run_isolated(name: str, timeout: float) -> Result:
    """Run one module in a child interpreter, which writes its result to a file."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cmd = [sys.executable, "-m", PACKAGE, "--one", name, "--out", str(out)]
        try:
            proc = subprocess.run(cmd, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            if not out.exists():
                return name, [], time.perf_counter() - start, f"timed out after {timeout:.0f} s"
            proc = None
        if not out.exists():
            status = proc.returncode if proc else "?"
            return name, [], time.perf_counter() - start, f"exited with status {status}"
        data = json.loads(out.read_text())
    rows = [(str(n), str(t)) for n, t in data["rows"]]
    return name, rows, float(data["seconds"]), data["error"]


def print_table(results: Sequence[Result]) -> None:
    width = max([len(n) for _, rows, _, _ in results for n, _ in rows] + [30])
    for module, rows, seconds, error in results:
        print(f"== bench.{module} ({seconds:.1f} s){'  FAILED: ' + error if error else ''}")
        for name, text in rows:
            print(f"  {name:<{width}}  {text}")
    print()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("modules", nargs="*", help="benchmark modules (default: all)")
    parser.add_argument(
        "--timeout", type=float, default=float(os.environ.get("BENCH_TIMEOUT", "900"))
    )
    parser.add_argument("--in-process", action="store_true")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:  # the child of run_isolated
        name, rows, seconds, error = run_module(args.one)
        Path(args.out).write_text(json.dumps({"rows": rows, "seconds": seconds, "error": error}))
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)  # do not wait for threads or pools a benchmark may have left behind
    results: list[Result] = []
    for name in args.modules or discover():
        print(f"running bench.{name} ...", file=sys.stderr, flush=True)
        if args.in_process:
            results.append(run_module(name))
        else:
            results.append(run_isolated(name, args.timeout))
    print_table(results)
    failed = [name for name, _, _, error in results if error]
    if failed:
        print(f"{len(failed)} benchmark module(s) failed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
