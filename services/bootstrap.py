"""The composition root: the games, the ledger, its stores, the notary and the read models,
built in one place from what a command was given (``services.settings.Settings``).

``GAMES`` is the list of games, one line per game (``services.games.Game``: its port of each
layer); every layer is handed its part of each from here, as constructor arguments: the ledger
``LEDGER_GAMES``, the gRPC server ``SERVED`` (the API's, the read side's and the regulator's
parts, and the games' commands' declarations, from which the server derives its role table:
``ROLE_TABLE``, made here too, so that a declaration the table refuses fails every command at
start), the read models ``READ_GAMES``, the regulator's replays ``REGULATOR_GAMES``, the notary
``ROUND_END`` (where every game's rounds end), the turn clock ``TURN_GAMES``. Importing the
games' modules here also registers their events' topics for decoding.

Every command that opens the ledger or its log goes through here, so a setting means the same
wherever it is read: the store (``store``), the seal key (``seal_key``; a reader needs none),
the regulator's escrow key (``regulator_public_key``), the evidence chain (``chain_key``,
``chain_head``), the notary's key (``checkpoint_key``, checked against ``chain_key``'s public
half), the gaming day of the read models (``gaming_day``). What is missing and needed is a
``SettingError`` naming the variable and the flag (never a secret's value).

- ``ledger_config(settings)``: the ``LedgerConfig`` of the settings;
- ``open_ledger(settings, batching=..., standby=...)``: a ``Ledger`` in this process (every
  game's commands on it);
- ``open_ledger_process(settings, ...)``: the ledger in a process of its own and the
  ``RemoteLedger`` to it (``sabot serve``'s default): the child is ``python -m
  services.bootstrap``, whose main (``host_main``) hands its ledger the same games;
- ``open_ledger_process(settings, read_models=True)``: the read models too kept up to date in
  a process of their own (``sabot serve``'s default), a child of the ledger process: ``python
  -m services.bootstrap --read-models`` (``read_models_main``: the read models of every game);
- ``open_log(settings, schema=...)``: the read side of the store (no key): for the
  projections, the exports; ``log_env``: its environment, for the projection runner;
- ``read_only_log(settings)``: the store read as it is, creating and writing nothing (a
  replica, a reader role; the head office's reader of each site);
- ``read_models(settings)``: the read models over it (``ReadModels``); ``projector``: their
  projector (``sabot store projections …``, ``store reconcile``, ``store report …``);
- ``notary(settings)``: the checkpoint notary following the store, for a server (None without a
  key);
- ``store_database(settings)`` and ``store_notary(settings, db, sign=...)``: the store's Merkle
  log for the offline commands (``sabot store init|checkpoint|export|replay|proof``), one that
  signs with ``checkpoint_key`` or one that only reads.

The read side (``read_store``, ``SABOT_READ_STORE``: a streaming standby of the store, or a copy
of its file; docs/operations.md, "Reads off the primary"): the readers read the log there, the
writer, the notary and the read models' rows stay on ``store``:

- ``read_url(settings)``: where the readers read (the read store, else the store);
- ``read_log(settings)``: the log there, an application that creates nothing;
- ``projector(settings)`` given a read store: it reads the log there and writes the read models
  on the store (``sabot store projections run|catch-up|rebuild``);
- ``read_projector(settings)``: the read models as the read store holds them, for reading only
  (``sabot store report …``, ``store projections lag``): it creates and writes nothing;
- ``read_database(settings)``: a connection of the regulator's to the read store (``sabot store
  export|replay|proof``), and ``read_lag(settings, db)``: how far behind the store it is
  (``services.regulator.replica``; None without a read store).

Only the commands (``services/cli``) import this module; the layers below it (``services/ledger``,
``services/regulator``, ``services/projections``, ``services/api``, the games, ``domain``) never
do (docs/architecture.md, "Layers"; tests/contracts/test_layers.py).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from services.api.game import Served
from services.api.roles import role_table
from services.cuarenta.game import GAME as CUARENTA
from services.games import Game
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig
from services.ledger.game import LedgerGame
from services.regulator.vocabulary import RoundEnds
from services.settings import BY_NAME, SettingError, Settings
from services.treinta_y_una.game import GAME as TREINTA_Y_UNA
from services.trente_et_quarante.game import GAME as TRENTE_ET_QUARANTE

if TYPE_CHECKING:
    from services.ledger.remote import LedgerProcess
    from services.projections.follower import ReadModelsProcess
    from services.projections.projector import Projector
    from services.projections.service import ReadModels
    from services.regulator.notary import Follower, Notary
    from services.regulator.replica import ReadLag
    from services.regulator.source import Database

READ_ONLY_KEY = bytes(32)  # reading needs no seal key; shuffling, dealing and closing shoes do

# The games, one line per game, in the order every layer lists them.
GAMES: tuple[Game, ...] = (
    TRENTE_ET_QUARANTE,
    TREINTA_Y_UNA,
    CUARENTA,
)


def ledger_games(games: Sequence[Game] = GAMES) -> tuple[LedgerGame, ...]:
    return tuple(game.ledger for game in games)


def served(games: Sequence[Game] = GAMES) -> Served:
    """What the gRPC server is handed of ``games``: the API's, the read side's and the
    regulator's parts, and their commands' declarations (who may call them, by which RPCs)."""
    return Served(api=tuple(g.api for g in games), read=tuple(g.read for g in games),
                  regulator=tuple(g.regulator for g in games),
                  commands=tuple(d for g in games for d in g.ledger.face.declared().values()))


def round_end(games: Sequence[Game] = GAMES) -> RoundEnds:
    """The notary's trigger: the end of each of ``games``' rounds."""
    return RoundEnds(topic for game in games for topic in game.regulator.round_ends)


LEDGER_GAMES = ledger_games()
TRANSCODINGS = tuple(t for game in LEDGER_GAMES for t in game.transcodings)
SERVED = served()
ROLE_TABLE = role_table(SERVED.commands)  # who may call which RPC; a disagreement fails here
READ_GAMES = SERVED.read
REGULATOR_GAMES = SERVED.regulator
TURN_GAMES = tuple(game.turns for game in GAMES if game.turns is not None)
ROUND_END = round_end()
HOST = "services.bootstrap"  # the ledger process's module (its main: ``host_main``)


def _required(settings: Settings, name: str) -> Any:
    value = getattr(settings, name)
    if value in (None, (), ""):
        raise SettingError(f"{BY_NAME[name].names}: required")
    return value


def ledger_config(settings: Settings, *, reader: bool = False, pool_size: int = 5,
                  writer_name: str = "", store_timeout: float | None = None,
                  **inputs: Any) -> LedgerConfig:
    """The ``LedgerConfig`` of ``settings``: its store, seal key (``reader``: a key that opens
    nothing when none is given, for a ledger that only reads), regulator escrow key, evidence
    key and head file; ``store_timeout``: the bound of a wait for the store (None: the
    ledger's default). ``inputs``: the config's other fields (``clock``, ``new_id``,
    ``new_seed``, ``evidence``, ``extra_env``, for replays and tests)."""
    seal_key = settings.seal_key
    if seal_key is None:
        seal_key = READ_ONLY_KEY if reader else _required(settings, "seal_key")
    if store_timeout is not None:
        inputs["extra_env"] = {**inputs.get("extra_env", {}),
                               "STORE_TIMEOUT": str(store_timeout)}
    return LedgerConfig(
        store_url=settings.store, seal_key=seal_key, pool_size=pool_size,
        max_overflow=settings.pg_max_overflow,
        regulator_key=settings.regulator_public_key, writer_name=writer_name,
        chain_key=settings.chain_key, chain_head=settings.chain_head, site=settings.site,
        **inputs,
    )


def open_ledger(settings: Settings, *, batching: bool = False, standby: bool = False,
                pool_size: int = 5, writer_name: str = "", store_timeout: float | None = None,
                **inputs: Any) -> Ledger:
    """A ``Ledger`` on the settings' store, in this process, with every game (``standby``: it
    never takes the writer lease: a reader, whose seal key may be absent; the offline ``sabot
    store`` commands' ledger)."""
    config = ledger_config(settings, reader=standby, pool_size=pool_size,
                           writer_name=writer_name, store_timeout=store_timeout, **inputs)
    return Ledger(config, games=LEDGER_GAMES, batching=batching, standby=standby)


def open_ledger_process(settings: Settings, *, pool_size: int = 5, writer_name: str = "",
                        on_lost: Callable[[int], None] | None = None,
                        read_models: bool = False) -> LedgerProcess:
    """The ledger in a process of its own and the ``RemoteLedger`` to it: its
    ``ledger_config`` goes through a pipe (the child reads the same fields,
    ``LedgerConfig.from_pipe``), with the settings' ``store_timeout`` and ``otlp_endpoint``
    (traces of its commands); the child is this module's main (``host_main``), playing every
    game; OSError if it does not start. ``read_models``: the ledger process also starts the
    read models' process (``read_models_main``, its child: it ends with it), which keeps the
    read models up to date out of the server's process."""
    from services.ledger.remote import LedgerProcess

    config = ledger_config(settings, pool_size=pool_size, writer_name=writer_name,
                           store_timeout=settings.store_timeout)
    return LedgerProcess.of(config, games=LEDGER_GAMES, host=HOST, on_lost=on_lost,
                            otlp_endpoint=settings.otlp_endpoint,
                            companion=read_models_fields(settings) if read_models else None)


def host_main(argv: list[str] | None = None) -> int:
    """``python -m services.bootstrap --socket PATH``: the ledger process (``services.ledger
    .remote.host_main``) with every game; ``python -m services.bootstrap --read-models``: the
    read models' process (``read_models_main``)."""
    from services.projections.follower import FLAG

    if (sys.argv[1:] if argv is None else argv) == [FLAG]:
        return read_models_main()
    from services.ledger.remote import host_main as serve

    return serve(argv, games=LEDGER_GAMES, prog=HOST, companion=_read_models_companion)


def read_models_fields(settings: Settings) -> dict[str, Any]:
    """What the read models' process is given of the settings (through a pipe: a store URL
    may hold a password): the store, the read store, the gaming day."""
    import dataclasses

    day = settings.gaming_day
    return {"store": settings.store, "read_store": settings.read_store,
            "gaming_day": None if day is None else dataclasses.asdict(day)}


def _read_models_companion(fields: Any) -> ReadModelsProcess:
    """The ledger process's companion (``open_ledger_process(..., read_models=True)``): the
    read models' process of ``fields``, started (and started again whenever it ends) by the
    ledger process, whose child it is; its log lines go to the ledger process's standard
    error (the server's log)."""
    import logging

    from services.projections.follower import ReadModelsProcess

    log = logging.getLogger("sabot.read_models")

    def event(what: str, found: dict[str, Any]) -> None:
        level = str(found.pop("level", "info"))
        getattr(log, level)("%s %s", what, found)

    return ReadModelsProcess(fields, HOST, on_event=event).start()


def read_models_main() -> int:
    """The read models' process (``services.projections.follower.child_main``): the read
    models of every game, over one pool of ``follower.POOL_SIZE`` connections on the store
    (and one on the read store, when given)."""
    from services.projections.follower import child_main

    return child_main(_followed_models)


def _followed_models(fields: Any) -> ReadModels:
    from services.ledger.schema import CREATE_TABLE
    from services.projections.follower import MAX_OVERFLOW, POOL_SIZE
    from services.projections.gamingday import GamingDay
    from services.projections.log import open_log as open_store_log
    from services.projections.service import ReadModels
    from services.projections.store import ReadStore

    day = fields.get("gaming_day")
    gaming_day = GamingDay(**day) if isinstance(day, dict) else None
    pool = {"POSTGRES_MAX_OVERFLOW": str(MAX_OVERFLOW)}
    app = open_store_log(str(fields["store"]), pool, pool_size=POOL_SIZE,
                         transcodings=TRANSCODINGS)
    read_store = fields.get("read_store")
    if not read_store:
        return ReadModels(app, gaming_day, games=READ_GAMES)
    log = open_store_log(str(read_store), {**pool, CREATE_TABLE: "n"}, pool_size=POOL_SIZE,
                         transcodings=TRANSCODINGS)
    return ReadModels(log, gaming_day, store=ReadStore.of(app), games=READ_GAMES)


def log_env(settings: Settings, schema: str | None = None) -> dict[str, str]:
    """The ``eventsourcing`` environment of the settings' store (``schema``: a PostgreSQL
    schema other than the URL's), for what opens the log itself (the projection runner)."""
    from services.ledger.config import store_env

    env = store_env(settings.store)
    if schema:
        env["POSTGRES_SCHEMA"] = schema
    return env


def open_log(settings: Settings, pool_size: int = 3, schema: str | None = None) -> Any:
    """The read side of the settings' store (an ``eventsourcing`` application; no key), every
    core and game topic registered for decoding (the games' by this module's imports);
    ``schema``: a PostgreSQL schema other than the URL's."""
    from services.projections.log import open_log as open_store_log

    extra = {"POSTGRES_SCHEMA": schema} if schema else {}
    return open_store_log(settings.store, extra, pool_size=pool_size, transcodings=TRANSCODINGS)


def log_application() -> type[Any]:
    """The read side's application class, decoding every game's value types: for what builds
    the application itself from an environment (the projection runner, ``log_env``)."""
    from services.ledger.application import LedgerApplication

    return LedgerApplication.decoding(TRANSCODINGS)


def read_only_log(settings: Settings, pool_size: int = 2) -> Any:
    """The settings' store read as it is: an application that creates no table and writes
    nothing (a replica, a reader role), every topic registered; the head office's reader of a
    site's log and read models (``services.projections.head_office``)."""
    from services.projections.log import open_log as open_store_log

    return open_store_log(settings.store, {"CREATE_TABLE": "n"}, pool_size=pool_size,
                          transcodings=TRANSCODINGS)


def read_models(settings: Settings, app: Any | None = None) -> ReadModels:
    """The read models over ``app`` (else the settings' log), on the settings' gaming day
    (None: as they were built)."""
    from services.projections.service import ReadModels

    return ReadModels(open_log(settings) if app is None else app, settings.gaming_day,
                      games=READ_GAMES)


def projector(settings: Settings, schema: str | None = None) -> Projector:
    """The read models' projector over the settings' log (``schema``: see ``open_log``), on
    the settings' gaming day. Given a read store, it reads the log there and writes the read
    models on the store (a standby cannot write; the rows reach it by replication)."""
    from services.projections import default_views
    from services.projections.projector import Projector
    from services.projections.store import ReadStore

    views = default_views(settings.gaming_day, games=READ_GAMES)
    if settings.read_store is None:
        return Projector(open_log(settings, schema=schema), views)
    rows = ReadStore.of(open_log(settings, schema=schema))
    return Projector(read_log(settings, schema=schema), views, rows)


# --- the read side ---------------------------------------------------------------------------


def read_url(settings: Settings) -> str:
    """Where the readers read: the read store, else the store."""
    return settings.read_store or settings.store


def read_log(settings: Settings, pool_size: int = 3, schema: str | None = None) -> Any:
    """The log of the read store (else the store's, as ``open_log``): an application that
    creates no table, whatever its role may do (a standby refuses every write)."""
    if settings.read_store is None:
        return open_log(settings, pool_size, schema)
    from services.ledger.schema import CREATE_TABLE
    from services.projections.log import open_log as open_store_log

    extra = {CREATE_TABLE: "n", **({"POSTGRES_SCHEMA": schema} if schema else {})}
    return open_store_log(settings.read_store, extra, pool_size=pool_size,
                          transcodings=TRANSCODINGS)


def read_projector(settings: Settings, schema: str | None = None) -> Projector:
    """The read models as the read store (else the store) holds them, to read only: nothing
    is created, caught up or written (``Projector(..., setup=False)``)."""
    from services.projections import default_views
    from services.projections.projector import Projector

    return Projector(read_log(settings, schema=schema),
                     default_views(settings.gaming_day, games=READ_GAMES), setup=False)


def read_database(settings: Settings) -> Database:
    """A connection of the regulator's to the read store (else the store)."""
    from services.regulator.source import Database

    return Database(read_url(settings))


def read_lag(settings: Settings, read: Database) -> ReadLag | None:
    """How far the read store (``read``, its connection) is behind the store: None without a
    read store. The store is asked for its last position only when it was given (a default
    SQLite path would be another store); unreachable, its position is unknown and said so.
    ``services.regulator.replica.NotACopy`` when the read store is not a copy of the store."""
    if settings.read_store is None:
        return None
    from services.regulator.replica import measure

    if not settings.given("store"):
        return measure(read, None, f"no {BY_NAME['store'].names} given")
    try:
        primary = store_database(settings)
    except Exception as exc:  # never the URL: it may hold a password
        return measure(read, None, f"cannot connect to it: {type(exc).__name__}")
    try:
        return measure(read, primary)
    finally:
        primary.close()


def notary(settings: Settings, on_error: Callable[[BaseException], None] | None = None,
           origin: str | None = None) -> Follower | None:
    """The notary following the settings' store: it signs a checkpoint at every round's end
    with ``checkpoint_key`` (its origin names the settings' ``site``) and checks the evidence
    chain against ``chain_public_keys`` and ``chain_key``'s public half (none: against the
    keys the chain introduces); None without a checkpoint key (not started)."""
    if settings.checkpoint_key is None:
        return None
    from services.regulator.checkpoint import checkpoint_origin
    from services.regulator.notary import signing_follower
    from services.settings import public_of

    publics = list(settings.chain_public_keys)
    if settings.chain_key is not None:
        publics.append(public_of(settings.chain_key))
    return signing_follower(settings.store, settings.checkpoint_key, publics,
                            origin=origin or checkpoint_origin(settings.site),
                            on_error=on_error, round_end=ROUND_END)


def store_database(settings: Settings) -> Database:
    """A connection of the regulator's (``services.regulator.source``) to the settings' store;
    ``StoreError`` for a URL it cannot use."""
    from services.regulator.source import Database

    return Database(settings.store)


def store_notary(settings: Settings, db: Database | None = None, *, sign: bool = False,
                 create: bool | None = None, origin: str | None = None) -> Notary:
    """The store's Merkle log over ``db`` (else a connection of its own, ``notary.db``: close
    it): one that signs with ``checkpoint_key`` (``sign``: required; a ``SettingError`` before
    any connection without it) or one that only reads; ``create`` (default: ``sign``) creates
    the tree's tables. The evidence chain is checked against ``chain_public_keys`` (none: the
    keys it introduces). Rounds end where every game says (``RegulatorGame.round_ends``:
    ``ROUND_END``). Its checkpoints' origin (None: the store's site,
    ``services.regulator.site.store_origin``: the one its chain records, else the settings'
    ``site``; ``SiteMismatch`` when they differ)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from services.regulator.chain import pinned_keys
    from services.regulator.notary import Notary
    from services.regulator.site import store_origin
    from services.regulator.source import EventTable

    key = None
    if sign:
        key = Ed25519PrivateKey.from_private_bytes(_required(settings, "checkpoint_key"))
    if db is None:
        db = store_database(settings)
    publics = settings.chain_public_keys
    events = EventTable(db)
    if origin is None:
        origin = store_origin(events, settings.site)
    return Notary(db, events, key, origin, ROUND_END,
                  create=sign if create is None else create,
                  chain_keys=pinned_keys(publics) if publics else None)


__all__ = ["GAMES", "LEDGER_GAMES", "READ_GAMES", "READ_ONLY_KEY", "REGULATOR_GAMES",
           "ROLE_TABLE", "ROUND_END", "SERVED", "TRANSCODINGS", "TURN_GAMES", "host_main",
           "ledger_config", "ledger_games", "log_application", "log_env", "notary",
           "open_ledger", "open_ledger_process", "open_log", "projector",
           "read_database", "read_lag", "read_log", "read_models", "read_models_fields",
           "read_models_main", "read_only_log", "read_projector", "read_url",
           "round_end", "served", "store_database", "store_notary"]


if __name__ == "__main__":
    sys.exit(host_main())
