"""The composition root: the ledger, its stores, the notary and the read models, built in one
place from what a command was given (``services.settings.Settings``).

Every command that opens the ledger or its log goes through here, so a setting means the same
wherever it is read: the store (``store``), the seal key (``seal_key``; a reader needs none),
the regulator's escrow key (``regulator_public_key``), the evidence chain (``chain_key``,
``chain_head``), the notary's key (``checkpoint_key``, checked against ``chain_key``'s public
half), the gaming day of the read models (``gaming_day``). What is missing and needed is a
``SettingError`` naming the variable and the flag (never a secret's value).

- ``ledger_config(settings)``: the ``LedgerConfig`` of the settings;
- ``open_ledger(settings, batching=..., standby=...)``: a ``Ledger`` in this process (every
  registered game's commands on it, ``services.games``);
- ``open_ledger_process(settings, ...)``: the ledger in a process of its own and the
  ``RemoteLedger`` to it (``sabot serve``'s default);
- ``open_log(settings)``: the read side of the store (no key): for the projections, the exports;
- ``read_models(settings)``: the read models over it (``ReadModels``);
- ``notary(settings)``: the checkpoint notary following the store (None without a key).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from services import games
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig
from services.settings import BY_NAME, SettingError, Settings

if TYPE_CHECKING:
    from services.ledger.remote import LedgerProcess
    from services.projections.service import ReadModels
    from services.regulator.notary import Follower

READ_ONLY_KEY = bytes(32)  # reading needs no seal key; shuffling, dealing and closing shoes do


def _required(settings: Settings, name: str) -> Any:
    value = getattr(settings, name)
    if value in (None, (), ""):
        raise SettingError(f"{BY_NAME[name].names}: required")
    return value


def ledger_config(settings: Settings, *, reader: bool = False, pool_size: int = 5,
                  writer_name: str = "", **inputs: Any) -> LedgerConfig:
    """The ``LedgerConfig`` of ``settings``: its store, seal key (``reader``: a key that opens
    nothing when none is given, for a ledger that only reads), regulator escrow key, evidence
    key and head file. ``inputs``: the config's other fields (``clock``, ``new_id``,
    ``new_seed``, ``evidence``, for replays and tests)."""
    seal_key = settings.seal_key
    if seal_key is None:
        seal_key = READ_ONLY_KEY if reader else _required(settings, "seal_key")
    return LedgerConfig(
        store_url=settings.store, seal_key=seal_key, pool_size=pool_size,
        regulator_key=settings.regulator_public_key, writer_name=writer_name,
        chain_key=settings.chain_key, chain_head=settings.chain_head, **inputs,
    )


def open_ledger(settings: Settings, *, batching: bool = False, standby: bool = False,
                pool_size: int = 5, writer_name: str = "", **inputs: Any) -> Ledger:
    """A ``Ledger`` on the settings' store, in this process, with every registered game
    (``standby``: it never takes the writer lease: a reader, whose seal key may be absent)."""
    games.games()  # every game registered before the ledger builds its commands
    config = ledger_config(settings, reader=standby, pool_size=pool_size,
                           writer_name=writer_name, **inputs)
    return Ledger(config, batching=batching, standby=standby)


def open_ledger_process(settings: Settings, *, pool_size: int = 5, writer_name: str = "",
                        on_lost: Callable[[int], None] | None = None) -> LedgerProcess:
    """The ledger in a process of its own (its settings through a pipe) and the
    ``RemoteLedger`` to it; OSError if it does not start."""
    from services.ledger.remote import LedgerProcess

    seal_key = _required(settings, "seal_key")
    return LedgerProcess(settings.store, seal_key, settings.regulator_public_key, pool_size,
                         on_lost=on_lost, writer_name=writer_name, chain_key=settings.chain_key,
                         chain_head=settings.chain_head)


def open_log(settings: Settings, pool_size: int = 3) -> Any:
    """The read side of the settings' store (an ``eventsourcing`` application; no key), every
    core and game topic registered for decoding."""
    from services.projections.log import open_log as open_store_log

    return open_store_log(settings.store, pool_size=pool_size)


def read_models(settings: Settings, app: Any | None = None) -> ReadModels:
    """The read models over ``app`` (else the settings' log), on the settings' gaming day
    (None: as they were built)."""
    from services.projections.service import ReadModels

    return ReadModels(open_log(settings) if app is None else app, settings.gaming_day)


def notary(settings: Settings, on_error: Callable[[BaseException], None] | None = None,
           origin: str = "sabot") -> Follower | None:
    """The notary following the settings' store: it signs a checkpoint at every round's end
    with ``checkpoint_key`` and checks the evidence chain against ``chain_key``'s public half
    (else against the keys the chain introduces); None without a checkpoint key (not
    started)."""
    if settings.checkpoint_key is None:
        return None
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from services.regulator.chain import pinned_keys
    from services.regulator.notary import Follower

    key = Ed25519PrivateKey.from_private_bytes(settings.checkpoint_key)
    publics = list(settings.chain_public_keys)
    if settings.chain_key is not None:
        public = Ed25519PrivateKey.from_private_bytes(settings.chain_key).public_key()
        publics.append(public.public_bytes_raw())
    chain_keys = pinned_keys(publics) if publics else None
    return Follower(settings.store, key, origin, on_error=on_error, chain_keys=chain_keys)


__all__ = ["READ_ONLY_KEY", "ledger_config", "notary", "open_ledger", "open_ledger_process",
           "open_log", "read_models"]
