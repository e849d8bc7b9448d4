"""What the gRPC server needs of a game (the API's port): ``ApiGame``, handed to the server by the
composition root (``services/bootstrap.py``) in a ``Served`` with the read side's and the
regulator's parts, and ``Played``, the games one server serves as its servicers look them up.

An ``ApiGame`` says:

- ``name`` and ``options`` (its rule book: ``sabot.v1.TableService/OpenTable`` checks the
  presets of a table that names no game against ``UNRECORDED_GAME``'s);
- ``servicers``: ``servicers(server, ledger, tokens, hub, played)`` adds the game's gRPC
  servicers to the server and returns them; ``services``: their full gRPC service names (for
  health and reflection);
- ``table_rpcs`` / ``regulator_rpcs``: the game's mixins of the servicers of the frozen
  ``sabot.v1.TableService`` (Trente et Quarante's shoes and coups) and
  ``sabot.v1.RegulatorService`` (each game's replay of its rounds), mixed beside the services'
  game-neutral RPCs (``services.api.base.mixed``: an RPC defined twice is refused);
- ``round_home``: for its rounds of a shoe (Trente et Quarante's coups), ``round_home(servicer,
  round_id, field)``, the (table id, shoe id) of one of them, read through ``servicer.read``
  (NOT_FOUND naming ``field`` when it has no such round); the servicers cache the answer;
- ``feed_keys``: ``feed_keys(topic, state, originator_id)``, the ``RoundPlace`` of a stored
  event of one of those rounds (None: not one of its rounds' events; asked only of the events
  of its ``topics``): the feed names the event's table, shoe and round from it, WatchTable
  follows a table's rounds by it;
- ``topics``: every topic its aggregates store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from domain.errors import InvalidArgument
from domain.options import OptionTable

if TYPE_CHECKING:
    from services.ledger.methods import Declared
    from services.ledger.views import StoredEvent
    from services.projections.games import ReadGame
    from services.regulator.replay import RegulatorGame

Servicers = Callable[..., tuple[Any, ...]]  # (server, ledger, tokens, hub, played) -> them


@dataclass(frozen=True)
class RoundPlace:
    """Where a stored event of one of a game's rounds of a shoe belongs (``ApiGame.feed_keys``):
    the round's id, and its table and shoe when the event names them (the round's opening)."""

    round_id: str
    table_id: str | None = None
    shoe_id: str | None = None


@dataclass(frozen=True)
class ApiGame:
    """One game as the gRPC server serves it (see the module's text)."""

    name: str
    options: OptionTable[Any]
    servicers: Servicers | None = None
    services: tuple[str, ...] = ()
    table_rpcs: Callable[[], tuple[type, ...]] | None = None
    regulator_rpcs: Callable[[], tuple[type, ...]] | None = None
    round_home: Callable[[Any, str, str], tuple[str, str]] | None = None
    feed_keys: Callable[[str, Mapping[str, Any], str], RoundPlace | None] | None = None
    topics: frozenset[str] = frozenset()


class Played:
    """The games one server serves, as its servicers look them up (by name, by a stored
    event's topic); immutable, so shared by every servicer without a lock."""

    def __init__(self, games: Sequence[ApiGame] = ()) -> None:
        self.games = tuple(games)
        self._named = {g.name: g for g in self.games}
        by_topic: dict[str, list[ApiGame]] = {}
        for game in self.games:
            for topic in game.topics:
                by_topic.setdefault(topic, []).append(game)
        self._by_topic = {t: tuple(found) for t, found in by_topic.items()}

    def named(self, name: str, field: str = "game") -> ApiGame:
        """The game called ``name``; INVALID_ARGUMENT ``UNKNOWN_GAME`` naming ``field``
        otherwise."""
        game = self._named.get(name) if isinstance(name, str) else None
        if game is None:
            raise InvalidArgument(
                field, "UNKNOWN_GAME", f"unknown game {str(name)[:64]!r} (one of "
                f"{', '.join(self._named)})")
        return game

    def of_topic(self, topic: str) -> tuple[ApiGame, ...]:
        """The games whose aggregates store ``topic``, in the order they were handed in."""
        return self._by_topic.get(topic, ())

    def placed(self, event: StoredEvent) -> tuple[ApiGame, RoundPlace] | None:
        """The round of a shoe a stored event belongs to, and its game, as that game places it
        (``ApiGame.feed_keys`` of the game storing the event's topic; None: no game's round)."""
        for game in self.of_topic(event.topic):
            if game.feed_keys is not None:
                place = game.feed_keys(event.topic, event.state, str(event.originator_id))
                if place is not None:
                    return game, place
        return None

    def services(self) -> tuple[str, ...]:
        """Every game's gRPC services, in order."""
        return tuple(name for game in self.games for name in game.services)

    def mixins(self, rpcs: Callable[[ApiGame], Callable[[], tuple[type, ...]] | None]
               ) -> tuple[type, ...]:
        """Every game's mixins of one frozen service (``rpcs``: ``ApiGame.table_rpcs`` or
        ``ApiGame.regulator_rpcs`` of a game)."""
        return tuple(mixin for game in self.games if (made := rpcs(game)) is not None
                     for mixin in made())


@dataclass(frozen=True)
class Served:
    """What a server is handed of the games (``services.api.server.start``): the API's part of
    each, the read side's (the read models it keeps), the regulator's (replays, the end of a
    round for its notary) and every game's commands' declarations (``commands``: the role
    table's rows of the RPCs that call them, ``services.api.roles.role_table``)."""

    api: tuple[ApiGame, ...] = ()
    read: tuple[ReadGame, ...] = ()
    regulator: tuple[RegulatorGame, ...] = ()
    commands: tuple[Declared[Any, Any], ...] = ()
