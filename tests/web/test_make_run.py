"""``make run`` prints the console's address, and the README shows how to open it (issue 24's
acceptance): the target runs ``sabot serve --dev --demo ... --web 127.0.0.1:8080``; the same
command, on free ports, prints ``Console: http://HOST:PORT/`` once the server listens, and that
address serves the sign-in page."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx

from tests.ops.support import Served

ROOT = Path(__file__).resolve().parents[2]


def test_make_run_starts_the_console_and_the_readme_says_how_to_open_it() -> None:
    run = re.search(r"^run:.*?\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.M)
    assert run and "serve --dev --demo" in run.group(1) and "--web 127.0.0.1:8080" in \
        run.group(1), run
    readme = (ROOT / "README.md").read_text()
    assert "make run" in readme and "http://127.0.0.1:8080/" in readme


def test_serve_with_web_prints_the_consoles_address(tmp_path: Path) -> None:
    served = Served.dev(f"sqlite:///{tmp_path}/run.db", tmp_path, "--web", "127.0.0.1:0")
    try:
        served.wait_listening()
        deadline, url = time.monotonic() + 60, ""
        while not url and time.monotonic() < deadline:
            url = next((m.group(1) for line in served.stdout
                        if (m := re.match(r"Console: (http://127\.0\.0\.1:\d+/) ", line))), "")
            time.sleep(0.05)
        assert url, "".join(served.stdout)
        page = httpx.get(f"{url}signin", timeout=30)
        assert page.status_code == 200 and "Credential (token)" in page.text
    finally:
        assert served.stop() == 0
