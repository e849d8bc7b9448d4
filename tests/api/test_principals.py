"""Named principals against a real server: the role table again with an expired and a revoked
credential of every role (UNAUTHENTICATED on every RPC), a reload that adds a credential and
one that removes it (from the file, without a restart), rotation (two tokens of one principal),
a credential expiring while its answer is cached, and the security-event log lines."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest

from services.api import credentials, logs
from services.api.credentials import Credential
from services.api.gen.sabot.v1 import cashier_pb2, table_pb2
from services.api.roles import Role

from .support import ROLES, Api, failure
from .test_roles import EXPECTED, outcome, request_for
from .test_roles import scene as scene  # the module's fixture, shared

PAST = datetime(2026, 1, 1, tzinfo=UTC)


def _file(api: Api) -> Path:
    assert api.credentials is not None
    return api.credentials


def _lines(api: Api) -> list[dict[str, Any]]:
    logs.flush()
    return [json.loads(line) for line in api.log.getvalue().splitlines() if line.strip()]


def _await(check: Callable[[], bool], what: str, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _add(api: Api, entries: list[tuple[Credential, str]]) -> None:
    """Append credentials to the server's file (as an operator's tool would) and reload."""
    path = _file(api)
    credentials.write(path, [*credentials.read(path), *(c for c, _ in entries)])
    api.running.reload()


def _principal(role: str, name: str) -> Any:
    r = Role(role)
    return credentials.principal_of(name, r, None, "test")


@pytest.fixture(scope="module")
def stale(api: Api) -> dict[str, dict[str, str]]:
    """For every role: the token of an expired credential and of a revoked one (named
    principals of their own), in the server's file."""
    made: dict[str, dict[str, str]] = {"expired": {}, "revoked": {}}
    entries = []
    for role in ROLES:
        for state in ("expired", "revoked"):
            token = credentials.new_token()
            name = f"{state}-{role.replace('_', '-')}"
            c = Credential(id=credentials.new_credential_id(), principal=_principal(role, name),
                           sha256=credentials.token_hash(token), issued=PAST,
                           expires=PAST + timedelta(days=1) if state == "expired" else None,
                           revoked=PAST + timedelta(hours=1) if state == "revoked" else None)
            entries.append((c, token))
            made[state][role] = token
    _add(api, entries)
    return made


CASES = [(svc, m, role, state) for (svc, m) in EXPECTED for role in ROLES
         for state in ("expired", "revoked")]


@pytest.mark.parametrize(("service", "method", "role", "state"), CASES,
                         ids=[f"{m}-{r}-{s}" for _, m, r, s in CASES])
def test_an_expired_or_revoked_credential_is_unauthenticated_on_every_rpc(
        api: Api, scene: dict[str, str], stale: dict[str, dict[str, str]], service: str,
        method: str, role: str, state: str) -> None:
    client = api.anonymous(stale[state][role])
    try:
        code = outcome(client, service, method, request_for(method, scene))
    finally:
        client.close()
    assert code == grpc.StatusCode.UNAUTHENTICATED


def test_refusals_name_the_principal_and_the_peer_at_warning(
        api: Api, stale: dict[str, dict[str, str]]) -> None:
    for state in ("expired", "revoked"):
        client = api.anonymous(stale[state]["cashier"])
        try:
            code, field, _ = failure(client.cashier.GetAccount, cashier_pb2.GetAccountRequest(
                name="accounts/anne"))
        finally:
            client.close()
        assert (code, field) == (grpc.StatusCode.UNAUTHENTICATED, "authorization")
        line = [x for x in _lines(api) if x.get("principal") == f"{state}-cashier"][-1]
        assert line["level"] == "warning" and line["status"] == "UNAUTHENTICATED"
        assert line["peer"].startswith("ipv4:127.0.0.1:") and line["credential"].startswith("k-")
        assert line["error"].endswith("revoked" if state == "revoked" else "expired")
    anonymous = api.anonymous("sabot_" + "x" * 43)
    try:
        failure(anonymous.tables.ListTables, table_pb2.ListTablesRequest())
    finally:
        anonymous.close()
    line = [x for x in _lines(api) if x.get("method", "").endswith("/ListTables")][-1]
    assert line["level"] == "warning" and line["principal"] is None and line["peer"]
    assert line["error"] == "authorization: unknown token"
    failure(api.as_("anne").cashier.Deposit, cashier_pb2.DepositRequest(
        request_id="r-denied-1", name="accounts/anne"))
    line = [x for x in _lines(api) if x.get("request_id") == "r-denied-1"][-1]
    assert (line["level"], line["status"]) == ("warning", "PERMISSION_DENIED")
    assert line["principal"] == "anne" and line["role"] == "player" and line["peer"]
    text = api.log.getvalue()
    assert all(t not in text for s in stale.values() for t in s.values())  # never a token


def _works(api: Api, token: str) -> bool:
    client = api.anonymous(token)
    try:
        client.reports.GetBalanceSheet(cashier_pb2.GetBalanceSheetRequest())
    except grpc.RpcError as exc:
        assert exc.code() is grpc.StatusCode.UNAUTHENTICATED
        return False
    finally:
        client.close()
    return True


def test_a_reload_adds_a_credential_and_removes_one_without_a_restart(api: Api) -> None:
    path = _file(api)
    credential, token = credentials.issue(path, "office-77", Role.BACK_OFFICE)
    assert token is not None and token not in path.read_text()
    assert credential.sha256 in path.read_text()
    # the server sees the file change (no signal, no restart)
    _await(lambda: _works(api, token), "the new credential was not taken")
    credentials.revoke(path, credential_id=credential.id)
    _await(lambda: not _works(api, token), "the revoked credential still works")
    # and once more by an explicit reload (SIGHUP's path)
    second, again = credentials.issue(path, "office-77", Role.BACK_OFFICE)
    assert again is not None
    api.running.reload()
    assert _works(api, again)
    entries = [c for c in credentials.read(path) if c.id != second.id]
    credentials.write(path, entries)  # removed from the file altogether
    api.running.reload()
    assert not _works(api, again)


def test_a_principal_holds_two_tokens_while_it_rotates(api: Api) -> None:
    path = _file(api)
    old, old_token = credentials.issue(path, "cashier-31", Role.CASHIER)
    new, new_token = credentials.issue(path, "cashier-31", Role.CASHIER)
    api.running.reload()
    assert old_token and new_token and old.principal == new.principal
    assert _works_as_cashier(api, old_token) and _works_as_cashier(api, new_token)
    credentials.revoke(path, credential_id=old.id)
    api.running.reload()
    assert not _works_as_cashier(api, old_token)
    assert _works_as_cashier(api, new_token)


def _works_as_cashier(api: Api, token: str) -> bool:
    client = api.anonymous(token)
    try:
        client.cashier.GetAccount(cashier_pb2.GetAccountRequest(name="accounts/anne"))
    except grpc.RpcError as exc:
        assert exc.code() is grpc.StatusCode.UNAUTHENTICATED
        return False
    finally:
        client.close()
    return True


def test_a_credential_that_expires_while_its_answer_is_cached_is_refused(api: Api) -> None:
    token = credentials.new_token()
    soon = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=2)
    c = Credential(id=credentials.new_credential_id(),
                   principal=_principal("back_office", "office-soon"),
                   sha256=credentials.token_hash(token), issued=datetime.now(UTC), expires=soon)
    _add(api, [(c, token)])
    assert _works(api, token) and _works(api, token)  # the second from the interceptor's cache
    _await(lambda: datetime.now(UTC) >= soon, "time stood still")
    assert not _works(api, token)


def test_a_file_that_does_not_parse_leaves_the_credentials_in_force(api: Api) -> None:
    path = _file(api)
    kept = path.read_text()
    try:
        path.write_text(kept + "\n[[credential]]\nid = 'nonsense'\n")
        api.running.reload()
        assert _works(api, api.tokens["back_office"])
        assert any(x.get("event", "").startswith("credentials reload refused")
                   for x in _lines(api))
    finally:
        path.write_text(kept)
        api.running.reload()


def test_the_log_line_names_the_principal(api: Api) -> None:
    rid = "r-named-1"
    failure(api.as_("croupier").tables.DealCoup, table_pb2.DealCoupRequest(
        request_id=rid, name="tables/x/shoes/y/coups/z"))
    line = [x for x in _lines(api) if x.get("request_id") == rid][-1]
    assert (line["role"], line["caller"]) == ("croupier", "c-0173")


def test_revoking_everything_of_a_principal(api: Api) -> None:
    path = _file(api)
    tokens = [credentials.issue(path, "office-88", Role.BACK_OFFICE)[1] for _ in range(2)]
    api.running.reload()
    assert all(t and _works(api, t) for t in tokens)
    revoked = credentials.revoke(path, principal_id="office-88")
    assert len(revoked) == 2 and all(c.revoked for c in revoked)
    api.running.reload()
    assert not any(t and _works(api, t) for t in tokens)
    assert {c.state(time.time()) for c in credentials.read(path)
            if c.principal.principal_id == "office-88"} == {"revoked"}

