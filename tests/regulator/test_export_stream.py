"""A whole log's export is verified as a stream (issue 25 item 3): ``sabot-verify``'s memory
does not grow with the log, and the stream's verdict is the buffered verifier's."""

from __future__ import annotations

import io
import tracemalloc
from pathlib import Path

import pytest
from sabot_verify.__main__ import run
from sabot_verify.stream import Unsure, verify_log

from services.regulator.export import write_export

from .conftest import Played, play
from .play import CHAIN_PUBLIC


def _export(p: Played, path: Path) -> int:
    with path.open("w", encoding="utf-8") as out:
        write_export(out, p.events(), p.notary(), p.public_key)
    return sum(1 for _ in path.open(encoding="utf-8"))


def _peak(p: Played, path: Path) -> tuple[int, int]:
    """sabot-verify's exit code and its peak traced memory (bytes) on the export."""
    tracemalloc.start()
    try:
        with path.open(encoding="utf-8") as f:
            code = run(f, checkpoint_key=p.public_key, out=io.StringIO(),
                       chain_keys=[CHAIN_PUBLIC], verbose=True)
        return code, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Played, Path, int]]:
    out = []
    for shoes in (2, 4):
        where = tmp_path_factory.mktemp(f"stream{shoes}")
        p = play(f"sqlite:///{where / 'store.db'}", [("t-fr", "francaise", shoes)], seed=11)
        path = where / "log.jsonl"
        out.append((p, path, _export(p, path)))
    return out


def test_the_whole_log_streams(logs: list[tuple[Played, Path, int]]) -> None:
    for p, path, _n in logs:
        with path.open(encoding="utf-8") as f:
            got = verify_log(f, p.public_key, [CHAIN_PUBLIC], None, None, None)
        assert got.verdicts and all(v.ok for v in got.verdicts)


def test_memory_does_not_grow_with_the_log(logs: list[tuple[Played, Path, int]]) -> None:
    (p1, small, n1), (p2, large, n2) = logs
    assert n2 >= 1.8 * n1
    code1, peak1 = _peak(p1, small)
    code2, peak2 = _peak(p2, large)
    assert code1 == code2 == 0
    assert peak2 <= 1.2 * peak1 + 2_000_000, (n1, peak1, n2, peak2)


def test_an_edited_line_falls_back_to_the_buffered_verdict(
        logs: list[tuple[Played, Path, int]], tmp_path: Path) -> None:
    p, path, _n = logs[0]
    lines = path.read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if '"amount":' in line and '"event"' in line)
    lines[at] = lines[at].replace('"amount":', '"amount":1', 1)
    with pytest.raises(Unsure):
        verify_log(lines, p.public_key, [CHAIN_PUBLIC], None, None, None)
    out = io.StringIO()
    assert run(lines, checkpoint_key=p.public_key, out=out, chain_keys=[CHAIN_PUBLIC]) == 1
    assert "NOT VERIFIED" in out.getvalue()
