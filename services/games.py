"""The registry of games: one entry per game the ledger plays, and the one place a game plugs in.

A game is a package ``services/<game>/`` with a module that defines ``GAME``, a ``Game``; its
module's name is one line of ``MODULES`` below. The ledger (``services.ledger.api.Ledger``), the
ledger socket (``services.ledger.wire``) and the gRPC server (``services.api.server``) take
everything game-specific from here:

- ``name`` (``trente-et-quarante``, ``treinta-y-una``, ``cuarenta``): what a table records in
  ``Table.Opened.game`` and what ``open_table(game=...)`` names;
- ``deck_kind``: the only deck its shoes are shuffled from (``open_shoe`` refuses another);
- ``options``: its rule book's ``domain.options.OptionTable`` (presets, defaults, text):
  ``open_table`` builds the table's rules from it and records ``OptionTable.text`` of them;
- ``table_accounts``: the account roles opened with each of its tables
  (``table:<table_id>:<role>``, in the table's currency);
- ``commands``: a callable given the ledger's ``services.ledger.core.Core`` that returns an
  object whose methods named in ``methods`` become the ledger's commands and queries (each runs
  through ``Core.run``: inside the single writer's unit of work, its request and answer stored
  with its actor);
- ``methods``: those commands and queries as the ledger socket declares them
  (``services.ledger.methods``); their names are unique across the core and every game;
- ``servicers``: a callable ``(server, ledger, tokens, hub)`` that adds the game's gRPC
  servicers to the server and returns them; ``services``: their full gRPC service names (for
  health and reflection);
- ``table_rpcs``: a callable returning the game's mixins of the servicer of the frozen
  ``sabot.v1.TableService`` (the RPCs of that service that are the game's: Trente et
  Quarante's shoes and coups); ``services.api.tables.servicer`` mixes every game's into the
  service's one servicer beside its game-neutral RPCs (an RPC defined twice is refused);
- ``regulator_rpcs``: the same for the frozen ``sabot.v1.RegulatorService`` (Trente et
  Quarante's ReplayCoup), mixed by ``services.api.regulator.servicer`` beside the service's
  game-neutral RPCs (a shoe's replay, checkpoints, proofs, export);
- ``round_home``: for its rounds of a shoe (Trente et Quarante's coups), the round locator of
  the gRPC servicers (``services.api.base.Base.round_home``): ``round_home(servicer, round_id,
  field)``, the (table id, shoe id) of one of its rounds, read through ``servicer.read`` (its
  error naming ``field``: NOT_FOUND when it has no such round); the servicers cache the answer
  (immutable);
- ``feed_keys``: ``feed_keys(topic, state, originator_id)``, the ``RoundPlace`` of a stored
  event of one of those rounds (None: not one of its rounds' events; asked only of the events
  of its ``topics``, ``of_topic``): the feed
  (``sabot.v1.FeedService``) names the event's table, shoe and round from it, WatchTable
  follows a table's rounds by it;
- ``topics``: every topic its aggregates store (also in ``services/topics.py``);
- ``round_ends``: the topics of the events that end one of its rounds (a coup, a round, a match,
  a hand that moves money), the round being the event's aggregate: the notary signs a
  checkpoint at each (``round_end``, handed to it by the composition root, ``services
  .bootstrap``, and by the server); empty: its rounds get no checkpoint of their own;
- ``turns``: for a game whose players have a turn time (``TurnRule``), how the turn clock
  (``services/turn_clock.py``) keeps its turns: the aggregates its turns run on, the query
  answering a round's ``TurnView``, and the command to issue once a turn's time ran out; a
  round's turns stop at its ``round_ends`` (None: no turn time);
- ``replay``: the regulator's replay of a shoe's rounds (``services.regulator.replay``):
  ``replay(found, opened, only)`` (the shoe's events, grouped by ``services.regulator.vocabulary
  .shoe_events``; the table's ``Table.Opened`` state; one round's id or None) reads the table's
  rules and returns ``rounds(sabot)``, which yields a ``ReplayStep`` per recorded value beside
  the recomputed one (the core checks the events' integrity, the chain, the algorithm and the
  commitment first);
- ``verify``: the module of the standalone verifier (``ops/sabot_verify``) that checks its
  shoes, by name (the verifier imports nothing of ours and nothing here imports it): it
  registers the game's per-shoe check (``sabot_verify.shoes.register_game``), which the
  verifier picks by ``Table.Opened.game``; None: the verifier's convention, ``sabot_verify.``
  and the game's name with dashes as underscores (``verifier``);
- ``rerun_ids``: for the re-run of stored commands (``services.ledger.replay``, ``sabot store
  rerun``): ``rerun_ids(command, arguments, answer)``, the ids one of its stored commands drew
  (``LedgerConfig.new_id``), in the order it drew them; None: read from the aggregates the
  command created, neither named nor among its arguments (its new round or match, then its
  shoes), which fits Treinta y Una's and Cuarenta's commands (a command that draws an id the
  re-run cannot give stops it with a ``ReplayError`` naming it);
- ``projections``: a callable returning the game's own read models
  (``services.projections.view.View`` instances, e.g. ``services.projections.games.UnitsView``:
  its rounds or matches, their public steps, their reconciliation facts): the read models
  (``services.projections.default_views``) add them after the core's, so ``sabot store
  projections rebuild|catch-up|run|lag``, the server's projection thread and the projection
  runner keep them from the log like the others (None: the game has none of its own).

See docs/architecture.md, "What adding a game takes".
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from domain.cards import DeckKind
from domain.errors import InvalidArgument
from domain.options import OptionTable

if TYPE_CHECKING:
    from services.ledger.actor import Actor
    from services.ledger.core import Core
    from services.ledger.methods import Method
    from services.ledger.views import TurnView
    from services.projections.view import View

TRENTE_ET_QUARANTE = "trente-et-quarante"
DEFAULT_GAME = TRENTE_ET_QUARANTE  # what a table opened before games were recorded plays

# The modules that define a ``GAME`` (one line per game; imported on first use).
MODULES: tuple[str, ...] = (
    "services.trente_et_quarante.game",
    "services.treinta_y_una.game",
    "services.cuarenta.game",
)

Servicers = Callable[..., tuple[Any, ...]]  # (server, ledger, tokens, hub) -> the servicers


@dataclass(frozen=True)
class RoundPlace:
    """Where a stored event of one of a game's rounds of a shoe belongs (``Game.feed_keys``):
    the round's id, and its table and shoe when the event names them (the round's opening)."""

    round_id: str
    table_id: str | None = None
    shoe_id: str | None = None


@dataclass(frozen=True)
class TurnRule:
    """How the turn clock keeps a game's turns (``Game.turns``): the events of its
    ``aggregates`` (their originator topics) touch a turn; ``query`` names the ledger's query
    answering one round's ``services.ledger.views.TurnView`` (``cuarenta_turn``); ``act(ledger,
    request_id, round_id, view, actor)`` issues the game's command for a turn past its time
    (a forfeit, a stand for the absent player), naming ``view.turn``."""

    aggregates: frozenset[str]
    query: str
    act: Callable[[Any, str, str, TurnView, Actor], object]  # (the ledger's methods: its own)


@dataclass(frozen=True)
class Game:
    """One game the ledger plays (see the module's text)."""

    name: str
    deck_kind: DeckKind
    options: OptionTable[Any]
    table_accounts: tuple[str, ...] = ()
    commands: Callable[[Core], object] | None = None
    methods: Mapping[str, Method] = field(default_factory=dict)
    servicers: Servicers | None = None
    services: tuple[str, ...] = ()
    table_rpcs: Callable[[], tuple[type, ...]] | None = None
    regulator_rpcs: Callable[[], tuple[type, ...]] | None = None
    round_home: Callable[[Any, str, str], tuple[str, str]] | None = None
    feed_keys: Callable[[str, Mapping[str, Any], str], RoundPlace | None] | None = None
    topics: frozenset[str] = frozenset()
    round_ends: frozenset[str] = frozenset()
    turns: TurnRule | None = None
    replay: Callable[..., Any] | None = None
    verify: str | None = None
    projections: Callable[[], Sequence[View]] | None = None
    rerun_ids: Callable[[str, Mapping[str, Any], Mapping[str, Any]], Sequence[str]] | None = None

    @property
    def verifier(self) -> str:
        """The verifier's module of the game (``verify``, else the verifier's convention)."""
        return self.verify or "sabot_verify." + self.name.replace("-", "_")

    def decks(self, rules: Any) -> int:
        """How many decks one of its shoes holds under ``rules`` (its option ``decks``, else
        one)."""
        return int(getattr(rules, "decks", 1))


def lazy(module: str, name: str) -> Callable[..., Any]:
    """``module.name``, imported on the first call (a game's entry names its parts without
    importing them all with the registry)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    return call


_lock = threading.RLock()
_games: dict[str, Game] = {}
_methods: dict[str, tuple[str, Method]] = {}  # method name -> (game, its declaration)
_by_topic: dict[str, tuple[Game, ...]] = {}  # topic -> the games storing it (``of_topic``)
_loaded = False


def _load() -> None:
    global _loaded
    if _loaded:
        return
    with _lock:
        if _loaded:
            return
        _loaded = True
        for module in MODULES:
            game = importlib.import_module(module).GAME
            if game.name not in _games:
                register(game)


def register(game: Game, reserved: frozenset[str] = frozenset()) -> Game:
    """Add ``game`` (ValueError if its name or one of its methods' names is taken, or among
    ``reserved``: the core's own methods)."""
    from services.ledger.methods import CORE_NAMES

    with _lock:
        if game.name in _games:
            raise ValueError(f"a game named {game.name!r} is registered already")
        for name in game.methods:
            if name in _methods or name in CORE_NAMES or name in reserved:
                raise ValueError(f"{game.name}: the method name {name!r} is taken")
        _games[game.name] = game
        _by_topic.clear()
        for name, method in game.methods.items():
            _methods[name] = (game.name, method)
    return game


def unregister(name: str) -> None:
    """Remove a game (for tests that register one of their own)."""
    with _lock:
        _games.pop(name, None)
        _by_topic.clear()
        for method in [m for m, (g, _) in _methods.items() if g == name]:
            del _methods[method]


def games() -> tuple[Game, ...]:
    """Every registered game, in the order registered."""
    _load()
    return tuple(_games.values())


def of_topic(topic: str) -> tuple[Game, ...]:
    """The registered games whose aggregates store ``topic`` (``Game.topics``), in the order
    registered: a stored event's game, looked up once per topic (the feed places each event
    by its game's ``feed_keys`` only)."""
    _load()
    found = _by_topic.get(topic)
    if found is None:
        with _lock:
            found = tuple(g for g in _games.values() if topic in g.topics)
            _by_topic[topic] = found
    return found


def round_end(topic: str, originator_id: str) -> str | None:
    """The round a stored event ends (its aggregate's id: the event's ``topic`` is one of its
    game's ``round_ends``), or None: the notary's trigger for a signed checkpoint."""
    for game in of_topic(topic):
        if topic in game.round_ends:
            return originator_id
    return None


def names() -> tuple[str, ...]:
    return tuple(g.name for g in games())


def get(name: str, field_name: str = "game") -> Game:
    """The game called ``name``; INVALID_ARGUMENT ``UNKNOWN_GAME`` naming ``field_name``
    otherwise."""
    _load()
    game = _games.get(name) if isinstance(name, str) else None
    if game is None:
        raise InvalidArgument(
            field_name, "UNKNOWN_GAME", f"unknown game {str(name)[:64]!r} (one of "
            f"{', '.join(_games)})")
    return game


def methods() -> Mapping[str, tuple[str, Method]]:
    """Every game's methods: name -> (the game's name, its declaration)."""
    _load()
    return _methods


def game_of_method(name: str) -> Game | None:
    """The game that declares the method ``name`` (None: a core method or none)."""
    _load()
    found = _methods.get(name)
    return None if found is None else _games[found[0]]
