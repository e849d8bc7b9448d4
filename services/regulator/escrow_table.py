"""Legacy: seeds escrowed beside the ledger, in ``regulator_escrow`` (stores written before
``Shoe.Shuffled`` version 2).

Before the ledger recorded ``escrowed_seed`` in ``Shoe.Shuffled`` (sealed with the shoe id), a
hook sealed every seed as it was drawn (SABOT-ESCROW-1, shoe id unknown: the nil UUID) into this
table. The ledger no longer writes it; this module only reads what such stores hold: the
regulator opens the rows with its private key and keeps the seed whose commitment matches.
"""

from __future__ import annotations

import hashlib
from uuid import UUID

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from services.regulator.escrow import EscrowError, open_sealed
from services.regulator.source import Database

NO_SHOE = UUID(int=0)
TABLE = "regulator_escrow"


def _commitment(seed: bytes, shoe_id: UUID) -> str:
    return hashlib.sha256(b"SABOT-SHUFFLE-1" + shoe_id.bytes + seed).hexdigest()


class EscrowTable:
    """Reads the legacy table of ``url`` (absent: no rows); never creates or writes it."""

    def __init__(self, url: str) -> None:
        self.url = url

    def sealed(self, limit: int = 10_000) -> list[bytes]:
        """The newest sealed seeds first."""
        db = Database(self.url)
        try:
            if not db.table_exists(TABLE):
                return []
            rows = db.rows(f"SELECT sealed FROM {TABLE} ORDER BY id DESC LIMIT ?", (limit,))
        finally:
            db.close()
        return [bytes(r[0]) for r in rows]

    def find(self, shoe_id: UUID, commitment: str, key: X25519PrivateKey) -> bytes | None:
        """The escrowed seed whose commitment for ``shoe_id`` is ``commitment``."""
        for sealed in self.sealed():
            try:
                seed = open_sealed(sealed, NO_SHOE, key)
            except EscrowError:
                continue
            if _commitment(seed, shoe_id) == commitment:
                return seed
        return None
