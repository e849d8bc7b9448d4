"""What the ledger gives every game's commands: the single writer's unit of work and the core's
aggregates (tables, shoes, accounts, requests).

A game's command is a method of its commands object (``LedgerGame.commands``, built with the
ledger's ``Core``). It validates its arguments, then calls ``core.run(name,
request_id, args, decide, answer_type, actor)``: ``decide(unit)`` runs on the writer's thread,
inside the unit of work of the batch, after the request id was looked up (a retry gets the
first answer and never reaches ``decide``). ``decide`` gets aggregates from the unit
(``core.table``, ``core.shoe``, ``core.account`` / ``core.player``, or ``core.get(unit, cls, id,
what)`` for its own; a new one's id from ``core.id_for``), refuses with a ``domain.errors``
error (nothing is stored) or triggers events and returns the answer; the writer stores every
event with one ``Request`` (the command, the digest of ``args``, the answer, the actor and the
events it caused) in one transaction.

Money moves only by the money step, ``core.transfer``: a game turns its step's movements into
``Transfer``s (its roles resolved to accounts) and the core checks them all before any event
(``check_transfers``: a positive amount, two distinct accounts, one currency; refused with
nothing stored, as TigerBeetle's ``create_transfer`` refuses), then records each (the game's own
``MoneyMoved``, ``record``) and posts its debit and credit, in the same transaction as the game
event that causes it (``core.post``: one transfer). Every command's postings must sum to zero
per currency (``check_balanced``, after ``decide``: a command that breaks it stores nothing).
``core.open_account`` makes an account (a table's own accounts are made by ``open_table`` from
the game's ``table_accounts``); ``core.check_balances`` refuses what would
take a player below zero. ``core.cards(shoe)`` is the shoe's order, derived from its unsealed
seed (never stored, never answered before the shoe closes). ``core.rules(table)`` is the
table's rule book's rules, read back from the options it recorded. A game's own shoe is
``core.start_shoe`` (shuffled, started at the table) and ``core.close_shoe`` (its seed revealed).
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar
from uuid import UUID

from eventsourcing import persistence
from eventsourcing.domain import Aggregate

from domain.cards import Card, DeckKind, canonical_shoe
from domain.currency import format_minor
from domain.errors import FailedPrecondition, InvalidArgument, NotFound
from domain.money import PlayerMovement, players_net
from domain.options import OptionTable
from domain.shuffle import ALGORITHM_ID, Sabot, commitment, load_sabot, order_digest
from services.ledger.account import Account, AccountKind
from services.ledger.actor import SYSTEM, Actor
from services.ledger.application import LedgerApplication
from services.ledger.attribution import Attributor
from services.ledger.config import LedgerConfig
from services.ledger.errors import AlreadyExists
from services.ledger.escrow import seal_to_regulator
from services.ledger.ids import account_uuid, check_name, parse_uuid, table_account, table_uuid
from services.ledger.seal import seal, unseal
from services.ledger.shoe import Shoe
from services.ledger.table import Table
from services.ledger.views import StoredEvent
from services.ledger.writer import Command, UnitOfWork, Writer

T = TypeVar("T")
A = TypeVar("A", bound=Aggregate)
M = TypeVar("M")

CASH_IN = "cash_in"  # entry kinds of the cage's movements (a game names its own kinds)
CASH_OUT = "cash_out"
DEFERRED = threading.local()  # ``on`` while ``Ledger.submit`` calls a command: answer a future

MAX_AMOUNT = 10**15
# aggregates whose first events' times ``Core.event_times`` remembers, the oldest forgotten first:
# ~0.8 KB each (the id, the version read to, a few ISO times), so at most ~3.3 MB; enough for
# every table's open coup and shoe and its recall's last ten coups at 400 tables; one forgotten
# is read again from the store (its stored events never change)
TIMES = 4_096
MAX_PAGE_SIZE = 1000

__all__ = ["CASH_IN", "CASH_OUT", "MAX_AMOUNT", "Core", "RuleBook", "TableClosing", "Transfer",
           "UnitOfWork", "check_balanced", "check_transfers", "read_log"]


class RuleBook(Protocol):
    """What the core reads of a game (``services.ledger.game.LedgerGame``): its name, its rule
    book's options and its deck."""

    @property
    def name(self) -> str: ...

    @property
    def deck_kind(self) -> DeckKind: ...

    @property
    def options(self) -> OptionTable[Any]: ...

    def decks(self, rules: Any) -> int: ...


@dataclass(frozen=True)
class TableClosing:
    """What a game's ``table_closing(unit, table, ts)`` settled when its table closes: the
    movements (as the answer shows them), on which round (None: none), how many stakes, and
    under which option (``prisoners_at_close``: Trente et Quarante's; "" for a game without
    one)."""

    round_id: str | None = None
    prisoners_at_close: str = ""
    stakes: int = 0
    settled: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Transfer(Generic[M]):
    """One movement of a game's step resolved to the ledger's accounts, for the money step
    (``Core.transfer``): ``amount`` minor units from ``debit`` to ``credit``; ``kind`` the
    entries' kind as stored (the game's word), ``stake_id`` the stake it belongs to (or None),
    ``movement`` the game's own movement it came from (its rule book's: for its record)."""

    debit: Account
    credit: Account
    amount: int
    kind: str
    stake_id: str | None = None
    movement: M | None = None


def check_transfers(transfers: Sequence[Transfer[Any]]) -> None:
    """Refuse a money step before anything of it is recorded: an amount that is not 1 to
    ``MAX_AMOUNT`` minor units (INVALID_ARGUMENT ``amount`` ``OUT_OF_RANGE``), a transfer from
    an account to itself (FAILED_PRECONDITION ``account_id`` ``SAME_ACCOUNT``), or accounts in
    more than one currency (FAILED_PRECONDITION ``amount`` ``CURRENCY_MISMATCH``)."""
    currencies: set[str] = set()
    for t in transfers:
        amount = t.amount
        if not isinstance(amount, int) or isinstance(amount, bool) or not (
                0 < amount <= MAX_AMOUNT):
            raise InvalidArgument("amount", "OUT_OF_RANGE",
                                  f"a transfer moves 1 to {MAX_AMOUNT} minor units, not "
                                  f"{str(amount)[:32]} ({t.kind})")
        if t.debit.id == t.credit.id:
            raise FailedPrecondition("account_id", "SAME_ACCOUNT",
                                     f"a transfer from {t.debit.account_id!r} to itself "
                                     f"({t.kind})")
        currencies.update((t.debit.currency, t.credit.currency))
    if len(currencies) > 1:
        raise FailedPrecondition("amount", "CURRENCY_MISMATCH",
                                 f"one money step moves one currency, not "
                                 f"{', '.join(sorted(currencies))}")


def check_balanced(unit: UnitOfWork) -> None:
    """Refuse a command whose postings (the account entries it added since ``unit.begin``) do
    not sum to zero per currency (FAILED_PRECONDITION ``amount`` ``UNBALANCED``): money moved
    other than by whole transfers."""
    net: dict[str, int] = {}
    for agg, event in unit.added():
        if not isinstance(agg, Account):
            continue
        if isinstance(event, Account.Debited):
            net[agg.currency] = net.get(agg.currency, 0) - event.amount
        elif isinstance(event, Account.Credited):
            net[agg.currency] = net.get(agg.currency, 0) + event.amount
    unbalanced = {c: n for c, n in net.items() if n}
    if unbalanced:
        raise FailedPrecondition(
            "amount", "UNBALANCED", "the command's postings do not sum to zero: "
            + ", ".join(f"{c} {n:+d}" for c, n in sorted(unbalanced.items())))


class Core:
    """The game-neutral services of one ledger (thread-safe; ``decide`` functions run on the
    writer's thread)."""

    def __init__(self, app: LedgerApplication, writer: Writer, config: LedgerConfig,
                 games: Mapping[str, RuleBook]) -> None:
        """``games``: the games the ledger plays, by name."""
        self.app = app
        self.writer = writer
        self.config = config
        self.games = games
        self._rules: dict[tuple[str, tuple[tuple[str, str], ...]], Any] = {}  # see rules
        self.attributor = Attributor(app.recorder)  # who caused each stored event
        self._sabots: dict[tuple[UUID, str, int | None], Sabot] = {}
        self._times: dict[UUID, tuple[int, dict[str, str]]] = {}  # see event_times
        self._times_size = TIMES  # aggregates whose event times are remembered, at most
        self._times_lock = threading.Lock()

    # --- running ----------------------------------------------------------------------------

    def run(
        self,
        name: str,
        request_id: str,
        args: dict[str, Any],
        decide: Callable[[UnitOfWork], T],
        result_type: type[T],
        actor: Actor = SYSTEM,
    ) -> T:
        """Run the command ``name`` in the writer (see the module's text): its answer, or (the
        ledger's ``submit``) a future of it. ``args``: the command's arguments as stored (a
        retry must give the same ones); ``result_type``: the answer's view class (a stored
        answer is read back into it)."""
        def checked(unit: UnitOfWork) -> T:
            answer = decide(unit)
            check_balanced(unit)
            return answer

        command = Command(name, request_id, args, checked, result_type, actor=actor)
        if getattr(DEFERRED, "on", False):
            return self.writer.submit(command)  # type: ignore[return-value]  # see submit
        result: T = self.writer.execute(command)
        return result

    def logged(self, prefixes: str | tuple[str, ...]) -> list[StoredEvent]:
        """Every stored event whose topic starts with ``prefixes``, in the log's order (for a
        game's reconciliation, folded from the whole log)."""
        events: list[StoredEvent] = []
        after = 0
        while True:
            batch = read_log(self.app, after, 10_000)
            if not batch:
                return events
            events += [e for e in batch if e.topic.startswith(prefixes)]
            after = batch[-1].position

    def read(self, fn: Callable[[UnitOfWork], T]) -> T:
        """A query: ``fn(unit)`` over the committed state (it must trigger nothing)."""
        return self.writer.read(fn)

    def new_id(self) -> UUID:
        return self.config.new_id()

    # --- aggregates by id -------------------------------------------------------------------

    def get(self, unit: UnitOfWork, cls: type[A], text_id: str, what: str,
            field: str | None = None) -> A:
        """The ``cls`` aggregate of id ``text_id`` (a UUID's text; INVALID_ARGUMENT naming
        ``field``, by default ``<what>_id``, otherwise): NOT_FOUND ``UNKNOWN_<WHAT>`` (``no
        <what> '<id>'``) when there is none. A shoe, a round, a match, a coup."""
        name = field or f"{what}_id"
        agg = unit.get(cls, parse_uuid(text_id, name))
        if agg is None:
            raise NotFound(name, f"UNKNOWN_{what.upper()}", f"no {what} {text_id!r}")
        return agg

    def id_for(self, unit: UnitOfWork, cls: type[Aggregate], given: str | None, what: str,
               field: str | None = None) -> UUID:
        """The id of a new ``cls`` aggregate: ``given`` (a UUID's text, a retry-safe id the
        caller chose; ALREADY_EXISTS ``<WHAT>_EXISTS`` naming ``field``, by default
        ``<what>_id``, when one has it) or, None, a fresh one."""
        if given is None:
            return self.config.new_id()
        name = field or f"{what}_id"
        uid = parse_uuid(given, name)
        if unit.get(cls, uid) is not None:
            raise AlreadyExists(name, f"{what.upper()}_EXISTS", f"{what} {given} exists")
        return uid

    # --- tables -----------------------------------------------------------------------------

    def table(self, unit: UnitOfWork, table_id: str, field: str = "table_id",
              game: str | None = None) -> Table:
        """The table (NOT_FOUND ``UNKNOWN_TABLE``); with ``game``, one that plays it
        (FAILED_PRECONDITION ``WRONG_GAME`` otherwise)."""
        check_name(table_id, field)
        table = unit.get(Table, table_uuid(table_id))
        if table is None:
            raise NotFound(field, "UNKNOWN_TABLE", f"no table {table_id!r}")
        if game is not None and table.game != game:
            raise FailedPrecondition(
                field, "WRONG_GAME", f"table {table_id!r} plays {table.game}, not {game}")
        return table

    def game(self, table: Table) -> RuleBook:
        """The game the table plays."""
        return self.game_named(table.game)

    def game_named(self, name: str | None, field: str = "game") -> RuleBook:
        """The game called ``name``; INVALID_ARGUMENT ``UNKNOWN_GAME`` naming ``field`` when the
        ledger plays none of that name."""
        game = self.games.get(name) if isinstance(name, str) else None
        if game is None:
            raise InvalidArgument(
                field, "UNKNOWN_GAME", f"unknown game {str(name)[:64]!r} (one of "
                f"{', '.join(self.games)})")
        return game

    def rules(self, table: Table) -> Any:
        """The table's rules (its rule book's rules class), as it recorded them (read once per
        game and options)."""
        key = (table.game, tuple(sorted(table.options.items())))
        rules = self._rules.get(key)
        if rules is None:
            rules = self.game(table).options.from_options(dict(table.options))
            if len(self._rules) >= 1024:
                self._rules.clear()
            self._rules[key] = rules
        return rules

    def table_account(self, unit: UnitOfWork, table_id: str, role: str) -> Account:
        """The table's account of ``role`` (one of its game's ``table_accounts``)."""
        return self.account(unit, table_account(table_id, role))

    # --- shoes ------------------------------------------------------------------------------

    def shoe(self, unit: UnitOfWork, shoe_id: str, field: str = "shoe_id") -> Shoe:
        return self.get(unit, Shoe, shoe_id, "shoe", field)

    def shuffle(self, unit: UnitOfWork, table_id: str, kind: DeckKind, decks: int = 1,
                shoe_id: UUID | None = None, timestamp: datetime | None = None) -> Shoe:
        """A new shoe of ``decks`` decks of ``kind`` for the table (SABOT-SHUFFLE-1): a fresh
        32-byte seed, its commitment published, the seed sealed under the ledger's key and, when
        the ledger has the regulator's key, escrowed to it (SABOT-ESCROW-1) in
        ``Shoe.Shuffled``; to be cut (``Shoe.Cut``) before its cards are dealt. ``shoe_id``: its
        id (the caller checked none has it; None: a fresh one); ``timestamp``: the event's time
        (None: the unit's ``now``)."""
        sid = self.config.new_id() if shoe_id is None else shoe_id
        seed = self.config.new_seed()
        escrowed = ""  # the seed sealed to the regulator (deterministic bytes), if keyed
        if self.config.regulator_key is not None:
            escrowed = seal_to_regulator(seed, sid, self.config.regulator_key).hex()
        shoe = Shoe._create(
            Shoe.Shuffled, id=sid, timestamp=unit.now if timestamp is None else timestamp,
            table_id=table_id, algorithm=ALGORITHM_ID, deck_kind=kind.value, decks=decks,
            size=len(canonical_shoe(kind, decks)), commitment=commitment(seed, sid),
            sealed_seed=seal(self.config.seal_key, seed, sid), escrowed_seed=escrowed,
        )
        unit.add(shoe)
        return shoe

    def start_shoe(self, unit: UnitOfWork, table: Table, kind: DeckKind, decks: int = 1,
                   shoe_id: UUID | None = None) -> Shoe:
        """``shuffle`` a shoe for ``table`` and start it there (``Table.ShoeStarted``: the
        table's shoe until ``close_shoe`` ends it)."""
        shoe = self.shuffle(unit, table.table_id, kind, decks, shoe_id)
        table.trigger_event(Table.ShoeStarted, timestamp=unit.now, shoe_id=str(shoe.id))
        return shoe

    def close_shoe(self, shoe: Shoe, ts: datetime, cards: Sequence[Card] | None,
                   table: Table | None = None) -> tuple[bytes, str | None]:
        """The shoe closed: its seed in clear (``Shoe.Closed``), so anyone can check the
        commitment and replay, with the order digest of ``cards`` (its dealing order; None: no
        digest); with ``table``, the shoe ended there (``Table.ShoeEnded``) after it. The seed
        and the digest."""
        seed = unseal(self.config.seal_key, shoe.sealed_seed, shoe.id)
        digest = None if cards is None else order_digest(cards)
        shoe.trigger_event(Shoe.Closed, timestamp=ts, seed=seed.hex(), order_digest=digest)
        if table is not None:
            table.trigger_event(Table.ShoeEnded, timestamp=ts, shoe_id=str(shoe.id))
        return seed, digest

    def cards(self, shoe: Shoe) -> Sabot:
        """The shoe's cards in dealing order (after the cut), from its unsealed seed; ``.cards``
        is the order. Only for the ledger's decisions: a card leaves the ledger only when a game
        records it (face up, or shown)."""
        key = (shoe.id, shoe.sealed_seed, shoe.cut_position)
        sabot = self._sabots.get(key)
        if sabot is None:
            seed = unseal(self.config.seal_key, shoe.sealed_seed, shoe.id)
            sabot = load_sabot(seed, shoe.id, DeckKind(shoe.deck_kind), shoe.decks,
                               shoe.cut_position)
            if len(self._sabots) > 256:
                self._sabots.clear()
            self._sabots[key] = sabot
        return sabot

    def all_rounds(self, table: Table, key: str, topic: str, field: str) -> list[str]:
        """Every round id kept under ``key`` the table ever opened, in order: the ids the table
        keeps when they are all there (``Table.ROUNDS_KEPT``), else its stored events of
        ``topic`` (each its ``field``) up to the table's version, read as the writer reads
        what it loads (``checked_events``)."""
        kept = table.rounds(key)
        if table.round_count(key) <= len(kept):
            return list(kept)
        return [str(unwrapped(json.loads(e.state))[field])
                for e in self.checked_events(table.id)
                if e.topic == topic and e.originator_version <= table.version]

    def latest_rounds(self, table: Table, key: str, topic: str, field: str, n: int
                      ) -> list[str]:
        """The last ``n`` round ids kept under ``key`` the table opened, in order: from the
        ids the table keeps when they are enough, else ``all_rounds``."""
        kept = table.rounds(key)
        if n <= len(kept) or table.round_count(key) <= len(kept):
            return list(kept[-n:])
        return self.all_rounds(table, key, topic, field)[-n:]

    def checked_events(self, oid: UUID) -> list[persistence.StoredEvent]:
        """An aggregate's stored events, each checked as the writer checks what it loads
        (``ChainGuard``: covered by a link it trusts, and the event that link hashed; else
        ``ChainBroken``). Without evidence (a bench's store), as stored."""
        guard = getattr(self.app.events, "guard", None)
        if guard is None:
            return list(self.app.recorder.select_events(oid))
        rows = guard.rows.stream(oid)
        guard.check(rows, oid, None)
        return [row.stored() for row in rows]

    # --- accounts ---------------------------------------------------------------------------

    def account(self, unit: UnitOfWork, account_id: str, field: str = "account_id") -> Account:
        """Any account by its id (NOT_FOUND ``UNKNOWN_ACCOUNT``)."""
        if not isinstance(account_id, str) or not 1 <= len(account_id) <= 100:
            raise InvalidArgument(field, "BAD_ID", "must be 1 to 100 characters")
        account = unit.get(Account, account_uuid(account_id))
        if account is None:
            raise NotFound(field, "UNKNOWN_ACCOUNT", f"no account {account_id!r}")
        return account

    def player(self, unit: UnitOfWork, account_id: str, currency: str | None = None,
               field: str = "account_id") -> Account:
        """A player's account (FAILED_PRECONDITION ``NOT_A_PLAYER``), in ``currency`` if given
        (``CURRENCY_MISMATCH``)."""
        check_name(account_id, field)
        account = self.account(unit, account_id, field)
        if account.kind != AccountKind.PLAYER:
            raise FailedPrecondition(field, "NOT_A_PLAYER", "not a player's account")
        if currency is not None and account.currency != currency:
            raise FailedPrecondition(
                field,
                "CURRENCY_MISMATCH",
                f"the account is in {account.currency}, the table plays in {currency}",
            )
        return account

    def player_of(self, unit: UnitOfWork, account_id: str, currency: str,
                  players: dict[str, Account] | None, field: str = "account_id") -> Account:
        """``player(unit, account_id, currency, field)``, remembered in ``players`` (an
        account's kind and currency never change: within one decision, the same answer; one
        remembered in another currency is checked again)."""
        if players is None:
            return self.player(unit, account_id, currency, field)
        account = players.get(account_id)
        if account is None or account.currency != currency:
            account = players[account_id] = self.player(unit, account_id, currency, field)
        return account

    def open_account(self, unit: UnitOfWork, account_id: str, kind: str, currency: str,
                     table_id: str | None = None) -> Account:
        """A new account (the caller checked that none has the id), balance 0."""
        account = Account._create(
            Account.Opened, id=account_uuid(account_id), timestamp=unit.now,
            account_id=account_id, kind=kind, currency=currency, table_id=table_id,
        )
        unit.add(account)
        return account

    def check_balances(self, unit: UnitOfWork, changes: Mapping[str, int], currency: str,
                       field: str = "amount", players: dict[str, Account] | None = None
                       ) -> None:
        """Refuse (FAILED_PRECONDITION ``INSUFFICIENT_FUNDS`` naming ``field``) changes of
        players' balances (account id -> signed amount) that would take one below zero.
        ``players``: the accounts ``player`` gave in ``currency`` already in this decision, by
        id (a batch's items; each found here is not looked up and checked again; each looked
        up is added)."""
        for player, change in changes.items():
            account = self.player_of(unit, player, currency, players)
            if account.balance + change < 0:
                raise FailedPrecondition(
                    field,
                    "INSUFFICIENT_FUNDS",
                    f"the balance of {player!r} is {format_minor(account.balance, currency)}, "
                    f"{format_minor(-change, currency)} needed",
                )

    def check_movements(self, unit: UnitOfWork, movements: Iterable[PlayerMovement],
                        currency: str, field: str = "amount") -> None:
        """``check_balances`` of a game's step: each movement from (to) a player's own account
        (its ``source`` (``destination``) role ``"player"``) takes (gives) its ``amount``
        (``domain.money.players_net``)."""
        self.check_balances(unit, players_net(movements), currency, field)

    def transfer(self, transfers: Sequence[Transfer[M]], cause: str, ts: datetime,
                 record: Callable[[Transfer[M]], object] | None = None) -> None:
        """The money step of every game: ``check_transfers`` of them all first (a refusal
        records nothing), then for each transfer in order ``record(transfer)`` (the game's own
        event of it, e.g. its ``MoneyMoved``) and its two entries (``post``). ``cause`` names
        the round or request they belong to."""
        check_transfers(transfers)
        for t in transfers:
            if record is not None:
                record(t)
            self._entries(t.debit, t.credit, t.amount, t.kind, cause, t.stake_id, ts)

    def post(self, debit: Account, credit: Account, amount: int, kind: str, cause: str,
             stake_id: str | None, ts: datetime) -> None:
        """One double-entry movement (``transfer`` of one): ``amount`` from ``debit`` to
        ``credit``; ``kind`` names it (the game's word), ``cause`` the round or request it
        belongs to, ``stake_id`` the stake (or None)."""
        one: Transfer[None] = Transfer(debit, credit, amount, kind, stake_id)
        self.transfer([one], cause, ts)

    def _entries(self, debit: Account, credit: Account, amount: int, kind: str, cause: str,
                 stake_id: str | None, ts: datetime) -> None:
        debit_event = Account.CashWithdrawn if kind == CASH_OUT else Account.Debited
        credit_event = Account.CashDeposited if kind == CASH_IN else Account.Credited
        debit.trigger_event(
            debit_event, timestamp=ts, amount=amount, counter_account=credit.account_id,
            kind=kind, cause=cause, stake_id=stake_id, balance=debit.balance - amount,
        )
        credit.trigger_event(
            credit_event, timestamp=ts, amount=amount, counter_account=debit.account_id,
            kind=kind, cause=cause, stake_id=stake_id, balance=credit.balance + amount,
        )

    # --- reading the log --------------------------------------------------------------------

    def event_times(self, agg: Aggregate, wanted: Mapping[str, str]) -> dict[str, str]:
        """ISO times of the first event of each wanted topic (topic -> key) in the aggregate's
        history, which must hold them all: its pending events, and its stored ones (read once
        from the store, then remembered: stored events never change)."""
        pending = list(agg.pending_events)
        stored = agg.version - len(pending)
        covered, known = self._times.get(agg.id, (0, {}))
        found = {k: v for k, v in known.items() if k in wanted.values()}
        for event in pending:
            key = wanted.get(getattr(type(event), "TOPIC", ""))
            if key is not None and key not in found:
                found[key] = event.timestamp.isoformat()
        if covered < stored and len(found) < len(set(wanted.values())):
            known = dict(known)
            for e in self.app.recorder.select_events(agg.id, gt=covered, lte=stored):
                key = wanted.get(e.topic)
                if key is not None and key not in known:
                    known[key] = str(unwrapped(json.loads(e.state))["timestamp"])
            self._remember_times(agg.id, stored, known)
            found = {**found, **{k: v for k, v in known.items() if k in wanted.values()}}
        return found

    def _remember_times(self, oid: UUID, stored: int, known: dict[str, str]) -> None:
        """Remember an aggregate's event times as read up to version ``stored``, the
        aggregate remembered longest ago forgotten first (its times are read again from the
        store when wanted)."""
        times = self._times
        with self._times_lock:
            times.pop(oid, None)  # to the end: the latest remembered
            times[oid] = (stored, known)
            while len(times) > self._times_size:
                del times[next(iter(times))]

    def actors_of(self, oid: UUID, events: list[tuple[int, str]]
                  ) -> dict[int, tuple[int, dict[str, Any] | None]]:
        """version -> (log position, actor) of an aggregate's stored events ``(version,
        topic)``: who ran the command that caused each."""
        if not events:
            return {}
        positions = self.attributor.positions(oid, [v for v, _ in events])
        text = str(oid)
        actors = self.attributor.actors(
            (positions[v], text, v, topic, None) for v, topic in events if v in positions)
        return {v: (positions.get(v, 0), actors.get((text, v))) for v, _ in events}


def check_open(table: Table) -> None:
    """A closed table (``close_table``) opens no more shoes or rounds (FAILED_PRECONDITION
    ``TABLE_CLOSED``)."""
    if table.closed:
        raise FailedPrecondition(
            "table_id", "TABLE_CLOSED",
            f"table {table.table_id!r} is closed: it opens no more shoes",
        )


def check_amount(amount: int, field: str = "amount") -> int:
    """An amount of money: 1 to ``MAX_AMOUNT`` minor units (INVALID_ARGUMENT otherwise)."""
    if not isinstance(amount, int) or isinstance(amount, bool) or not 0 < amount <= MAX_AMOUNT:
        raise InvalidArgument(field, "OUT_OF_RANGE", f"must be 1 to {MAX_AMOUNT} minor units")
    return amount


def page_size_of(page_size: int) -> int:
    """A list's page size: at least 1, at most ``MAX_PAGE_SIZE`` (more reads as the most)."""
    if not isinstance(page_size, int) or isinstance(page_size, bool) or page_size < 1:
        raise InvalidArgument("page_size", "OUT_OF_RANGE", f"must be 1 to {MAX_PAGE_SIZE}")
    return min(page_size, MAX_PAGE_SIZE)


def make_token(kind: str, scope: str, value: str) -> str:
    """An opaque page token: where the page ended, bound to the list it belongs to."""
    text = json.dumps([kind, scope, value], separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def read_token(token: str, kind: str, scope: str) -> str:
    """The value of a ``make_token`` token of the list ``(kind, scope)`` (INVALID_ARGUMENT
    ``BAD_PAGE_TOKEN`` otherwise)."""
    bad = InvalidArgument("page_token", "BAD_PAGE_TOKEN", "not a token of this list")
    if not isinstance(token, str) or len(token) > 400:
        raise bad
    try:
        text = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        found_kind, found_scope, value = json.loads(text)
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        raise bad from None
    if [found_kind, found_scope] != [kind, scope] or not isinstance(value, str):
        raise bad
    if not (value.isascii() and value.isdigit()) or len(value) > 18:
        raise bad
    return value


def read_log(app: LedgerApplication, after_position: int = 0, limit: int = 100,
             topics: Sequence[str] | None = None) -> list[StoredEvent]:
    """``Ledger.read_events`` on any connection to the store (it needs no aggregate)."""
    if not isinstance(limit, int) or not 1 <= limit <= 10000:
        raise InvalidArgument("limit", "OUT_OF_RANGE", "must be 1 to 10000")
    if not isinstance(after_position, int) or after_position < 0:
        raise InvalidArgument("after_position", "OUT_OF_RANGE", "must be 0 or more")
    if isinstance(topics, str):  # (one text of words, as the ledger socket may carry them)
        topics = topics.split()
    if topics is not None and (not isinstance(topics, list | tuple) or not topics
                               or not all(isinstance(t, str) for t in topics)):
        raise InvalidArgument("topics", "BAD_TOPICS", "must be a list of one or more topics")
    notes = app.recorder.select_notifications(after_position, limit, topics=list(topics or ()),
                                              inclusive_of_start=False)
    out = []
    for n in notes:
        state = unwrapped(json.loads(n.state))
        ts = state.get("timestamp")
        out.append(StoredEvent(
            position=n.id, originator_id=str(n.originator_id), version=n.originator_version,
            topic=n.topic, timestamp=datetime.fromisoformat(ts) if ts else None, state=state,
        ))
    return out


def unwrapped(data: Any) -> Any:
    """Stored JSON with the transcoders' ``{"_type_", "_data_"}`` wrappers taken off (the
    ledger's readers and the regulator's, ``services.regulator.vocabulary``)."""
    if isinstance(data, dict):
        if set(data) == {"_type_", "_data_"}:
            return unwrapped(data["_data_"])
        return {k: unwrapped(v) for k, v in data.items()}
    if isinstance(data, list):
        return [unwrapped(v) for v in data]
    return data
