"""``sabot credentials issue|revoke|list|hash --file FILE``: the server's named principals.

``issue`` prints a new token once, on stdout alone (``TOKEN=$(sabot credentials issue …)``),
and writes only its SHA-256; ``--certificate NAME`` maps a client certificate instead (no
token). ``revoke`` marks a credential (or every credential of a principal) revoked. ``list``
shows them, never a hash. ``hash`` reads a token on stdin and prints the ``sha256:HEX`` a
``SABOT_TOKENS`` entry takes. A running server reads the file again when it changes (or on
SIGHUP)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from services.api import credentials
from services.api.credentials import CredentialError
from services.api.roles import Role
from services.cli import CliError, commands, settings_of
from services.settings import add_flags


def register(sub: Any) -> None:
    sub = commands(sub)
    cred = sub.group("credentials")

    def file_argument(p: argparse.ArgumentParser) -> None:
        add_flags(p, "credentials")  # --credentials FILE, SABOT_CREDENTIALS, as sabot serve
        p.add_argument("--file", dest="credentials", help=argparse.SUPPRESS)  # the old flag

    p = cred.add_parser("issue", help="a new credential for a principal: prints its token once")
    file_argument(p)
    p.add_argument("--principal", required=True,
                   help="the principal's id (c-0173, cashier-12, terminal-4, a player account)")
    p.add_argument("--role", required=True, choices=[r.value for r in Role])
    p.add_argument("--account", default=None,
                   help="a player's account (default: the principal's id)")
    p.add_argument("--expires", default=None, help="ISO 8601 time with its zone")
    p.add_argument("--days", type=float, default=None, help="expires in this many days")
    p.add_argument("--certificate", default=None, metavar="NAME",
                   help="map a client certificate (its subject CN or a SAN) instead of "
                        "issuing a token (mTLS)")
    p.set_defaults(func=cmd_issue)

    p = cred.add_parser("revoke", help="revoke a credential, or every one of a principal")
    file_argument(p)
    p.add_argument("credential", nargs="?", help="the credential's id (k-…)")
    p.add_argument("--principal", default=None, help="revoke every credential of this principal")
    p.set_defaults(func=cmd_revoke)

    p = cred.add_parser("list", help="the credentials and their state (never a token or hash)")
    file_argument(p)
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=cmd_list)

    p = cred.add_parser("hash", help="read a token on stdin, print sha256:HEX (for "
                                     "SABOT_TOKENS)")
    p.set_defaults(func=cmd_hash)


def _file(args: argparse.Namespace) -> Path:
    settings = settings_of(args)
    settings.require("credentials")
    assert settings.credentials is not None
    folder = settings.credentials.parent
    if not folder.is_dir():  # never made: a typo would make folders anywhere
        where = settings.sources.get("credentials", "--credentials").split(" in ")[0]
        raise CliError(f"{where}: {folder}: no such folder; make it first (mkdir, owned by "
                       "the server's user, not writable by others)")
    return settings.credentials


def _expiry(args: argparse.Namespace) -> datetime | None:
    if args.expires and args.days is not None:
        raise CliError("give --expires or --days, not both")
    if args.days is not None:
        if args.days <= 0:
            raise CliError("--days: must be positive")
        return (datetime.now(UTC) + timedelta(days=args.days)).replace(microsecond=0)
    if args.expires:
        try:
            when = datetime.fromisoformat(args.expires.replace("Z", "+00:00"))
        except ValueError:
            raise CliError(f"--expires: not an ISO 8601 time: {args.expires!r}") from None
        if when.tzinfo is None:
            raise CliError("--expires: give the zone (…Z or …+01:00)")
        return when.astimezone(UTC)
    return None


def cmd_issue(args: argparse.Namespace) -> int:
    path = _file(args)
    try:
        credential, token = credentials.issue(
            path, args.principal, Role(args.role), account=args.account,
            expires=_expiry(args), certificate=args.certificate)
    except CredentialError as exc:
        raise CliError(str(exc)) from None
    what = (f"certificate {credential.certificate!r}" if token is None else "token")
    until = "" if credential.expires is None else f", expires {_when(credential.expires)}"
    print(f"issued {credential.id}: {what} for {credential.principal.principal_id} "
          f"({credential.principal.role.value}{until}) in {path}", file=sys.stderr)
    if token is not None:
        print(token)  # once: only its hash is kept
    return 0


def cmd_revoke(args: argparse.Namespace) -> int:
    path = _file(args)
    if bool(args.credential) == bool(args.principal):
        raise CliError("give a credential id or --principal P")
    try:
        revoked = credentials.revoke(path, credential_id=args.credential,
                                     principal_id=args.principal)
    except CredentialError as exc:
        raise CliError(str(exc)) from None
    for c in revoked:
        print(f"revoked {c.id} ({c.kind} of {c.principal.principal_id})")
    return 0


def _when(value: datetime | None) -> str:
    return "" if value is None else value.strftime("%Y-%m-%dT%H:%M:%SZ")


def cmd_list(args: argparse.Namespace) -> int:
    path = _file(args)
    try:
        found = credentials.read(path)
    except CredentialError as exc:
        raise CliError(str(exc)) from None
    now = time.time()
    rows = [{"id": c.id, "principal": c.principal.principal_id, "role": c.principal.role.value,
             "account": c.principal.account or "", "kind": c.kind,
             "certificate": c.certificate or "", "state": c.state(now),
             "issued": _when(c.issued), "expires": _when(c.expires),
             "revoked": _when(c.revoked)} for c in found]
    if args.format == "json":
        print(json.dumps(rows, indent=2))
        return 0
    columns = ["id", "principal", "role", "account", "kind", "state", "issued", "expires",
               "revoked", "certificate"]
    widths = {c: max([len(c), *(len(r[c]) for r in rows)]) for c in columns}
    print("  ".join(c.ljust(widths[c]) for c in columns).rstrip())
    for r in rows:
        print("  ".join(r[c].ljust(widths[c]) for c in columns).rstrip())
    return 0


def cmd_hash(args: argparse.Namespace) -> int:
    token = sys.stdin.readline().strip()
    try:
        credentials.check_token(token, "the token on stdin")
    except CredentialError as exc:
        raise CliError(str(exc)) from None
    print(f"sha256:{credentials.token_hash(token)}")
    return 0
