"""SABOT-ESCROW-1 moved to ``services/ledger/escrow.py`` (the ledger seals each seed to the
regulator when it shuffles; the regulator opens it): this name stays for its readers."""

from services.ledger.escrow import (
    ESCROW_ID,
    SEALED_SIZE,
    VERSION,
    EscrowError,
    generate_regulator_key,
    load_private_key,
    open_sealed,
    seal_to_regulator,
)

__all__ = [
    "ESCROW_ID",
    "SEALED_SIZE",
    "VERSION",
    "EscrowError",
    "generate_regulator_key",
    "load_private_key",
    "open_sealed",
    "seal_to_regulator",
]
