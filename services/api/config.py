"""What the server needs (``Config``), which ``sabot serve`` builds from the settings
(``services.settings.Settings``: the one settings reader, the flag, then the environment, then
the ``.env`` file); and what that reader uses of it: ``ConfigError``, the ``.env`` reader,
the ``SABOT_TOKENS`` parser."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from services.api import credentials as creds
from services.api.credentials import Credential, CredentialError
from services.api.roles import Principal, Role
from services.api.stream_quota import DEFAULT_PER_PRINCIPAL
from services.projections.gamingday import GamingDay

DEFAULT_LISTEN = "127.0.0.1:50051"
DEFAULT_STORE = "sqlite:///var/sabot.db"


class ConfigError(ValueError):
    """A configuration value that cannot be used; the message names the variable."""


@dataclass(frozen=True)
class Config:
    """What the server needs: where to listen, the store, the credentials and the seed-sealing
    key, TLS."""

    listen: str = DEFAULT_LISTEN
    store: str = DEFAULT_STORE
    # SABOT_READ_STORE: a standby of the store, where the read models' thread and the regulator's
    # RPCs read the log (None: the store); the writer and the notary stay on ``store``
    read_store: str | None = None
    # clear tokens held in memory (tests, --dev, SABOT_TOKENS from the environment): hashed
    # at start, never written anywhere
    tokens: Mapping[str, Principal] = field(default_factory=dict)
    credentials: tuple[Credential, ...] = ()  # hashed SABOT_TOKENS entries (sha256:HEX:role)
    credentials_file: Path | None = None  # SABOT_CREDENTIALS: named principals, reloaded
    tls_cert: Path | None = None  # SABOT_TLS_CERT: serve TLS with this chain ...
    tls_key: Path | None = None  # SABOT_TLS_KEY: ... and this key
    tls_client_ca: Path | None = None  # SABOT_TLS_CLIENT_CA: require client certificates (mTLS)
    insecure: bool = False  # --insecure: plaintext allowed on an address other than loopback
    streams_per_principal: int = DEFAULT_PER_PRINCIPAL  # SABOT_STREAMS_PER_PRINCIPAL
    seal_key: bytes | None = None
    workers: int = 32
    checkpoint_key: bytes | None = None  # Ed25519 private key (raw 32 bytes): the notary signs
    regulator_key: bytes | None = None  # the regulator's X25519 public key: seeds escrowed to it
    # the ledger's evidence chain: its Ed25519 signing key (raw 32 bytes; SABOT_CHAIN_KEY) and
    # the file where the writer keeps the last link it stored (SABOT_CHAIN_HEAD)
    chain_key: bytes | None = None
    chain_head: str | None = None
    projections: bool = True  # a thread keeps the read models up to date (SABOT_PROJECTIONS)
    ledger_process: bool = True  # `sabot serve`: the writer in a process of its own
    # (SABOT_LEDGER_PROCESS; off: one process)
    # the site's gaming day: SABOT_GAMING_DAY ("HH:MM ZONE") and SABOT_SHIFTS (equal shifts)
    gaming_day: GamingDay | None = None  # None: the setting the read models were built with


def read_dotenv(path: Path) -> dict[str, str]:
    """KEY=VALUE lines of a .env file, as docker compose and python-dotenv read them
    (``services.files.read_env_file``: refused when another user may have written it)."""
    from services.files import read_env_file

    try:
        return read_env_file(path)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def parse_tokens(text: str) -> dict[str, Principal]:
    """``token:role[:account]`` items, comma-separated. A player token must name its account.
    (Clear tokens, as tests and clients hold them; ``token_entries`` reads SABOT_TOKENS.)"""
    clear, _ = token_entries(text, hashed_allowed=False)
    return clear


def token_entries(text: str, *, hashed_allowed: bool = True, strict: bool = False,
                  where: str = "SABOT_TOKENS") -> tuple[dict[str, Principal], list[Credential]]:
    """SABOT_TOKENS: ``token:role[:account]`` (a clear token) or ``sha256:HEX:role[:account]``
    (a token's SHA-256, as ``sabot credentials hash`` prints it) items, comma-separated.
    ``strict``: a clear token of fewer than 128 bits is refused."""
    tokens: dict[str, Principal] = {}
    hashed: list[Credential] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        parts = item.split(":")
        digest = None
        if hashed_allowed and parts[0] == "sha256" and len(parts) in (3, 4):
            digest = parts[1].lower()
            if not creds.SHA256_HEX.fullmatch(digest):
                raise ConfigError(f"{where}: sha256:HEX needs 64 hex digits")
            parts = ["sha256", *parts[2:]]
        if len(parts) not in (2, 3) or not parts[0]:
            raise ConfigError(f"{where}: each item is token:role[:account]"
                              + (" or sha256:HEX:role[:account]" if hashed_allowed else ""))
        token, role_text = parts[0], parts[1]
        try:
            role = Role(role_text)
        except ValueError:
            known = ", ".join(r.value for r in Role)
            raise ConfigError(f"{where}: unknown role {role_text!r} ({known})") from None
        account = parts[2] if len(parts) == 3 else None
        if role is Role.PLAYER and not account:
            raise ConfigError(f"{where}: a player token must name its account")
        if role is not Role.PLAYER and account:
            raise ConfigError(f"{where}: only player tokens name an account ({role_text})")
        n = len(tokens) + len(hashed)
        label = account if account else f"{role.value}#{n}"
        principal = Principal(role=role, account=account, label=label)
        if digest is not None:
            if any(c.sha256 == digest for c in hashed):
                raise ConfigError(f"{where}: a token appears twice")
            hashed.append(Credential(id=f"k-env{n:04d}", principal=principal, sha256=digest,
                                     fixed=True))
            continue
        if token in tokens:
            raise ConfigError(f"{where}: a token appears twice")
        if strict:
            try:
                whose = role.value + (f":{account}" if account else "")
                creds.check_token(token, f"{where} ({whose})")
            except CredentialError as exc:
                raise ConfigError(str(exc)) from None
        tokens[token] = principal
    return tokens, hashed


def format_tokens(tokens: Mapping[str, Principal]) -> str:
    """The inverse of ``parse_tokens``."""
    items = []
    for token, who in tokens.items():
        items.append(f"{token}:{who.role.value}" + (f":{who.account}" if who.account else ""))
    return ",".join(items)


def demo_tokens(players: tuple[str, ...] = ()) -> dict[str, Principal]:
    """Fresh random tokens (128 bits), one per role, and one per named player account
    (development only: they live in memory and are printed, never written)."""
    tokens: dict[str, Principal] = {}
    for role in Role:
        if role is not Role.PLAYER:
            tokens[f"{role.value}-{secrets.token_hex(16)}"] = Principal(
                role, None, role.value, id=role.value)
    for account in players:
        tokens[f"player-{secrets.token_hex(16)}"] = Principal(Role.PLAYER, account, account,
                                                                id=account)
    return tokens
