"""The verifier's check of whose log an export is (``ops/sabot_verify/site.py``), on exports
made up of the records it reads: the links' ``site`` and the checkpoints' origins, against the
site pinned. (The real exports of two sites: tests/ops/test_two_sites.py.)"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pytest
from sabot_verify.__main__ import main
from sabot_verify.integrity import Export
from sabot_verify.site import check_site
from sabot_verify.topics import CHAIN_LINKED


def link(position: int, seq: int, site: str | None) -> dict[str, Any]:
    state: dict[str, Any] = {"seq": seq}
    if site is not None:
        state["site"] = site
    return {"kind": "event", "position": position, "index": position - 1,
            "event": {"topic": CHAIN_LINKED, "state": state, "position": position}}


def export(sites: list[str | None], origins: list[str], header: str | None = None) -> Export:
    return Export(header={"kind": "header", "site": header},
                  events=[link(10 * (i + 1), i + 1, s) for i, s in enumerate(sites)],
                  checkpoints=[{"origin": o, "size": 5 * (i + 1)} for i, o in enumerate(origins)])


def test_a_log_of_no_site_is_as_before_unless_a_site_is_pinned() -> None:
    found = check_site(export([None, None], ["sabot"]), None)
    assert found.site is None and not found.problems and found.unverifiable is None
    found = check_site(export([None, None], ["sabot"]), "lyon")
    assert not found.problems and "cannot be told to be the log of site 'lyon'" in str(
        found.unverifiable)


def test_a_site_joined_later_binds_the_whole_log() -> None:
    found = check_site(export([None, "lyon", "lyon"], ["sabot", "sabot/lyon"]), "lyon")
    assert found.site == "lyon" and not found.problems and found.unverifiable is None
    found = check_site(export([None, "lyon"], ["sabot/lyon"]), None)
    assert not found.problems and "the export names site 'lyon'" in str(found.unverifiable)


def test_the_anchor_alone_names_the_site_of_a_log_written_before_sites() -> None:
    found = check_site(export([None], ["sabot/lyon"], header="lyon"), "lyon")
    assert found.site == "lyon" and not found.problems and found.unverifiable is None


@pytest.mark.parametrize(("sites", "origins", "header", "at", "what"), [
    (["lyon", "nice"], ["sabot/lyon"], None, 20, "the logs of two sites are mixed"),
    (["lyon", None], ["sabot/lyon"], None, 20, "a link never loses its site"),
    (["lyon"], ["sabot/nice"], None, None, "the logs of two sites are mixed"),
    (["lyon"], ["sabot/lyon"], "nice", None, "the header names site 'nice'"),
    (["lyon", "bad/site"], ["sabot/lyon"], None, 20, "a malformed site"),
])
def test_what_is_signed_must_name_one_site(sites: list[str | None], origins: list[str],
                                           header: str | None, at: int | None,
                                           what: str) -> None:
    found = check_site(export(sites, origins, header), "lyon")
    assert [p.position for p in found.problems][:1] == [at]
    assert what in found.problems[0].message


def test_another_sites_log_is_named_in_the_verdict() -> None:
    found = check_site(export(["nice"], ["sabot/nice"]), "lyon")
    assert found.mismatch == ("the export is the log of site 'nice' (its signed links and "
                              "checkpoints name it), not of site 'lyon' (pinned)")
    assert [p.position for p in found.problems] == [None]


def _main(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(list(argv))
    return code, err.getvalue()


def test_a_bad_site_is_a_usage_error(tmp_path: Path) -> None:
    exp = tmp_path / "e.jsonl"
    exp.write_text('{"format":"SABOT-EXPORT-1","kind":"header"}\n')
    code, err = _main(str(exp), "--site", "no/slash")
    assert code == 2 and "--site: a site id" in err
    trust = tmp_path / "t.toml"
    trust.write_text('format = "SABOT-TRUST-1"\nsite = "with space"\n')
    code, err = _main(str(exp), "--trust", str(trust))
    assert code == 2 and "site: a site id" in err
