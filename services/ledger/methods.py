"""The ledger's methods as the ledger socket (SABOT-LEDGER-WIRE-1, ``wire.py``) declares them:
a command or a query, its parameters in order with their types, and its answer's type.

Data only (it imports the views, not the wire, the ledger or a game), so that every game's
package can declare its own methods without an import cycle: the socket's table is the core's
methods and those of every game a ledger is handed.

**A game's command is declared once** (issue 21): one line of its ``Face``, the class of its
typed commands, naming its stored name and the method of the game's commands object that
decides it::

    class TreintaYUnaLedger(Face):
        open_round = command("tyu_open_round", TreintaYUna.open_round)
        turn = query("tyu_turn", TreintaYUna.turn)

That line (a ``Declared``) gives: the ledger's method (``Ledger.game(TreintaYUnaLedger)
.open_round``, and the flat ``ledger.tyu_open_round`` tests and tools use), its ``Method`` on
the ledger socket (``method_of``: its parameters' wire types read from the method's signature,
its answer's type from its return annotation; ``Face.methods``: the game's part of the
socket's table, ``LedgerGame.methods``), and the typed call every servicer and the CLI make,
locally and over the socket alike: on a ``Face`` the attribute is a ``Callable`` of exactly
the method's parameters and answer (``ParamSpec``), so ``mypy --strict`` checks each call; the
face calls through its ``Binder`` (the local ``Ledger``: the game's commands object itself;
``RemoteLedger``: a frame on the socket). Who may call it is the role table's business
(``services/api/roles.py``: RPCs, not commands).
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar, Union, overload

from services.ledger.actor import Actor
from services.ledger.batch import CashBatchResult
from services.ledger.views import (
    AccountView,
    ShoeClosed,
    ShoeOpened,
    ShoeView,
    Statement,
    StoredEvent,
    TableClosed,
    TableView,
)

COMMAND, QUERY = "command", "query"
STR, OPT_STR, INT, OPT_INT, OPT_MAP, ACTOR = "str", "str?", "int", "int?", "map?", "actor"
# A list of words (account ids, card codes): a JSON array of strings; one text of words
# separated by spaces (the form before arrays) is still accepted, so the frames stay
# SABOT-LEDGER-WIRE-1.
WORDS, OPT_WORDS = "words", "words?"
# A batch's items (``services/ledger/batch.py``): a JSON array of maps of texts, integers,
# booleans and nulls; and a boolean.
ITEMS, BOOL = "items", "bool"
REQUEST_ID = ("request_id", STR)  # every command's first parameter
ACTOR_PARAM = ("actor", ACTOR)  # and its last


@dataclass(frozen=True)
class Method:
    """A method of the ledger the socket serves: a command or a query, its parameters in order
    (name, type), and the type of its answer."""

    kind: str
    params: tuple[tuple[str, str], ...]
    answer: Any

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.params)


def _command(*params: tuple[str, str], answer: Any) -> Method:
    """A core command's ``Method``: its request id first, then ``params``, then its actor."""
    return Method(COMMAND, (REQUEST_ID, *params, ACTOR_PARAM), answer)


def _query(*params: tuple[str, str], answer: Any) -> Method:
    return Method(QUERY, tuple(params), answer)


# The core's methods: tables, shoes, accounts, the log (each game adds its own).
CORE_METHODS: dict[str, Method] = {
    "open_table": _command(("table_id", STR), ("preset", STR), ("overrides", OPT_MAP),
                          ("game", OPT_STR), answer=TableView),
    "open_shoe": _command(("table_id", STR), ("shoe_id", OPT_STR), ("deck_kind", STR),
                         answer=ShoeOpened),
    "cut": _command(("shoe_id", STR), ("position", INT), ("cut_by", STR), answer=ShoeView),
    "close_shoe": _command(("shoe_id", STR), answer=ShoeClosed),
    "close_table": _command(("table_id", STR), answer=TableClosed),
    "open_account": _command(("account_id", STR), ("currency", STR), answer=AccountView),
    "deposit": _command(("account_id", STR), ("amount", INT), answer=AccountView),
    "withdraw": _command(("account_id", STR), ("amount", INT), answer=AccountView),
    "cash_batch": _command(("movements", ITEMS), ("atomic", BOOL), answer=CashBatchResult),
    "get_table": _query(("table_id", STR), answer=TableView),
    "get_shoe": _query(("shoe_id", STR), answer=ShoeView),
    "list_tables": _query(("page_size", INT), ("page_token", STR),
                         answer=tuple[list[TableView], str]),
    "get_account": _query(("account_id", STR), answer=AccountView),
    "statement": _query(("account_id", STR), ("after", INT), ("limit", INT), answer=Statement),
    "read_events": _query(("after_position", INT), ("limit", INT), ("topics", OPT_WORDS),
                         answer=list[StoredEvent]),
    "balances": _query(answer=dict[str, int]),
    "audit_balances": _query(answer=dict[str, int]),
    "writer_status": _query(answer=dict[str, Any]),
    # answered from the ledger process's memory, at once (the health monitor, the metrics)
    "writer_state": _query(answer=dict[str, Any]),
    "writer_metrics": _query(answer=str),
}
CORE_NAMES = frozenset(CORE_METHODS)


# --- one declaration per command ---------------------------------------------------------------

P = ParamSpec("P")
R = TypeVar("R")
F = TypeVar("F", bound="Face")


def _wire_type(name: str, tp: Any) -> str:
    """The wire type of a parameter of Python type ``tp`` (TypeError: none)."""
    optional = False
    if typing.get_origin(tp) in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        optional = len(args) < len(typing.get_args(tp))
        if len(args) == 2 and str in args and typing.get_origin(
                next(a for a in args if a is not str)) in (Sequence, list, tuple):
            args.remove(str)  # words, or one text of words (``WORDS``)
        if len(args) != 1:
            raise TypeError(f"{name}: a parameter of type {tp!r} has no wire type")
        tp = args[0]
    origin = typing.get_origin(tp) or tp
    if tp is bool and not optional:  # before int: a bool is an int to Python
        return BOOL
    if origin in (Sequence, list) and not optional and typing.get_origin(
            (typing.get_args(tp) or (None,))[0]) in (Mapping, dict):
        return ITEMS  # a batch's items: maps of texts, integers, booleans and nulls
    if tp is str:
        return OPT_STR if optional else STR
    if tp is int:
        return OPT_INT if optional else INT
    if tp is Actor and not optional:
        return ACTOR
    if origin in (Sequence, list, tuple) and typing.get_args(tp)[:1] == (str,):
        return OPT_WORDS if optional else WORDS
    if origin in (Mapping, dict) and optional and typing.get_args(tp) == (str, str):
        return OPT_MAP
    raise TypeError(f"{name}: a parameter of type {tp!r} has no wire type")


def method_of(kind: str, impl: Callable[..., Any]) -> Method:
    """The ``Method`` of a game's method ``impl`` (its first parameter its commands object):
    every other parameter in order, with its wire type read from its annotation, and its
    answer's type (a command's first parameter is ``request_id``, its last ``actor``)."""
    hints = typing.get_type_hints(impl)
    names = list(inspect.signature(impl).parameters)[1:]
    params = tuple((n, _wire_type(f"{impl.__qualname__}.{n}", hints[n])) for n in names)
    if kind == COMMAND and (params[:1] != (REQUEST_ID,) or params[-1:] != (ACTOR_PARAM,)):
        raise TypeError(f"{impl.__qualname__}: a command takes request_id first, actor last")
    return Method(kind, params, hints["return"])


class Binder(Protocol):
    """What a face calls through: the local ledger or the socket's client."""

    def bind(self, declared: Declared[P, R]) -> Callable[P, R]: ...


class Declared(Generic[P, R]):
    """One command or query of a game, declared once (see the module's text): its ``kind``,
    its ``stored`` name (the request's ``command``, the socket's method: frozen) and ``impl``,
    the method of the game's commands object that decides it, whose signature is the
    declaration's (``method``: its ``Method`` on the socket); for a command, ``roles``, the
    names of the roles that may call it (besides the admin), and ``rpcs``, the gRPC methods
    that call it (both or neither: TypeError; a query names neither, its RPCs are read-only
    rows of the role table)."""

    def __init__(self, kind: str, stored: str, impl: Callable[Concatenate[Any, P], R],
                 roles: Iterable[str] = (), rpcs: Iterable[str] = ()) -> None:
        self.kind = kind
        self.stored = stored
        self.impl = impl
        self.attr = impl.__name__
        self.roles = frozenset(str(role) for role in roles)
        self.rpcs = tuple(rpcs)
        self._method: Method | None = None
        if kind == QUERY and (self.roles or self.rpcs):
            raise TypeError(f"{stored}: a query declares no roles nor RPCs (read-only rows "
                            "of the role table)")
        if bool(self.roles) != bool(self.rpcs) or len(set(self.rpcs)) != len(self.rpcs):
            raise TypeError(f"{stored}: a command declares the roles that may call it with "
                            "the RPCs that call it (both or neither, each RPC once)")

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.attr = name

    @property
    def method(self) -> Method:
        """Its ``Method`` (read from ``impl``'s signature on first use)."""
        if self._method is None:
            self._method = method_of(self.kind, self.impl)
        return self._method

    @overload
    def __get__(self, obj: None, owner: type[Any] | None = None) -> Declared[P, R]: ...

    @overload
    def __get__(self, obj: Binder, owner: type[Any] | None = None) -> Callable[P, R]: ...

    def __get__(self, obj: Binder | None, owner: type[Any] | None = None
                ) -> Declared[P, R] | Callable[P, R]:
        if obj is None:
            return self
        bound = obj.bind(self)
        vars(obj)[self.attr] = bound  # bound once: the next look finds it on the instance
        return bound


def command(stored: str, impl: Callable[Concatenate[Any, P], R], *, roles: Iterable[str] = (),
            rpcs: Iterable[str] = ()) -> Declared[P, R]:
    """A command (stored with its request id and actor) named ``stored``, decided by
    ``impl``, that ``roles`` may call through the gRPC methods ``rpcs``."""
    return Declared(COMMAND, stored, impl, roles, rpcs)


def query(stored: str, impl: Callable[Concatenate[Any, P], R]) -> Declared[P, R]:
    """A query (reads the committed state, stores nothing) named ``stored``, answered by
    ``impl``."""
    return Declared(QUERY, stored, impl)


class Face:
    """A game's typed commands: each attribute a ``Declared`` (see the module's text), called
    through ``binder``. Built by a ledger (``Ledger.game``, ``RemoteLedger.game``)."""

    def __init__(self, binder: Binder) -> None:
        self._binder = binder

    def bind(self, declared: Declared[P, R]) -> Callable[P, R]:
        return self._binder.bind(declared)

    @classmethod
    def declared(cls) -> dict[str, Declared[Any, Any]]:
        """Its declarations by stored name, in the order they are declared."""
        found: dict[str, Declared[Any, Any]] = {}
        for klass in reversed(cls.__mro__):
            for value in vars(klass).values():
                if isinstance(value, Declared):
                    found[value.stored] = value
        return found

    @classmethod
    def methods(cls) -> dict[str, Method]:
        """Its part of the socket's table: stored name -> ``Method``."""
        return {stored: d.method for stored, d in cls.declared().items()}
