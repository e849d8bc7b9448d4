"""Progress of long work on stderr (issue 12 item 10): a bar on a terminal, a line every few
seconds elsewhere, nothing with --quiet; standard output stays the answer alone."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

import services.cli as cli
from services.cli import progress as progress_module
from services.cli.progress import Progress

ROOT = Path(__file__).resolve().parents[2]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_line_every_few_seconds_when_not_a_terminal() -> None:
    out, clock = io.StringIO(), Clock()
    with Progress("export", total=1000, unit="records", stream=out, clock=clock) as p:
        for done in range(0, 1001, 100):
            clock.now = done / 50  # 2 s per 100 records
            p.update(done)
    lines = out.getvalue().splitlines()
    assert lines[0] == "export: 300/1,000 records (30%) in 6 s, 14 s left"
    assert len(lines) == 4 and lines[-1] == "export: 1,000/1,000 records (100%) in 20 s done"


def test_a_bar_on_a_terminal() -> None:
    out, clock = Terminal(), Clock()
    with Progress("monte-carlo", total=200, stream=out, clock=clock) as p:
        clock.now = 1.0
        p.update(50)
        p.clear()
        clock.now = 2.0
        p.update(100)
    text = out.getvalue()
    assert "\rmonte-carlo [#######.......................] 50/200 (25%) in 1 s, 3 s left" in text
    assert "\r\033[K" in text  # cleared before the command printed
    assert text.endswith("(100%) in 2 s done\033[K\n") or "100/200 (50%) in 2 s done" in text


def test_quiet_and_short_work_say_nothing() -> None:
    out, clock = io.StringIO(), Clock()
    with Progress("rebuild", total=10, stream=out, clock=clock, quiet=True) as p:
        clock.now = 60.0
        p.update(10)
    with Progress("rebuild", total=10, stream=out, clock=clock) as p:
        p.update(10)  # done within a line's pace: nothing to say
    assert out.getvalue() == ""


def _lines_now(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_module, "LINE_SECONDS", 0.0)  # a line at every update


def test_odds_monte_carlo_reports_progress_on_stderr_only(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _lines_now(monkeypatch)
    argv = ["odds", "--preset", "espanola", "--monte-carlo", "20000", "--format", "json"]
    assert cli.main(argv) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["monte_carlo"]["coups"] == 20000  # stdout: the answer alone
    assert "monte-carlo: 10,000/20,000 coups (50%)" in err
    assert err.splitlines()[-1].startswith("monte-carlo: 20,000/20,000 coups (100%)")
    assert cli.main([*argv, "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_a_terminal_gets_a_bar_and_a_pipe_gets_the_answer() -> None:
    """``sabot odds --monte-carlo`` with stderr on a terminal (a pty) and stdout on a pipe."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SABOT_")}
    master, slave = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-c", "import sys, services.cli as c; sys.exit(c.main())", "odds",
             "--preset", "espanola", "--monte-carlo", "30000", "--format", "json"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=slave, timeout=300)
        os.close(slave)
        slave = -1
        seen = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        if slave != -1:
            os.close(slave)
        os.close(master)
    assert done.returncode == 0
    assert json.loads(done.stdout)["monte_carlo"]["coups"] == 30000
    text = seen.decode()
    assert "\rmonte-carlo [" in text and "30,000/30,000 coups (100%)" in text
    assert text.endswith("\n")
