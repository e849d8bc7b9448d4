"""What the verifier trusts: the operator's public keys pinned by the regulator (flags or a trust
file) and the checkpoints the regulator received earlier (docs/export-format.md, "Trust").

Keys are read as 64 hex digits, a file holding them (``NAME.pub``) or a PEM public key; a
private key given where a public one is expected is refused, naming the flag. An earlier
checkpoint is the JSON ``sabot store checkpoint`` prints, a checkpoint record of an export, or
what ``sabot regulator checkpoint --format json`` prints (its ``tree_size``, ``root_hash`` and
``signature`` in the protobuf JSON mapping).
"""

from __future__ import annotations

import base64
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from sabot_verify.proofs import Bad, check_consistency, mth

TRUST_FORMAT = "SABOT-TRUST-1"

# Exit codes (docs/export-format.md, "Exit codes").
VERIFIED = 0
NOT_VERIFIED = 1
USAGE = 2
UNVERIFIABLE = 3
UNREADABLE = 4


class Unreadable(Exception):
    """A file named on the command line that cannot be read."""


def read_text(path: str, flag: str) -> str:
    try:
        return Path(path).read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise Unreadable(f"{flag} {path}: {reason}") from None


def _public_of_private(raw: bytes) -> bytes:
    return Ed25519PrivateKey.from_private_bytes(raw).public_key().public_bytes_raw()


def public_key(text: str, flag: str, known_public: set[bytes] | None = None) -> bytes:
    """A raw 32-byte Ed25519 public key from ``text``: 64 hex digits, a file holding them or a
    PEM public key. A PEM private key, or 64 hex digits that are the private half of a key the
    export names (``known_public``), are refused naming ``flag``."""
    path = Path(text)
    raw = read_text(text, flag).strip() if path.is_file() else text.strip()
    if raw.startswith("-----BEGIN"):
        if "PRIVATE KEY" in raw.split("\n", 1)[0]:
            raise Bad(f"{flag}: {text} is a PRIVATE key; give its public key (NAME.pub, or "
                      "64 hex digits)")
        try:
            key = serialization.load_pem_public_key(raw.encode())
        except ValueError:
            raise Bad(f"{flag}: not a PEM public key") from None
        if not isinstance(key, Ed25519PublicKey):
            raise Bad(f"{flag}: not an Ed25519 public key")
        return key.public_bytes_raw()
    try:
        key_bytes = bytes.fromhex(raw)
    except ValueError:
        raise Bad(f"{flag}: expected 64 hex digits, a file holding them or a PEM public "
                  "key") from None
    if len(key_bytes) != 32:
        raise Bad(f"{flag}: expected 32 bytes (64 hex digits), got {len(key_bytes)}")
    if known_public and key_bytes not in known_public \
            and _public_of_private(key_bytes) in known_public:
        raise Bad(f"{flag}: this is the PRIVATE key of the export's key; give its public key")
    return key_bytes


@dataclass
class Trust:
    """The pinned keys and the earlier checkpoints; None or empty: not pinned."""

    checkpoint_key: bytes | None = None
    chain_keys: list[bytes] = field(default_factory=list)
    known: list[dict[str, Any]] = field(default_factory=list)
    site: str | None = None  # the site whose log this is (sabot_verify.site)


def load_trust(path: str) -> Trust:
    """A trust file (SABOT-TRUST-1, TOML or JSON): ``checkpoint_public_key`` (64 hex digits),
    ``chain_public_keys`` (a list: every key of the chain since it began) and, optionally,
    ``site`` (the site whose log it must be) and ``known_checkpoints`` (files, relative to the
    trust file)."""
    text = read_text(path, "--trust")
    try:
        data: Any = json.loads(text) if text.lstrip().startswith("{") else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise Bad(f"--trust {path}: neither TOML nor JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != TRUST_FORMAT:
        raise Bad(f"--trust {path}: not a {TRUST_FORMAT} file (format = \"{TRUST_FORMAT}\")")
    unknown = set(data) - {"format", "checkpoint_public_key", "chain_public_keys",
                           "known_checkpoints", "site"}
    if unknown:
        raise Bad(f"--trust {path}: unknown field(s) {sorted(unknown)}")
    trust = Trust()
    cpk = data.get("checkpoint_public_key")
    if cpk is not None:
        if not isinstance(cpk, str):
            raise Bad(f"--trust {path}: checkpoint_public_key: 64 hex digits")
        trust.checkpoint_key = public_key(cpk, "--trust checkpoint_public_key")
    chain = data.get("chain_public_keys", [])
    if not isinstance(chain, list) or not all(isinstance(k, str) for k in chain):
        raise Bad(f"--trust {path}: chain_public_keys: a list of 64 hex digits")
    trust.chain_keys = [public_key(k, "--trust chain_public_keys") for k in chain]
    if data.get("site") is not None:
        from sabot_verify.site import site_id

        trust.site = site_id(data["site"], f"--trust {path}: site")
    known = data.get("known_checkpoints", [])
    if not isinstance(known, list) or not all(isinstance(k, str) for k in known):
        raise Bad(f"--trust {path}: known_checkpoints: a list of file names")
    base = Path(path).parent
    trust.known = [load_checkpoint(str(base / k)) for k in known]
    return trust


def load_checkpoint(path: str) -> dict[str, Any]:
    """An earlier checkpoint as the export writes one: ``size``, ``root`` (hex), ``position``,
    ``coup``, ``origin``, ``key_id``, ``signature`` (hex)."""
    text = read_text(path, "--known-checkpoint")
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        if "tree_size" in data:  # sabot regulator checkpoint --format json (protobuf JSON)
            coup = data.get("coup_id") or None
            position = data.get("position")
            data = {
                "origin": str(data["origin"]), "size": int(data["tree_size"]),
                "root": base64.b64decode(data["root_hash"]).hex(),
                "position": None if position is None else int(position), "coup": coup,
                "key_id": str(data["key_id"]),
                "signature": base64.b64decode(data["signature"]).hex(),
            }
        cp = {k: data[k] for k in ("origin", "size", "root", "position", "coup", "key_id",
                                   "signature")}
        cp["size"] = int(cp["size"])
        bytes.fromhex(cp["root"])
    except (ValueError, KeyError, TypeError) as exc:
        raise Bad(f"--known-checkpoint {path}: not a signed checkpoint: {exc}") from None
    cp["file"] = path
    return cp


@dataclass
class KnownResult:
    """The earlier checkpoints against the export: failures (position or None, message), the
    ones that could not be checked, and the ones proven."""

    failures: list[tuple[int | None, str]] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    proven: list[int] = field(default_factory=list)


def check_known(known: list[dict[str, Any]], events: list[dict[str, Any]],
                checkpoints: list[dict[str, Any]], whole: bool, last_position: int | None
                ) -> KnownResult:
    """Each earlier checkpoint (its signature already checked) against the export's anchor:
    the log must still hold its ``size`` leaves and their tree head must be its ``root`` (from
    an exported checkpoint of that size, whose consistency with the anchor is proven, or
    recomputed from the leaves of a whole-log export)."""
    result = KnownResult()
    if not checkpoints:
        return result
    anchor = checkpoints[-1]
    n = int(anchor["size"])
    by_size = {int(c["size"]): c for c in checkpoints}
    for cp in known:
        m, root = int(cp["size"]), str(cp["root"])
        where = f"the checkpoint of size {m} received earlier ({cp.get('file', '?')})"
        if m > n:
            at = last_position + 1 if last_position is not None else None
            result.failures.append((at, f"{where}: the export's log holds {n} leaves, fewer: "
                                        "the log was truncated or rolled back"))
            continue
        if m in by_size:
            if by_size[m]["root"] != root:
                result.failures.append((None, f"{where}: the export's tree of that size has "
                                              "another root: the log was rewritten"))
            else:
                result.proven.append(m)
            continue
        carried = [k for k in anchor.get("known") or () if isinstance(k, dict)
                   and k.get("from") == m]
        if carried:  # the export carries the consistency proof from m (--known-size)
            try:
                check_consistency(m, n, bytes.fromhex(root), bytes.fromhex(anchor["root"]),
                                  [bytes.fromhex(p) for p in carried[0]["proof"]])
                result.proven.append(m)
            except (Bad, KeyError, TypeError, ValueError) as exc:
                result.failures.append((None, f"{where}: the export's log is not consistent "
                                              f"with it ({exc}): the log was rewritten"))
            continue
        if not whole:
            result.unchecked.append(f"{where}: this export neither holds its first {m} leaves, "
                                    "a checkpoint of that size nor a proof from it (export the "
                                    f"whole log, or with --known-size {m})")
            continue
        leaves = [r for r in events[:m] if isinstance(r.get("index"), int)]
        if len(leaves) < m or [r["index"] for r in leaves] != list(range(m)):
            result.unchecked.append(f"{where}: the export lacks some of its leaves")
            continue
        if mth([bytes.fromhex(r["leaf_hash"]) for r in leaves]).hex() != root:
            result.failures.append((None, f"{where}: the export's first {m} leaves do not hash "
                                          "to its root: the log before it was rewritten"))
        elif cp.get("position") is not None and leaves[-1].get("position") != cp["position"]:
            result.failures.append((leaves[-1].get("position"),
                                    f"{where}: its last leaf is at position {cp['position']}, "
                                    f"the export's at {leaves[-1].get('position')}"))
        else:
            result.proven.append(m)
    return result
