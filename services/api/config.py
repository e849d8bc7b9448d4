"""Server configuration from the environment or a ``.env`` file (the environment wins)."""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from domain.errors import InvalidArgument
from services.api import credentials as creds
from services.api.credentials import Credential, CredentialError
from services.api.roles import Principal, Role
from services.api.stream_quota import DEFAULT_PER_PRINCIPAL
from services.projections import gamingday
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


def load(
    env: Mapping[str, str] | None = None,
    dotenv: Path | None = Path(".env"),
    *,
    listen: str | None = None,
    store: str | None = None,
) -> Config:
    """The configuration: explicit arguments, then the environment, then the .env file."""
    values: dict[str, str] = read_dotenv(dotenv) if dotenv is not None else {}
    values.update(os.environ if env is None else env)
    key_text = values.get("SABOT_SEAL_KEY", "").strip()
    seal_key: bytes | None = None
    if key_text:
        try:
            seal_key = bytes.fromhex(key_text)
        except ValueError:
            raise ConfigError("SABOT_SEAL_KEY: not hexadecimal") from None
        if len(seal_key) not in (16, 24, 32):
            raise ConfigError("SABOT_SEAL_KEY: must be 16, 24 or 32 bytes (32, 48 or 64 hex)")
    checkpoint_key = _key_setting(values, "SABOT_CHECKPOINT_KEY", private=True)
    regulator_key = _key_setting(values, "SABOT_REGULATOR_KEY", private=False)
    chain_key = _key_setting(values, "SABOT_CHAIN_KEY", private=True)
    workers_text = values.get("SABOT_WORKERS", "32")
    if not workers_text.isdigit() or not 1 <= int(workers_text) <= 256:
        raise ConfigError("SABOT_WORKERS: an integer 1..256")
    projections_text = values.get("SABOT_PROJECTIONS", "on").strip().lower() or "on"
    if projections_text not in ("on", "off"):
        raise ConfigError("SABOT_PROJECTIONS: on (a thread follows the log) or off")
    ledger_process_text = values.get("SABOT_LEDGER_PROCESS", "on").strip().lower() or "on"
    if ledger_process_text not in ("on", "off"):
        raise ConfigError("SABOT_LEDGER_PROCESS: on (the writer in its own process) or off")
    try:
        gaming_day = gamingday.given(values)
    except InvalidArgument as exc:
        raise ConfigError(f"{exc.field}: {exc.message}") from None
    environment = os.environ if env is None else env
    tokens_text = values.get("SABOT_TOKENS", "")
    tokens, hashed = token_entries(tokens_text, strict=True)
    if tokens and "SABOT_TOKENS" not in environment:
        raise ConfigError(f"SABOT_TOKENS in {dotenv}: a clear token in a file; put its hash "
                          "there (sha256:HEX:role, see `sabot credentials hash`) or use "
                          "SABOT_CREDENTIALS")
    streams_text = values.get("SABOT_STREAMS_PER_PRINCIPAL", str(DEFAULT_PER_PRINCIPAL)).strip()
    if not streams_text.isdigit() or not 1 <= int(streams_text) <= 1024:
        raise ConfigError("SABOT_STREAMS_PER_PRINCIPAL: an integer 1..1024")
    return Config(
        listen=listen or values.get("SABOT_LISTEN") or DEFAULT_LISTEN,
        store=store or values.get("SABOT_STORE") or DEFAULT_STORE,
        tokens=tokens,
        credentials=tuple(hashed),
        credentials_file=_path(values, "SABOT_CREDENTIALS"),
        tls_cert=_path(values, "SABOT_TLS_CERT"),
        tls_key=_path(values, "SABOT_TLS_KEY"),
        tls_client_ca=_path(values, "SABOT_TLS_CLIENT_CA"),
        streams_per_principal=int(streams_text),
        seal_key=seal_key,
        workers=int(workers_text),
        checkpoint_key=checkpoint_key,
        regulator_key=regulator_key,
        chain_key=chain_key,
        chain_head=values.get("SABOT_CHAIN_HEAD", "").strip() or None,
        projections=projections_text == "on",
        ledger_process=ledger_process_text == "on",
        gaming_day=gaming_day,
    )


def _path(values: Mapping[str, str], name: str) -> Path | None:
    text = values.get(name, "").strip()
    return Path(text) if text else None


def _key_setting(values: Mapping[str, str], name: str, *, private: bool) -> bytes | None:
    """A 32-byte key: 64 hex digits, or the path of a file holding them (the checkpoint key:
    also a PEM Ed25519 private key file, as ``sabot checkpoint-keygen`` writes)."""
    text = values.get(name, "").strip()
    if not text:
        return None
    try:
        return read_key(text, private=private)
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc}") from None


def read_key(text: str, *, private: bool) -> bytes:
    """See ``_key_setting``; ValueError with the reason."""
    raw = text
    if len(text) != 64 or not all(c in "0123456789abcdefABCDEF" for c in text):
        path = Path(text)
        if not path.is_file():
            raise ValueError("64 hex digits, or the path of a key file")
        data = path.read_bytes()
        if private and data.lstrip().startswith(b"-----BEGIN"):
            from cryptography.hazmat.primitives import serialization
            from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

            key = serialization.load_pem_private_key(data, password=None)
            if not isinstance(key, Ed25519PrivateKey):
                raise ValueError(f"{path} is not an Ed25519 private key")
            return key.private_bytes_raw()
        raw = data.decode("ascii", "replace").strip()
    try:
        key_bytes = bytes.fromhex(raw)
    except ValueError:
        raise ValueError("not hexadecimal") from None
    if len(key_bytes) != 32:
        raise ValueError("must be 32 bytes (64 hex digits)")
    return key_bytes
