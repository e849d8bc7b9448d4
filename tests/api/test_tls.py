"""TLS and mTLS end to end, with certificates made here: a server-only TLS listener, an mTLS
listener where a client certificate named in the credentials file stands for its principal, a
client without the CA refused, a plaintext client refused by a TLS server, a client without a
certificate (or with one of another CA) refused by the mTLS server, a renewed server certificate
served without a restart, and no plaintext listener beyond loopback without ``--insecure``."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

import services.cli as cli
from services.api import credentials, logs, server
from services.api.client import Client
from services.api.config import Config, ConfigError
from services.api.gen.sabot.v1 import cashier_pb2, events_pb2, table_pb2
from services.api.roles import Role
from services.api.tls import channel_credentials, is_loopback
from services.bootstrap import LEDGER_GAMES, SERVED
from services.ledger.api import Ledger, LedgerConfig

from .certs import Authority, Pair
from .conftest import KEY, SEED
from .support import failure


@dataclass
class Served:
    target: str
    running: Any
    ca: Authority
    server_pair: Pair
    keys: Path  # the credentials file
    tokens: dict[str, str]


def _serve(folder: Path, *, mtls: bool) -> Served:
    ca = Authority(folder / "ca")
    pair = ca.issue("sabot-server", server=True)
    keys = folder / "credentials.toml"
    tokens = {"admin": credentials.issue(keys, "admin-1", Role.ADMIN)[1] or "",
              "croupier": credentials.issue(keys, "c-0173", Role.CROUPIER)[1] or ""}
    if mtls:
        credentials.issue(keys, "terminal-4", Role.CROUPIER, certificate="terminal-4")
        credentials.issue(keys, "anne", Role.PLAYER, certificate="anne.players.casino")
    url = f"sqlite:///{folder / 'sabot.db'}"
    ledger = Ledger(LedgerConfig(store_url=url, seal_key=KEY, new_seed=lambda: SEED),
                    games=LEDGER_GAMES)
    config = Config(listen="127.0.0.1:0", store=url, credentials_file=keys, seal_key=KEY,
                    workers=8, tls_cert=pair.cert, tls_key=pair.key,
                    tls_client_ca=ca.cert if mtls else None)
    running = server.start(config, ledger, games=SERVED)
    return Served(f"127.0.0.1:{running.port}", running, ca, pair, keys, tokens)


@pytest.fixture(scope="module", autouse=True)
def _quiet_logs() -> None:
    """The servers' lines out of stdout (unless the API tests' buffer already takes them)."""
    if logs._sink is None:
        logs.configure(stream=io.StringIO())


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    served = _serve(Path(tmp_path_factory.mktemp("tls")), mtls=False)
    yield served
    served.running.stop(grace=1)


@pytest.fixture(scope="module")
def mtls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    served = _serve(Path(tmp_path_factory.mktemp("mtls")), mtls=True)
    yield served
    served.running.stop(grace=1)


def _refused(client: Client) -> grpc.StatusCode:
    code, _, _ = failure(client.tables.ListTables, table_pb2.ListTablesRequest(), timeout=5)
    return code


def test_server_only_tls_serves_a_client_that_trusts_its_ca(tls: Served) -> None:
    client = Client(tls.target, tls.tokens["croupier"], tls_ca=tls.ca.cert)
    try:
        opened = client.tables.OpenTable(table_pb2.OpenTableRequest(
            request_id="tls-open-1", table_id="tls-1"))
        assert opened.name == "tables/tls-1"
        assert client.tables.GetTable(table_pb2.GetTableRequest(name="tables/tls-1")).name
    finally:
        client.close()


def test_a_client_without_the_ca_is_refused(tls: Served) -> None:
    client = Client(tls.target, tls.tokens["admin"], tls_ca=True)  # the system's roots
    try:
        assert _refused(client) is grpc.StatusCode.UNAVAILABLE
    finally:
        client.close()
    other = Authority(tls.ca.folder.parent / "other", "another ca")
    client = Client(tls.target, tls.tokens["admin"], tls_ca=other.cert)
    try:
        assert _refused(client) is grpc.StatusCode.UNAVAILABLE
    finally:
        client.close()


def test_a_plaintext_client_is_refused_by_a_tls_server(tls: Served) -> None:
    client = Client(tls.target, tls.tokens["admin"])
    try:
        assert _refused(client) is grpc.StatusCode.UNAVAILABLE
    finally:
        client.close()


def test_mtls_a_certificate_stands_for_its_principal(mtls: Served,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    lines: list[dict[str, Any]] = []
    monkeypatch.setattr(logs, "info", lambda event, fields: lines.append(dict(fields)))
    terminal = mtls.ca.issue("terminal-4")
    client = Client(mtls.target, None, tls_ca=mtls.ca.cert, tls_cert=terminal.cert,
                    tls_key=terminal.key)
    try:
        table = client.tables.OpenTable(table_pb2.OpenTableRequest(
            request_id="mtls-open-1", table_id="mtls-1"))
        assert table.name == "tables/mtls-1"
        # the role is the principal's: a croupier's certificate may not deposit
        code, field, _ = failure(client.cashier.Deposit, cashier_pb2.DepositRequest(
            request_id="mtls-dep-1", name="accounts/anne"))
        assert (code, field) == (grpc.StatusCode.PERMISSION_DENIED, "authorization")
        stream = client.watch.WatchTable(events_pb2.WatchTableRequest(
            table="tables/mtls-1", after_position=mtls.running.hub.catch_up()), timeout=5)
        client.tables.OpenShoe(table_pb2.OpenShoeRequest(request_id="mtls-shoe-1",
                                                         parent="tables/mtls-1"))
        first = next(iter(stream))  # a stream, as the certificate's principal
        stream.cancel()
        assert first.events and all("Shoe" in e.type for e in first.events), first
    finally:
        client.close()
    opened = [x for x in lines if x.get("request_id") == "mtls-open-1"]
    assert opened and (opened[0]["role"], opened[0]["caller"]) == ("croupier", "terminal-4")


def test_mtls_a_san_names_the_principal_too(mtls: Served) -> None:
    anne = mtls.ca.issue("anne-terminal", dns=("anne.players.casino",))
    client = Client(mtls.target, None, tls_ca=mtls.ca.cert, tls_cert=anne.cert,
                    tls_key=anne.key)
    try:
        code, _, _ = failure(client.cashier.GetAccount, cashier_pb2.GetAccountRequest(
            name="accounts/bruno"))
        assert code is grpc.StatusCode.PERMISSION_DENIED  # anne's, as a player: not bruno's
        code, _, _ = failure(client.cashier.GetAccount, cashier_pb2.GetAccountRequest(
            name="accounts/anne"))
        assert code is grpc.StatusCode.NOT_FOUND  # hers (not opened on this store)
    finally:
        client.close()


def test_mtls_an_unmapped_certificate_needs_a_token(mtls: Served) -> None:
    stranger = mtls.ca.issue("stranger-9")
    client = Client(mtls.target, None, tls_ca=mtls.ca.cert, tls_cert=stranger.cert,
                    tls_key=stranger.key)
    try:
        code, field, _ = failure(client.tables.ListTables, table_pb2.ListTablesRequest())
        assert (code, field) == (grpc.StatusCode.UNAUTHENTICATED, "authorization")
        with_token = client.as_(mtls.tokens["croupier"])
        assert with_token.tables.ListTables(table_pb2.ListTablesRequest()) is not None
    finally:
        client.close()


def test_mtls_refuses_a_client_without_a_certificate_or_with_another_cas(mtls: Served) -> None:
    client = Client(mtls.target, mtls.tokens["admin"], tls_ca=mtls.ca.cert)
    try:
        assert _refused(client) is grpc.StatusCode.UNAVAILABLE  # the handshake fails
    finally:
        client.close()
    other = Authority(mtls.ca.folder.parent / "rogue", "rogue ca")
    forged = other.issue("terminal-4")  # the right name, signed by a CA the server ignores
    client = Client(mtls.target, None, tls_ca=mtls.ca.cert, tls_cert=forged.cert,
                    tls_key=forged.key)
    try:
        assert _refused(client) is grpc.StatusCode.UNAVAILABLE
    finally:
        client.close()
    plain = Client(mtls.target, mtls.tokens["admin"])
    try:
        assert _refused(plain) is grpc.StatusCode.UNAVAILABLE
    finally:
        plain.close()


def test_mtls_a_revoked_certificate_mapping_is_refused_after_a_reload(mtls: Served) -> None:
    credential, _ = credentials.issue(mtls.keys, "terminal-8", Role.CROUPIER,
                                      certificate="terminal-8")
    mtls.running.reload()
    terminal = mtls.ca.issue("terminal-8")
    client = Client(mtls.target, None, tls_ca=mtls.ca.cert, tls_cert=terminal.cert,
                    tls_key=terminal.key)
    try:
        assert client.tables.ListTables(table_pb2.ListTablesRequest()) is not None
        credentials.revoke(mtls.keys, credential_id=credential.id)
        mtls.running.reload()
        assert _refused(client) is grpc.StatusCode.UNAUTHENTICATED
    finally:
        client.close()


def test_a_renewed_server_certificate_is_served_without_a_restart(tls: Served) -> None:
    renewed = Authority(tls.ca.folder.parent / "renewed", "renewed ca")
    pair = renewed.issue("sabot-server-2", server=True)
    old_cert, old_key = tls.server_pair.cert.read_bytes(), tls.server_pair.key.read_bytes()
    try:
        shutil.copy(pair.key, tls.server_pair.key)
        shutil.copy(pair.cert, tls.server_pair.cert)
        client = Client(tls.target, tls.tokens["croupier"], tls_ca=renewed.cert)
        try:
            assert client.tables.ListTables(table_pb2.ListTablesRequest()) is not None
        finally:
            client.close()
        stale = Client(tls.target, tls.tokens["croupier"], tls_ca=tls.ca.cert)
        try:
            assert _refused(stale) is grpc.StatusCode.UNAVAILABLE
        finally:
            stale.close()
    finally:
        tls.server_pair.key.write_bytes(old_key)
        tls.server_pair.cert.write_bytes(old_cert)


def test_the_client_commands_take_the_tls_options(mtls: Served, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("services.cli.client",))
    terminal = mtls.ca.issue("terminal-4", file_name="cli-terminal-4")
    common = ["--target", mtls.target, "--tls-ca", str(mtls.ca.cert), "--tls-cert",
              str(terminal.cert), "--tls-key", str(terminal.key)]
    assert cli.main(["health", *common]) == 0
    assert capsys.readouterr().out.strip() == "SERVING"
    assert cli.main(["table", "open", "cli-tls", *common, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == "tables/cli-tls"
    monkeypatch.setenv("SABOT_TLS_CA", str(mtls.ca.cert))
    monkeypatch.setenv("SABOT_TLS_CLIENT_CERT", str(terminal.cert))
    monkeypatch.setenv("SABOT_TLS_CLIENT_KEY", str(terminal.key))
    assert cli.main(["table", "get", "cli-tls", "--target", mtls.target]) == 0
    assert "tables/cli-tls" in capsys.readouterr().out
    assert cli.main(["table", "get", "cli-tls", "--target", mtls.target, "--tls-ca",
                     "/nonexistent/ca.pem"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sabot: error: --tls-ca: cannot read") and "\n" not in err


def _start(url: str, **settings: Any) -> Any:
    """``server.start`` on a fresh ledger (closed when the start is refused)."""
    tokens = {credentials.new_token(): credentials.principal_of("a", Role.ADMIN, None, "t")}
    ledger = Ledger(LedgerConfig(store_url=url, seal_key=KEY), games=LEDGER_GAMES)
    try:
        return server.start(Config(store=url, tokens=tokens, seal_key=KEY, workers=2,
                                   **settings), ledger, games=SERVED)
    except BaseException:
        ledger.close()
        raise


def test_plaintext_beyond_loopback_is_refused_without_insecure(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    with pytest.raises(ConfigError, match=r"refusing plaintext on 0\.0\.0\.0:0"):
        _start(url, listen="0.0.0.0:0")
    _start(url, listen="0.0.0.0:0", insecure=True).stop(grace=0)
    assert all(is_loopback(x) for x in ("127.0.0.1:1", "[::1]:1", "localhost:1", "127.9.9.9:5"))
    assert not any(is_loopback(x) for x in ("0.0.0.0:1", "[::]:1", "10.0.0.1:1", "casino:1",
                                            ":50051"))


def test_half_a_tls_setting_is_refused(tmp_path: Path, tls: Served) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    other = tls.ca.issue("not-the-server", server=True)
    for kwargs, message in (({"tls_cert": tls.server_pair.cert}, "go together"),
                            ({"tls_client_ca": tls.ca.cert}, "needs --tls-cert"),
                            ({"tls_cert": tls.server_pair.cert, "tls_key": tls.ca.cert},
                             "not a PEM|cannot load"),
                            ({"tls_cert": tls.server_pair.cert, "tls_key": other.key},
                             "not the key of")):
        with pytest.raises(ConfigError, match=message):
            _start(url, listen="127.0.0.1:0", **kwargs)
    with pytest.raises(ValueError, match="go together"):
        channel_credentials(tls.ca.cert, tls.server_pair.cert, None)
