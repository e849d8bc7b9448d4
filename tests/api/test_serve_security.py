"""``sabot serve`` and ``sabot credentials`` from outside: a short token refused at start in one
line; a plaintext listener beyond loopback refused; mTLS with a credentials file, and SIGHUP
taking a credential issued meanwhile; ``--dev`` still printing working tokens."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from services.api.client import Client
from services.api.gen.sabot.v1 import cashier_pb2, table_pb2

from .certs import Authority

ROOT = Path(__file__).resolve().parents[2]
KEY_HEX = bytes(range(32)).hex()


def _sabot(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT,
           stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SABOT_")}
    return subprocess.run([sys.executable, "-m", "services.cli.server", *args], cwd=cwd,
                          env={**clean, **(env or {})},
                          capture_output=True, text=True, timeout=120, input=stdin)


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"SABOT_SEAL_KEY": KEY_HEX, "SABOT_CHAIN_KEY": "c7" * 32, "PYTHONUNBUFFERED": "1",
            **extra}


def _serving(args: list[str], env: dict[str, str], tmp_path: Path
             ) -> tuple[subprocess.Popen[str], str, list[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "services.cli.server", "serve", "--single-process",
         "--listen", "127.0.0.1:0", "--store", f"sqlite:///{tmp_path / 's.db'}",
         "--env-file", str(tmp_path / "none.env"), *args],
        cwd=ROOT, env={**os.environ, "SABOT_TOKENS": "", **env}, stdout=subprocess.PIPE,
        stderr=(tmp_path / "server.log").open("w"), text=True)
    assert proc.stdout is not None
    printed: list[str] = []
    target = ""
    for line in proc.stdout:
        printed.append(line)
        if "listening on" in line:
            target = line.split("listening on ")[1].split()[0]
        if line.startswith("  .venv/bin/sabot demo"):
            break
    assert target, (tmp_path / "server.log").read_text()
    return proc, target, printed


@pytest.fixture
def stop() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_short_token_is_refused_at_start_in_one_line(tmp_path: Path) -> None:
    done = _sabot("serve", "--single-process", "--listen", "127.0.0.1:0", "--store",
                  f"sqlite:///{tmp_path / 's.db'}", "--env-file", str(tmp_path / "none"),
                  env=_env(tmp_path, SABOT_TOKENS="t0ken-of-admin:admin"))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert re.fullmatch(r"sabot: error: SABOT_TOKENS \(admin\): a token must carry at least "
                        r"128 bits \(this one: at most \d+\); make one with `sabot "
                        r"credentials issue`", lines[0]), lines[0]
    assert "t0ken-of-admin" not in done.stderr  # not even the short one


def test_a_clear_token_in_the_env_file_is_refused(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("SABOT_TOKENS=sabot_" + "Q" * 10 + "abcdefghijklmnopqrstuvwxyz0123:admin\n")
    done = _sabot("serve", "--single-process", "--listen", "127.0.0.1:0", "--store",
                  f"sqlite:///{tmp_path / 's.db'}", "--env-file", str(dotenv),
                  env=_env(tmp_path))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "a clear token in a file" in done.stderr


def test_plaintext_beyond_loopback_is_refused_at_start(tmp_path: Path) -> None:
    token = "sabot_" + "k3y" * 15
    done = _sabot("serve", "--single-process", "--listen", "0.0.0.0:0", "--store",
                  f"sqlite:///{tmp_path / 's.db'}", "--env-file", str(tmp_path / "none"),
                  env=_env(tmp_path, SABOT_TOKENS=f"{token}:admin"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "sabot: error: refusing plaintext on 0.0.0.0:0 (not loopback): give --tls-cert and "
        "--tls-private-key, or --insecure")


def test_serve_over_mtls_with_a_credentials_file_and_sighup(
        tmp_path: Path, stop: list[subprocess.Popen[str]]) -> None:
    ca = Authority(tmp_path / "ca")
    pair = ca.issue("sabot-server", server=True)
    terminal = ca.issue("terminal-4")
    keys = tmp_path / "credentials.toml"
    issued = _sabot("credentials", "issue", "--file", str(keys), "--principal", "c-0173",
                    "--role", "croupier")
    assert issued.returncode == 0, issued.stderr
    token = issued.stdout.strip()
    assert token.startswith("sabot_") and token not in keys.read_text()
    mapped = _sabot("credentials", "issue", "--file", str(keys), "--principal", "terminal-4",
                    "--role", "croupier", "--certificate", "terminal-4")
    assert mapped.returncode == 0 and mapped.stdout == ""  # no token for a certificate
    proc, target, _ = _serving(
        ["--credentials", str(keys), "--tls-cert", str(pair.cert), "--tls-key", str(pair.key),
         "--tls-client-ca", str(ca.cert)], _env(tmp_path), tmp_path)
    stop.append(proc)
    tls = {"tls_ca": ca.cert, "tls_cert": terminal.cert, "tls_key": terminal.key}
    client = Client(target, token, **tls)
    try:
        assert client.tables.ListTables(table_pb2.ListTablesRequest()) is not None
        by_certificate = Client(target, None, **tls)
        assert by_certificate.tables.ListTables(table_pb2.ListTablesRequest()) is not None
        by_certificate.close()
        cashier = _sabot("credentials", "issue", "--file", str(keys), "--principal",
                         "cashier-12", "--role", "cashier").stdout.strip()
        proc.send_signal(signal.SIGHUP)
        as_cashier = client.as_(cashier)
        deadline = time.monotonic() + 10
        while True:
            try:
                as_cashier.cashier.OpenAccount(cashier_pb2.OpenAccountRequest(
                    request_id="serve-open-1", account_id="zoe", currency_code="EUR"))
                break
            except grpc.RpcError as exc:
                assert exc.code() is grpc.StatusCode.UNAUTHENTICATED
                assert time.monotonic() < deadline, "the new credential was not taken"
                time.sleep(0.05)
        listed = _sabot("credentials", "list", "--file", str(keys))
        assert listed.returncode == 0 and "cashier-12" in listed.stdout
        credential = next(x.split()[0] for x in listed.stdout.splitlines() if "cashier-12" in x)
        assert _sabot("credentials", "revoke", "--file", str(keys), credential).returncode == 0
        proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while True:
            try:
                as_cashier.cashier.GetAccount(cashier_pb2.GetAccountRequest(name="accounts/zoe"))
            except grpc.RpcError as exc:
                assert exc.code() is grpc.StatusCode.UNAUTHENTICATED
                break
            assert time.monotonic() < deadline, "the revoked credential still works"
            time.sleep(0.05)
    finally:
        client.close()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    log = (tmp_path / "server.log").read_text()
    assert "reloading the credentials" in log and "credentials reloaded" in log
    assert token not in log and cashier not in log
    assert '"tls": "mtls"' in log


def test_dev_prints_working_tokens_as_before(tmp_path: Path,
                                             stop: list[subprocess.Popen[str]]) -> None:
    proc, target, printed = _serving(["--dev"], {"PYTHONUNBUFFERED": "1"}, tmp_path)
    stop.append(proc)
    tokens = {}
    for line in printed:
        found = re.match(r"  (\w+)\s+(\S+)( bound to accounts/(\S+))?$", line.rstrip("\n"))
        if found and found.group(1) in ("croupier", "cashier", "player", "back_office",
                                        "regulator", "admin"):
            tokens.setdefault(found.group(1), (found.group(2), found.group(4)))
    assert set(tokens) == {"croupier", "cashier", "player", "back_office", "regulator", "admin"}
    player, account = tokens["player"]
    assert account
    client = Client(target, player)
    try:
        try:
            client.cashier.GetAccount(cashier_pb2.GetAccountRequest(name=f"accounts/{account}"))
        except grpc.RpcError as exc:
            assert exc.code() is grpc.StatusCode.NOT_FOUND  # authenticated: no such account yet
        office = client.as_(tokens["back_office"][0])
        assert office.reports.GetBalanceSheet(cashier_pb2.GetBalanceSheetRequest()) is not None
    finally:
        client.close()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
