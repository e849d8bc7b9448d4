"""Opening the ledger's event log for reading, from a store URL (as the ledger parses it)."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from eventsourcing.persistence import Transcoding

from services.ledger.config import APP_NAME, store_env

# Importing the aggregates registers their explicit topics for decoding.
_AGGREGATE_MODULES = (
    "services.ledger.account",
    "services.ledger.request",
    "services.ledger.shoe",
    "services.ledger.table",
)


def register_topics() -> None:
    """The core's aggregates (a game's are registered by its modules, imported by the
    composition root that holds the games)."""
    for name in _AGGREGATE_MODULES:
        importlib.import_module(name)


def open_log(store_url: str, extra_env: dict[str, str] | None = None, pool_size: int = 3, *,
             transcodings: Sequence[Transcoding]) -> Any:
    """The ledger's ``eventsourcing`` application over ``store_url`` (read side; no seal key),
    decoding the games' value types by ``transcodings`` (``LedgerGame.transcodings``)."""
    from services.ledger.application import LedgerApplication

    register_topics()
    env = store_env(store_url, pool_size)
    if env.get("PERSISTENCE_MODULE") == "eventsourcing.postgres":
        env.setdefault("POSTGRES_CONNECT_TIMEOUT", "5")
    env.update(extra_env or {})
    return LedgerApplication(env=env, transcodings=transcodings)


__all__ = ["APP_NAME", "open_log", "register_topics"]
