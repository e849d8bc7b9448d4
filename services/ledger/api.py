"""The ledger's Python API, used by the gRPC layer and the CLI.

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

import base64
import binascii
import json
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from datetime import datetime
from functools import lru_cache
from typing import Any, TypeVar
from uuid import UUID

from domain.cards import canonical_shoe, parse_deck_kind
from domain.currency import check_currency
from domain.errors import FailedPrecondition, InvalidArgument, NotFound
from domain.shuffle import ALGORITHM_ID, check_cut, commitment, order_digest
from domain.trente_et_quarante.chances import Chance
from domain.trente_et_quarante.deal import deal_coup
from domain.trente_et_quarante.layout import (
    Layout,
    Movement,
    MovementKind,
    Refait31Choice,
    Role,
    Stake,
    Step,
    close_betting,
    close_table,
    end_of_shoe,
    half_withdraw,
    insure,
    move_imprisoned,
    place_stake,
    raise_stake,
    withdraw_stake,
)
from domain.trente_et_quarante.layout import choose_refait31 as choose_refait31_step
from domain.trente_et_quarante.outcome import Outcome, Result, judge
from domain.trente_et_quarante.rules import HouseRules
from domain.trente_et_quarante.settlement import settle
from services import games
from services.games import DEFAULT_GAME, TRENTE_ET_QUARANTE
from services.ledger import schema, wire
from services.ledger.account import DEBIT_TOPICS, ENTRY_TOPICS, Account, AccountKind
from services.ledger.actor import SYSTEM, Actor
from services.ledger.application import LedgerApplication
from services.ledger.config import APP_NAME, LedgerConfig, store_env
from services.ledger.core import CASH_IN, CASH_OUT, DEFERRED, Core, plain
from services.ledger.coup import FATE_EVENTS, Coup, Phase
from services.ledger.errors import AlreadyExists, PermissionDenied
from services.ledger.evidence import ChainKey, ChainWriter
from services.ledger.ids import (
    account_uuid,
    cage_account,
    check_name,
    parse_uuid,
    stake_uuid,
    table_account,
    table_uuid,
)
from services.ledger.lease import Keeper, lease_from_env
from services.ledger.seal import seal, unseal
from services.ledger.shoe import Shoe
from services.ledger.table import Table
from services.ledger.views import (
    AccountView,
    CardView,
    CoupSteps,
    CoupView,
    Entry,
    FateView,
    MovementView,
    ShoeClosed,
    ShoeOpened,
    ShoeView,
    StakeResult,
    StakeView,
    Statement,
    StepView,
    StoredEvent,
    TableClosed,
    TableView,
)
from services.ledger.writer import UnitOfWork, Writer

T = TypeVar("T")

# The core's commands and every registered game's (each one ``Core.run``): ``submit`` may start
# them without waiting. (Live: a game registered later is in it.)
COMMANDS = wire.COMMANDS

MAX_AMOUNT = 10**15

__all__ = [
    "AccountView",
    "CoupSteps",
    "CoupView",
    "Ledger",
    "LedgerConfig",
    "ShoeClosed",
    "ShoeOpened",
    "ShoeView",
    "StakeResult",
    "Statement",
    "StoredEvent",
    "TableView",
]


class Ledger:
    """The Trente et Quarante ledger over one event store (``LedgerConfig.store_url``)."""

    def __init__(self, config: LedgerConfig, batching: bool = False,
                 standby: bool = False) -> None:
        """``standby``: never take the store's writer lease (a reader: its commands are
        refused with ``NotTheWriter``, its queries read the store)."""
        self.config = config
        if len(config.seal_key) != 32:
            raise InvalidArgument("seal_key", "BAD_KEY", "must be 32 bytes")
        env = store_env(config.store_url, config.pool_size)
        env.update(config.extra_env)
        self.app = LedgerApplication(env=env)
        postgres = env["PERSISTENCE_MODULE"] == "eventsourcing.postgres"
        if not postgres:
            datastore: Any = self.app.recorder.datastore  # type: ignore[attr-defined]
            with datastore.transaction(commit=True) as cursor:
                schema.apply_sqlite_guards(cursor)
        elif schema_owner(self.app):  # else its owner set it up (services/ledger/schema.py)
            schema.apply_schema(_conninfo(env), (f"{env['POSTGRES_SCHEMA']}.{APP_NAME}_events",))
        try:
            self.app.use_evidence(chain_writer(self.app, config))
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
        self.core = Core(self.app, self._writer, config)  # what every game's commands use
        self._attributor = self.core.attributor
        # the core's services under their names before the Core (for code that used them)
        self._run = self.core.run
        self._account = self.core.account
        self._player = self.core.player
        self._post = self.core.post
        # Each registered game's commands and queries (``services.games``), by name.
        self._game_methods: dict[str, Callable[..., Any]] = {}
        for game in games.games():
            if game.commands is None:
                continue
            handler = game.commands(self.core)
            for name in game.methods:
                self._game_methods[name] = getattr(handler, name)

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

    # --- plumbing ---------------------------------------------------------------------------

    def submit(self, method: str, *args: Any, **kwargs: Any) -> Future[Any]:
        """Start the command ``method`` (a name from ``COMMANDS``) without waiting for it: its
        future answers once its batch is stored. A malformed input raises here, at once."""
        if method not in COMMANDS:
            raise ValueError(f"not a ledger command: {method!r}")
        DEFERRED.on = True
        try:
            future: Future[Any] = getattr(self, method)(*args, **kwargs)
        finally:
            DEFERRED.on = False
        return future

    def __getattr__(self, name: str) -> Callable[..., Any]:
        """A registered game's command or query (``services.games``), as if it were the
        ledger's own method."""
        found = self.__dict__.get("_game_methods", {}).get(name)
        if found is None:
            raise AttributeError(name)
        return found  # type: ignore[no-any-return]

    def _coup(self, unit: UnitOfWork, coup_id: str) -> Coup:
        coup = unit.get(Coup, parse_uuid(coup_id, "coup_id"))
        if coup is None:
            raise NotFound("coup_id", "UNKNOWN_COUP", f"no coup {coup_id!r}")
        return coup

    def _rules(self, table: Table) -> HouseRules:
        return _rules_of(tuple(sorted(table.options.items())))

    def _role_account(self, unit: UnitOfWork, table_id: str, role: Role, player: str) -> Account:
        name = player if role is Role.PLAYER else table_account(table_id, role.value)
        return self.core.account(unit, name)

    def _check_funds(self, unit: UnitOfWork, table_id: str, movements: tuple[Movement, ...],
                     currency: str) -> None:
        """Refuse a step that would take a player's balance below zero (field ``amount``)."""
        net: dict[str, int] = {}
        for m in movements:
            if m.source is Role.PLAYER:
                net[m.player] = net.get(m.player, 0) - m.amount
            if m.destination is Role.PLAYER:
                net[m.player] = net.get(m.player, 0) + m.amount
        self.core.check_balances(unit, net, currency)

    def _apply_step(self, unit: UnitOfWork, table: Table, coup: Coup, step: Step, ts: datetime,
                    record_movements: bool,
                    command_event: tuple[str, type[Coup.StakeChanged]] | None = None,
                    ) -> list[MovementView]:
        """Record a domain step on the coup: movements (as MoneyMoved when ``record_movements``)
        with their double entries, then each stake's fate (``command_event``: the event class
        for the commanded stake's fate), then the layout if it differs."""
        moved: list[MovementView] = []
        coup_id = str(coup.id)
        seq = coup.movement_seq
        for m in step.movements:
            debit = self._role_account(unit, table.table_id, m.source, m.player)
            credit = self._role_account(unit, table.table_id, m.destination, m.player)
            seq += 1
            view = MovementView(seq, m.kind.value, m.stake_id, m.player, m.chance.value, m.amount,
                                debit.account_id, credit.account_id)
            if record_movements:
                coup.trigger_event(
                    Coup.MoneyMoved, timestamp=ts, seq=seq, kind=view.kind,
                    stake_id=view.stake_id, account_id=view.account_id, chance=view.chance,
                    amount=view.amount, debit_account=view.debit_account,
                    credit_account=view.credit_account,
                )
            self.core.post(debit, credit, m.amount, m.kind.value, coup_id, m.stake_id, ts)
            moved.append(view)
        after = step.layout
        for f in step.fates:
            event_class = FATE_EVENTS[f.fate]
            if command_event is not None and command_event[0] == f.stake_id:
                event_class = command_event[1]
            extra: dict[str, Any] = {}
            if event_class is Coup.InsuranceBought:
                extra["premium"] = sum(
                    m.amount for m in step.movements
                    if m.stake_id == f.stake_id and m.kind is MovementKind.PREMIUM
                )
            coup.trigger_event(
                event_class, timestamp=ts, **extra, stake_id=f.stake_id, account_id=f.player,
                chance=f.chance.value, fate=f.fate.value, amount_before=f.amount_before,
                amount_after=f.amount_after,
                status_after=f.status_after.value if f.status_after is not None else None,
                stake=after.find(f.stake_id) if f.status_after is not None else None,
            )
        if coup.layout != step.layout.stakes:
            coup.trigger_event(Coup.LayoutRestated, timestamp=ts, stakes=step.layout.stakes)
        coup.adopt(step.layout)  # the coup's layout equals the step's now: keep its index
        return moved

    # --- tables and shoes -------------------------------------------------------------------

    def open_table(
        self,
        request_id: str,
        table_id: str,
        preset: str | None = None,
        overrides: Mapping[str, str] | None = None,
        game: str | None = None,
        *,
        actor: Actor = SYSTEM,
    ) -> TableView:
        """Open a table to play ``game`` (a name of ``services.games``; default
        trente-et-quarante; INVALID_ARGUMENT ``UNKNOWN_GAME`` otherwise) under a preset of its
        rule book (default: the rule book's) with options overridden; records the game and the
        whole ruleset. Also opens the game's table accounts (bank, layout, house, ...).
        ALREADY_EXISTS if it exists."""
        overrides_d = dict(overrides or {})
        played = games.get(DEFAULT_GAME if game is None else game)
        chosen = played.options.default_preset if preset is None else preset

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
        if played.name != DEFAULT_GAME:
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
            _check_open(table)
            if table.shoe_id is not None:
                raise FailedPrecondition(
                    "table_id", "SHOE_OPEN", f"shoe {table.shoe_id} is still open at the table"
                )
            if shoe_id is not None:
                sid = parse_uuid(shoe_id, "shoe_id")
                if unit.get(Shoe, sid) is not None:
                    raise AlreadyExists("shoe_id", "SHOE_EXISTS", f"shoe {shoe_id} exists")
            else:
                sid = self.config.new_id()
            decks = played.decks(self.core.rules(table))
            size = len(canonical_shoe(kind, decks))
            seed = self.config.new_seed()
            escrowed = ""  # the seed sealed to the regulator (deterministic bytes), if keyed
            if self.config.regulator_key is not None:
                from services.regulator.escrow import seal_to_regulator

                escrowed = seal_to_regulator(seed, sid, self.config.regulator_key).hex()
            ts = unit.now
            shoe = Shoe._create(
                Shoe.Shuffled, id=sid, timestamp=ts, table_id=table.table_id,
                algorithm=ALGORITHM_ID, deck_kind=kind.value, decks=decks, size=size,
                commitment=commitment(seed, sid), sealed_seed=seal(self.config.seal_key, seed, sid),
                escrowed_seed=escrowed,
            )
            unit.add(shoe)
            table.trigger_event(Table.ShoeStarted, timestamp=ts, shoe_id=str(sid))
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
        """Close the shoe between coups: free stakes go back to their players (prisoners stay on
        the layout); the seed is revealed."""

        def decide(unit: UnitOfWork) -> ShoeClosed:
            shoe = self.core.shoe(unit, shoe_id)
            if shoe.closed:
                raise FailedPrecondition("shoe_id", "SHOE_CLOSED", "the shoe is closed already")
            table = self.core.table(unit, shoe.table_id)
            last = self._last_coup(unit, table)
            if last is not None and last.phase != Phase.SETTLED:
                raise FailedPrecondition(
                    "shoe_id", "COUP_IN_PROGRESS", f"coup {last.id} is not settled yet"
                )
            ts = unit.now
            returned: list[MovementView] = []
            if last is not None:
                step = end_of_shoe(last.domain_layout())
                returned = self._apply_step(unit, table, last, step, ts, record_movements=True)
            seed = unseal(self.config.seal_key, shoe.sealed_seed, shoe.id)
            digest = (
                order_digest(self.core.cards(shoe).cards) if shoe.cut_position is not None else None
            )
            shoe.trigger_event(Shoe.Closed, timestamp=ts, seed=seed.hex(), order_digest=digest)
            table.trigger_event(Table.ShoeEnded, timestamp=ts, shoe_id=str(shoe.id))
            return ShoeClosed(str(shoe.id), seed.hex(), shoe.commitment, shoe.cut_position,
                              digest, tuple(returned))

        return self.core.run("close_shoe", request_id, {"shoe_id": shoe_id}, decide, ShoeClosed,
                         actor)

    def close_table(self, request_id: str, table_id: str, *, actor: Actor = SYSTEM
                    ) -> TableClosed:
        """Close the table for good, between shoes (FAILED_PRECONDITION ``SHOE_OPEN`` while one
        is open): every stake left on its layout leaves it, free stakes returned and prisoners
        settled per the table's ``prisoners_at_close``
        (``domain.trente_et_quarante.layout.close_table``), recorded on the table's latest coup
        as a shoe's end is; then ``Table.Closed``. A closed table
        opens no more shoes (FAILED_PRECONDITION ``TABLE_CLOSED``)."""

        def decide(unit: UnitOfWork) -> TableClosed:
            table = self.core.table(unit, table_id)
            _check_open(table)
            if table.shoe_id is not None:
                raise FailedPrecondition(
                    "table_id", "SHOE_OPEN", f"shoe {table.shoe_id} is open: close it first"
                )
            rules = self._rules(table)
            last = self._last_coup(unit, table)
            ts = unit.now
            settled: list[MovementView] = []
            stakes = 0
            if last is not None:
                step = close_table(rules, last.domain_layout())
                stakes = len(step.fates)
                settled = self._apply_step(unit, table, last, step, ts, record_movements=True)
            option = rules.prisoners_at_close.value
            table.trigger_event(
                Table.Closed, timestamp=ts, coup_id=str(last.id) if last is not None else None,
                prisoners_at_close=option, stakes=stakes,
            )
            return TableClosed(table.table_id, table.last_coup_id, option, tuple(settled))

        return self.core.run("close_table", request_id, {"table_id": table_id}, decide, TableClosed,
                         actor)

    # --- coups ------------------------------------------------------------------------------

    def _last_coup(self, unit: UnitOfWork, table: Table) -> Coup | None:
        last = table.last_coup_id
        return None if last is None else self._coup(unit, last)

    def open_coup(
        self, request_id: str, table_id: str, coup_id: str | None = None,
        shoe_id: str | None = None, *, actor: Actor = SYSTEM,
    ) -> CoupView:
        """Open the next coup at the table (betting open); the layout is carried over.
        ``shoe_id``, when given, must be the table's open shoe (FAILED_PRECONDITION
        ``SHOE_NOT_OPEN``): checked in the decision, so a retry gets the first answer."""

        def decide(unit: UnitOfWork) -> CoupView:
            table = self.core.table(unit, table_id, game=TRENTE_ET_QUARANTE)
            _check_open(table)
            if table.shoe_id is None:
                raise FailedPrecondition("table_id", "NO_SHOE", "no shoe is open at the table")
            if shoe_id is not None and str(parse_uuid(shoe_id, "shoe_id")) != table.shoe_id:
                raise FailedPrecondition(
                    "shoe_id", "SHOE_NOT_OPEN", f"shoe {shoe_id} is not the table's open shoe"
                )
            shoe = self.core.shoe(unit, table.shoe_id)
            if shoe.cut_position is None:
                raise FailedPrecondition("table_id", "SHOE_NOT_CUT", "the shoe is not cut yet")
            if shoe.cut_card_reached:
                raise FailedPrecondition(
                    "table_id", "SHOE_MUST_CLOSE", "the cut card came out: close the shoe"
                )
            last = self._last_coup(unit, table)
            if last is not None and last.phase != Phase.SETTLED:
                raise FailedPrecondition(
                    "table_id", "COUP_IN_PROGRESS", f"coup {last.id} is not settled yet"
                )
            if coup_id is not None:
                cid = parse_uuid(coup_id, "coup_id")
                if unit.get(Coup, cid) is not None:
                    raise AlreadyExists("coup_id", "COUP_EXISTS", f"coup {coup_id} exists")
            else:
                cid = self.config.new_id()
            ts = unit.now
            coup = Coup._create(
                Coup.Opened, id=cid, timestamp=ts, table_id=table.table_id,
                shoe_id=str(shoe.id), number=len(table.coup_ids) + 1,
                number_in_shoe=shoe.coups + 1, start_position=shoe.position,
            )
            unit.add(coup)
            if last is not None:
                for stake in last.layout:
                    coup.trigger_event(
                        Coup.StakeCarriedOver, timestamp=ts, from_coup_id=str(last.id),
                        stake=stake,
                    )
            table.trigger_event(Table.CoupStarted, timestamp=ts, coup_id=str(cid))
            return self._coup_view(coup)

        args = {"table_id": table_id, "coup_id": coup_id}
        if shoe_id is not None:
            args["shoe_id"] = shoe_id
        return self.core.run("open_coup", request_id, args, decide, CoupView, actor)

    def _betting(
        self,
        name: str,
        request_id: str,
        args: dict[str, Any],
        coup_id: str,
        stake_id: Callable[[], str],
        step_of: Callable[[UnitOfWork, HouseRules, Layout, str], Step],
        actor: Actor,
        command_event: type[Coup.StakeChanged] | None = None,
        account_id: str | None = None,
    ) -> StakeResult:
        """A betting command: ``account_id`` for a new stake (else the stake ``stake_id()``
        exists). The owner is decided here, from the actor, before anything else: a player
        acts on its own account's stakes only (PERMISSION_DENIED naming ``account_id`` or
        ``stake_id``), whatever the stake's state and whoever asks the server."""

        def decide(unit: UnitOfWork) -> StakeResult:
            if account_id is not None and not actor.acts_for(account_id):
                raise PermissionDenied(
                    "account_id", "NOT_YOUR_ACCOUNT", "a player stakes from its own account only"
                )
            coup = self._coup(unit, coup_id)
            sid = stake_id()
            if account_id is None and actor.is_player:
                owner = coup.owner(sid)
                if owner is not None and not actor.acts_for(owner):
                    raise PermissionDenied(
                        "stake_id", "NOT_YOUR_STAKE", "the stake is another player's"
                    )
            if coup.phase != Phase.BETTING:
                raise FailedPrecondition(
                    "coup_id", "BETTING_CLOSED", f"betting is closed for coup {coup_id}"
                )
            table = self.core.table(unit, coup.table_id)
            rules = self._rules(table)
            step = step_of(unit, rules, coup.domain_layout(), sid)
            self._check_funds(unit, table.table_id, step.movements, rules.currency)
            ts = unit.now
            fate_player = next((f.player for f in step.fates if f.stake_id == sid), None)
            before = coup.stake(sid) if fate_player is None else None
            moved = self._apply_step(
                unit, table, coup, step, ts, record_movements=False,
                command_event=(sid, command_event) if command_event is not None else None,
            )
            stake = coup.stake(sid)
            player = (
                stake.player if stake is not None
                else fate_player or (before.player if before else "")
            )
            balance = self.core.account(unit, player).balance if player else 0
            return StakeResult(
                str(coup.id), _stake_view(stake) if stake else None, tuple(moved), balance
            )

        return self.core.run(name, request_id, args, decide, StakeResult, actor)

    def place_stake(
        self,
        request_id: str,
        coup_id: str,
        account_id: str,
        chance: str,
        amount: int,
        stake_id: str | None = None,
        choice: str | None = None,
        *,
        actor: Actor = SYSTEM,
    ) -> StakeResult:
        """A new stake (player -> layout). FAILED_PRECONDITION field ``amount`` beyond the
        player's balance. The stake's id is the ledger's: a fresh one, or, when the client
        gives ``stake_id`` (a UUID), ``ids.stake_uuid(coup_id, account_id, stake_id)``: the
        client's id then only keeps the account from placing that stake twice on the coup
        (ALREADY_EXISTS ``STAKE_EXISTS``), and ids never collide across coups or tables."""
        chosen: list[str] = []

        def new_stake_id() -> str:
            if stake_id is not None:
                client = str(parse_uuid(stake_id, "stake_id"))
                return str(stake_uuid(str(parse_uuid(coup_id, "coup_id")), account_id, client))
            if not chosen:
                chosen.append(str(self.config.new_id()))
            return chosen[-1]

        def step_of(unit: UnitOfWork, rules: HouseRules, layout: Layout, sid: str) -> Step:
            self.core.player(unit, account_id, rules.currency)
            c = _chance(chance)
            amt = _amount(amount)
            ch = _choice(choice) if choice is not None else None
            if stake_id is not None and self._coup(unit, coup_id).owner(sid) is not None:
                raise AlreadyExists("stake_id", "STAKE_EXISTS",
                                    f"stake {stake_id} was placed on the coup already")
            return place_stake(rules, layout, sid, account_id, c, amt, ch)

        args = {"coup_id": coup_id, "account_id": account_id, "chance": chance,
                "amount": amount, "stake_id": stake_id, "choice": choice}
        return self._betting("place_stake", request_id, args, coup_id, new_stake_id, step_of,
                             actor, account_id=account_id)

    def raise_stake(self, request_id: str, coup_id: str, stake_id: str, amount: int, *,
                    actor: Actor = SYSTEM) -> StakeResult:
        """Add ``amount`` to a free stake."""
        return self._betting(
            "raise_stake", request_id, {"coup_id": coup_id, "stake_id": stake_id,
                                        "amount": amount},
            coup_id, lambda: stake_id,
            lambda u, r, lay, sid: raise_stake(r, lay, sid, _amount(amount)), actor,
        )

    def withdraw_stake(self, request_id: str, coup_id: str, stake_id: str, *,
                       actor: Actor = SYSTEM) -> StakeResult:
        """Take a free stake back, whole."""
        return self._betting(
            "withdraw_stake", request_id, {"coup_id": coup_id, "stake_id": stake_id},
            coup_id, lambda: stake_id, lambda u, r, lay, sid: withdraw_stake(r, lay, sid), actor,
        )

    def insure(self, request_id: str, coup_id: str, stake_id: str, *,
               actor: Actor = SYSTEM) -> StakeResult:
        """Buy insurance on a stake for this coup (premium player -> house insurance)."""
        return self._betting(
            "insure", request_id, {"coup_id": coup_id, "stake_id": stake_id},
            coup_id, lambda: stake_id, lambda u, r, lay, sid: insure(r, lay, sid), actor,
        )

    def choose_refait31(
        self, request_id: str, coup_id: str, stake_id: str, choice: str, *,
        actor: Actor = SYSTEM,
    ) -> StakeResult:
        """``partage`` or ``prison`` (under refait31 ``player_choice``)."""
        return self._betting(
            "choose_refait31", request_id,
            {"coup_id": coup_id, "stake_id": stake_id, "choice": choice},
            coup_id, lambda: stake_id,
            lambda u, r, lay, sid: choose_refait31_step(r, lay, sid, _choice(choice)), actor,
            command_event=Coup.Refait31Chosen,
        )

    def half_withdraw(self, request_id: str, coup_id: str, stake_id: str, *,
                      actor: Actor = SYSTEM) -> StakeResult:
        """An imprisoned stake: the house takes half, the player gets the rest back."""
        return self._betting(
            "half_withdraw", request_id, {"coup_id": coup_id, "stake_id": stake_id},
            coup_id, lambda: stake_id, lambda u, r, lay, sid: half_withdraw(r, lay, sid), actor,
        )

    def move_imprisoned(
        self, request_id: str, coup_id: str, stake_id: str, chance: str, *,
        actor: Actor = SYSTEM,
    ) -> StakeResult:
        """An imprisoned stake: the house takes half, the rest goes (still in prison) to
        ``chance``."""
        return self._betting(
            "move_imprisoned", request_id,
            {"coup_id": coup_id, "stake_id": stake_id, "chance": chance},
            coup_id, lambda: stake_id,
            lambda u, r, lay, sid: move_imprisoned(r, lay, sid, _chance(chance)), actor,
        )

    def _close_betting(self, unit: UnitOfWork, table: Table, coup: Coup, ts: datetime) -> None:
        step = close_betting(self._rules(table), coup.domain_layout())
        self._apply_step(unit, table, coup, step, ts, record_movements=True)
        coup.trigger_event(Coup.BettingClosed, timestamp=ts)

    def close_betting(self, request_id: str, coup_id: str, *, actor: Actor = SYSTEM
                      ) -> CoupView:
        """No more stakes; stakes still awaiting a choice stay in prison."""

        def decide(unit: UnitOfWork) -> CoupView:
            coup = self._coup(unit, coup_id)
            if coup.phase != Phase.BETTING:
                raise FailedPrecondition("coup_id", "BETTING_CLOSED", "betting is closed already")
            table = self.core.table(unit, coup.table_id)
            self._close_betting(unit, table, coup, unit.now)
            return self._coup_view(coup)

        return self.core.run("close_betting", request_id, {"coup_id": coup_id}, decide, CoupView,
                         actor)

    def deal(self, request_id: str, coup_id: str, *, actor: Actor = SYSTEM) -> CoupView:
        """Deal the coup: one event per card, then the coup resolved (totals, outcome,
        announcement). Closes betting first if still open."""

        def decide(unit: UnitOfWork) -> CoupView:
            coup = self._coup(unit, coup_id)
            if coup.phase not in (Phase.BETTING, Phase.CLOSED):
                raise FailedPrecondition("coup_id", "ALREADY_DEALT", "the coup was dealt already")
            table = self.core.table(unit, coup.table_id)
            shoe = self.core.shoe(unit, coup.shoe_id)
            rules = self._rules(table)
            dealt = deal_coup(self.core.cards(shoe).cards, shoe.position, rules.cut_card)
            outcome = judge(dealt)
            ts = unit.now
            if coup.phase == Phase.BETTING:
                self._close_betting(unit, table, coup, ts)
            for card in dealt.cards:
                coup.trigger_event(
                    Coup.CardDealt, timestamp=ts, row=card.row.value, code=card.card.code,
                    position=card.position, running_total=card.running_total,
                )
            coup.trigger_event(
                Coup.Resolved, timestamp=ts, noir_total=outcome.noir_total,
                rouge_total=outcome.rouge_total, result=outcome.result.value,
                refait_total=outcome.refait_total, couleur=outcome.couleur,
                winning_chances=tuple(sorted(c.value for c in outcome.winning_chances)),
                announcement=outcome.announcement, cut_card_reached=dealt.cut_card_reached,
                next_position=dealt.next_position,
            )
            shoe.trigger_event(
                Shoe.CoupDealt, timestamp=ts, coup_id=str(coup.id),
                next_position=dealt.next_position, cut_card_reached=dealt.cut_card_reached,
            )
            return self._coup_view(coup)

        return self.core.run("deal", request_id, {"coup_id": coup_id}, decide, CoupView, actor)

    def settle(self, request_id: str, coup_id: str, *, actor: Actor = SYSTEM) -> CoupView:
        """Settle the dealt coup: every movement in RULES.md order, then each stake's fate."""

        def decide(unit: UnitOfWork) -> CoupView:
            coup = self._coup(unit, coup_id)
            if coup.phase != Phase.DEALT:
                raise FailedPrecondition(
                    "coup_id", "NOT_DEALT" if coup.phase != Phase.SETTLED else "ALREADY_SETTLED",
                    f"the coup is {coup.phase}, it must be dealt",
                )
            table = self.core.table(unit, coup.table_id)
            step = settle(self._rules(table), coup.domain_layout(), _outcome(coup))
            ts = unit.now
            self._apply_step(unit, table, coup, step, ts, record_movements=True)
            coup.trigger_event(Coup.Settled, timestamp=ts)
            return self._coup_view(coup)

        return self.core.run("settle", request_id, {"coup_id": coup_id}, decide, CoupView, actor)

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
            amt = _amount(amount)
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
            amt = _amount(amount)
            if amt > player.balance:
                raise FailedPrecondition(
                    "amount", "INSUFFICIENT_FUNDS", f"the balance is {player.balance}"
                )
            ts = unit.now
            cage = self._cage(unit, player.currency, ts)
            self.core.post(player, cage, amt, CASH_OUT, request_id, None, ts)
            return _account_view(player)

        args = {"account_id": account_id, "amount": amount}
        return self.core.run("withdraw", request_id, args, decide, AccountView, actor)

    # --- queries ----------------------------------------------------------------------------

    def _table_view(self, unit: UnitOfWork, table: Table) -> TableView:
        last = self._last_coup(unit, table)
        return TableView(
            table_id=table.table_id, preset=table.preset, options=dict(table.options),
            currency=table.options.get("currency", ""), shoe_id=table.shoe_id,
            coup_id=table.last_coup_id, coups=len(table.coup_ids), shoes=table.shoes,
            layout=tuple(_stake_view(s) for s in last.layout) if last is not None else (),
            bank_account=table_account(table.table_id, AccountKind.BANK),
            layout_account=table_account(table.table_id, AccountKind.LAYOUT),
            create_time=table.created_on.isoformat(),
            coup_shoe_id=last.shoe_id if last is not None else None,
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

    def _coup_view(self, coup: Coup) -> CoupView:
        reached = _PHASES.index(coup.phase) if coup.phase in _PHASES else 0
        wanted = {topic: key for topic, key in _PHASE_EVENTS[:reached]}
        times = self.core.event_times(coup, wanted) if wanted else {}
        return CoupView(
            coup_id=str(coup.id), table_id=coup.table_id, shoe_id=coup.shoe_id,
            number=coup.number, number_in_shoe=coup.number_in_shoe, phase=coup.phase,
            start_position=coup.start_position,
            cards=tuple(CardView(*c) for c in coup.cards),
            noir_total=coup.noir_total, rouge_total=coup.rouge_total, result=coup.result,
            refait_total=coup.refait_total, couleur=coup.couleur,
            winning_chances=tuple(coup.winning_chances), announcement=coup.announcement,
            cut_card_reached=coup.cut_card_reached,
            layout=tuple(_stake_view(s) for s in coup.layout),
            movements=tuple(MovementView(**m) for m in coup.movements),
            fates=tuple(FateView(**f) for f in coup.fates),
            create_time=coup.created_on.isoformat(),
            betting_close_time=times.get("closed"), deal_time=times.get("dealt"),
            settle_time=times.get("settled"),
        )

    def get_table(self, table_id: str) -> TableView:
        return self._writer.read(lambda u: self._table_view(u, self.core.table(u, table_id)))

    def get_shoe(self, shoe_id: str) -> ShoeView:
        return self._writer.read(lambda u: self._shoe_view(self.core.shoe(u, shoe_id)))

    def get_coup(self, coup_id: str) -> CoupView:
        return self._writer.read(lambda u: self._coup_view(self._coup(u, coup_id)))

    def stake_account(self, coup_id: str, stake_id: str) -> str:
        """The account of a stake that is or was on the coup's layout (it never changes: an
        owner check on it holds for a retry even after the stake left the layout). NOT_FOUND
        field ``stake_id`` if the stake never was on this coup."""

        def read(unit: UnitOfWork) -> str:
            owner = self._coup(unit, coup_id).owner(stake_id)
            if owner is None:
                raise NotFound("stake_id", "UNKNOWN_STAKE",
                               f"stake {stake_id} was never on the coup")
            return owner

        return self._writer.read(read)

    def list_tables(self, page_size: int = 50, page_token: str = "") -> tuple[list[TableView], str]:
        """Tables in the order they opened: at most ``page_size`` (1..1000), after the page
        ``page_token`` ended (opaque; "" for the first page). Returns the tables and the next
        page's token ("" on the last page). Found by the log's ``Table.Opened`` events."""
        size = _page_size(page_size)
        after = int(_read_token(page_token, "tables", "")) if page_token else 0
        notes = self.app.recorder.select_notifications(
            after, size + 1, inclusive_of_start=False, topics=(Table.Opened.TOPIC,)
        )
        page = notes[:size]
        tables = [self.get_table(str(json.loads(n.state)["table_id"])) for n in page]
        token = _make_token("tables", "", str(page[-1].id)) if len(notes) > size else ""
        return tables, token

    def list_coups(
        self, table_id: str, shoe_id: str | None = None, page_size: int = 50, page_token: str = ""
    ) -> tuple[list[CoupView], str]:
        """The coups of a table (or of one of its shoes) in the order they were played, at most
        ``page_size`` (1..1000) after the page ``page_token`` ended (opaque, bound to the same
        table and shoe). Returns the coups and the next page's token ("" on the last page)."""
        size = _page_size(page_size)
        scope = f"{table_id}/{shoe_id or '-'}"
        offset = int(_read_token(page_token, "coups", scope)) if page_token else 0

        def ids(unit: UnitOfWork) -> list[str]:
            table = self.core.table(unit, table_id)
            if shoe_id is None:
                return list(table.coup_ids)
            shoe = self.core.shoe(unit, shoe_id)
            if shoe.table_id != table.table_id:
                raise NotFound("shoe_id", "UNKNOWN_SHOE", f"no shoe {shoe_id!r} at the table")
            return self._shoe_coups(unit, table, shoe)

        coup_ids = self._writer.read(ids)
        # one coup per read: a long page does not hold the writer up
        coups = [self.get_coup(c) for c in coup_ids[offset : offset + size]]
        more = offset + size < len(coup_ids)
        token = _make_token("coups", scope, str(offset + size)) if more else ""
        return coups, token

    def _shoe_coups(self, unit: UnitOfWork, table: Table, shoe: Shoe) -> list[str]:
        """The shoe's coups in order: the dealt ones (from the shoe's events), then the
        table's latest coup if it belongs to the shoe and is not dealt yet."""
        ids = [
            str(json.loads(e.state)["coup_id"])
            for e in self.app.recorder.select_events(shoe.id, lte=shoe.version)
            if e.topic == Shoe.CoupDealt.TOPIC
        ]
        last = self._last_coup(unit, table)
        if last is not None and last.shoe_id == str(shoe.id) and str(last.id) not in ids:
            ids.append(str(last.id))
        return ids

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
            state = plain(json.loads(e.state))
            sign = -1 if e.topic in DEBIT_TOPICS else 1
            entries.append(Entry(
                number=e.originator_version - 1, amount=sign * int(state["amount"]),
                balance=int(state["balance"]), counter_account=state["counter_account"],
                kind=state["kind"], cause=state["cause"], stake_id=state["stake_id"],
                timestamp=str(state["timestamp"]),
                actor=actors.get(e.originator_version, (0, None))[1],
            ))
        return Statement(view, tuple(entries))

    def last_coups(self, table_id: str, n: int = 10) -> list[CoupSteps]:
        """The table's last ``n`` coups, newest first, each with every recorded step in order,
        its position in the log and who caused it (the actor of its command), and who dealt."""
        if not isinstance(n, int) or not 1 <= n <= 100:
            raise InvalidArgument("n", "OUT_OF_RANGE", "must be 1 to 100")
        coup_ids = self._writer.read(lambda u: list(self.core.table(u, table_id).coup_ids))
        answer = []
        for cid in reversed(coup_ids[-n:]):
            coup = self.get_coup(cid)
            stored = self.app.recorder.select_events(UUID(cid))
            actors = self.core.actors_of(UUID(cid),
                                         [(e.originator_version, e.topic) for e in stored])
            steps = tuple(
                StepView(e.originator_version, e.topic, str(state.get("timestamp")), state,
                         *actors.get(e.originator_version, (0, None)))
                for e in stored
                for state in [plain(json.loads(e.state))]
            )
            dealt_by = next((s.actor for s in steps if s.topic == Coup.Resolved.TOPIC), None)
            answer.append(CoupSteps(coup, steps, dealt_by))
        return answer

    def read_events(self, after_position: int = 0, limit: int = 100) -> list[StoredEvent]:
        """Events of the whole log with position > ``after_position``, at most ``limit``
        (1..10000), in log order."""
        return read_log(self.app, after_position, limit)

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


_PHASES = (Phase.BETTING, Phase.CLOSED, Phase.DEALT, Phase.SETTLED)
_PHASE_EVENTS = (  # the event that ends each phase, and the key of its time
    (Coup.BettingClosed.TOPIC, "closed"),
    (Coup.Resolved.TOPIC, "dealt"),
    (Coup.Settled.TOPIC, "settled"),
)
MAX_PAGE_SIZE = 1000


def _page_size(page_size: int) -> int:
    if not isinstance(page_size, int) or isinstance(page_size, bool) or page_size < 1:
        raise InvalidArgument("page_size", "OUT_OF_RANGE", f"must be 1 to {MAX_PAGE_SIZE}")
    return min(page_size, MAX_PAGE_SIZE)


def _make_token(kind: str, scope: str, value: str) -> str:
    """An opaque page token: where the page ended, bound to the list it belongs to."""
    text = json.dumps([kind, scope, value], separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _read_token(token: str, kind: str, scope: str) -> str:
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


@lru_cache(maxsize=1024)
def _rules_of(options: tuple[tuple[str, str], ...]) -> HouseRules:
    return HouseRules.from_options(dict(options))


def _check_open(table: Table) -> None:
    if table.closed:
        raise FailedPrecondition(
            "table_id", "TABLE_CLOSED",
            f"table {table.table_id!r} is closed: it opens no more shoes",
        )


def schema_owner(app: LedgerApplication) -> bool:
    """Whether the application's role created (owns) the tables (the library's CREATE_TABLE,
    decided in ``LedgerApplication.construct_env``)."""
    return str(app.env.get("CREATE_TABLE", "y")).lower() in ("y", "yes", "t", "true", "on", "1")


def chain_writer(app: LedgerApplication, config: LedgerConfig) -> ChainWriter | None:
    """The evidence writer of ``config`` (None: evidence off); ``ChainBroken`` if the store
    lost the last link its head file records."""
    if not config.evidence:
        return None
    key = ChainKey.from_raw(config.chain_key) if config.chain_key else ChainKey.ephemeral()
    chain = ChainWriter(app.recorder, key, config.chain_head)
    chain.check_head_file()
    return chain


def _conninfo(env: dict[str, str]) -> str:
    parts = {
        "dbname": env["POSTGRES_DBNAME"], "host": env["POSTGRES_HOST"],
        "port": env["POSTGRES_PORT"], "user": env["POSTGRES_USER"],
    }
    if env.get("POSTGRES_PASSWORD"):
        parts["password"] = env["POSTGRES_PASSWORD"]
    return " ".join(f"{k}={v}" for k, v in parts.items())


def read_log(app: LedgerApplication, after_position: int = 0, limit: int = 100
             ) -> list[StoredEvent]:
    """``Ledger.read_events`` on any connection to the store (it needs no aggregate)."""
    if not isinstance(limit, int) or not 1 <= limit <= 10000:
        raise InvalidArgument("limit", "OUT_OF_RANGE", "must be 1 to 10000")
    if not isinstance(after_position, int) or after_position < 0:
        raise InvalidArgument("after_position", "OUT_OF_RANGE", "must be 0 or more")
    notes = app.recorder.select_notifications(after_position, limit, inclusive_of_start=False)
    out = []
    for n in notes:
        state = plain(json.loads(n.state))
        ts = state.get("timestamp")
        out.append(StoredEvent(
            position=n.id, originator_id=str(n.originator_id), version=n.originator_version,
            topic=n.topic, timestamp=datetime.fromisoformat(ts) if ts else None, state=state,
        ))
    return out


def _amount(amount: int) -> int:
    if not isinstance(amount, int) or isinstance(amount, bool) or not 0 < amount <= MAX_AMOUNT:
        raise InvalidArgument("amount", "OUT_OF_RANGE", f"must be 1 to {MAX_AMOUNT} minor units")
    return amount


def _chance(text: str) -> Chance:
    try:
        return Chance(text)
    except ValueError:
        raise InvalidArgument(
            "chance", "UNKNOWN_CHANCE", "must be noir, rouge, couleur or inverse"
        ) from None


def _choice(text: str) -> Refait31Choice:
    try:
        return Refait31Choice(text)
    except ValueError:
        raise InvalidArgument("choice", "UNKNOWN_CHOICE", "must be partage or prison") from None


def _currency(text: str) -> str:
    """A currency of ``domain.currency``'s table (ISO 4217, its minor unit known)."""
    return check_currency(text, "currency")


def _stake_view(s: Stake) -> StakeView:
    return StakeView(
        s.stake_id, s.player, s.chance.value, s.amount, s.status.value, s.insured,
        s.choice.value if s.choice is not None else None, s.awaiting_choice,
    )


def _account_view(a: Account) -> AccountView:
    return AccountView(a.account_id, a.kind, a.currency, a.balance, a.entries)


def _outcome(coup: Coup) -> Outcome:
    assert coup.result is not None and coup.announcement is not None
    return Outcome(
        result=Result(coup.result), noir_total=coup.noir_total, rouge_total=coup.rouge_total,
        refait_total=coup.refait_total, couleur=coup.couleur,
        winning_chances=frozenset(Chance(c) for c in coup.winning_chances),
        announcement=coup.announcement,
    )
