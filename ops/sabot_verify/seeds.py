"""How a shoe's seed is found: revealed by its ``Shoe.Closed``, else opened from its escrow with
the regulator's key (docs/export-format.md, "Escrow")."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from uuid import UUID

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from sabot_verify.proofs import Bad, open_escrow
from sabot_verify.shoe import commitment
from sabot_verify.shoes import SeedSource
from sabot_verify.topics import SHOE_CLOSED


def seeds(records: Iterable[dict[str, Any]], escrow: list[bytes],
          reg: X25519PrivateKey | None) -> SeedSource:
    """The seed of a shoe of ``records`` (its ``Shoe.Closed``), else opened from its
    escrow with the regulator's key ``reg`` (None: not pinned, the shoe stays pending);
    ``escrow``: the export's legacy escrow records."""
    revealed: dict[str, Any] = {}  # shoe id -> the seed its first Shoe.Closed reveals
    for r in records:
        ev = r.get("event")
        if ev and ev["topic"] == SHOE_CLOSED and ev["originator_id"] not in revealed:
            revealed[ev["originator_id"]] = ev["state"].get("seed")

    def seed_of(shoe_id: str, shuffled: dict[str, Any]) -> bytes | None:
        seed = revealed.get(shoe_id)
        if seed:
            return bytes.fromhex(seed)
        if reg is None:
            return None
        sealed = shuffled.get("escrowed_seed")  # Shoe.Shuffled v2: sealed with the shoe id
        if sealed:
            try:
                return open_escrow(bytes.fromhex(sealed), UUID(shoe_id), reg)
            except Bad:
                pass  # another regulator's key, or altered: the commitment check fails below
        for candidate in escrow:  # legacy escrow records: the commitment picks the seed
            try:
                seed = open_escrow(candidate, UUID(int=0), reg)
            except Bad:
                continue
            if commitment(seed, UUID(shoe_id)) == shuffled.get("commitment"):
                return seed
        return None

    return seed_of
