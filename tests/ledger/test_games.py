"""The games a ledger is handed (``Ledger(config, games=...)``: each a ``LedgerGame``) and what
the ledger's core gives a game's commands: a table records its game, ``open_table`` checks it
against the games handed in, and a game handed in here (a toy: a coin flip paid even money from
the table's bank) runs its commands through the core (accounts, double-entry postings, its
request stored with its answer and actor, its shoe's cards from the unsealed seed), on both
stores, through the ledger socket's table too."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from domain.cards import DeckKind
from domain.errors import FailedPrecondition, InvalidArgument, NotFound
from domain.options import Option, OptionTable
from domain.trente_et_quarante.rules import TABLE as TQ_OPTIONS
from services.bootstrap import GAMES, LEDGER_GAMES
from services.ledger import wire
from services.ledger.actor import Actor
from services.ledger.api import Ledger
from services.ledger.core import UnitOfWork
from services.ledger.errors import PermissionDenied, RequestIdReused
from services.ledger.game import GameCommands, LedgerGame
from services.ledger.ids import table_uuid
from services.ledger.methods import Face, command, query
from services.ledger.table import UNRECORDED_GAME, Table

from .play import FixedInputs

TOY = "toy-coin"


@dataclasses.dataclass(frozen=True)
class ToyRules:
    preset: str
    currency: str
    decks: int


def _check(rules: ToyRules, given: Any, prefix: str) -> None:
    if not 1 <= rules.decks <= 2:
        raise InvalidArgument(f"{prefix}.decks", "OUT_OF_RANGE", "1 or 2")


TOY_OPTIONS: OptionTable[ToyRules] = OptionTable(
    ToyRules, (Option("currency", "EUR"), Option("decks", 1)),
    {"plain": {}, "double": {"decks": 2}}, "plain", _check)


@dataclasses.dataclass(frozen=True)
class Flip:
    table_id: str
    card: str  # the shoe's card at the position asked
    won: bool
    balance: int


class ToyCommands(GameCommands):
    """A game's commands: each validates, then runs its decision through ``Core.run``."""

    def flip(self, request_id: str, table_id: str, shoe_id: str, position: int,
             account_id: str, amount: int, *, actor: Actor) -> Flip:
        def decide(unit: UnitOfWork) -> Flip:
            if not actor.acts_for(account_id):
                raise PermissionDenied("account_id", "NOT_YOUR_ACCOUNT", "your own only")
            table = self.core.table(unit, table_id, game=TOY)
            rules = self.core.rules(table)
            player = self.core.player(unit, account_id, rules.currency)
            shoe = self.core.shoe(unit, shoe_id)
            card = self.core.cards(shoe).cards[position]
            won = card.colour == "red"
            bank = self.core.table_account(unit, table_id, "bank")
            if won:
                self.core.post(bank, player, amount, "flip_won", request_id, None, unit.now)
            else:
                self.core.check_balances(unit, {account_id: -amount}, rules.currency)
                self.core.post(player, bank, amount, "flip_lost", request_id, None, unit.now)
            return Flip(table_id, card.code, won, player.balance)

        args = {"table_id": table_id, "shoe_id": shoe_id, "position": position,
                "account_id": account_id, "amount": amount}
        return self.core.run("flip", request_id, args, decide, Flip, actor)

    def bank_balance(self, table_id: str) -> int:
        return self.core.read(lambda u: self.core.table_account(u, table_id, "bank").balance)


class ToyLedger(Face):
    """The toy's commands, each declared once (its stored name, the method deciding it)."""

    flip = command("flip", ToyCommands.flip)
    bank_balance = query("bank_balance", ToyCommands.bank_balance)


class _Clash(Face):  # a method under a name a game of the composition root took
    place_stake = command("place_stake", ToyCommands.flip)


class _CoreClash(Face):  # ... or the core
    open_table = command("open_table", ToyCommands.flip)


class _LedgerClash(Face):  # ... or the ledger's own (``Ledger.close``)
    close = command("close", ToyCommands.flip)


TOY_GAME = LedgerGame(
    name=TOY, deck_kind=DeckKind.FRENCH_40, options=TOY_OPTIONS, table_accounts=("bank",),
    commands=ToyCommands, face=ToyLedger,
)
WITH_TOY = (*LEDGER_GAMES, TOY_GAME)  # the composition root's games and the toy, handed in


def test_trente_et_quarante_is_the_composition_roots_first_game(tmp_path: Path) -> None:
    tq = GAMES[0].ledger
    assert [g.name for g in GAMES] == ["trente-et-quarante", "treinta-y-una", "cuarenta"]
    assert tq.name == UNRECORDED_GAME
    assert tq.deck_kind is DeckKind.FRENCH_52
    assert tq.options is TQ_OPTIONS
    assert set(tq.table_accounts) == {"bank", "layout", "house_insurance", "house_partage",
                                      "house_prison"}
    assert {"open_coup", "place_stake", "deal", "settle", "get_coup"} <= set(tq.methods)
    assert "sabot.v1.BettingService" in GAMES[0].api.services
    assert "sabot.ledger:Coup.StakePlaced" in GAMES[0].api.topics
    ledger = Ledger(FixedInputs().config(f"sqlite:///{tmp_path}/t.db"), games=LEDGER_GAMES)
    try:
        assert ledger.game_of_method("place_stake") is tq
        assert ledger.game_of_method("open_table") is None
        # the socket serves the core's methods and every game's
        schema = ledger.schema
        assert "place_stake" in schema.commands and "get_coup" in schema.queries
        assert "open_table" in schema.commands and "get_coup" not in schema.commands
    finally:
        ledger.close()


def test_a_method_name_is_taken_once(tmp_path: Path) -> None:
    config = FixedInputs().config(f"sqlite:///{tmp_path}/t.db")
    with pytest.raises(ValueError, match="taken"):
        Ledger(config, games=(*LEDGER_GAMES, dataclasses.replace(TOY_GAME, face=_Clash)))
    with pytest.raises(ValueError, match="taken"):
        Ledger(config, games=(dataclasses.replace(TOY_GAME, face=_CoreClash),))
    with pytest.raises(ValueError, match="taken"):
        Ledger(config, games=(dataclasses.replace(TOY_GAME, face=_LedgerClash),))
    with pytest.raises(ValueError, match="two games named"):
        Ledger(config, games=(*LEDGER_GAMES, dataclasses.replace(
            TOY_GAME, name="trente-et-quarante", face=Face)))


def test_a_table_records_its_game(store_url: str) -> None:
    ledger = Ledger(FixedInputs().config(store_url), games=LEDGER_GAMES)
    try:
        ledger.open_table("t", "t1", "espanola")
        table = ledger.app.repository.get(table_uuid("t1"))
        assert table.game == "trente-et-quarante"
        with pytest.raises(InvalidArgument) as refused:
            ledger.open_table("t2", "t2", "francaise", game="whist")
        assert (refused.value.field, refused.value.reason) == ("game", "UNKNOWN_GAME")
        with pytest.raises(NotFound):
            ledger.get_table("t2")
        # a Trente et Quarante shoe is of 52-card decks only
        with pytest.raises(InvalidArgument) as wrong:
            ledger.open_shoe("s", "t1", deck_kind="SPANISH-40")
        assert (wrong.value.field, wrong.value.reason) == ("deck_kind", "WRONG_DECK")
        # the stored arguments name the game only for another game (older retries digest the
        # same): the default preset is the game's
        again = ledger.open_table("t", "t1", game="trente-et-quarante", preset="espanola")
        assert again.preset == "espanola"
    finally:
        ledger.close()


def test_an_older_table_opened_reads_trente_et_quarante() -> None:
    state: dict[str, Any] = {"table_id": "t", "preset": "francaise", "options": {}}
    Table.Opened.upcast_v1_v2(state)
    Table.Opened.upcast_v2_v3(state)
    assert state["game"] == "trente-et-quarante"
    assert state["options"]["prisoners_at_close"] == "half_returned"
    assert Table.Opened.class_version == 3


def test_a_game_handed_in_runs_its_commands_through_the_core(store_url: str) -> None:
    ledger = Ledger(FixedInputs().config(store_url), games=WITH_TOY)
    try:
        view = ledger.open_table("t", "c1", overrides={"decks": "2"}, game=TOY)
        assert (view.preset, view.options) == ("plain", {"preset": "plain", "currency": "EUR",
                                                         "decks": "2"})
        assert ledger.get_account("table:c1:bank").currency == "EUR"
        with pytest.raises(NotFound):
            ledger.get_account("table:c1:layout")  # only the game's own accounts
        with pytest.raises(InvalidArgument) as bad:
            ledger.open_table("t2", "c2", overrides={"decks": "3"}, game=TOY)
        assert bad.value.field == "overrides.decks"
        with pytest.raises(InvalidArgument) as wrong:
            ledger.open_shoe("s0", "c1")  # FRENCH-52, the default: not this game's deck
        assert wrong.value.reason == "WRONG_DECK"
        shoe = ledger.open_shoe("s", "c1", deck_kind="FRENCH-40")
        assert (shoe.deck_kind, shoe.decks) == ("FRENCH-40", 2)
        ledger.cut("c", shoe.shoe_id, 10, "ana")
        ledger.open_account("a", "ana")
        ledger.deposit("d", "ana", 1000)
        ana = Actor("ana-terminal", "player", "t-7", "ana")
        first = ledger.flip("f1", "c1", shoe.shoe_id, 0, "ana", 100, actor=ana)
        mark = ledger.app.recorder.max_notification_id()
        assert ledger.flip("f1", "c1", shoe.shoe_id, 0, "ana", 100, actor=ana) == first
        assert ledger.app.recorder.max_notification_id() == mark  # a retry stores nothing
        with pytest.raises(RequestIdReused):
            ledger.flip("f1", "c1", shoe.shoe_id, 0, "ana", 200, actor=ana)
        with pytest.raises(PermissionDenied):
            ledger.flip("f2", "c1", shoe.shoe_id, 1, "ana",
                        100, actor=Actor("bob-terminal", "player", "t-8", "bob"))
        with pytest.raises(FailedPrecondition) as broke:
            for i in range(1, 40):
                ledger.flip(f"g{i}", "c1", shoe.shoe_id, i, "ana", 1000, actor=ana)
        assert broke.value.reason in ("INSUFFICIENT_FUNDS",)
        balances = ledger.balances()
        assert sum(balances.values()) == 0
        assert balances["ana"] + balances["table:c1:bank"] == 1000
        assert ledger.bank_balance("c1") == balances["table:c1:bank"]
        statement = ledger.statement("ana")
        flips = [e for e in statement.entries if e.kind.startswith("flip_")]
        assert flips[0].actor is not None and flips[0].actor["principal"] == "ana-terminal"
        assert flips[0].cause == "f1"
        # the table plays the toy: Trente et Quarante's commands refuse it
        with pytest.raises(FailedPrecondition) as other:
            ledger.open_coup("oc", "c1")
        assert (other.value.field, other.value.reason) == ("table_id", "WRONG_GAME")
        # the socket's table declares the methods of the games handed in
        assert "flip" in ledger.schema.commands and "bank_balance" in ledger.schema.queries
        assert ledger.schema.answer("flip")({"table_id": "c1", "card": "AS", "won": True,
                                             "balance": 1}) == Flip("c1", "AS", True, 1)
        # the submitted form (the ledger process's) answers a future
        ledger.deposit("d2", "ana", 10)
        future = ledger.submit("flip", "f9", "c1", shoe.shoe_id, 1, "ana", 1, actor=ana)
        assert future.result() == ledger.flip("f9", "c1", shoe.shoe_id, 1, "ana", 1, actor=ana)
    finally:
        ledger.close()


def test_a_game_not_handed_in_is_not_in_the_sockets_table() -> None:
    assert "flip" in wire.schema_of(WITH_TOY).methods
    alone = wire.schema_of(LEDGER_GAMES)
    assert "flip" not in alone.methods and "flip" not in alone.commands
    assert "place_stake" not in wire.schema_of(()).methods  # the core's table alone
