"""Trente et Quarante's stake fates, as its stake events record them (``fate``)."""

from __future__ import annotations

# Fates that are a settlement of a stake in action (the stake was exposed to a decided deal).
SETTLEMENT_FATES = frozenset(
    {"won", "lost", "void", "partage", "imprisoned", "second_prison", "released",
     "back_to_prison", "prison_lost", "returned"}
)
