"""Every ``SABOT_*`` setting, read in one place: its variable, its flag, its format, its default
and the commands that read it (``SETTINGS``, the table README.md shows), and ``Settings``, what
one command was given.

A value comes from the command's flag, else the environment, else the ``.env`` file
(``--env-file``, ``SABOT_ENV_FILE``; a missing file is no file), else the default. A command
reads only the settings it names (``add_flags``/``reads`` record them on its parser), so a bad
value of a setting it does not read never stops it. Keys are read by one function,
``read_key``: 64 hex digits, or the path of a file holding them, and for a private key also a
PEM file. An error is one line naming the variable and the flag, and it never holds the value
of a secret (a key, a token, a store URL's password): not even a wrong one, which may be a
right one mistyped.

Old names stay for one release as aliases: ``SABOT_STORE_URL`` of ``SABOT_STORE``,
``SABOT_REGULATOR_KEY`` of ``SABOT_REGULATOR_PUBLIC_KEY``, and the hidden flags of
``Setting.flag_aliases``.
"""

from __future__ import annotations

import argparse
import enum
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from domain.errors import InvalidArgument
from services.api.config import ConfigError, token_entries
from services.api.credentials import Credential, CredentialError, check_token
from services.api.roles import Principal
from services.api.stream_quota import DEFAULT_PER_PRINCIPAL
from services.files import FileTrustError, check_trusted, read_env_file
from services.ledger.config import DEFAULT_MAX_OVERFLOW, store_env
from services.projections import gamingday
from services.projections.gamingday import GamingDay

DEFAULT_STORE = "sqlite:///var/sabot.db"
DEFAULT_LISTEN = "127.0.0.1:50051"
DEFAULT_TARGET = "127.0.0.1:50051"
DEFAULT_ENV_FILE = ".env"
DEFAULT_WORKERS = 32
EVERY_COMMAND = "every command"  # read_by: the settings every command reads
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")


class SettingError(ConfigError):
    """A setting that cannot be used: one line naming the variable and the flag, never a
    secret's value. (A ``ConfigError``, so the server's handlers of that error see it.)"""


# --- keys -----------------------------------------------------------------------------------


class KeyKind(enum.Enum):
    """What a key setting holds; every kind is read from 64 hex digits or a file holding them,
    a private one also from a PEM file."""

    SEAL = "a 32-byte AES-256-GCM key"
    ED25519_PRIVATE = "an Ed25519 private key"
    ED25519_PUBLIC = "an Ed25519 public key"
    X25519_PUBLIC = "an X25519 public key"
    X25519_PRIVATE = "an X25519 private key"

    @property
    def private(self) -> bool:
        return self in (KeyKind.ED25519_PRIVATE, KeyKind.X25519_PRIVATE)

    @property
    def secret(self) -> bool:
        """A private key or the seal key: never a NAME.pub file."""
        return self.private or self is KeyKind.SEAL

    @property
    def pem(self) -> bool:
        return self is not KeyKind.SEAL

    @property
    def shape(self) -> str:
        """How it is written, as an error says it."""
        if self.private:
            return "64 hex digits, or the path of a file holding them or a PEM private key"
        if self.pem:
            return "64 hex digits, or the path of a file holding them (NAME.pub) or a PEM key"
        return "64 hex digits, or the path of a file holding them"


def read_key(text: str, kind: KeyKind) -> bytes:
    """The raw 32 bytes of a key given as 64 hex digits, the path of a file holding them, or
    (not for a seal key) the path of a PEM file. ValueError with the reason, which never holds
    ``text`` nor what the file holds (a path is named only once it is known to be a file)."""
    text = text.strip()
    if not text:
        raise ValueError(f"empty: {kind.shape}")
    if _HEX64.fullmatch(text):
        return _checked(bytes.fromhex(text), kind)
    path = Path(text)
    try:
        is_file = path.is_file()
    except (OSError, ValueError):  # a name too long for a path, a NUL byte: not a file
        is_file = False
    if not is_file:
        raise ValueError(f"not {kind.value}: {kind.shape}")
    if kind.secret and path.suffix == ".pub":
        raise ValueError(f"{path}: a public key (NAME.pub) given for {kind.value}; give the "
                         "private half of the pair (NAME.key)" if kind.private else
                         f"{path}: a public key (NAME.pub) given for {kind.value}")
    try:
        check_trusted(path, folder=True, what="the key file")
    except FileTrustError as exc:
        raise ValueError(str(exc)) from None
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"{path}: cannot read it: {exc.strerror}") from None
    if data.lstrip().startswith(b"-----BEGIN"):
        if not kind.pem:
            raise ValueError(f"{path}: a PEM file; {kind.value} is {kind.shape}")
        return _from_pem(data, path, kind)
    raw = data.decode("ascii", "replace").strip()
    if not _HEX64.fullmatch(raw):
        raise ValueError(f"{path}: does not hold 64 hex digits ({kind.value})")
    if kind.secret and _same_as_pub(path, raw):
        raise ValueError(f"{path}: holds the public key of {path.with_suffix('.pub').name}; "
                         f"{kind.value} is the private half of the pair")
    return _checked(bytes.fromhex(raw), kind)


def _same_as_pub(path: Path, raw: str) -> bool:
    """Whether the key file beside ``path`` named NAME.pub holds the same 64 hex digits (a
    public key copied over the private one)."""
    try:
        beside = path.with_suffix(".pub").read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return beside.lower() == raw.lower()


def _checked(raw: bytes, kind: KeyKind) -> bytes:
    from cryptography.hazmat.primitives.asymmetric import ed25519, x25519

    try:
        if kind is KeyKind.ED25519_PUBLIC:
            ed25519.Ed25519PublicKey.from_public_bytes(raw)
        elif kind is KeyKind.X25519_PUBLIC:
            x25519.X25519PublicKey.from_public_bytes(raw)
    except ValueError:
        raise ValueError(f"not {kind.value}") from None
    return raw


def _from_pem(data: bytes, path: Path, kind: KeyKind) -> bytes:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519, x25519

    wrong = f"{path}: not {kind.value} (a PEM file as the key pair's command writes it, " \
            "unencrypted)"
    try:
        if kind.private:
            private = serialization.load_pem_private_key(data, password=None)
        else:
            public = serialization.load_pem_public_key(data)
    except (ValueError, TypeError):
        raise ValueError(wrong) from None
    if kind is KeyKind.ED25519_PRIVATE and isinstance(private, ed25519.Ed25519PrivateKey):
        return private.private_bytes_raw()
    if kind is KeyKind.X25519_PRIVATE and isinstance(private, x25519.X25519PrivateKey):
        return private.private_bytes_raw()
    if kind is KeyKind.ED25519_PUBLIC and isinstance(public, ed25519.Ed25519PublicKey):
        return public.public_bytes_raw()
    if kind is KeyKind.X25519_PUBLIC and isinstance(public, x25519.X25519PublicKey):
        return public.public_bytes_raw()
    raise ValueError(wrong)


def public_of(private: bytes, kind: KeyKind = KeyKind.ED25519_PRIVATE) -> bytes:
    """The raw public key of a raw private key (Ed25519 or X25519)."""
    from cryptography.hazmat.primitives.asymmetric import ed25519, x25519

    if kind is KeyKind.X25519_PRIVATE:
        return x25519.X25519PrivateKey.from_private_bytes(private).public_key().public_bytes_raw()
    return ed25519.Ed25519PrivateKey.from_private_bytes(private).public_key().public_bytes_raw()


def redact_url(url: str) -> str:
    """A store URL with its password replaced by ``***`` (what an error or a log may show):
    the user's (``//user:***@``) and libpq's ``?password=***``; hosts, ports and the other
    parameters as given (several hosts too)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(a store URL that cannot be read)"
    userinfo, at, hosts = parts.netloc.rpartition("@")
    netloc = parts.netloc
    if at and ":" in userinfo:
        netloc = f"{userinfo.partition(':')[0]}:***@{hosts}"
    query = "&".join(
        f"{item.partition('=')[0]}=***" if unquote(item.partition("=")[0]) == "password"
        else item for item in parts.query.split("&")) if parts.query else ""
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit(parts._replace(netloc=netloc, query=query))


# --- the settings' values -------------------------------------------------------------------


@dataclass(frozen=True)
class Tokens:
    """``SABOT_TOKENS``: clear ``token:role[:account]`` entries and hashed
    ``sha256:HEX:role[:account]`` ones; ``where``: the file they came from (None: the
    environment or the flag)."""

    clear: Mapping[str, Principal] = field(default_factory=dict, repr=False)
    hashed: tuple[Credential, ...] = ()
    where: Path | None = None

    def __bool__(self) -> bool:
        return bool(self.clear or self.hashed)

    def for_server(self) -> tuple[dict[str, Principal], tuple[Credential, ...]]:
        """What ``sabot serve`` may take: clear tokens of at least 128 bits, and only from the
        environment or the flag (a file holds hashes); SettingError otherwise."""
        if self.clear and self.where is not None:
            raise SettingError(
                f"SABOT_TOKENS in {self.where}: a clear token in a file; put its hash there "
                "(sha256:HEX:role, see `sabot credentials hash`) or use SABOT_CREDENTIALS")
        for token, who in self.clear.items():
            whose = who.role.value + (f":{who.account}" if who.account else "")
            try:
                check_token(token, f"SABOT_TOKENS ({whose})")
            except CredentialError as exc:
                raise SettingError(str(exc)) from None
        return dict(self.clear), self.hashed


# --- the table ------------------------------------------------------------------------------

Parse = Callable[[str], Any]


@dataclass(frozen=True)
class Setting:
    """One row of the settings table.

    ``name`` is the field of ``Settings`` (and the flag's ``dest``); ``variable`` the
    environment variable (None: a flag only, never read from the environment); ``flag`` the
    command-line flag (None: the environment only); ``format`` and ``default`` as a person reads
    them; ``read_by`` the commands that read it. ``parse`` turns the text into the value
    (ValueError with a reason that never holds the text of a ``secret``). ``aliases``: old
    variable names, read when the variable is unset; ``flag_aliases``: hidden old flags;
    ``switch``: the flag takes no value and stands for this text; ``many``: a repeatable flag,
    comma-separated in the variable."""

    name: str
    variable: str | None
    flag: str | None
    format: str
    default: str
    read_by: tuple[str, ...]
    parse: Parse = str
    secret: bool = False
    aliases: tuple[str, ...] = ()
    flag_aliases: tuple[str, ...] = ()
    switch: str | None = None
    many: bool = False
    metavar: str | None = None
    help: str = ""

    @property
    def names(self) -> str:
        """The variable and the flag, as an error names them."""
        return " / ".join(n for n in (self.variable, self.flag) if n)


def _text(value: str) -> str:
    if not value.strip():
        raise ValueError("empty")
    return value.strip()


def _address(value: str) -> str:
    """HOST:PORT (or a gRPC target with a scheme, ``unix:PATH``); the error never shows the
    value (a key pasted in the wrong place would be printed back)."""
    value = value.strip()
    host, colon, port = value.rpartition(":")
    scheme = value.partition(":")[0] in ("unix", "unix-abstract", "dns", "ipv4", "ipv6")
    if not value or any(c.isspace() for c in value) or not (
            scheme or (colon and host and port.isdigit())):
        raise ValueError("not HOST:PORT")
    return value


def _otlp(value: str) -> str:
    """An OTLP/gRPC collector: ``http://HOST:PORT`` (plaintext) or ``https://HOST:PORT``; the
    error never shows the value."""
    value = value.strip()
    scheme, sep, rest = value.partition("://")
    host, colon, port = rest.rstrip("/").rpartition(":")
    if scheme not in ("http", "https") or not sep or not (colon and host and port.isdigit()) \
            or any(c.isspace() for c in value):
        raise ValueError("not http://HOST:PORT or https://HOST:PORT")
    return value


def _store(value: str) -> str:
    value = value.strip()
    try:
        store_env(value)
    except InvalidArgument as exc:
        raise ValueError(f"{exc.message}: sqlite:///PATH or postgresql://user@host:port/db "
                         "(or any URL libpq reads: docs/postgres.md)") from None
    except ValueError:  # urlsplit: a bad IPv6 host
        raise ValueError("not a store URL: sqlite:///PATH or postgresql://user@host:port/db "
                         "(or any URL libpq reads: docs/postgres.md)") from None
    return value


def _path(value: str) -> Path:
    return Path(_text(value))


def _head_file(value: str) -> str:
    """The writer's head file: a path; an existing file must be this user's or root's, and
    not writable by others (``services/files.py``): a planted head would hide a cut store."""
    text = _text(value)
    try:
        check_trusted(text, what="the head file")
    except FileTrustError as exc:
        raise ValueError(str(exc)) from None
    return text


def _whole(low: int, high: int) -> Parse:
    def parse(value: str) -> int:
        value = value.strip()
        if not value.isdigit() or not low <= int(value) <= high:
            raise ValueError(f"an integer {low}..{high}, got {value[:20]!r}")
        return int(value)

    return parse


def _seconds(low: float, high: float) -> Parse:
    def parse(value: str) -> float:
        try:
            seconds = float(value.strip())
        except ValueError:
            raise ValueError(f"seconds {low:g}..{high:g}, got {value[:20]!r}") from None
        if not low <= seconds <= high:
            raise ValueError(f"seconds {low:g}..{high:g}, got {value[:20]!r}")
        return seconds

    return parse


def _on_off(meaning: str) -> Parse:
    def parse(value: str) -> bool:
        text = value.strip().lower() or "on"
        if text not in ("on", "off"):
            raise ValueError(f"on ({meaning}) or off, got {value[:20]!r}")
        return text == "on"

    return parse


def _key(kind: KeyKind) -> Parse:
    return lambda value: read_key(value, kind)


def _keys(kind: KeyKind) -> Parse:
    def parse(value: str) -> tuple[bytes, ...]:
        return tuple(read_key(part, kind) for part in value.split(",") if part.strip())

    return parse


def _gaming_day(value: str) -> str:
    try:
        gamingday.parse(value, None)
    except InvalidArgument as exc:
        raise ValueError(exc.message) from None
    return value.strip()


def _shifts(value: str) -> str:
    try:
        gamingday.parse(None, value)
    except InvalidArgument as exc:
        raise ValueError(exc.message) from None
    return value.strip()


SITE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")


def site_id(value: str) -> str:
    """A site id (``SABOT_SITE``): 1 to 63 letters, digits, dots, underscores or dashes, the
    first a letter or a digit; compared exactly (``Lyon`` is not ``lyon``)."""
    value = value.strip()
    if not SITE.fullmatch(value):
        raise ValueError(f"a site id (1-63 letters, digits, '.', '_' or '-', the first a letter "
                         f"or a digit), got {value[:70]!r}")
    return value


def _role(value: str) -> str:
    value = value.strip()
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]{0,62}", value):
        raise ValueError(f"a PostgreSQL role name, got {value[:70]!r}")
    return value


def _roles(value: str) -> tuple[str, ...]:
    return tuple(_role(part) for part in value.split(",") if part.strip())


GRPC = ("table …", "shoe …", "coup …", "stake …", "account …", "report …", "regulator …",
        "health", "demo")
STORE = ("store …",)
_SERVE = ("serve",)
_TLS_CLIENT = (*GRPC, "serve --demo")
_PEM = "a PEM file"

SETTINGS: tuple[Setting, ...] = (
    Setting("store", "SABOT_STORE", "--store",
            "sqlite:///PATH or postgresql://user[:password]@host[:port]/db[?schema=S]",
            DEFAULT_STORE, (*_SERVE, *STORE), _store, secret=True,
            aliases=("SABOT_STORE_URL",), metavar="URL", help="the event store"),
    Setting("read_store", "SABOT_READ_STORE", "--read-store",
            "a store URL as --store's: a streaming standby of it (PostgreSQL, a role that may "
            "only read), or a copy of its file (SQLite)", "none: every reader reads --store",
            (*_SERVE, "store projections …", "store report …", "store export", "store replay",
             "store proof"), _store, secret=True, metavar="URL",
            help="read the event log here (the read models' runner, reports, exports, replays, "
                 "proofs) and say how far behind --store it is; the writer, the notary and the "
                 "read models' rows stay on --store (docs/operations.md, Reads off the primary)"),
    Setting("listen", "SABOT_LISTEN", "--listen", "HOST:PORT", DEFAULT_LISTEN, _SERVE,
            _address, metavar="HOST:PORT", help="the address the server listens at"),
    Setting("target", "SABOT_TARGET", "--target", "HOST:PORT", DEFAULT_TARGET, GRPC, _address,
            metavar="HOST:PORT", help="the server's address"),
    Setting("token", "SABOT_TOKEN", "--token", "a bearer token", "none", GRPC, _text,
            secret=True, metavar="TOKEN", help="the caller's token"),
    Setting("tokens", "SABOT_TOKENS", "--tokens",
            "token:role[:account] or sha256:HEX:role[:account], comma-separated (a file "
            "holds hashes only)", "none", (*_SERVE, "demo"), secret=True,
            metavar="TOKEN:ROLE[:ACCOUNT],...", help="tokens given without a credentials file"),
    Setting("credentials", "SABOT_CREDENTIALS", "--credentials",
            "the credentials file (named principals, hashed tokens, certificate names)", "none",
            (*_SERVE, "credentials …"), _path, metavar="FILE",
            help="the server's named principals (`sabot credentials issue`); read again on "
                 "SIGHUP or when it changes"),
    Setting("seal_key", "SABOT_SEAL_KEY", "--seal-key", "32 bytes: " + KeyKind.SEAL.shape,
            "none (serve --dev: var/dev-seal.key)",
            (*_SERVE, "store rerun"), _key(KeyKind.SEAL), secret=True,
            metavar="KEY", help="the key that seals each shoe's seed"),
    Setting("checkpoint_key", "SABOT_CHECKPOINT_KEY", "--checkpoint-private-key",
            "Ed25519 private: " + KeyKind.ED25519_PRIVATE.shape, "none: no notary",
            (*_SERVE, "store checkpoint", "store export"), _key(KeyKind.ED25519_PRIVATE),
            secret=True, flag_aliases=("--checkpoint-key", "--key"), metavar="KEY",
            help="the notary's signing key (`sabot keys checkpoint`); store export needs none"),
    Setting("checkpoint_public_key", "SABOT_CHECKPOINT_PUBLIC_KEY", "--checkpoint-public-key",
            "Ed25519 public: " + KeyKind.ED25519_PUBLIC.shape,
            "from the private key when given, else the store's latest checkpoint",
            ("store export",), _key(KeyKind.ED25519_PUBLIC), metavar="KEY",
            help="the notary's public key (NAME.pub of `sabot keys checkpoint`)"),
    Setting("regulator_public_key", "SABOT_REGULATOR_PUBLIC_KEY", "--regulator-public-key",
            "X25519 public: " + KeyKind.X25519_PUBLIC.shape, "none: no escrow", _SERVE,
            _key(KeyKind.X25519_PUBLIC), aliases=("SABOT_REGULATOR_KEY",),
            flag_aliases=("--regulator-key",), metavar="KEY",
            help="every seed is escrowed to this regulator's key (`sabot keys regulator`)"),
    Setting("regulator_key", None, "--regulator-private-key",
            "X25519 private: " + KeyKind.X25519_PRIVATE.shape + " (the regulator's machine "
            "only: never an environment variable)", "none", ("store replay",),
            _key(KeyKind.X25519_PRIVATE), secret=True, flag_aliases=("--regulator-key",),
            metavar="KEY", help="the regulator's private key: opens the escrowed seeds"),
    Setting("workers", "SABOT_WORKERS", "--workers", "1..256", str(DEFAULT_WORKERS), _SERVE,
            _whole(1, 256), metavar="N", help="threads serving calls"),
    Setting("pg_pool_size", "SABOT_PG_POOL_SIZE", "--pg-pool-size", "1..200",
            "the workers, at most 20", _SERVE, _whole(1, 200), metavar="N",
            help="PostgreSQL: the connections each of the server's two pools keeps (the "
                 "writer's, and its process's reads); the total is logged at start"),
    Setting("pg_max_overflow", "SABOT_PG_MAX_OVERFLOW", "--pg-max-overflow", "0..200",
            str(DEFAULT_MAX_OVERFLOW), _SERVE, _whole(0, 200), metavar="N",
            help="PostgreSQL: the connections each pool may open beyond its size while busy"),
    Setting("projections", "SABOT_PROJECTIONS", "--projections", "on or off", "on", _SERVE,
            _on_off("a thread keeps the read models up to date"), metavar="on|off",
            help="keep the read models up to date in the server"),
    Setting("turn_clock", "SABOT_TURN_CLOCK", "--turn-clock", "on or off", "on", _SERVE,
            _on_off("the turn clock acts on the turns whose time ran out"), metavar="on|off",
            help="forfeit a Cuarenta match, stand for a Treinta y Una player, when the table's "
                 "turn time runs out (services/turn_clock.py)"),
    Setting("ledger_process", "SABOT_LEDGER_PROCESS", "--single-process",
            "on or off (--single-process: off)", "on", _SERVE,
            _on_off("the writer in a process of its own"), switch="off",
            help="run the ledger's writer in the server's process, not a process of its own"),
    Setting("gaming_day", gamingday.DAY_SETTING, "--gaming-day", "HH:MM ZONE (IANA)",
            "as the read models were built (first build: 06:00 UTC)",
            (*_SERVE, "store projections …", "store report …", "store reconcile"),
            _gaming_day, metavar="'HH:MM ZONE'", help="when the site's gaming day starts"),
    Setting("shifts", gamingday.SHIFTS_SETTING, "--shifts",
            f"1..{gamingday.MAX_SHIFTS}, dividing the day into whole minutes",
            "as the read models were built (first build: 3)",
            (*_SERVE, "store projections …", "store report …", "store reconcile"), _shifts,
            metavar="N", help="equal shifts in the gaming day"),
    Setting("env_file", "SABOT_ENV_FILE", "--env-file", "a path (a missing file is no file)",
            DEFAULT_ENV_FILE, (EVERY_COMMAND,), _path, metavar="FILE",
            help="read the settings from this file too"),
    Setting("metrics_listen", "SABOT_METRICS_LISTEN", "--metrics-listen", "HOST:PORT",
            "off", _SERVE, _address, metavar="HOST:PORT",
            help="serve Prometheus metrics (/metrics) and the health (/health) over HTTP at "
                 "this address"),
    Setting("web_listen", "SABOT_WEB_LISTEN", None, "HOST:PORT", "127.0.0.1:8080", ("web",),
            _address, metavar="HOST:PORT",
            help="the web console's address (sabot web --listen)"),
    Setting("store_timeout", "SABOT_STORE_TIMEOUT", "--store-timeout", "seconds, 0.5..600",
            "5", _SERVE, _seconds(0.5, 600), metavar="SECONDS",
            help="the longest a call waits for the store before it is answered UNAVAILABLE "
                 "(retry with the same request id); the PostgreSQL connect, lock and statement "
                 "timeouts are derived from it"),
    Setting("otlp_endpoint", "SABOT_OTLP_ENDPOINT", "--otlp-endpoint",
            "http://HOST:PORT or https://HOST:PORT (an OTLP/gRPC collector)", "off: no traces",
            _SERVE, _otlp, metavar="URL",
            help="export OpenTelemetry traces (a span per RPC and its ledger command, in both "
                 "processes) by OTLP/gRPC to this collector"),
    Setting("tls_cert", "SABOT_TLS_CERT", "--tls-cert", _PEM + ": the certificate chain",
            "none: plaintext, loopback only", _SERVE, _path, metavar="FILE",
            help="serve TLS with this certificate chain"),
    Setting("tls_key", "SABOT_TLS_KEY", "--tls-private-key", _PEM + ": the key of --tls-cert",
            "none", _SERVE, _path, flag_aliases=("--tls-key",), metavar="FILE",
            help="the private key of --tls-cert"),
    Setting("tls_client_ca", "SABOT_TLS_CLIENT_CA", "--tls-client-ca",
            _PEM + ": the CA of the clients' certificates", "none: no client certificates",
            _SERVE, _path, metavar="FILE", help="require client certificates signed by it (mTLS)"),
    Setting("insecure", None, "--insecure", "a switch", "off", _SERVE, _on_off("allowed"),
            switch="on", help="allow a plaintext listener on an address other than loopback"),
    Setting("tls_ca", "SABOT_TLS_CA", "--tls-ca", _PEM + ": the CA of the server's certificate",
            "none: plaintext", _TLS_CLIENT, _path, metavar="FILE",
            help="call the server over TLS, trusting this CA"),
    Setting("tls_client_cert", "SABOT_TLS_CLIENT_CERT", "--tls-client-cert",
            _PEM + ": this client's certificate", "none", _TLS_CLIENT, _path,
            flag_aliases=("--tls-cert",), metavar="FILE", help="mTLS: this client's certificate"),
    Setting("tls_client_key", "SABOT_TLS_CLIENT_KEY", "--tls-client-private-key",
            _PEM + ": the key of --tls-client-cert", "none", _TLS_CLIENT, _path,
            flag_aliases=("--tls-client-key", "--tls-key"), metavar="FILE",
            help="mTLS: its private key"),
    Setting("streams_per_principal", "SABOT_STREAMS_PER_PRINCIPAL", None, "1..1024",
            str(DEFAULT_PER_PRINCIPAL), _SERVE, _whole(1, 1024),
            help="streams one principal may hold open at once"),
    Setting("chain_key", "SABOT_CHAIN_KEY", "--chain-private-key",
            "Ed25519 private: " + KeyKind.ED25519_PRIVATE.shape,
            "none: required by serve (serve --dev: var/dev-chain.key)", _SERVE,
            _key(KeyKind.ED25519_PRIVATE), secret=True, flag_aliases=("--chain-key",),
            metavar="KEY",
            help="the key that signs the ledger's evidence chain (NAME.key of `sabot keys "
                 "chain`)"),
    Setting("chain_public_keys", "SABOT_CHAIN_PUBLIC_KEY", "--chain-public-key",
            "Ed25519 public: " + KeyKind.ED25519_PUBLIC.shape + "; repeatable, comma-separated "
            "in the variable", "the key the chain's first link introduces",
            ("store checkpoint", "store export", "store replay"), _keys(KeyKind.ED25519_PUBLIC),
            flag_aliases=("--chain-key",), many=True, metavar="KEY",
            help="a public key of the ledger's evidence chain, to check it against"),
    Setting("chain_head", "SABOT_CHAIN_HEAD", "--chain-head",
            "a path: the file the writer updates after each commit",
            "none (serve --dev: beside the store)", _SERVE, _head_file, metavar="FILE",
            help="the writer's head file (a store that lost its end is refused)"),
    Setting("site", "SABOT_SITE", "--site",
            "a site id: 1-63 letters, digits, '.', '_' or '-' (the first a letter or a digit)",
            "none: a single site (its store, checkpoints and exports name no site)",
            (*_SERVE, "store checkpoint", "store export"), site_id, metavar="SITE",
            help="the casino site this server writes for: its evidence chain's links and its "
                 "checkpoints name it, and a store another site's links name is refused "
                 "(docs/operations.md, \"Many sites\")"),
    Setting("server_role", None, "--server-role", "a PostgreSQL role name", "none",
            ("store init",), _role, metavar="ROLE",
            help="the role sabot serve connects as: it may read and insert, nothing more"),
    Setting("reader_roles", None, "--reader-role", "a PostgreSQL role name; repeatable", "none",
            ("store init",), _roles, many=True, metavar="ROLE",
            help="a role that may only read the event store"),
    Setting("debug", "SABOT_DEBUG", None, "1 or unset", "unset", (EVERY_COMMAND,),
            lambda v: v.strip() == "1", help="an unforeseen error shows its traceback"),
)
BY_NAME: Mapping[str, Setting] = {s.name: s for s in SETTINGS}
ALWAYS = tuple(s.name for s in SETTINGS if EVERY_COMMAND in s.read_by)
# The variables that are not settings of the ledger: the test suite's and the bench's knobs
# (their PostgreSQL server: tests/conftest.py, bench/_support.py), and the eventsourcing
# library's own setting for this app (services/ledger/schema.py).
NOT_SETTINGS = ("SABOT_REQUIRE_POSTGRES", "SABOT_BENCH_", "SABOT_CREATE_TABLE", "SABOT_PG_HOST",
                "SABOT_PG_PORT", "SABOT_PG_USER",
                # the Patroni test cluster's script (ops/patroni/cluster.py), not the server's
                "SABOT_HA_", "SABOT_PG_BIN")


@dataclass(frozen=True)
class Settings:
    """What one command was given (``load``); secrets are kept out of ``repr``."""

    store: str = DEFAULT_STORE
    read_store: str | None = None  # None: the readers read ``store``
    listen: str = DEFAULT_LISTEN
    target: str = DEFAULT_TARGET
    token: str | None = field(default=None, repr=False)
    tokens: Tokens = field(default_factory=Tokens, repr=False)
    credentials: Path | None = None
    seal_key: bytes | None = field(default=None, repr=False)
    checkpoint_key: bytes | None = field(default=None, repr=False)  # raw Ed25519 private
    checkpoint_public_key: bytes | None = None
    regulator_public_key: bytes | None = None  # raw X25519
    regulator_key: bytes | None = field(default=None, repr=False)  # raw X25519 private
    workers: int = DEFAULT_WORKERS
    pg_pool_size: int | None = None  # None: the workers, at most 20
    pg_max_overflow: int = DEFAULT_MAX_OVERFLOW
    projections: bool = True
    turn_clock: bool = True
    ledger_process: bool = True
    gaming_day: GamingDay | None = None  # None: as the read models were built
    env_file: Path = Path(DEFAULT_ENV_FILE)
    metrics_listen: str | None = None
    web_listen: str = "127.0.0.1:8080"
    store_timeout: float = 5.0
    otlp_endpoint: str | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_client_ca: Path | None = None
    insecure: bool = False
    tls_ca: Path | None = None
    tls_client_cert: Path | None = None
    tls_client_key: Path | None = None
    streams_per_principal: int = DEFAULT_PER_PRINCIPAL
    chain_key: bytes | None = field(default=None, repr=False)  # raw Ed25519 private
    chain_public_keys: tuple[bytes, ...] = ()
    chain_head: str | None = None
    site: str | None = None  # None: a single site, named nowhere
    server_role: str | None = None
    reader_roles: tuple[str, ...] = ()
    debug: bool = False
    # where each value that was given came from: "--store", "SABOT_STORE_URL", "SABOT_STORE in .env"
    sources: Mapping[str, str] = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        shown = []
        for f in fields(self):
            if not f.repr:
                continue
            value = getattr(self, f.name)
            if f.name in ("store", "read_store") and value is not None:
                value = redact_url(value)
            shown.append(f"{f.name}={value!r}")
        return f"Settings({', '.join(shown)})"

    @classmethod
    def load(cls, flags: Mapping[str, Any] | None = None,
             env: Mapping[str, str] | None = None, env_file: Path | str | None = "",
             only: Iterable[str] | None = None) -> Settings:
        """The settings ``only`` names (None: every one), each from ``flags`` (by setting name;
        None or empty: not given), else ``env`` (``os.environ`` when None), else the
        ``env_file`` (""/default: ``--env-file``, ``SABOT_ENV_FILE`` or ``.env``; None: no
        file), else its default. SettingError for a value that cannot be used."""
        flags = dict(flags or {})
        environment = os.environ if env is None else env
        wanted = set(BY_NAME if only is None else (*only, *ALWAYS))
        unknown = wanted - set(BY_NAME)
        if unknown:
            raise ValueError(f"no such setting: {', '.join(sorted(unknown))}")
        file = _env_file(flags, environment, env_file)
        from_file = _read_env_file(file) if file is not None else {}
        values: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for setting in SETTINGS:
            if setting.name not in wanted or setting.name == "env_file":
                continue
            found = _given(setting, flags, environment, from_file, file)
            if found is None:
                continue
            text, source, in_file = found
            values[setting.name] = _parse(setting, text, source, file if in_file else None)
            sources[setting.name] = source
        values["env_file"] = file if file is not None else Path(DEFAULT_ENV_FILE)
        day, shifts = values.pop("gaming_day", None), values.pop("shifts", None)
        if day is not None or shifts is not None:
            values["gaming_day"] = gamingday.parse(day, shifts)
        if "checkpoint_public_key" in wanted and "checkpoint_public_key" not in values:
            private = values.get("checkpoint_key")
            if private is not None:
                values["checkpoint_public_key"] = public_of(private)
        return cls(**values, sources=sources)

    @classmethod
    def from_args(cls, args: argparse.Namespace, env: Mapping[str, str] | None = None
                  ) -> Settings:
        """The settings a command's parser records (``add_flags``, ``reads``), from its
        parsed flags."""
        names = tuple(getattr(args, READS, ()) or ())
        flagged = tuple(getattr(args, FLAGS, ()) or ())
        return cls.load({n: getattr(args, n, None) for n in flagged}, env, only=names)

    def given(self, name: str) -> bool:
        return name in self.sources

    def require(self, *names: str) -> None:
        """SettingError naming the variable and the flag of the first of ``names`` not given."""
        for name in names:
            if getattr(self, name) in (None, (), ""):
                raise SettingError(f"{BY_NAME[name].names}: required")

    def replace(self, **changes: Any) -> Settings:
        return replace(self, **changes)


def _env_file(flags: Mapping[str, Any], env: Mapping[str, str],
              explicit: Path | str | None) -> Path | None:
    if explicit is None:
        return None
    if explicit != "":
        return Path(explicit)
    text = flags.get("env_file") or env.get("SABOT_ENV_FILE") or DEFAULT_ENV_FILE
    return Path(str(text))


def _read_env_file(file: Path) -> dict[str, str]:
    """The settings of the ``.env`` file (a missing file: none); SettingError for a file that
    someone other than this user or root owns or may write (it could name their credentials
    file, their store or their server)."""
    try:
        return read_env_file(file)
    except ValueError as exc:  # FileTrustError too
        raise SettingError(f"{exc} (SABOT_ENV_FILE / --env-file)") from None


def _given(setting: Setting, flags: Mapping[str, Any], env: Mapping[str, str],
           from_file: Mapping[str, str], file: Path | None) -> tuple[str, str, bool] | None:
    """The setting's text, where it came from and whether that is the file, if it was given
    anywhere."""
    if setting.flag is not None:
        value = flags.get(setting.name)
        if isinstance(value, list | tuple):
            value = ",".join(str(v) for v in value)
        elif isinstance(value, Path):
            value = str(value)
        if value not in (None, "", False):
            if value is True:
                value = setting.switch or "on"
            return str(value), setting.flag, False
    if setting.variable is None:
        return None
    names = (setting.variable, *setting.aliases)
    for where, source in ((env, None), (from_file, file)):
        present = [n for n in names if where.get(n, "").strip()]
        if not present:
            continue
        first = present[0]
        if any(where[n].strip() != where[first].strip() for n in present[1:]):
            raise SettingError(f"{setting.variable} and {', '.join(present[1:])} (its old name) "
                               f"are both set and differ; keep {setting.variable} only")
        if source is None:
            return where[first], first, False
        return where[first], f"{first} in {source}", True
    return None


def _is_file(text: str) -> bool:
    try:
        return Path(text).is_file()
    except (OSError, ValueError):
        return False


def _parse(setting: Setting, text: str, source: str, file: Path | None) -> Any:
    """The setting's value, or SettingError in one line naming where it came from, the other
    way to give it, and never the text of a secret. ``file``: the file it came from."""
    other = [n for n in (setting.flag, setting.variable) if n and not source.startswith(n)]
    also = f" ({'or ' + other[0]})" if other else ""
    if setting.name == "tokens":
        try:
            clear, hashed = token_entries(text, where=source)
        except ConfigError as exc:
            raise SettingError(f"{exc}{also}") from None
        return Tokens(clear, tuple(hashed), file)
    try:
        return setting.parse(text)
    except ValueError as exc:
        reason = str(exc)
        if setting.secret and text.strip() and text.strip() in reason \
                and not _is_file(text.strip()):  # never, but surely (a file's path is no secret)
            reason = "cannot be used"
        raise SettingError(f"{source}: {reason}{also}") from None


# --- flags ------------------------------------------------------------------------------------

READS = "settings_read"  # the parser default that records what a command reads
FLAGS = "settings_flags"  # ... and the settings it has the flags of


def add_flags(parser: argparse.ArgumentParser, *names: str) -> None:
    """The settings' flags on a command's parser, the same flag, help and default text on
    every command (each value resolved by ``Settings.from_args``: flag, environment, file,
    default), their old spellings hidden; and the record that the command reads them."""
    for name in names:
        setting = BY_NAME[name]
        if setting.flag is None:
            continue
        text = f"{setting.help}: {setting.format}" if setting.help else setting.format
        where = f"env {setting.variable}; " if setting.variable else ""
        help_text = f"{text} ({where}default: {setting.default})".replace("%", "%%")
        common: dict[str, Any] = {"dest": name, "default": None}
        if setting.switch is not None:
            common["action"] = "store_const"
            common["const"] = setting.switch
        elif setting.many:
            common["action"] = "append"
            common["metavar"] = setting.metavar
        else:
            common["metavar"] = setting.metavar
        parser.add_argument(setting.flag, help=help_text, **common)
        for alias in setting.flag_aliases:
            parser.add_argument(alias, help=argparse.SUPPRESS, **common)
        _record(parser, FLAGS, name)
    reads(parser, *names)
    if "env_file" not in names and not _has(parser, "--env-file"):
        add_flags(parser, "env_file")


def reads(parser: argparse.ArgumentParser, *names: str) -> None:
    """Record that the command reads ``names`` from the environment (and flags, if it has
    them): ``Settings.from_args`` loads those and no other."""
    for name in names:
        BY_NAME[name]
        _record(parser, READS, name)


def _record(parser: argparse.ArgumentParser, key: str, name: str) -> None:
    before = tuple(parser.get_default(key) or ())
    if name not in before:
        parser.set_defaults(**{key: (*before, name)})


def _has(parser: argparse.ArgumentParser, flag: str) -> bool:
    return any(flag in action.option_strings for action in parser._actions)


def settings_read(parser: argparse.ArgumentParser) -> tuple[str, ...]:
    """What a command's parser records that it reads (with what every command reads)."""
    names = tuple(parser.get_default(READS) or ())
    return names + tuple(n for n in ALWAYS if n not in names)


# --- the table as README.md shows it ----------------------------------------------------------


def markdown_table(rows: Sequence[Setting] = SETTINGS) -> str:
    """The settings table in Markdown (README.md holds it; a test keeps the two equal)."""
    lines = ["| variable | flag | format | default | read by |", "|---|---|---|---|---|"]

    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    for s in rows:
        variable = f"`{s.variable}`" if s.variable else "— (a flag only)"
        if s.aliases:
            variable += " (old name: " + ", ".join(f"`{a}`" for a in s.aliases) + ")"
        flag = f"`{s.flag}`" if s.flag else "—"
        if s.flag_aliases:
            flag += " (old: " + ", ".join(f"`{a}`" for a in s.flag_aliases) + ")"
        read_by = ", ".join(f"`{c}`" if c != EVERY_COMMAND else c for c in s.read_by) or \
            "not yet"
        lines.append(f"| {variable} | {flag} | {cell(s.format)} | {cell(s.default)} | "
                     f"{cell(read_by)} |")
    return "\n".join(lines) + "\n"


__all__ = [
    "ALWAYS", "BY_NAME", "NOT_SETTINGS", "SETTINGS", "KeyKind", "Setting", "SettingError",
    "Settings", "Tokens", "add_flags", "markdown_table", "public_of", "read_key", "reads",
    "redact_url", "settings_read", "site_id",
]
