"""What every servicer shares: the ledger, the caller and its actor, retries and caches.

Who may act on a stake or an account is decided by the ledger, from the actor each command
carries (``actor``: the authenticated principal and its peer); the caches here hold immutable
facts of tables, shoes and the games' rounds of a shoe (located by their game:
``ApiGame.round_home``) only, never an owner. ``games``: the games the server serves
(``services.api.game.Played``)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ParamSpec, TypeVar
from uuid import UUID

import grpc

from domain.errors import NotFound, RuleViolation
from services.api import errors
from services.api.game import ApiGame, Played
from services.api.hub import Hub
from services.api.interceptor import authenticate, current_principal
from services.api.roles import Principal, Role
from services.ledger.actor import Actor
from services.ledger.attribution import Attributor
from services.ledger.errors import Conflict
from services.ledger.remote import AnyLedger
from services.ledger.views import StoredEvent
from services.ledger.wire import HostGone

T = TypeVar("T")
P = ParamSpec("P")
S = TypeVar("S", bound=type)

CONFLICT_RETRIES = 4
CACHE_LIMIT = 50_000


class Base:
    """Shared by the servicers; thread-safe."""

    def __init__(self, ledger: AnyLedger, tokens: Mapping[str, Principal], hub: Hub,
                 games: Played | None = None) -> None:
        self.ledger = ledger
        self.tokens = dict(tokens)
        self.hub = hub
        self.games = Played() if games is None else games
        self._lock = threading.Lock()
        self._currency: dict[str, str] = {}  # table or account id -> currency (immutable)
        # a game's round of a shoe (a coup) -> (table, shoe) (immutable; ``ApiGame.round_home``)
        self._round_home: dict[str, tuple[str, str]] = {}
        self._actors: dict[tuple[Principal, str], Actor] = {}  # (principal, peer) -> its actor
        self._attributor: Attributor | None = None  # who caused each event (read here)

    # --- callers ----------------------------------------------------------------------------

    def caller(self, context: grpc.ServicerContext) -> Principal:
        """The caller, as the interceptor authenticated it for this RPC (without the interceptor:
        from the call's metadata)."""
        known = current_principal.get()
        if known is not None:
            return known
        who = authenticate(self.tokens, context.invocation_metadata())
        if isinstance(who, errors.ApiError):
            raise who
        return who

    def actor(self, context: grpc.ServicerContext) -> Actor:
        """The actor of the caller's commands: its principal id, role and account, and its peer
        (the terminal's name for a terminal principal, else the call's peer address)."""
        who = self.caller(context)
        terminal = getattr(who, "terminal", "") or ""
        peer = terminal or context.peer() or ""
        key = (who, peer)
        known = self._actors.get(key)
        if known is None:
            known = Actor(who.principal_id, who.role.value, peer, who.account)
            if len(self._actors) >= CACHE_LIMIT:
                self._actors.clear()
            self._actors[key] = known
        return known

    @staticmethod
    def own(who: Principal, account_id: str, field: str) -> None:
        """A player may read its own account only (commands: the ledger decides)."""
        if who.role is Role.PLAYER and who.account != account_id:
            raise errors.permission_denied(field, "a player token acts on its own account only")

    def actors(self, events: Sequence[StoredEvent]) -> dict[tuple[str, int], dict[str, Any] | None]:
        """The actor of the command behind each event, keyed by (originator id, version): from
        the requests among them, else read from the log (this process's own connection)."""
        if self._attributor is None:
            self._attributor = Attributor(self.ledger.app.recorder)
        return self._attributor.actors(
            (e.position, e.originator_id, e.version, e.topic, e.state) for e in events)

    # --- calling the ledger -----------------------------------------------------------------

    def read(self, fields: Mapping[str, str], fn: Callable[P, T], *args: P.args,
             **kwargs: P.kwargs) -> T:
        """A query, ``fn(*args, **kwargs)`` (checked by mypy as ``fn``'s own call); ledger
        field names are renamed to the request's."""
        try:
            return fn(*args, **kwargs)
        except RuleViolation as exc:
            exc.field = _rename(fields, exc.field)
            raise

    def write(self, fields: Mapping[str, str], fn: Callable[P, T], *args: P.args,
              **kwargs: P.kwargs) -> T:
        """A command, ``fn(*args, **kwargs)`` (checked by mypy as ``fn``'s own call), with its
        request id, run as its ``actor=`` (``self.actor(context)``: the caller's): retried on a
        concurrency conflict (the request id makes the retry safe), ABORTED when conflicts
        persist. Pokes the log tailer on success."""
        delay = 0.005
        for attempt in range(CONFLICT_RETRIES + 1):
            try:
                result = fn(*args, **kwargs)
            except Conflict as exc:
                if attempt == CONFLICT_RETRIES or isinstance(exc, HostGone):  # say it as it is
                    exc.field = _rename(fields, exc.field)
                    raise
                time.sleep(delay)
                delay *= 2
                continue
            except RuleViolation as exc:
                exc.field = _rename(fields, exc.field)
                raise
            self.hub.poke()
            return result
        raise AssertionError("unreachable")

    # --- immutable facts, cached ------------------------------------------------------------

    def table_currency(self, table_id: str, field: str) -> str:
        with self._lock:
            known = self._currency.get("t:" + table_id)
        if known is None:
            known = self.read({"table_id": field}, self.ledger.get_table, table_id).currency
            self._remember(self._currency, "t:" + table_id, known)
        return known

    def account_currency(self, account_id: str, field: str) -> str:
        with self._lock:
            known = self._currency.get("a:" + account_id)
        if known is None:
            known = self.read({"account_id": field}, self.ledger.get_account, account_id).currency
            self._remember(self._currency, "a:" + account_id, known)
        return known

    def round_home(self, round_id: str, field: str,
                   game: ApiGame | None = None) -> tuple[str, str]:
        """(table id, shoe id) of a game's round of a shoe (a coup), as its game locates it
        (``ApiGame.round_home``: ``game``'s when the caller knows it, else each game's in turn;
        NOT_FOUND naming ``field`` when no game has it)."""
        with self._lock:
            known = self._round_home.get(round_id)
        if known is None:
            if game is not None and game.round_home is not None:
                locators = [game.round_home]
            else:
                locators = [g.round_home for g in self.games.games if g.round_home is not None]
            if not locators:
                raise errors.ApiError(grpc.StatusCode.NOT_FOUND, field, "NOT_FOUND",
                                      "no game plays rounds of a shoe")
            for locate in locators[:-1]:
                with contextlib.suppress(NotFound):
                    known = locate(self, round_id, field)
                    break
            if known is None:  # the last game's answer, or its NOT_FOUND
                known = locators[-1](self, round_id, field)
            self._remember(self._round_home, round_id, known)
        return known

    def remember_round(self, round_id: str, table_id: str, shoe_id: str) -> None:
        self._remember(self._round_home, round_id, (table_id, shoe_id))

    def shoe_table(self, shoe_id: str, field: str) -> str:
        with self._lock:
            known = self._currency.get("s:" + shoe_id)  # shoe id -> table id (immutable)
        if known is None:
            known = self.read({"shoe_id": field}, self.ledger.get_shoe, shoe_id).table_id
            self._remember(self._currency, "s:" + shoe_id, known)
        return known

    def check_round(self, table_id: str, shoe_id: str, round_id: str, field: str,
                    noun: str = "round") -> None:
        """NOT_FOUND naming ``field`` unless the round ``round_id`` (a ``noun``: a coup) is of
        that table and shoe."""
        if self.round_home(round_id, field) != (table_id, shoe_id):
            raise errors.ApiError(
                grpc.StatusCode.NOT_FOUND, field, "NOT_FOUND", f"no such {noun} at this table/shoe"
            )

    def forget(self) -> None:
        """Drop every cached fact (as after a restart)."""
        with self._lock:
            self._currency.clear()
            self._round_home.clear()
            self._actors.clear()

    def _remember(self, cache: dict[str, Any], key: str, value: Any) -> None:
        with self._lock:
            if len(cache) >= CACHE_LIMIT:
                cache.clear()
            cache[key] = value


def mixed(neutral: S, mixins: tuple[type, ...], service: str) -> S:
    """The one servicer class of the gRPC ``service``: its game-neutral class ``neutral`` with
    the games' ``mixins`` (their own RPCs of the service: ``ApiGame.table_rpcs``,
    ``ApiGame.regulator_rpcs``) before it; ValueError if two of them define one RPC, or one of
    them an RPC of ``neutral`` itself (it would shadow it unseen); ``neutral`` itself without
    mixins."""
    seen: dict[str, type] = {name: neutral for name in vars(neutral) if name[:1].isupper()}
    for mixin in mixins:
        for name in vars(mixin):
            if name[:1].isupper() and name in seen:
                raise ValueError(f"{name} of {service} is defined by "
                                 f"{seen[name].__qualname__} and {mixin.__qualname__}")
            seen.setdefault(name, mixin)
    if not mixins:
        return neutral
    # made by the neutral class's own metaclass, as a class statement would make it
    made: S = type(neutral)(neutral.__name__, (*mixins, neutral),
                            {"__module__": neutral.__module__})
    return made


def _rename(fields: Mapping[str, str], field: str) -> str:
    head, dot, rest = field.partition(".")
    if field in fields:
        return fields[field]
    if dot and head in fields:
        return f"{fields[head]}.{rest}"
    return field


def check_uuid(field: str, value: str) -> str | None:
    """An optional client-chosen UUID id; None when empty."""
    if not value:
        return None
    try:
        if len(value) != 36:
            raise ValueError(value)
        return str(UUID(value))
    except ValueError:
        raise errors.invalid(field, "must be a UUID (36 characters) or empty") from None
