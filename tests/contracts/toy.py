"""A toy game, handed to the layers the way the composition root hands the real ones
(``services.games.Game``: its part for each layer), for the contract every game passes
(``test_games.py``). Carta alta (high card): a player stakes against the table's bank; two cards
of the round's own shoe are dealt face up, the player's and the house's; the higher pip value
wins even money, a tie returns the stake; the settlement closes the shoe (its seed revealed).

It is a game of its own package's shape, in a few lines each: its rule book (``TABLE``), its
round's aggregate and events (explicit topics of its own, outside ``services/topics.py`` and the
frozen lists, which are the real games'), its commands and their declarations (``HighCardLedger``:
one line each), its replay for the regulator, its round's end for the notary, and its shoe's
check for ``sabot-verify`` (registered in the verifier by ``register_verifier``: the verifier's
convention would import ``sabot_verify.carta_alta``, which a test game has not)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from eventsourcing.domain import Aggregate

from domain.cards import DeckKind
from domain.errors import FailedPrecondition, InvalidArgument
from domain.options import Option, OptionTable
from domain.shuffle import Sabot
from services.api.game import ApiGame
from services.games import Game
from services.ledger.actor import SYSTEM, Actor
from services.ledger.core import Transfer
from services.ledger.errors import PermissionDenied
from services.ledger.game import GameCommands, LedgerGame
from services.ledger.methods import Face, command, query
from services.ledger.writer import UnitOfWork
from services.projections.games import ReadGame
from services.regulator.replay import RegulatorGame, ReplayStep, Rounds
from services.regulator.vocabulary import ShoeEvents, state
from services.treinta_y_una.round import RoundStarted

NAME = "carta-alta"
ROUND = "tests.toy:HighCardRound"
OPENED, DEALT, SETTLED = (f"{ROUND}.{e}" for e in ("Opened", "Dealt", "Settled"))
TOPICS = frozenset({ROUND, OPENED, DEALT, SETTLED})


@dataclasses.dataclass(frozen=True)
class HighCardRules:
    preset: str
    currency: str
    max_stake: int


def _check(rules: HighCardRules, given: Any, prefix: str) -> None:
    if not 1 <= rules.max_stake <= 10**9:
        raise InvalidArgument(f"{prefix}.max_stake", "OUT_OF_RANGE", "1 to 10^9")


TABLE: OptionTable[HighCardRules] = OptionTable(
    HighCardRules, (Option("currency", "EUR"), Option("max_stake", 10_000)),
    {"casa": {}}, "casa", _check)


@dataclasses.dataclass(frozen=True)
class RoundView:
    round_id: str
    table_id: str
    shoe_id: str
    player: str
    amount: int
    phase: str  # open, dealt, settled
    cards: tuple[str, ...]  # the player's card, the house's (once dealt)
    outcome: str  # "", won, lost, push


class HighCardRound(Aggregate):
    TOPIC = ROUND

    if TYPE_CHECKING:
        table_id: str
        shoe_id: str
        player: str
        amount: int
        phase: str
        cards: list[str]
        outcome: str

    class Event(Aggregate.Event):
        TOPIC = f"{ROUND}.Event"  # (never stored: the base of its events)

    class Opened(Aggregate.Created):
        TOPIC = OPENED
        class_version = 1
        table_id: str
        shoe_id: str
        player: str
        amount: int

        def apply(self, agg: HighCardRound) -> None:
            agg.table_id, agg.shoe_id = self.table_id, self.shoe_id
            agg.player, agg.amount = self.player, self.amount
            agg.phase, agg.cards, agg.outcome = "open", [], ""

    class Dealt(Event):
        TOPIC = DEALT
        class_version = 1
        cards: list[str]

        def apply(self, agg: HighCardRound) -> None:
            agg.phase, agg.cards = "dealt", list(self.cards)

    class Settled(Event):
        TOPIC = SETTLED
        class_version = 1
        outcome: str

        def apply(self, agg: HighCardRound) -> None:
            agg.phase, agg.outcome = "settled", self.outcome


def outcome(player: int, house: int) -> str:
    """The rule book: the higher pip value wins, a tie pushes."""
    return "won" if player > house else "lost" if player < house else "push"


class HighCard(GameCommands):
    """The toy's commands over the ledger's ``Core``."""

    def _round(self, unit: UnitOfWork, round_id: str) -> HighCardRound:
        return self.core.get(unit, HighCardRound, round_id, "round")

    def open_round(self, request_id: str, table_id: str, player: str, amount: int,
                   round_id: str | None = None, *, actor: Actor = SYSTEM) -> RoundView:
        """The player's stake on a new round, dealt from a shoe of its own."""

        def decide(unit: UnitOfWork) -> RoundView:
            if not actor.acts_for(player):
                raise PermissionDenied("player", "NOT_YOUR_ACCOUNT", "your own account only")
            table = self.core.table(unit, table_id, game=NAME)
            rules: HighCardRules = self.core.rules(table)
            if not isinstance(amount, int) or not 1 <= amount <= rules.max_stake:
                raise InvalidArgument("amount", "OUT_OF_RANGE", f"1 to {rules.max_stake}")
            account = self.core.player(unit, player, rules.currency, "player")
            self.core.check_balances(unit, {player: -amount}, rules.currency)
            rid = self.core.id_for(unit, HighCardRound, round_id, "round")
            shoe = self.core.start_shoe(unit, table, DeckKind.FRENCH_52)
            agg = HighCardRound._create(HighCardRound.Opened, id=rid, timestamp=unit.now,
                                        table_id=table_id, shoe_id=str(shoe.id), player=player,
                                        amount=amount)
            unit.add(agg)
            table.trigger_event(RoundStarted, timestamp=unit.now, round_id=str(rid))
            stakes = self.core.table_account(unit, table_id, "stakes")
            self.core.transfer([Transfer(account, stakes, amount, "high_card_stake")], str(rid),
                               unit.now)
            return view(agg)

        args = {"table_id": table_id, "player": player, "amount": amount, "round_id": round_id}
        return self.core.run(HighCardLedger.open_round.stored, request_id, args, decide,
                             RoundView, actor)

    def deal(self, request_id: str, round_id: str, *, actor: Actor = SYSTEM) -> RoundView:
        def decide(unit: UnitOfWork) -> RoundView:
            agg = self._round(unit, round_id)
            if agg.phase != "open":
                raise FailedPrecondition("round_id", "DEALT", "the round was dealt already")
            cards = self.core.cards(self.core.shoe(unit, agg.shoe_id)).cards[:2]
            agg.trigger_event(HighCardRound.Dealt, timestamp=unit.now,
                              cards=[c.code for c in cards])
            return view(agg)

        return self.core.run(HighCardLedger.deal.stored, request_id, {"round_id": round_id},
                             decide, RoundView, actor)

    def settle(self, request_id: str, round_id: str, *, actor: Actor = SYSTEM) -> RoundView:
        def decide(unit: UnitOfWork) -> RoundView:
            agg = self._round(unit, round_id)
            if agg.phase != "dealt":
                raise FailedPrecondition("round_id", "NOT_DEALT", "deal the round first")
            shoe = self.core.shoe(unit, agg.shoe_id)
            sabot = self.core.cards(shoe)
            player, house = sabot.cards[0].value, sabot.cards[1].value
            result = outcome(player, house)
            accounts = {role: self.core.table_account(unit, agg.table_id, role)
                        for role in ("stakes", "bank")}
            mine = self.core.account(unit, agg.player)
            moves = {"won": [(accounts["stakes"], mine), (accounts["bank"], mine)],
                     "lost": [(accounts["stakes"], accounts["bank"])],
                     "push": [(accounts["stakes"], mine)]}[result]
            self.core.transfer([Transfer(d, c, agg.amount, "high_card_" + result)
                                for d, c in moves], str(agg.id), unit.now)
            agg.trigger_event(HighCardRound.Settled, timestamp=unit.now, outcome=result)
            table = self.core.table(unit, agg.table_id)
            self.core.close_shoe(shoe, unit.now, sabot.cards, table)
            return view(agg)

        return self.core.run(HighCardLedger.settle.stored, request_id, {"round_id": round_id},
                             decide, RoundView, actor)

    def get_round(self, round_id: str) -> RoundView:
        return self.core.read(lambda u: view(self._round(u, round_id)))


class HighCardLedger(Face):
    """The toy's commands, each declared once."""

    open_round = command("toy_open_round", HighCard.open_round)
    deal = command("toy_deal", HighCard.deal)
    settle = command("toy_settle", HighCard.settle)
    get_round = query("toy_get_round", HighCard.get_round)


def view(agg: HighCardRound) -> RoundView:
    return RoundView(str(agg.id), agg.table_id, agg.shoe_id, agg.player, agg.amount, agg.phase,
                     tuple(agg.cards), agg.outcome)


def replay(found: ShoeEvents, opened: Mapping[str, Any], only: str | None) -> Rounds:
    """The regulator's replay of the shoe's round: its cards and outcome from the shoe's
    seed, beside those recorded."""

    def rounds(sabot: Sabot) -> Iterator[ReplayStep]:
        player, house = sabot.cards[0], sabot.cards[1]
        for events in found.coups.values():
            for e in events:
                if e.topic == DEALT:
                    yield ReplayStep(e.position, "cards", list(state(e)["cards"]),
                                     [player.code, house.code])
                elif e.topic == SETTLED:
                    yield ReplayStep(e.position, "outcome", state(e)["outcome"],
                                     outcome(player.value, house.value))

    return rounds


def register_verifier() -> None:
    """The toy's shoe check in ``sabot-verify`` (in this process): the verifier's own checks
    of the shoe (commitment, shuffle, order) and this line."""
    from sabot_verify.shoes import ShoeContext, Verdict, register_game

    def check(ctx: ShoeContext) -> list[Verdict]:
        return [Verdict(f"shoe {ctx.shoe_id}", True, None, "commitment and shuffle verified")]

    register_game(NAME, check)


GAME = Game(
    ledger=LedgerGame(name=NAME, deck_kind=DeckKind.FRENCH_52, options=TABLE,
                      commands=HighCard, face=HighCardLedger, table_accounts=("stakes", "bank")),
    api=ApiGame(name=NAME, options=TABLE, topics=TOPICS),
    read=ReadGame(name=NAME),
    regulator=RegulatorGame(name=NAME, replay=replay, round_ends=frozenset({SETTLED}),
                            topics=TOPICS),
    # its shoe's check: ``register_verifier`` (no ``sabot_verify`` module of its own)
)
