"""The ledger's Python API, used by the gRPC layer and the CLI: the game-neutral core (tables,
shoes, accounts, the log) and the commands and queries of every game it was handed
(``Ledger(config, games=...)``: each a ``services.ledger.game.LedgerGame``, given by the
composition root, ``services/bootstrap.py``), typed: ``ledger.game(Face)`` is a game's face
(``services.ledger.methods``: each command declared once), the same over the socket
(``RemoteLedger.game``). Each is also an attribute under its stored name (``ledger.tyu_deal``),
for tests and tools; typed code uses the face.

Every mutating method takes ``request_id`` first: a retry with the same id and the same
arguments returns the first answer and stores nothing more; the same id with other arguments
raises ``RequestIdReused`` (ALREADY_EXISTS, field ``request_id``). Errors are
``domain.errors`` ``InvalidArgument`` / ``FailedPrecondition`` / ``NotFound`` and
``services.ledger.errors`` ``AlreadyExists`` / ``Conflict`` (ABORTED), each with ``.field``,
``.reason`` and ``.message``. Amounts are integer minor units. Ids of tables and accounts are
chosen by the client (1..64 characters of ``[a-z0-9-]``); shoe, coup and stake ids are UUID
text, generated unless given.

The methods are thread-safe. ``Ledger(config, batching=True)`` (for the gRPC server) runs the
commands on one writer thread that folds the commands queued meanwhile into one transaction;
``batching=False`` decides and saves each command in the calling thread. Queries read the
committed state. ``LedgerConfig.from_environ()`` reads SABOT_STORE_URL and SABOT_SEAL_KEY.
"""

from __future__ import annotations

import json
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from datetime import datetime
from typing import Any, ParamSpec, TypeVar

from eventsourcing.persistence import Transcoding

from domain.cards import parse_deck_kind
from domain.currency import check_currency, format_minor
from domain.errors import FailedPrecondition, InvalidArgument, RuleViolation
from domain.shuffle import ALGORITHM_ID, check_cut
from services.ledger import batch, schema, wire
from services.ledger.account import DEBIT_TOPICS, ENTRY_TOPICS, Account, AccountKind
from services.ledger.actor import SYSTEM, Actor
from services.ledger.application import LedgerApplication
from services.ledger.batch import CashBatchResult
from services.ledger.config import APP_NAME, LedgerConfig, store_env
from services.ledger.core import (
    CASH_IN,
    CASH_OUT,
    DEFERRED,
    Core,
    check_amount,
    check_open,
    make_token,
    page_size_of,
    read_log,
    read_token,
    unwrapped,
)
from services.ledger.errors import AlreadyExists
from services.ledger.evidence import ChainKey, ChainWriter
from services.ledger.game import GameCommands, LedgerGame
from services.ledger.ids import (
    account_uuid,
    cage_account,
    check_name,
    table_account,
    table_uuid,
)
from services.ledger.lease import Keeper, lease_from_env
from services.ledger.methods import Declared, Face
from services.ledger.shoe import Shoe
from services.ledger.table import UNRECORDED_GAME, Table
from services.ledger.views import (
    AccountView,
    Entry,
    MovementView,
    ShoeClosed,
    ShoeOpened,
    ShoeView,
    Statement,
    StoredEvent,
    TableClosed,
    TableView,
)
from services.ledger.writer import UnitOfWork, Writer

T = TypeVar("T")
_DEPOSIT, _WITHDRAWAL = "deposit", "withdrawal"  # the kinds of a cashier's batch movements
P = ParamSpec("P")
R = TypeVar("R")
F = TypeVar("F", bound=Face)


__all__ = [
    "AccountView",
    "Ledger",
    "LedgerConfig",
    "ShoeClosed",
    "ShoeOpened",
    "ShoeView",
    "Statement",
    "StoredEvent",
    "TableView",
    "read_log",
]


class Ledger:
    """The ledger over one event store (``LedgerConfig.store_url``): the core's commands and
    queries, and those of the games it was handed."""

    def __init__(self, config: LedgerConfig, *, games: Sequence[LedgerGame],
                 batching: bool = False, standby: bool = False) -> None:
        """``games``: the games it plays (their names, and their methods' names, unique across
        them and the core; ValueError otherwise); ``standby``: never take the store's writer
        lease (a reader: its commands are refused with ``NotTheWriter``, its queries read the
        store)."""
        self.config = config
        self.games: dict[str, LedgerGame] = {}
        for game in games:
            if game.name in self.games:
                raise ValueError(f"two games named {game.name!r}")
            self.games[game.name] = game
        # the socket's table of methods: the core's and the games' (ValueError: a name taken)
        self.schema = wire.schema_of(self.games.values())
        for game in self.games.values():  # nor a name of the ledger's own (``close``)
            for stored in game.methods:
                if hasattr(type(self), stored):
                    raise ValueError(f"{game.name}: the method name {stored!r} is taken")
        if len(config.seal_key) != 32:
            raise InvalidArgument("seal_key", "BAD_KEY", "must be 32 bytes")
        env = store_env(config.store_url, config.pool_size, config.max_overflow)
        env.update(config.extra_env)
        self.app = LedgerApplication(env=env, transcodings=transcodings_of(self.games.values()))
        postgres = env["PERSISTENCE_MODULE"] == "eventsourcing.postgres"
        if not postgres:
            datastore: Any = self.app.recorder.datastore  # type: ignore[attr-defined]
            with datastore.transaction(commit=True) as cursor:
                schema.apply_sqlite_guards(cursor)
        elif schema_owner(self.app):  # else its owner set it up (services/ledger/schema.py)
            schema.apply_schema(schema.conninfo(env),
                                (f"{env['POSTGRES_SCHEMA']}.{APP_NAME}_events",))
        try:
            self.app.use_evidence(chain_writer(self.app, config, standby))
        except BaseException:
            self.app.close()
            raise
        # One writer per store (services/ledger/lease.py): this one decides while it holds it.
        self.lease = lease_from_env(env, config.writer_name)
        if postgres:
            self.app.recorder.fence = self.lease  # type: ignore[attr-defined]  # ArrayInsert
        self._writer = Writer(self.app, config.clock, batching=batching, lease=self.lease)
        self._keeper: Keeper | None = None
        if not standby:
            if self.lease.try_acquire():
                self._writer.take_over()
            self._keeper = Keeper(self.lease, self._writer.take_over,
                                  self._writer.step_down).start()
        self.core = Core(self.app, self._writer, config, self.games)  # every game's commands'
        self._attributor = self.core.attributor
        # the core's services under their names before the Core (for code that used them)
        self._run = self.core.run
        self._account = self.core.account
        self._player = self.core.player
        self._post = self.core.post
        # Each game's commands object (``LedgerGame.commands``), and its declared commands and
        # queries (``LedgerGame.face``) by stored name.
        self._neutral = GameCommands(self.core)  # (a table of a game not handed in)
        self._handlers: dict[str, GameCommands] = {}
        self._declared: dict[str, tuple[GameCommands, str]] = {}  # stored name -> (its
        # game's commands object, its game's name)
        for game in self.games.values():
            handler = self._handlers[game.name] = game.commands(self.core)
            for stored, declared in game.face.declared().items():
                self._declared[stored] = (handler, game.name)
                # also under its stored name, as the ledger's own method (tests, tools, the
                # socket's host: ``submit``); typed code calls it through ``game(face)``
                setattr(self, stored, types.MethodType(declared.impl, handler))

    def game(self, face: type[F]) -> F:
        """The typed commands of a game it plays (``LedgerGame.face``; ValueError: none of
        its games'): a new face (a servicer holds its own)."""
        if not any(g.face is face for g in self.games.values()):
            raise ValueError(f"this ledger plays no game of {face.__name__}")
        return face(self)

    def bind(self, declared: Declared[P, R]) -> Callable[P, R]:
        """The declared command or query, on its game's commands object (``Face``)."""
        handler = self._declared[declared.stored][0]
        impl = declared.impl

        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            return impl(handler, *args, **kwargs)

        return call

    def game_of_method(self, name: str) -> LedgerGame | None:
        """The game that declares the method ``name`` (None: a core method, or none)."""
        found = self._declared.get(name)
        return None if found is None else self.games[found[1]]

    def saved_position(self) -> int:
        """The log position of the last event this ledger saved (0: none yet); every event up
        to it is committed (the store commits in log order). Costs no query."""
        return self._writer.saved_position

    def close(self) -> None:
        """Stop the writer (its queue drained), let the writer lease go, close the store's
        connections."""
        if self._keeper is not None:
            self._keeper.stop()
        self._writer.close()
        self.lease.release()
        if self.app.evidence is not None:
            self.app.evidence.close()  # its head file
        self.app.close()

    def writer_status(self) -> dict[str, Any]:
        """Whether this ledger is the store's active writer (``active``), and who is
        (``holder``: its name, "" if unknown)."""
        if self._writer.active:
            return {"active": True, "holder": self.lease.name}
        return {"active": False, "holder": self._writer.not_the_writer().holder}

    def writer_state(self) -> dict[str, Any]:
        """The writer's state from its memory, never the store (the health monitor's)."""
        return self._writer.state()

    def writer_metrics(self) -> str:
        """The writer's series, in the text exposition format (the metrics page's)."""
        return self._writer.metrics.text()

    # --- plumbing ---------------------------------------------------------------------------

    def submit(self, method: str, *args: Any, **kwargs: Any) -> Future[Any]:
        """Start the command ``method`` (one of ``schema.commands``) without waiting for it: its
        future answers once its batch is stored. A malformed input raises here, at once."""
        if method not in self.schema.commands:
            raise ValueError(f"not a ledger command: {method!r}")
        DEFERRED.on = True
        try:
            future: Future[Any] = getattr(self, method)(*args, **kwargs)
        finally:
            DEFERRED.on = False
        return future

    # --- tables and shoes -------------------------------------------------------------------

    def open_table(
        self,
        request_id: str,
        table_id: str,
        preset: str = "",
        overrides: Mapping[str, str] | None = None,
        game: str | None = None,
        *,
        actor: Actor = SYSTEM,
    ) -> TableView:
        """Open a table to play ``game`` (the name of a game the ledger plays; default
        ``UNRECORDED_GAME``, what a table that records none plays; INVALID_ARGUMENT
        ``UNKNOWN_GAME`` otherwise) under a preset of its rule book (default, or "": the rule
        book's, as the socket's ``preset:str`` and the gRPC field say it; stored by its name)
        with options overridden; records the game and the whole ruleset. Also opens the game's
        table accounts (bank, layout, house, ...). ALREADY_EXISTS if it exists."""
        overrides_d = dict(overrides or {})
        self.core.game_named(UNRECORDED_GAME if game is None else game)  # UNKNOWN_GAME
        played = self.games[UNRECORDED_GAME if game is None else game]
        chosen = preset or played.options.default_preset

        def decide(unit: UnitOfWork) -> TableView:
            check_name(table_id, "table_id")
            rules = played.options.build(chosen, overrides_d)
            if unit.get(Table, table_uuid(table_id)) is not None:
                raise AlreadyExists("table_id", "TABLE_EXISTS", f"table {table_id!r} exists")
            for role in played.table_accounts:
                if unit.get(Account, account_uuid(table_account(table_id, role))) is not None:
                    raise AlreadyExists("table_id", "TABLE_EXISTS", "the table's accounts exist")
            options = played.options.text(rules)  # the preset first, then every option
            table = Table._create(
                Table.Opened, id=table_uuid(table_id), timestamp=unit.now, table_id=table_id,
                preset=rules.preset, options=options, game=played.name,
            )
            unit.add(table)
            for role in played.table_accounts:
                self.core.open_account(unit, table_account(table_id, role), role,
                                       rules.currency, table_id)
            return self._table_view(unit, table)

        # the arguments as stored: ``game`` only for another game (a retry of a command stored
        # before games were recorded digests the same)
        args: dict[str, Any] = {"table_id": table_id, "preset": chosen, "overrides": overrides_d}
        if played.name != UNRECORDED_GAME:
            args["game"] = played.name
        return self.core.run("open_table", request_id, args, decide, TableView, actor)

    def open_shoe(
        self, request_id: str, table_id: str, shoe_id: str | None = None,
        deck_kind: str = "FRENCH-52", *, actor: Actor = SYSTEM,
    ) -> ShoeOpened:
        """Shuffle a new shoe (fresh 32-byte seed, stored sealed) and publish its commitment.
        FAILED_PRECONDITION if the table has a shoe open."""

        def decide(unit: UnitOfWork) -> ShoeOpened:
            table = self.core.table(unit, table_id)
            kind = parse_deck_kind(deck_kind, "deck_kind")
            played = self.core.game(table)
            if kind is not played.deck_kind:
                raise InvalidArgument(
                    "deck_kind", "WRONG_DECK",
                    f"{played.name} is played with {played.deck_kind.value}, not {kind.value}")
            check_open(table)
            if table.shoe_id is not None:
                raise FailedPrecondition(
                    "table_id", "SHOE_OPEN", f"shoe {table.shoe_id} is still open at the table"
                )
            sid = self.core.id_for(unit, Shoe, shoe_id, "shoe")
            decks = played.decks(self.core.rules(table))
            shoe = self.core.start_shoe(unit, table, kind, decks, sid)
            return ShoeOpened(str(sid), table.table_id, shoe.commitment, ALGORITHM_ID,
                              kind.value, decks)

        args = {"table_id": table_id, "shoe_id": shoe_id, "deck_kind": deck_kind}
        return self.core.run("open_shoe", request_id, args, decide, ShoeOpened, actor)

    def cut(self, request_id: str, shoe_id: str, position: int, cut_by: str, *,
            actor: Actor = SYSTEM) -> ShoeView:
        """Cut the shoe at ``position`` (1..size-1), by ``cut_by`` (a player's account id or a
        name). Once only, before the first coup."""

        def decide(unit: UnitOfWork) -> ShoeView:
            shoe = self.core.shoe(unit, shoe_id)
            if not isinstance(cut_by, str) or not 1 <= len(cut_by) <= 64:
                raise InvalidArgument("cut_by", "BAD_NAME", "must be 1 to 64 characters")
            if not isinstance(position, int) or isinstance(position, bool):
                raise InvalidArgument("position", "BAD_POSITION", "must be an integer")
            check_cut(position, shoe.size, "position")
            if shoe.closed:
                raise FailedPrecondition("shoe_id", "SHOE_CLOSED", "the shoe is closed")
            if shoe.cut_position is not None:
                raise FailedPrecondition("shoe_id", "ALREADY_CUT", "the shoe was cut already")
            shoe.trigger_event(Shoe.Cut, timestamp=unit.now, position=position, cut_by=cut_by)
            return self._shoe_view(shoe)

        args = {"shoe_id": shoe_id, "position": position, "cut_by": cut_by}
        return self.core.run("cut", request_id, args, decide, ShoeView, actor)

    def close_shoe(self, request_id: str, shoe_id: str, *, actor: Actor = SYSTEM
                   ) -> ShoeClosed:
        """Close the shoe between rounds (the game's ``shoe_closing``: Trente et Quarante's
        free stakes go back to their players, prisoners stay on the layout); the seed is
        revealed."""

        def decide(unit: UnitOfWork) -> ShoeClosed:
            shoe = self.core.shoe(unit, shoe_id)
            if shoe.closed:
                raise FailedPrecondition("shoe_id", "SHOE_CLOSED", "the shoe is closed already")
            table = self.core.table(unit, shoe.table_id)
            ts = unit.now
            # the game's part (Trente et Quarante: its free stakes back to their players)
            returned: tuple[MovementView, ...] = tuple(
                self._handler(table).shoe_closing(unit, table, shoe, ts))
            cards = self.core.cards(shoe).cards if shoe.cut_position is not None else None
            seed, digest = self.core.close_shoe(shoe, ts, cards, table)
            return ShoeClosed(str(shoe.id), seed.hex(), shoe.commitment, shoe.cut_position,
                              digest, returned)

        return self.core.run("close_shoe", request_id, {"shoe_id": shoe_id}, decide, ShoeClosed,
                         actor)

    def close_table(self, request_id: str, table_id: str, *, actor: Actor = SYSTEM
                    ) -> TableClosed:
        """Close the table for good, between shoes (FAILED_PRECONDITION ``SHOE_OPEN`` while one
        is open): the game's ``table_closing`` settles what is left (Trente et Quarante: every
        stake left on its layout leaves it, free stakes returned and prisoners settled per the
        table's ``prisoners_at_close``, recorded on the table's latest coup as a shoe's end
        is); then ``Table.Closed``. A closed table opens no more shoes (FAILED_PRECONDITION
        ``TABLE_CLOSED``)."""

        def decide(unit: UnitOfWork) -> TableClosed:
            table = self.core.table(unit, table_id)
            check_open(table)
            if table.shoe_id is not None:
                raise FailedPrecondition(
                    "table_id", "SHOE_OPEN", f"shoe {table.shoe_id} is open: close it first"
                )
            ts = unit.now
            # the game's part: what it settled, on which round, under which option
            closing = self._handler(table).table_closing(unit, table, ts)
            option, settled = closing.prisoners_at_close, closing.settled
            table.trigger_event(
                Table.Closed, timestamp=ts, coup_id=closing.round_id,
                prisoners_at_close=option, stakes=closing.stakes,
            )
            return TableClosed(table.table_id, closing.round_id, option, tuple(settled))

        return self.core.run("close_table", request_id, {"table_id": table_id}, decide, TableClosed,
                         actor)

    # --- accounts ---------------------------------------------------------------------------

    def open_account(self, request_id: str, account_id: str, currency: str = "EUR", *,
                     actor: Actor = SYSTEM) -> AccountView:
        """A player's account, balance 0. ALREADY_EXISTS if it exists."""

        def decide(unit: UnitOfWork) -> AccountView:
            check_name(account_id, "account_id")
            _currency(currency)
            if unit.get(Account, account_uuid(account_id)) is not None:
                raise AlreadyExists(
                    "account_id", "ACCOUNT_EXISTS", f"account {account_id!r} exists"
                )
            account = Account._create(
                Account.Opened, id=account_uuid(account_id), timestamp=unit.now,
                account_id=account_id, kind=AccountKind.PLAYER, currency=currency, table_id=None,
            )
            unit.add(account)
            return _account_view(account)

        args = {"account_id": account_id, "currency": currency}
        return self.core.run("open_account", request_id, args, decide, AccountView, actor)

    def _cage(self, unit: UnitOfWork, currency: str, ts: datetime) -> Account:
        name = cage_account(currency)
        cage = unit.get(Account, account_uuid(name))
        if cage is None:
            cage = self.core.open_account(unit, name, AccountKind.CAGE, currency)
        return cage

    def deposit(self, request_id: str, account_id: str, amount: int, *,
                actor: Actor = SYSTEM) -> AccountView:
        """Cash in at the cage (cage -> player)."""

        def decide(unit: UnitOfWork) -> AccountView:
            player = self.core.player(unit, account_id)
            amt = check_amount(amount)
            ts = unit.now
            cage = self._cage(unit, player.currency, ts)
            self.core.post(cage, player, amt, CASH_IN, request_id, None, ts)
            return _account_view(player)

        args = {"account_id": account_id, "amount": amount}
        return self.core.run("deposit", request_id, args, decide, AccountView, actor)

    def withdraw(self, request_id: str, account_id: str, amount: int, *,
                 actor: Actor = SYSTEM) -> AccountView:
        """Cash out at the cage (player -> cage); FAILED_PRECONDITION field ``amount`` beyond
        the balance."""

        def decide(unit: UnitOfWork) -> AccountView:
            player = self.core.player(unit, account_id)
            amt = check_amount(amount)
            if amt > player.balance:
                raise FailedPrecondition(
                    "amount", "INSUFFICIENT_FUNDS",
                    f"the balance is {format_minor(player.balance, player.currency)}"
                )
            ts = unit.now
            cage = self._cage(unit, player.currency, ts)
            self.core.post(player, cage, amt, CASH_OUT, request_id, None, ts)
            return _account_view(player)

        args = {"account_id": account_id, "amount": amount}
        return self.core.run("withdraw", request_id, args, decide, AccountView, actor)

    def cash_batch(self, request_id: str, movements: list[dict[str, Any]],
                   atomic: bool = False, *, actor: Actor = SYSTEM) -> CashBatchResult:
        """Several cage movements in one command (``services/ledger/batch.py``): each a map
        ``{"kind": "deposit" | "withdrawal", "account_id", "amount"}``, decided in order as
        ``deposit`` / ``withdraw`` would be (a withdrawal sees the deposits before it), each
        stored with the same events; ``atomic``: the first refused refuses the batch, naming
        ``movements[i].<field>``, nothing stored."""
        items = batch.check_items(movements, "movements")
        checked: list[tuple[str, str, int]] = []
        for i, m in enumerate(items):
            kind = batch.text_of(m, "kind", "movements", i)
            if kind not in (_DEPOSIT, _WITHDRAWAL):
                raise InvalidArgument(f"movements[{i}].kind", "UNKNOWN_KIND",
                                      "must be deposit or withdrawal")
            account_id = batch.text_of(m, "account_id", "movements", i)
            assert kind is not None and account_id is not None
            checked.append((kind, account_id, batch.int_of(m, "amount", "movements", i)))

        def decide(unit: UnitOfWork) -> CashBatchResult:
            plan: list[tuple[int, str, Account, int]] = []
            refused: dict[int, RuleViolation] = {}
            running: dict[str, int] = {}  # each account's balance after the items before
            for i, (kind, account_id, amount) in enumerate(checked):
                try:
                    player = self.core.player(unit, account_id)
                    amt = check_amount(amount)
                    balance = running.get(account_id, player.balance)
                    if kind == _WITHDRAWAL and amt > balance:
                        raise FailedPrecondition(
                            "amount", "INSUFFICIENT_FUNDS",
                            f"the balance is {format_minor(balance, player.currency)}")
                except RuleViolation as exc:
                    if atomic:
                        raise batch.at(exc, "movements", i) from None
                    refused[i] = exc
                    continue
                running[account_id] = balance + (amt if kind == _DEPOSIT else -amt)
                plan.append((i, kind, player, amt))
            ts = unit.now
            results = [batch.CashItemResult(error=batch.item_error(refused[i]))
                       if i in refused else batch.CashItemResult() for i in range(len(checked))]
            for i, kind, player, amt in plan:
                cage = self._cage(unit, player.currency, ts)
                if kind == _DEPOSIT:
                    self.core.post(cage, player, amt, CASH_IN, request_id, None, ts)
                else:
                    self.core.post(player, cage, amt, CASH_OUT, request_id, None, ts)
                results[i] = batch.CashItemResult(account=_account_view(player))
            return batch.CashBatchResult(tuple(results), len(plan))

        args = {"movements": [{"kind": k, "account_id": a, "amount": n} for k, a, n in checked],
                "atomic": bool(atomic)}
        return self.core.run("cash_batch", request_id, args, decide, CashBatchResult, actor)

    # --- queries ----------------------------------------------------------------------------

    def _handler(self, table: Table) -> GameCommands:
        """The commands object of the table's game (a neutral one: a game not handed in)."""
        return self._handlers.get(table.game, self._neutral)

    def _table_view(self, unit: UnitOfWork, table: Table) -> TableView:
        handler = self._handler(table)
        layout, coup_shoe_id = handler.table_layout(unit, table)
        # the game's rounds (Trente et Quarante: its coups): the latest, and how many
        latest, count = handler.table_rounds(table)
        return TableView(
            table_id=table.table_id, game=table.game, preset=table.preset,
            options=dict(table.options),
            currency=table.options.get("currency", ""), shoe_id=table.shoe_id,
            coup_id=latest, coups=count, shoes=table.shoes,
            layout=layout,
            bank_account=table_account(table.table_id, AccountKind.BANK),
            layout_account=table_account(table.table_id, AccountKind.LAYOUT),
            create_time=table.created_on.isoformat(),
            coup_shoe_id=coup_shoe_id,
            closed=table.closed,
            close_time=(self.core.event_times(table, {Table.Closed.TOPIC: "close"}).get("close")
                        if table.closed else None),
        )

    def _shoe_view(self, shoe: Shoe) -> ShoeView:
        wanted = {}
        if shoe.cut_position is not None:
            wanted[Shoe.Cut.TOPIC] = "cut"
        if shoe.closed:
            wanted[Shoe.Closed.TOPIC] = "close"
        times = self.core.event_times(shoe, wanted) if wanted else {}
        return ShoeView(
            shoe_id=str(shoe.id), table_id=shoe.table_id, algorithm=shoe.algorithm,
            deck_kind=shoe.deck_kind, decks=shoe.decks, size=shoe.size,
            commitment=shoe.commitment, cut_position=shoe.cut_position, cut_by=shoe.cut_by,
            position=shoe.position, coups=shoe.coups, cut_card_reached=shoe.cut_card_reached,
            closed=shoe.closed, seed=shoe.seed, order_digest=shoe.order_digest,
            create_time=shoe.created_on.isoformat(), cut_time=times.get("cut"),
            close_time=times.get("close"),
        )

    def get_table(self, table_id: str) -> TableView:
        return self._writer.read(lambda u: self._table_view(u, self.core.table(u, table_id)))

    def get_shoe(self, shoe_id: str) -> ShoeView:
        return self._writer.read(lambda u: self._shoe_view(self.core.shoe(u, shoe_id)))

    def list_tables(self, page_size: int = 50, page_token: str = "") -> tuple[list[TableView], str]:
        """Tables in the order they opened: at most ``page_size`` (1..1000), after the page
        ``page_token`` ended (opaque; "" for the first page). Returns the tables and the next
        page's token ("" on the last page). Found by the log's ``Table.Opened`` events."""
        size = page_size_of(page_size)
        after = int(read_token(page_token, "tables", "")) if page_token else 0
        notes = self.app.recorder.select_notifications(
            after, size + 1, inclusive_of_start=False, topics=(Table.Opened.TOPIC,)
        )
        page = notes[:size]
        tables = [self.get_table(str(json.loads(n.state)["table_id"])) for n in page]
        token = make_token("tables", "", str(page[-1].id)) if len(notes) > size else ""
        return tables, token

    def get_account(self, account_id: str) -> AccountView:
        """Any account: a player's id, ``table:<id>:bank|layout|house_insurance|house_partage|
        house_prison`` or ``cage:<currency>``."""
        return self._writer.read(lambda u: _account_view(self.core.account(u, account_id)))

    def statement(self, account_id: str, after: int = 0, limit: int = 100) -> Statement:
        """Entries numbered after ``after``, at most ``limit`` (1..1000), each with the actor of
        the command that posted it."""
        if not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise InvalidArgument("limit", "OUT_OF_RANGE", "must be 1 to 1000")
        if not isinstance(after, int) or after < 0:
            raise InvalidArgument("after", "OUT_OF_RANGE", "must be 0 or more")
        view = self.get_account(account_id)
        oid = account_uuid(account_id)
        stored = self.app.recorder.select_events(oid, gt=after + 1, limit=limit)
        actors = self.core.actors_of(oid, [(e.originator_version, e.topic) for e in stored])
        entries = []
        for e in stored:
            state = unwrapped(json.loads(e.state))
            sign = -1 if e.topic in DEBIT_TOPICS else 1
            entries.append(Entry(
                number=e.originator_version - 1, amount=sign * int(state["amount"]),
                balance=int(state["balance"]), counter_account=state["counter_account"],
                kind=state["kind"], cause=state["cause"], stake_id=state["stake_id"],
                timestamp=str(state["timestamp"]),
                actor=actors.get(e.originator_version, (0, None))[1],
            ))
        return Statement(view, tuple(entries))

    def read_events(self, after_position: int = 0, limit: int = 100,
                    topics: Sequence[str] | None = None) -> list[StoredEvent]:
        """Events of the whole log with position > ``after_position``, at most ``limit``
        (1..10000), in log order; ``topics``: only the events of these topics (None: all)."""
        return read_log(self.app, after_position, limit, topics)

    def _account_names(self) -> list[str]:
        names: list[str] = []
        position = 0
        while True:
            notes = self.app.recorder.select_notifications(
                position, 5000, inclusive_of_start=False, topics=(Account.Opened.TOPIC,)
            )
            if not notes:
                return names
            names += [json.loads(n.state)["account_id"] for n in notes]
            position = notes[-1].id

    def balances(self) -> dict[str, int]:
        """Every account's balance at one moment (their sum is always zero)."""
        names = self._account_names()
        return self._writer.read(lambda u: {n: self.core.account(u, n).balance for n in names})

    def audit_balances(self) -> dict[str, int]:
        """Every account's balance recomputed from the stored entries alone (slow: the whole
        log), as an auditor would."""
        totals: dict[str, int] = {}
        names: dict[str, str] = {}
        position = 0
        while True:
            notes = self.app.recorder.select_notifications(
                position, 5000, inclusive_of_start=False,
                topics=(Account.Opened.TOPIC, *sorted(ENTRY_TOPICS)),
            )
            if not notes:
                break
            for n in notes:
                state = json.loads(n.state)
                oid = str(n.originator_id)
                if n.topic == Account.Opened.TOPIC:
                    names[oid] = state["account_id"]
                    totals.setdefault(oid, 0)
                else:
                    amount = int(state["amount"])
                    totals[oid] += -amount if n.topic in DEBIT_TOPICS else amount
            position = notes[-1].id
        return {names[k]: v for k, v in totals.items()}


def transcodings_of(games: Iterable[LedgerGame]) -> list[Transcoding]:
    """Every transcoding of ``games``' value types (``LedgerGame.transcodings``)."""
    return [t for game in games for t in game.transcodings]


def schema_owner(app: LedgerApplication) -> bool:
    """Whether the application's role created (owns) the tables (the library's CREATE_TABLE,
    decided in ``LedgerApplication.construct_env``)."""
    return str(app.env.get("CREATE_TABLE", "y")).lower() in ("y", "yes", "t", "true", "on", "1")


def chain_writer(app: LedgerApplication, config: LedgerConfig, standby: bool = False
                 ) -> ChainWriter | None:
    """The evidence writer of ``config`` (None: evidence off); ``ChainBroken`` if the store
    lost the last link its head file records, or its chain from there to the log's end does
    not verify with the writer's key (``ChainWriter.check_at_start``), or (unless
    ``standby``: a reader that never writes) the store belongs to another site."""
    if not config.evidence:
        return None
    key = ChainKey.from_raw(config.chain_key) if config.chain_key else ChainKey.ephemeral()
    chain = ChainWriter(app.recorder, key, config.chain_head, site=config.site,
                        check_site=not standby)
    chain.check_at_start()
    return chain


def _currency(text: str) -> str:
    """A currency of ``domain.currency``'s table (ISO 4217, its minor unit known)."""
    return check_currency(text, "currency")


def _account_view(a: Account) -> AccountView:
    return AccountView(a.account_id, a.kind, a.currency, a.balance, a.entries)
