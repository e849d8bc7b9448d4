"""Random command sequences, invalid ones included. After each step: the accounts sum to zero,
no player is below zero, the state rebuilt from the stored events equals the live state, and a
refused command stored no event. The same machine runs on SQLite (a fresh file per example) and
on PostgreSQL (a fresh schema per example in the session's database, dropped after it)."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from typing import Any, ClassVar

import psycopg
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from domain.errors import RuleViolation
from services.bootstrap import LEDGER_GAMES
from services.ledger.api import Ledger
from services.ledger.views import StakeView

from .play import FixedInputs

PLAYERS = ["p0", "p1", "p2"]
CHANCES = st.sampled_from(["noir", "rouge", "couleur", "inverse"] * 3 + ["vert"])
CHOICES = [None, None, None, "partage", "prison"]
VALID = st.integers(1, 20).map(lambda n: n * 50)
AMOUNTS = st.one_of(VALID, VALID, VALID, VALID, st.integers(-5, 0), st.integers(10**5, 10**7))
MAX_STAKE = 1500  # a player's total on one chance in one coup: low enough to be reached


class LedgerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.inputs = FixedInputs()
        url = self.open_store()
        try:
            self.ledger = Ledger(self.inputs.config(url), games=LEDGER_GAMES)
        except BaseException:
            self.drop_store()
            raise
        self.n = 0
        self.shoe_id: str | None = None
        self.coup_id: str | None = None
        self.done: list[tuple[str, tuple[Any, ...], Any]] = []

    def open_store(self) -> str:
        """A fresh, empty store for this example: its URL (here a new SQLite file)."""
        self.dir = tempfile.mkdtemp(prefix="sabot-stateful-")
        return f"sqlite:///{self.dir}/s.db"

    def drop_store(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def teardown(self) -> None:
        try:
            self.ledger.close()
        finally:
            self.drop_store()

    def mark(self) -> int:
        return self.ledger.app.recorder.max_notification_id() or 0

    def call(self, name: str, *args: Any) -> Any:
        self.n += 1
        rid = f"r{self.n}"
        before = self.mark()
        try:
            result = getattr(self.ledger, name)(rid, *args)
        except RuleViolation as exc:
            assert exc.field and exc.reason and exc.message
            assert self.mark() == before, f"refused {name} stored events"
            return None
        self.done.append((rid, (name, *args), result))
        return result

    @initialize(preset=st.sampled_from(["francaise", "espanola", "italiana"]),
                decks=st.sampled_from(["1", "2"]))
    def setup(self, preset: str, decks: str) -> None:
        self.ledger.open_table("t", "t1", preset, {"decks": decks, "min_stake": "50",
                                                    "max_stake": str(MAX_STAKE)})
        for p in PLAYERS:
            self.ledger.open_account("a" + p, p)
            self.ledger.deposit("d" + p, p, 3000)

    def stakes(self) -> list[StakeView]:
        return list(self.ledger.get_table("t1").layout)

    @rule(player=st.sampled_from([*PLAYERS, "ghost"]), amount=AMOUNTS)
    def deposit(self, player: str, amount: int) -> None:
        self.call("deposit", player, amount)

    @rule(player=st.sampled_from(PLAYERS), amount=AMOUNTS)
    def withdraw(self, player: str, amount: int) -> None:
        self.call("withdraw", player, amount)

    @rule(position=st.integers(-1, 120))
    def new_shoe(self, position: int) -> None:
        shoe = self.call("open_shoe", "t1")
        if shoe is not None:
            self.shoe_id = shoe.shoe_id
        if self.shoe_id is not None:
            self.call("cut", self.shoe_id, position, "p0")

    @rule()
    def close_shoe(self) -> None:
        if self.shoe_id is not None:
            self.call("close_shoe", self.shoe_id)

    @rule(position=st.integers(1, 50), bets=st.lists(
        st.tuples(st.sampled_from(PLAYERS), CHANCES, AMOUNTS, st.sampled_from(CHOICES)),
        max_size=5))
    def open_coup(self, position: int, bets: list[tuple[str, str, int, str | None]]) -> None:
        """Open a coup, finishing the last one and opening and cutting a shoe when needed."""
        if self.coup_id is not None and self.ledger.get_coup(self.coup_id).phase != "settled":
            self.call("deal", self.coup_id)
            self.call("settle", self.coup_id)
        table = self.ledger.get_table("t1")
        if table.shoe_id is None or self.ledger.get_shoe(table.shoe_id).cut_card_reached:
            if table.shoe_id is not None:
                self.call("close_shoe", table.shoe_id)
            shoe = self.call("open_shoe", "t1")
            if shoe is not None:
                self.shoe_id = shoe.shoe_id
                self.call("cut", shoe.shoe_id, position, "p1")
        coup = self.call("open_coup", "t1")
        if coup is not None:
            self.coup_id = coup.coup_id
            for player, chance, amount, choice in bets:
                self.call("place_stake", self.coup_id, player, chance, amount, None, choice)

    @precondition(lambda self: self.coup_id is not None)
    @rule(player=st.sampled_from(PLAYERS), chance=CHANCES, amount=AMOUNTS,
          choice=st.sampled_from(CHOICES))
    def place(self, player: str, chance: str, amount: int, choice: str | None) -> None:
        self.call("place_stake", self.coup_id, player, chance, amount, None, choice)

    @precondition(lambda self: self.coup_id is not None)
    @rule(data=st.data(), action=st.sampled_from(
        ["raise_stake", "withdraw_stake", "insure", "choose_refait31", "half_withdraw",
         "move_imprisoned"]))
    def act_on_stake(self, data: st.DataObject, action: str) -> None:
        stakes = self.stakes()
        if not stakes:
            return
        stake = data.draw(st.sampled_from(stakes))
        extra: tuple[Any, ...] = ()
        if action == "raise_stake":
            extra = (data.draw(AMOUNTS),)
        elif action == "choose_refait31":
            extra = (data.draw(st.sampled_from(["partage", "prison", "maybe"])),)
        elif action == "move_imprisoned":
            extra = (data.draw(CHANCES),)
        self.call(action, self.coup_id, stake.stake_id, *extra)

    @precondition(lambda self: self.coup_id is not None)
    @rule(step=st.sampled_from(["close_betting", "deal", "settle"]))
    def advance(self, step: str) -> None:
        self.call(step, self.coup_id)

    @precondition(lambda self: self.coup_id is not None)
    @rule()
    def play_out(self) -> None:
        self.call("deal", self.coup_id)
        self.call("settle", self.coup_id)

    @precondition(lambda self: self.n > 40)  # late: a closed table refuses the rest
    @rule()
    def close_table(self) -> None:
        if self.call("close_table", "t1") is not None:
            table = self.ledger.get_table("t1")
            assert table.closed and table.layout == ()

    @precondition(lambda self: bool(self.done))
    @rule(data=st.data())
    def retry(self, data: st.DataObject) -> None:
        rid, (name, *args), first = data.draw(st.sampled_from(self.done))
        before = self.mark()
        assert getattr(self.ledger, name)(rid, *args) == first
        assert self.mark() == before

    @invariant()
    def books_balance(self) -> None:
        balances = self.ledger.audit_balances()  # from the stored entries alone
        assert balances == self.ledger.balances()
        assert sum(balances.values()) == 0
        assert all(balances[p] >= 0 for p in PLAYERS)
        table = self.ledger.get_table("t1")
        assert balances["table:t1:layout"] == sum(s.amount for s in table.layout)

    @invariant()
    def within_the_maximum(self) -> None:
        """Whatever was placed, raised, carried over or moved: a player's total on one chance
        in one coup never exceeds the table maximum."""
        held: dict[tuple[str, str], int] = {}
        for s in self.ledger.get_table("t1").layout:
            held[s.account_id, s.chance] = held.get((s.account_id, s.chance), 0) + s.amount
        assert all(v <= MAX_STAKE for v in held.values()), held

    @invariant()
    def rebuilt_equals_live(self) -> None:
        cache = self.ledger._writer.cache
        for agg_id, live in list(cache._items.items()):
            assert not live.pending_events
            assert self.ledger.app.repository.get(agg_id) == live


LedgerMachine.TestCase.settings = settings(
    max_examples=25, stateful_step_count=50, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestLedgerMachine = LedgerMachine.TestCase


class PostgresLedgerMachine(LedgerMachine):
    """The same rules and invariants, on a fresh PostgreSQL schema per example. The events
    table is append-only by trigger (no DELETE, no TRUNCATE): the schema is dropped instead.
    ``dsn`` (the session's database) is set by a subclass in the test."""

    dsn: ClassVar[str]

    def open_store(self) -> str:
        self.schema = "st_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(self.schema)))
        info = conninfo_to_dict(self.dsn)
        return (
            f"postgresql://{info['user']}@{info['host']}:{info['port']}/{info['dbname']}"
            f"?schema={self.schema}"
        )

    def drop_store(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(self.schema))
            )


POSTGRES_SETTINGS = settings(
    max_examples=10, stateful_step_count=50, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@pytest.mark.postgres
def test_ledger_machine_on_postgres(postgres_dsn: str) -> None:
    """The machine above on PostgreSQL; fewer examples (a schema per example costs more)."""
    class Machine(PostgresLedgerMachine):
        dsn = postgres_dsn

    run_state_machine_as_test(Machine, settings=POSTGRES_SETTINGS)
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        left = conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'st\\_%'").fetchall()
    assert left == [], f"schemas not dropped: {left}"
