"""``sabot store report head-office``'s sites (``--site NAME=URL``, ``--sites FILE``): every
mistake is one line and its exit code, and no line shows a store URL's password. (The report
itself, on two sites played at: tests/ops/test_two_sites.py.)"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from services.cli import main

DAY = ("--day", "2026-01-01")


def sabot(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["store", "report", "head-office", *argv])
    return code, err.getvalue()


@pytest.mark.parametrize(("argv", "code", "said"), [
    ((*DAY,), 2, "--site NAME=URL or --sites FILE"),
    ((*DAY, "--site", "lyon"), 2, "--site: NAME=URL"),
    ((*DAY, "--site", "ly on=sqlite:///x.db"), 2, "--site: a site id"),
    ((*DAY, "--site", "lyon=mysql://u:hunter2@h/db"), 2, "site lyon: --store: "),
    (("--day", "2026-02-30", "--site", "a=sqlite:///x.db"), 2, "--day: no such date"),
    (("--day", "26-1-1", "--site", "a=sqlite:///x.db"), 2, "--day: expected a date"),
    ((*DAY, "--site", "a=sqlite:////nowhere/x.db"), 2, "site a: --store: /nowhere/x.db: no "
                                                       "such SQLite file"),
    ((*DAY, "--site", "a=sqlite:///x.db", "--site", "a=sqlite:///y.db"), 2,
     "site a: named twice"),
    ((*DAY, "--site", "a=postgresql://u:hunter2@127.0.0.1:1/db", "--site",
      "b=postgresql://u:hunter2@127.0.0.1:1/db"), 2, "site b: the same store as site a "
                                                     "(postgresql://u:***@127.0.0.1:1/db)"),
])
def test_a_bad_site_is_one_line(argv: tuple[str, ...], code: int, said: str) -> None:
    found, err = sabot(*argv)
    assert found == code and err.count("\n") == 1 and said in err, err
    assert "hunter2" not in err


def test_the_sites_file(tmp_path: Path) -> None:
    sites = tmp_path / "sites.toml"
    sites.write_text('format = "SABOT-SITES-1"\n[sites.lyon]\nstore = "sqlite:///x.db"\n'
                     'port = 1\n')
    code, err = sabot(*DAY, "--sites", str(sites))
    assert code == 2 and "[sites.lyon]: one key, store = \"URL\"" in err
    sites.write_text('format = "SABOT-SITES-2"\n')
    code, err = sabot(*DAY, "--sites", str(sites))
    assert code == 2 and "not a SABOT-SITES-1 file" in err
    sites.write_text("[sites\n")
    code, err = sabot(*DAY, "--sites", str(sites))
    assert code == 2 and "not TOML" in err and err.count("\n") == 1
    sites.write_text('format = "SABOT-SITES-1"\n[sites.lyon]\nstore = "sqlite:///x.db"\n')
    sites.chmod(0o666)  # it may hold passwords: others may not write it
    code, err = sabot(*DAY, "--sites", str(sites))
    assert code == 2 and "may be written by others" in err
    code, err = sabot(*DAY, "--sites", str(tmp_path / "none.toml"))
    assert code == 2 and "cannot read it" in err


def test_a_store_without_read_models_is_refused(tmp_path: Path) -> None:
    from services.bootstrap import LEDGER_GAMES
    from services.ledger.api import Ledger
    from services.ledger.config import LedgerConfig

    url = f"sqlite:///{tmp_path / 'lyon.db'}"
    Ledger(LedgerConfig(store_url=url, seal_key=bytes(32), site="lyon"),
           games=LEDGER_GAMES).close()
    code, err = sabot(*DAY, "--site", f"lyon={url}")
    assert code == 3 and "site lyon: its store holds no read models" in err, err


def test_a_store_that_does_not_answer_is_unavailable() -> None:
    code, err = sabot(*DAY, "--site", "lyon=postgresql://u:hunter2@127.0.0.1:1/db")
    assert code == 5 and "site lyon: its store does not answer" in err, err
    assert "hunter2" not in err and err.count("\n") == 1
