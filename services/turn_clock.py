"""The turn clock: what acts when a player lets the table's turn time run out (issues 13, 14).

A runner in the server (``sabot serve`` starts it, ``SABOT_TURN_CLOCK=off`` / ``--turn-clock
off`` does not) that follows the ledger's log, keeps the turn each round of a game with a turn
time waits on (each game handed to it, a ``TurnGame``: its query, ``cuarenta_turn`` /
``tyu_turn``, answers whose turn, since when by the ledger's clock, the table's
``turn_seconds``), and once a turn has run past its time issues the game's command
(``TurnGame.act``) through the ledger, as an actor of its own (``system:turn-clock``, role
``turn_clock``, recorded with the command like every actor). Today:

- Cuarenta: ``cuarenta_forfeit(reason="turn_time")`` for the seat to play (RULES.md §3: a side
  that does not play within the turn time forfeits the match; the stakes go to the other side
  less the house's commission);
- Treinta y Una: ``tyu_stand_for_absent`` for the player (RULES.md §2: the croupier records
  "me planto" for an absent player).

The runner only proposes. Each command names the turn (``turn``: its number) and the ledger
decides inside the command, with its own clock, whether the time is up (else
``TURN_NOT_EXPIRED`` / ``TURN_TIME_NOT_UP``) and whether that turn still runs (else
``TURN_MOVED``: the player acted meanwhile); a refused command stores nothing. The request
id is derived from the match's or round's id and the turn's number, so a retry, or a second
server's runner, never applies it twice: the ledger answers the first answer again.

It reads only its games' events (the store filters them by topic, ``read_events(...,
topics)``) and, with the server's hub, reads past the hub's position once it found no more: a
stake, or any event of a game without a turn time, costs it no read and no parse (issue 25).
Woken by the hub, it makes at most one pass per ``MIN_INTERVAL``.

The clock only claims turns nobody acts on: a player's own move after its turn time (by the
ledger's clock) is refused by the ledger itself, ``TURN_TIME_OVER``, which records the same
forfeit or "me planto" in that transaction (issue 20; ``services/ledger/refused.py``), so a
late move never stands, whether this runner is on, off or behind.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from domain.errors import RuleViolation
from services.api.logs import get_logger
from services.ledger.actor import Actor
from services.ledger.errors import NotTheWriter
from services.ledger.views import StoredEvent, TurnView

PRINCIPAL = "system:turn-clock"
ROLE = "turn_clock"
INTERVAL = 0.5  # seconds between looks at the running turns (and the log, without a hub)
MIN_INTERVAL = 0.05  # seconds at least between passes woken by the hub (new events)
PAGE = 10_000
# A round's turns end at its game's ``round_ends``: never asked about afterwards (a restarted
# server reads the whole log: it asks only about the rounds still running).
MAX_BACKOFF = 10.0  # seconds between passes after failures in a row
NOT_YET = frozenset({"TURN_NOT_EXPIRED", "TURN_TIME_NOT_UP"})  # the ledger's clock: not yet


class Log(Protocol):
    def read_events(self, after_position: int = 0, limit: int = 100,
                    topics: Sequence[str] | None = None) -> list[StoredEvent]: ...


@dataclass(frozen=True)
class TurnGame:
    """What the turn clock needs of a game whose players have a turn time (its port, handed in
    by the composition root): the events of its ``aggregates`` (their originator topics),
    among its ``topics``, touch a turn; a round's turns stop at its ``round_ends``;
    ``query(ledger, round_id)`` answers one round's ``TurnView``; ``act(ledger, request_id,
    round_id, view, actor)`` issues the game's command for a turn past its time (a forfeit, a
    stand for the absent player), naming ``view.turn``."""

    name: str
    aggregates: frozenset[str]
    topics: frozenset[str]
    round_ends: frozenset[str]
    query: Callable[[Any, str], TurnView]
    act: Callable[[Any, str, str, TurnView, Actor], object]


def actor(peer: str = "") -> Actor:
    """The turn clock's actor, recorded with each command it issues."""
    return Actor(PRINCIPAL, ROLE, peer)


def request_id(game: str, aggregate_id: str, turn: int) -> str:
    """The command's request id: one per (match or round, turn), the same in every server."""
    return f"turn-clock:{game}:{aggregate_id}:{turn}"


@dataclass
class Acted:
    """One command the clock had the ledger apply."""

    game: str
    id: str
    turn: int
    player: str
    request_id: str


class TurnClock:
    """The runner (see the module's text). ``clock``: what it compares the turns' deadlines
    with (the ledger's own clock decides; a test gives both the same); ``hub``: the server's
    log tailer (new events wake the clock at once; without one it reads the log every
    ``interval``); ``games``: the games whose turns it keeps."""

    def __init__(self, ledger: Any, *, games: Sequence[TurnGame],
                 clock: Callable[[], datetime] | None = None,
                 hub: Any = None, interval: float = INTERVAL, peer: str = "") -> None:
        self.ledger = ledger
        self.games = {game.name: game for game in games}
        # what it reads of the log: the topics of its games' aggregates with turns (sorted;
        # none: it reads nothing), and each one's game
        self._by_topic = {t: game for game in games for t in game.topics
                          if t.rsplit(".", 1)[0] in game.aggregates}
        self._topics = tuple(sorted(self._by_topic))
        self.clock = clock or (lambda: datetime.now(UTC))
        self.hub = hub
        self.interval = interval
        self.actor = actor(peer)
        self.after = 0  # the log's position read up to
        self.dirty: dict[str, str] = {}  # aggregate id -> game: its turn to be read again
        self.turns: dict[str, TurnView] = {}  # aggregate id -> the turn it waits on
        self.ended: set[str] = set()  # matches and rounds over: no turn again
        self.acted: list[Acted] = []
        self.stopped = threading.Event()
        self._thread: threading.Thread | None = None

    # --- one pass ------------------------------------------------------------------------

    def tick(self) -> list[Acted]:
        """Read the log's new events, the turns they touched, and act on every turn past its
        time: what the ledger applied in this pass."""
        self._follow()
        self._refresh()
        return self._fire()

    def _follow(self) -> None:
        # Only the events of the games with a turn time are read (the store filters by topic):
        # a stake, a coup of a game without one costs the clock nothing. With a hub, its
        # position (everything up to it is committed: the log's order is its commit order),
        # taken before the read, is read past once the read finds no more.
        end = self.hub.position if self.hub is not None else 0
        topics = self._topics
        while topics:
            batch: list[StoredEvent] = self.ledger.read_events(self.after, PAGE, topics)
            for event in batch:
                game = self._by_topic.get(event.topic)
                if game is None or event.originator_id in self.ended:
                    continue
                if event.topic in game.round_ends:
                    self.ended.add(event.originator_id)
                    self.dirty.pop(event.originator_id, None)
                    self.turns.pop(event.originator_id, None)
                else:
                    self.dirty[event.originator_id] = game.name
            if batch:
                self.after = batch[-1].position
            if len(batch) < PAGE:
                break
        self.after = max(self.after, end)

    def _refresh(self) -> None:
        while self.dirty:
            aggregate_id, game = self.dirty.popitem()
            try:
                view = self.games[game].query(self.ledger, aggregate_id)
            except RuleViolation as exc:  # (not one the clock can act on: leave it)
                get_logger().warning("turn clock: cannot read a turn", game=game,
                                     id=aggregate_id, reason=exc.reason)
                self.turns.pop(aggregate_id, None)
                continue
            if view.turn is None or view.since is None or view.seconds <= 0:
                self.turns.pop(aggregate_id, None)
            else:
                self.turns[aggregate_id] = view

    def _fire(self) -> list[Acted]:
        now = self.clock()
        done: list[Acted] = []
        for aggregate_id, view in list(self.turns.items()):
            assert view.since is not None and view.turn is not None and view.player is not None
            if now < datetime.fromisoformat(view.since) + timedelta(seconds=view.seconds):
                continue
            rid = request_id(view.game, aggregate_id, view.turn)
            try:
                self.games[view.game].act(self.ledger, rid, aggregate_id, view, self.actor)
            except NotTheWriter:
                break  # another server writes: its clock acts (what this pass did stays noted)
            except RuleViolation as exc:
                if exc.reason not in NOT_YET:  # moved on, over: read the turn again
                    self.turns.pop(aggregate_id, None)
                    self.dirty[aggregate_id] = view.game
                continue  # (not yet by the ledger's clock: at the next pass)
            acted = Acted(view.game, aggregate_id, view.turn, view.player, rid)
            get_logger().info("turn clock: the turn time ran out", game=view.game,
                              id=aggregate_id, turn=view.turn, player=view.player,
                              seconds=view.seconds)
            self.turns.pop(aggregate_id, None)
            self.dirty[aggregate_id] = view.game
            done.append(acted)
        self.acted += done
        return done

    # --- the thread ----------------------------------------------------------------------

    def start(self) -> TurnClock:
        self._thread = threading.Thread(target=self._run, name="sabot-turn-clock", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self.stopped.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        log = get_logger()
        failures = 0
        while not self.stopped.is_set():
            try:
                self.tick()
                failures = 0
            except Exception as exc:  # the store or the ledger away: report, go on
                failures += 1
                wait = min(MAX_BACKOFF, self.interval * 2 ** min(failures, 10))
                log.warning("turn clock: pass failed; retrying", error=repr(exc),
                            retry_in=wait)
                self.stopped.wait(wait)
                continue
            if self.hub is not None and not self.hub.closed:  # woken by new events
                if self.hub.wait_beyond(self.after, self.interval):
                    self.stopped.wait(MIN_INTERVAL)  # (a burst of commits: one pass, not many)
            else:
                self.stopped.wait(self.interval)
