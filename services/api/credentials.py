"""Named principals and their credentials: who may call the server, and with what.

A **credential** maps a secret to a **principal** (an id such as ``c-0173``, ``cashier-12``,
``terminal-4`` or a player's account, a role, and for a player its account). The secret is a
bearer token, kept only as its SHA-256 (a token is 256 random bits, so its hash is as good as
the token for checking and useless for calling), or a client certificate of the mTLS listener,
named by its subject CN or one of its SANs. A credential may expire; a revoked one stays in the
file, marked, so that ``list`` shows it and the server refuses it by name. A principal may hold
several credentials at once (rotation: issue the new one, hand it out, revoke the old one).

The credentials file (TOML, written by ``sabot credentials issue|revoke``)::

    [[credential]]
    id = "k-3f9c1a2b"             # names the credential (list, revoke, the logs); not secret
    principal = "c-0173"
    role = "croupier"
    sha256 = "9f86d0…"            # of the token; or: certificate = "terminal-4" (CN or SAN)
    issued = 2026-12-01T08:00:00Z
    expires = 2027-03-01T00:00:00Z  # optional
    revoked = 2027-01-15T10:00:00Z  # once revoked

The server's ``Keyring`` holds the credentials it accepts: fixed ones (tokens given in memory,
``SABOT_TOKENS``) and the file's, read again on SIGHUP or when the file changes (``watch``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import math
import os
import re
import secrets
import threading
import tomllib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from services.api.roles import Principal, Role
from services.files import FileTrustError, check_trusted

MIN_TOKEN_BITS = 128
TOKEN_PREFIX = "sabot_"
PRINCIPAL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")
CREDENTIAL_ID = re.compile(r"k-[0-9a-f]{8,32}")
SHA256_HEX = re.compile(r"[0-9a-f]{64}")
WATCH_SECONDS = 1.0
_HEX = frozenset("0123456789abcdefABCDEF")
_URLSAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


class CredentialError(ValueError):
    """A credential or credentials file that cannot be used; the message is one line."""


# --- tokens -----------------------------------------------------------------------------------


def new_token() -> str:
    """A fresh bearer token: 256 random bits, URL-safe."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """The SHA-256 of a token, in hex: what the credentials file keeps."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def token_bits(token: str) -> float:
    """An upper bound of the entropy of ``token``: its length times the bits of the smallest
    usual alphabet holding all its characters (hex 4, URL-safe base64 6, printable 6.6); a
    token of fewer than 8 distinct characters counts log2 of their number per character. A
    length check: it cannot see whether the characters were drawn at random (``new_token``
    draws them)."""
    if not token:
        return 0.0
    chars = set(token)
    if chars <= _HEX:
        per = 4.0
    elif chars <= _URLSAFE:
        per = 6.0
    else:
        per = math.log2(95)
    if len(chars) < 8:  # "aaaa…", "abab…" carry little
        per = math.log2(len(chars))
    return len(token) * per


def check_token(token: str, where: str) -> None:
    """Refuse a token of fewer than 128 bits, in one line naming ``where``."""
    bits = token_bits(token)
    if bits < MIN_TOKEN_BITS:
        raise CredentialError(
            f"{where}: a token must carry at least {MIN_TOKEN_BITS} bits (this one: at most "
            f"{int(bits)}); make one with `sabot credentials issue`")


# --- credentials ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Credential:
    """One credential of one principal."""

    id: str
    principal: Principal
    sha256: str | None = None  # hex SHA-256 of the token
    certificate: str | None = None  # a client certificate's subject CN or one of its SANs
    issued: datetime | None = None
    expires: datetime | None = None
    revoked: datetime | None = None
    fixed: bool = False  # given at start (SABOT_TOKENS, in memory): not in the file

    @property
    def kind(self) -> str:
        return "token" if self.sha256 is not None else "certificate"

    @property
    def until(self) -> float:
        """The end of its validity in seconds since the epoch (inf: it does not expire)."""
        return math.inf if self.expires is None else self.expires.timestamp()

    def state(self, now: float) -> str:
        if self.revoked is not None:
            return "revoked"
        if now >= self.until:
            return "expired"
        return "active"


def new_credential_id() -> str:
    return f"k-{secrets.token_hex(4)}"


def principal_of(principal_id: str, role: Role, account: str | None, where: str) -> Principal:
    """The principal named ``principal_id``; a player's account defaults to its id."""
    if not PRINCIPAL_ID.fullmatch(principal_id):
        raise CredentialError(f"{where}: principal {principal_id!r} is not an id "
                              "(letters, digits, . _ : @ -, up to 128)")
    if role is Role.PLAYER:
        account = account or principal_id
    elif account:
        raise CredentialError(f"{where}: only a player principal names an account")
    return Principal(role=role, account=account, label=principal_id, id=principal_id)


def from_tokens(tokens: Mapping[str, Principal]) -> list[Credential]:
    """Credentials of clear tokens held in memory (tests, ``--dev``, ``SABOT_TOKENS`` from the
    environment): hashed here; the clear tokens are not kept."""
    out = []
    for n, (token, principal) in enumerate(tokens.items()):
        out.append(Credential(id=f"k-fixed{n:04d}", principal=principal,
                              sha256=token_hash(token), fixed=True))
    return out


# --- the file ---------------------------------------------------------------------------------


def _time(value: Any, where: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise CredentialError(f"{where}: not an ISO 8601 time: {value!r}") from None
    if not isinstance(value, datetime):
        raise CredentialError(f"{where}: a time with its zone (2027-03-01T00:00:00Z)")
    if value.tzinfo is None:
        raise CredentialError(f"{where}: a time needs its zone (…Z or …+01:00)")
    return value.astimezone(UTC)


def parse(text: str, where: str) -> list[Credential]:
    """The credentials of a credentials file's text; CredentialError names the entry."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CredentialError(f"{where}: not TOML: {exc}") from None
    entries = data.get("credential", [])
    unknown = set(data) - {"credential"}
    if unknown or not isinstance(entries, list):
        raise CredentialError(f"{where}: only [[credential]] tables belong here "
                              f"(found {', '.join(sorted(unknown)) or 'credential'})")
    found: list[Credential] = []
    seen: set[str] = set()
    digests: set[str] = set()
    holders: dict[str, Principal] = {}
    allowed = {"id", "principal", "role", "account", "sha256", "certificate", "issued",
               "expires", "revoked", "note"}
    for n, entry in enumerate(entries, 1):
        at = f"{where}: credential {n}"
        if not isinstance(entry, dict):
            raise CredentialError(f"{at}: a table")
        extra = set(entry) - allowed
        if extra:
            raise CredentialError(f"{at}: unknown key {sorted(extra)[0]!r}")
        cid = entry.get("id")
        if not isinstance(cid, str) or not CREDENTIAL_ID.fullmatch(cid):
            raise CredentialError(f"{at}: id must look like k-3f9c1a2b")
        at = f"{where}: credential {cid}"
        if cid in seen:
            raise CredentialError(f"{at}: the id appears twice")
        seen.add(cid)
        role_text = entry.get("role")
        try:
            role = Role(str(role_text))
        except ValueError:
            known = ", ".join(r.value for r in Role)
            raise CredentialError(f"{at}: unknown role {role_text!r} ({known})") from None
        pid = entry.get("principal")
        account = entry.get("account")
        if not isinstance(pid, str) or (account is not None and not isinstance(account, str)):
            raise CredentialError(f"{at}: principal (and account) are strings")
        principal = principal_of(pid, role, account, at)
        known_holder = holders.setdefault(pid, principal)
        if known_holder != principal:
            raise CredentialError(f"{at}: principal {pid} has another role or account in an "
                                  "earlier credential")
        digest, cert = entry.get("sha256"), entry.get("certificate")
        if (digest is None) == (cert is None):
            raise CredentialError(f"{at}: give sha256 (a token's) or certificate (a name)")
        if digest is not None:
            if not isinstance(digest, str) or not SHA256_HEX.fullmatch(digest):
                raise CredentialError(f"{at}: sha256 must be 64 lower-case hex digits")
            if digest in digests:
                raise CredentialError(f"{at}: the same token hash appears twice")
            digests.add(digest)
        if cert is not None and (not isinstance(cert, str) or not cert.strip()):
            raise CredentialError(f"{at}: certificate is a subject CN or a SAN")
        found.append(Credential(
            id=cid, principal=principal, sha256=digest, certificate=cert,
            issued=_time(entry.get("issued"), f"{at}: issued"),
            expires=_time(entry.get("expires"), f"{at}: expires"),
            revoked=_time(entry.get("revoked"), f"{at}: revoked")))
    return found


def read(path: Path) -> list[Credential]:
    """The credentials of a file (a missing file: none)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise CredentialError(f"{path}: cannot read it: {exc}") from None
    return parse(text, str(path))


def _toml_string(value: str) -> str:
    """A TOML basic string: backslash, quote and control characters escaped."""
    out = ['"']
    for ch in value:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _toml_time(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


HEADER = ("# Sabot credentials: each [[credential]] maps a token's SHA-256, or a client\n"
          "# certificate's name (subject CN or SAN), to a principal. No token is kept here.\n"
          "# Managed by `sabot credentials issue|revoke|list --file FILE`; the server reads\n"
          "# it again on SIGHUP or when it changes.\n")


def render(credentials: Iterable[Credential]) -> str:
    """The text of a credentials file holding ``credentials`` (the inverse of ``parse``)."""
    parts = [HEADER]
    for c in credentials:
        if c.fixed:
            continue
        lines = ["", "[[credential]]", f"id = {_toml_string(c.id)}",
                 f"principal = {_toml_string(c.principal.principal_id)}",
                 f"role = {_toml_string(c.principal.role.value)}"]
        if c.principal.account and c.principal.account != c.principal.principal_id:
            lines.append(f"account = {_toml_string(c.principal.account)}")
        if c.sha256 is not None:
            lines.append(f"sha256 = {_toml_string(c.sha256)}")
        if c.certificate is not None:
            lines.append(f"certificate = {_toml_string(c.certificate)}")
        for key in ("issued", "expires", "revoked"):
            value = getattr(c, key)
            if value is not None:
                lines.append(f"{key} = {_toml_time(value)}")
        parts.append("\n".join(lines) + "\n")
    return "".join(parts)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One writer of the file at a time (a lock on its directory)."""
    directory = path.parent if str(path.parent) else Path(".")
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def write(path: Path, credentials: Iterable[Credential]) -> None:
    """Replace the file at once (a reader sees the old file or the new one, never half)."""
    text = render(credentials)
    parse(text, str(path))  # never write a file the server would refuse
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise


def issue(path: Path, principal_id: str, role: Role, *, account: str | None = None,
          expires: datetime | None = None, certificate: str | None = None,
          now: datetime | None = None) -> tuple[Credential, str | None]:
    """Add a credential to the file: a new token (returned, once; only its hash is written) or
    a certificate name. The principal's other credentials stay (rotation)."""
    now = now or datetime.now(UTC)
    principal = principal_of(principal_id, role, account, str(path))
    if expires is not None and expires <= now:
        raise CredentialError("--expires: must be in the future")
    with _locked(path):
        known = read(path)
        for c in known:
            if c.principal.principal_id == principal_id and c.principal != principal:
                raise CredentialError(
                    f"{path}: principal {principal_id} is a {c.principal.role.value}"
                    + (f" bound to {c.principal.account}" if c.principal.account else "")
                    + "; a principal has one role")
        token = None if certificate else new_token()
        credential = Credential(
            id=new_credential_id(), principal=principal,
            sha256=None if token is None else token_hash(token),
            certificate=certificate, issued=now.replace(microsecond=0), expires=expires)
        write(path, [*known, credential])
    return credential, token


def revoke(path: Path, *, credential_id: str | None = None, principal_id: str | None = None,
           now: datetime | None = None) -> list[Credential]:
    """Mark a credential (or every credential of a principal) revoked: the revoked ones."""
    now = (now or datetime.now(UTC)).replace(microsecond=0)
    with _locked(path):
        known = read(path)
        chosen = [c for c in known if c.revoked is None and (
            c.id == credential_id or c.principal.principal_id == principal_id)]
        if not chosen:
            what = credential_id or f"principal {principal_id}"
            raise CredentialError(f"{path}: no active credential {what}")
        ids = {c.id for c in chosen}
        write(path, [replace(c, revoked=now) if c.id in ids else c for c in known])
    return [replace(c, revoked=now) for c in chosen]


def check_private(path: Path) -> None:
    """Refuse a credentials file someone other than this user or root owns, or others may
    write (they could add a credential), or one in a directory they may write (they could
    replace it) unless sticky: as ssh's StrictModes (``services/files.py``)."""
    try:
        check_trusted(path, folder=True)
    except FileTrustError as exc:
        raise CredentialError(str(exc)) from None


def check_present(path: Path) -> None:
    """Refuse a credentials file that does not exist (a server started on it would hold no
    principals until someone, anyone, made it), and one ``check_private`` refuses."""
    if not path.is_file():
        raise CredentialError(
            f"{path}: no such credentials file; make it with `sabot credentials issue "
            f"--credentials {path} --principal ID --role ROLE`, or fix the path")
    check_private(path)


# --- the server's keyring ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Index:
    by_digest: dict[bytes, Credential]  # active or expired (expiry is checked per call)
    revoked: dict[bytes, Credential]
    by_name: dict[str, Credential]  # certificate names (not revoked)
    count: int


def _index(credentials: Iterable[Credential]) -> _Index:
    by_digest: dict[bytes, Credential] = {}
    revoked: dict[bytes, Credential] = {}
    by_name: dict[str, Credential] = {}
    count = 0
    for c in credentials:
        count += 1
        if c.sha256 is not None:
            (revoked if c.revoked is not None else by_digest)[bytes.fromhex(c.sha256)] = c
        elif c.certificate is not None and c.revoked is None:
            by_name.setdefault(c.certificate, c)
    return _Index(by_digest, revoked, by_name, count)


class Keyring:
    """The credentials the server accepts now. Thread-safe: a reload swaps the whole index and
    bumps ``generation`` (the interceptor's cached decisions are then made again)."""

    def __init__(self, fixed: Iterable[Credential] = (), path: Path | None = None,
                 on_event: Callable[[str, dict[str, Any]], None] | None = None) -> None:
        self._fixed = list(fixed)
        self.path = path
        self.generation = 0
        self._on_event = on_event or (lambda event, fields: None)
        self._lock = threading.Lock()
        self._seen: tuple[int, int, int] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._index = _index(self._fixed)
        if path is not None:
            self._load(initial=True)

    @classmethod
    def of_tokens(cls, tokens: Mapping[str, Principal]) -> Keyring:
        return cls(from_tokens(tokens))

    # lookups (any thread)

    def token(self, token: str) -> Credential | None:
        """The credential of a bearer token (revoked ones included: see ``Credential.state``),
        or None. Looked up by the token's SHA-256, then compared in constant time."""
        digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
        index = self._index
        found = index.by_digest.get(digest) or index.revoked.get(digest)
        if found is None or found.sha256 is None:
            return None
        if not hmac.compare_digest(bytes.fromhex(found.sha256), digest):
            return None
        return found

    def certificate(self, names: Iterable[str]) -> Credential | None:
        """The credential mapped to a client certificate's CN or SANs (the first that maps)."""
        by_name = self._index.by_name
        for name in names:
            found = by_name.get(name)
            if found is not None:
                return found
        return None

    @property
    def has_certificates(self) -> bool:
        return bool(self._index.by_name)

    @property
    def empty(self) -> bool:
        return self._index.count == 0

    def credentials(self) -> list[Credential]:
        index = self._index
        return [*index.by_digest.values(), *index.revoked.values(), *index.by_name.values()]

    # reloads

    def reload(self) -> bool:
        """Read the file again (SIGHUP): True when it was read; a file that does not parse is
        refused and the credentials in force stay (logged)."""
        return self._load(initial=False)

    def _stat(self) -> tuple[int, int, int] | None:
        assert self.path is not None
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def _load(self, *, initial: bool) -> bool:
        if self.path is None:
            return False
        with self._lock:
            seen = self._stat()
            try:
                if initial:
                    check_present(self.path)
                check_private(self.path)
                if not initial and seen is not None and seen[1] == 0:
                    # an empty file is a write caught half-done (``write`` replaces the file
                    # at once, and never leaves it empty: it starts with HEADER), not an order
                    # to refuse every caller; removing every credential is ``revoke``'s
                    raise CredentialError(f"{self.path}: the file is empty")
                loaded = read(self.path)
            except CredentialError as exc:
                if initial:
                    raise
                self._seen = seen
                self._on_event("credentials reload refused; the credentials in force stay",
                               {"level": "error", "error": str(exc)})
                return False
            self._index = _index([*self._fixed, *loaded])
            self.generation += 1
            self._seen = seen
        if not initial:
            active = sum(1 for c in loaded if c.revoked is None)
            self._on_event("credentials reloaded", {"level": "info", "file": str(self.path),
                                                    "credentials": len(loaded),
                                                    "active": active})
        return True

    def changed(self) -> bool:
        """Whether the file changed since it was last read."""
        return self.path is not None and self._stat() != self._seen

    def look(self, pending: tuple[int, int, int] | None) -> tuple[int, int, int] | None:
        """One look of the watcher: the file is read again once a change has held still from
        one look to the next (``pending``: what the last look saw changed), so that a file
        seen in the middle of an editor's write (truncated, half written) is never read; the
        change to remember for the next look (None: nothing pending)."""
        if self.path is None:
            return None
        now = self._stat()
        if now == self._seen:
            return None
        if now == pending:
            self.reload()
            return None
        return now

    def watch(self, interval: float = WATCH_SECONDS) -> None:
        """Read the file again whenever it changes (a thread looks every ``interval``)."""
        if self.path is None or self._thread is not None:
            return

        def run() -> None:
            pending: tuple[int, int, int] | None = None
            while not self._stop.wait(interval):
                pending = self.look(pending)

        self._thread = threading.Thread(target=run, name="sabot-credentials", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
