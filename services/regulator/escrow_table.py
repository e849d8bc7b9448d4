"""Escrow kept beside the ledger: every seed drawn is sealed to the regulator as it is drawn.

The ledger's seed source (``LedgerConfig.new_seed``) is wrapped: before a seed is handed to the
ledger, it is sealed (SABOT-ESCROW-1, shoe id not yet known: the nil UUID) and written to
``regulator_escrow``. The regulator finds a shoe's seed by opening the rows with its private key
and keeping the one whose commitment matches the shoe's recorded commitment. This is the hook
that works without changing the ledger's events; the ledger recording ``escrowed_seed`` in
``Shoe.Shuffled`` (sealed with the shoe id) is the intended one, and both are read.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from uuid import UUID

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from services.regulator.escrow import EscrowError, open_sealed, seal_to_regulator
from services.regulator.source import Database

NO_SHOE = UUID(int=0)


def _commitment(seed: bytes, shoe_id: UUID) -> str:
    import hashlib

    return hashlib.sha256(b"SABOT-SHUFFLE-1" + shoe_id.bytes + seed).hexdigest()


class EscrowTable:
    def __init__(self, url: str) -> None:
        self.url = url
        db = Database(url)
        blob = "BYTEA" if db.is_postgres else "BLOB"
        serial = "BIGSERIAL PRIMARY KEY" if db.is_postgres else "INTEGER PRIMARY KEY AUTOINCREMENT"
        db.execute(f"CREATE TABLE IF NOT EXISTS regulator_escrow (id {serial}, sealed {blob})")
        db.close()

    def seeds(
        self, public_key: bytes, draw: Callable[[], bytes] = lambda: secrets.token_bytes(32)
    ) -> Callable[[], bytes]:
        """A ``new_seed`` for the ledger that escrows each seed before returning it."""

        def new_seed() -> bytes:
            seed = draw()
            sealed = seal_to_regulator(seed, NO_SHOE, public_key)
            db = Database(self.url)  # its own connection: the ledger may call from any thread
            try:
                db.execute("INSERT INTO regulator_escrow (sealed) VALUES (?)", (sealed,))
            finally:
                db.close()
            return seed

        return new_seed

    def sealed(self, limit: int = 10_000) -> list[bytes]:
        """The newest sealed seeds first."""
        db = Database(self.url)
        try:
            rows = db.rows("SELECT sealed FROM regulator_escrow ORDER BY id DESC LIMIT ?", (limit,))
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
