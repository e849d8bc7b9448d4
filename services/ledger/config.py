"""Configuration of a ledger: the store URL, the seal key and the injected clock, ids and seeds."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote, urlparse
from uuid import UUID, uuid4

from domain.errors import InvalidArgument

APP_NAME = "sabot"  # the event table is ``sabot_events``

DEFAULT_MAX_OVERFLOW = 2  # a PostgreSQL pool's connections beyond its size, while busy

# The store URL's libpq parameters other than host, port, dbname, user and password (say
# target_session_attrs, sslmode), as a libpq connection string: the library has no setting for
# them, so every connection Sabot makes adds them (``libpq_params``).
LIBPQ = "POSTGRES_LIBPQ"

# Every PostgreSQL session Sabot opens for the ledger and the regulator's reads runs without
# the server's JIT compiler (libpq ``options``): their statements read a few rows by index, and
# a large log's stale statistics can cost a plan over jit_above_cost, whose compilation (45 ms
# seen on a 10^6-event log) is then paid before a read of 0.2 ms.
NO_JIT = "-c jit=off"

# libpq parameters a store URL may not set, and why: Sabot sets them itself, or they would
# replace the URL's hosts with others.
REFUSED_PARAMS = {
    "connect_timeout": "Sabot sets it from --store-timeout",
    "keepalives": "Sabot sets it from --store-timeout",
    "keepalives_idle": "Sabot sets it from --store-timeout",
    "keepalives_interval": "Sabot sets it from --store-timeout",
    "keepalives_count": "Sabot sets it from --store-timeout",
    "tcp_user_timeout": "Sabot sets it from --store-timeout",
    "options": "Sabot sets the server's timeouts through it",
    "replication": "a store is not a replication connection",
    "service": "name the hosts in the URL (a service file's would be replaced)",
}
CHOICES = {
    "target_session_attrs": ("any", "read-write", "read-only", "primary", "standby",
                             "prefer-standby"),
    "sslmode": ("disable", "allow", "prefer", "require", "verify-ca", "verify-full"),
    "load_balance_hosts": ("disable", "random"),
}


def _now() -> datetime:
    return datetime.now(tz=UTC)


def _seed() -> bytes:
    return secrets.token_bytes(32)


@dataclass(frozen=True)
class LedgerConfig:
    """``store_url``: ``sqlite:///path`` (the default embedded store) or
    ``postgresql://user[:password]@host[:port]/db`` (or any form libpq reads: several hosts,
    its query parameters; ``postgres_params``). ``seal_key``: 32 bytes for AES-256-GCM.
    ``regulator_key``: the regulator's raw 32-byte X25519 public key; when set, every shoe's
    seed is also sealed to it (SABOT-ESCROW-1) in ``Shoe.Shuffled.escrowed_seed``.
    ``writer_name``: how this ledger names itself to the others on the store while it holds the
    writer lease (e.g. the address its server listens at; default: its pid and host).
    ``chain_key``: the raw 32-byte Ed25519 private key that signs each batch's link
    (``services.ledger.evidence``; None: a key made for this process only, whose links a
    verifier can check only against the public key they introduce); ``chain_head``: the file
    where the writer keeps the last link it stored (outside the database: a store that lost
    its end is refused). ``evidence=False`` writes no links (for the bench's comparison only).
    ``site``: the casino site this ledger writes for (``SABOT_SITE``): every link it signs
    names it, and it refuses a store whose chain names another (None: a single site, named
    nowhere; it refuses a store that another site's links name)."""

    store_url: str = field(repr=False)  # may hold the store's password
    seal_key: bytes = field(repr=False)
    clock: Callable[[], datetime] = _now
    new_id: Callable[[], UUID] = uuid4
    new_seed: Callable[[], bytes] = _seed
    pool_size: int = 5
    max_overflow: int = DEFAULT_MAX_OVERFLOW
    extra_env: dict[str, str] = field(default_factory=dict)
    regulator_key: bytes | None = None
    writer_name: str = ""
    chain_key: bytes | None = field(default=None, repr=False)
    chain_head: str | None = None
    evidence: bool = True
    site: str | None = None

    def to_pipe(self) -> dict[str, Any]:
        """What a ledger process of its own is given of this config, as JSON through its pipe
        (``services.ledger.remote.LedgerProcess``; ``from_pipe`` reads it back): the store,
        the keys (hex), the pool, the writer's name, the head file, the store's environment.
        The injected clock, ids and seeds stay here: that process uses the real ones."""
        return {"store": self.store_url, "seal_key": self.seal_key.hex(),
                "regulator_key": self.regulator_key.hex() if self.regulator_key else "",
                "pool_size": self.pool_size, "max_overflow": self.max_overflow,
                "writer_name": self.writer_name,
                "chain_key": self.chain_key.hex() if self.chain_key else "",
                "chain_head": self.chain_head or "", "extra_env": dict(self.extra_env),
                "evidence": self.evidence, "site": self.site or ""}

    @classmethod
    def from_pipe(cls, given: Mapping[str, Any]) -> LedgerConfig:
        """The config ``to_pipe`` wrote (the ledger process's end of the pipe)."""
        return cls(
            store_url=str(given["store"]), seal_key=bytes.fromhex(str(given["seal_key"])),
            pool_size=int(given.get("pool_size", 5)),
            max_overflow=int(given.get("max_overflow", DEFAULT_MAX_OVERFLOW)),
            regulator_key=regulator_public_key(str(given.get("regulator_key") or "")),
            writer_name=str(given.get("writer_name") or ""),
            chain_key=bytes.fromhex(str(given.get("chain_key") or "")) or None,
            chain_head=str(given.get("chain_head") or "") or None,
            extra_env={str(k): str(v) for k, v in dict(given.get("extra_env") or {}).items()},
            evidence=bool(given.get("evidence", True)),
            site=str(given.get("site") or "") or None,
        )

    @classmethod
    def from_environ(cls, environ: dict[str, str] | None = None) -> LedgerConfig:
        """``SABOT_STORE_URL``, ``SABOT_SEAL_KEY`` (64 hex digits) and optionally
        ``SABOT_REGULATOR_KEY`` (the regulator's X25519 public key, 64 hex digits),
        ``SABOT_CHAIN_KEY`` (64 hex digits or a key file) and ``SABOT_CHAIN_HEAD`` (a path)."""
        env = dict(os.environ if environ is None else environ)
        url = env.get("SABOT_STORE_URL", "sqlite:///sabot.db")
        key_hex = env.get("SABOT_SEAL_KEY", "")
        try:
            key = bytes.fromhex(key_hex)
        except ValueError:
            raise InvalidArgument("SABOT_SEAL_KEY", "BAD_KEY", "must be hexadecimal") from None
        if len(key) != 32:
            raise InvalidArgument("SABOT_SEAL_KEY", "BAD_KEY", "must be 32 bytes (64 hex digits)")
        chain_text = env.get("SABOT_CHAIN_KEY", "").strip()
        chain_key = None
        if chain_text:
            from services.ledger.evidence import load_chain_key

            try:
                chain_key = load_chain_key(chain_text)
            except ValueError as exc:
                raise InvalidArgument("SABOT_CHAIN_KEY", "BAD_KEY", str(exc)) from None
        return cls(store_url=url, seal_key=key,
                   regulator_key=regulator_public_key(env.get("SABOT_REGULATOR_KEY", "")),
                   chain_key=chain_key, chain_head=env.get("SABOT_CHAIN_HEAD") or None,
                   site=env.get("SABOT_SITE", "").strip() or None)


def regulator_public_key(text: str, field: str = "SABOT_REGULATOR_KEY") -> bytes | None:
    """The regulator's X25519 public key from 64 hex digits (empty: None)."""
    text = text.strip()
    if not text:
        return None
    try:
        key = bytes.fromhex(text)
    except ValueError:
        raise InvalidArgument(field, "BAD_KEY", "must be hexadecimal") from None
    if len(key) != 32:
        raise InvalidArgument(field, "BAD_KEY", "must be 32 bytes (64 hex digits)")
    return key


def postgres_params(url: str) -> tuple[dict[str, str], str]:
    """A ``postgresql://`` store URL as libpq reads it (its own parser: ``PQconninfoParse``), and
    the schema of Sabot's own ``?schema=NAME`` (default ``public``). Every form libpq accepts
    is read as libpq reads it: several hosts with their ports (``//u@h1:5471,h2:5472/db``),
    ``?host=h1,h2&port=5471,5472``, and any of libpq's query parameters
    (``target_session_attrs``, ``sslmode``, ...); none is replaced by a default. Refused
    (``InvalidArgument`` naming the part, never showing the password): what libpq cannot
    read, an unknown parameter, one of ``REFUSED_PARAMS``, a port that is not a number, as
    many ports as hosts or one, a value ``CHOICES`` does not list, no database."""
    from psycopg import Error
    from psycopg.conninfo import conninfo_to_dict

    base, _, query = url.partition("?")
    schemas = [unquote(item.partition("=")[2]) for item in query.split("&")
               if unquote(item.partition("=")[0]) == "schema"]
    rest = "&".join(item for item in query.split("&")
                    if item and unquote(item.partition("=")[0]) != "schema")
    try:
        found = conninfo_to_dict(f"{base}?{rest}" if rest else base)
    except Error as exc:  # libpq's message may quote the password: only a parameter's name
        text = str(exc).strip()
        if text.startswith("invalid URI query parameter"):
            raise InvalidArgument("store_url", "BAD_URL",
                                  f"{text} (not a libpq connection parameter)") from None
        raise InvalidArgument("store_url", "BAD_URL", "not a URL libpq can read (its "
                              "percent-encoding, an IPv6 host's brackets)") from None
    params = {k: str(v) for k, v in found.items() if v is not None}
    for name, why in REFUSED_PARAMS.items():
        if name in params:
            raise InvalidArgument("store_url", "BAD_URL", f"{name}: not supported ({why})")
    for name, allowed in CHOICES.items():
        if name in params and params[name] not in allowed:
            raise InvalidArgument("store_url", "BAD_URL",
                                  f"{name}: {params[name]!r} is not one of {', '.join(allowed)}")
    if not params.get("dbname"):
        raise InvalidArgument("store_url", "BAD_URL", "postgresql URL needs a database")
    ports = params.get("port", "").split(",") if params.get("port") else []
    if any(p and not (p.isdigit() and 0 < int(p) < 65536) for p in ports):
        raise InvalidArgument("store_url", "BAD_URL", "port: each must be a number 1..65535")
    hosts = params.get("host", "").split(",") if params.get("host") else [""]
    if len(ports) > 1 and len(ports) != len(hosts):
        raise InvalidArgument("store_url", "BAD_URL",
                              f"port: {len(ports)} ports for {len(hosts)} hosts (one port, "
                              "or one for each host)")
    if len(schemas) > 1 or (schemas and not schemas[0]):
        raise InvalidArgument("store_url", "BAD_URL", "schema: give one schema name")
    return params, (schemas[0] if schemas else "public")


def libpq_params(env: Mapping[str, str]) -> dict[str, str]:
    """The libpq parameters ``store_env`` kept aside (``LIBPQ``): what every connection to the
    store adds to its host, port, database, user and password."""
    from psycopg.conninfo import conninfo_to_dict

    text = env.get(LIBPQ) or ""
    return {k: str(v) for k, v in conninfo_to_dict(text).items()} if text else {}


def store_env(url: str, pool_size: int = 5,
              max_overflow: int = DEFAULT_MAX_OVERFLOW) -> dict[str, str]:
    """The eventsourcing environment for a store URL (``?schema=NAME`` picks a PostgreSQL
    schema, default ``public``; the rest as libpq reads it, ``postgres_params``; no host:
    127.0.0.1, no port: 5432, no user: postgres); a PostgreSQL pool of ``pool_size``
    connections, and up to ``max_overflow`` more while it is busy."""
    if url.partition("://")[0].lower() in ("postgresql", "postgres"):
        return _postgres_env(url, pool_size, max_overflow)
    try:
        parsed = urlparse(url)
    except ValueError:  # an IPv6 host's brackets
        raise InvalidArgument("store_url", "BAD_URL", "not a store URL") from None
    if parsed.scheme == "sqlite":
        path = unquote(parsed.path)
        if url.startswith("sqlite:////"):
            path = "/" + path.lstrip("/")
        elif url.startswith("sqlite:///"):
            path = path[1:] if path.startswith("/") else path
        if not path:
            raise InvalidArgument("store_url", "BAD_URL", "sqlite URL needs a path")
        return {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": path}
    raise InvalidArgument(
        "store_url", "BAD_URL", f"unknown store {parsed.scheme!r} (sqlite or postgresql)"
    )


def _postgres_env(url: str, pool_size: int, max_overflow: int) -> dict[str, str]:
    params, schema = postgres_params(url)
    env = {
        "POSTGRES_SCHEMA": schema,
        "PERSISTENCE_MODULE": "eventsourcing.postgres",
        "POSTGRES_DBNAME": params.pop("dbname"),
        "POSTGRES_HOST": params.pop("host", "") or "127.0.0.1",
        "POSTGRES_PORT": params.pop("port", "") or "5432",
        "POSTGRES_USER": params.pop("user", "") or "postgres",
        "POSTGRES_PASSWORD": params.pop("password", ""),
        "POSTGRES_POOL_SIZE": str(pool_size),
        "POSTGRES_MAX_OVERFLOW": str(max_overflow),
        "POSTGRES_MAX_WAITING": "64",
        "POSTGRES_LOCK_TIMEOUT": "5",
        "POSTGRES_ENABLE_DB_FUNCTIONS": "n",
    }
    if params:
        from psycopg.conninfo import make_conninfo

        env[LIBPQ] = make_conninfo(**params)
    return env
