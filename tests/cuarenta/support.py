"""Cuarenta on a ledger, for the tests: a fixed clock, ids and seeds, players with money, and a
croupier that plays whole matches with the rule book's simple policy through the commands."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import count
from typing import Any, ClassVar
from uuid import UUID

from services.bootstrap import LEDGER_GAMES
from services.cuarenta.views import HandView, MatchStep, MatchView
from services.ledger.actor import PLAYER, Actor
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig

KEY = bytes(range(32))
CHAIN_KEY = bytes(range(100, 132))


@dataclass
class Inputs:
    """Clock, ids and seeds fixed by the test (the seeds change per hand: a counter)."""

    start: datetime = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    ticks: count[int] = field(default_factory=count)
    ids: count[int] = field(default_factory=lambda: count(1))
    seeds: count[int] = field(default_factory=lambda: count(1))
    skip: float = 0.0  # seconds added to the clock (turn time tests)

    def clock(self) -> datetime:
        return self.start + timedelta(milliseconds=next(self.ticks), seconds=self.skip)

    def new_id(self) -> UUID:
        return UUID(int=(2 << 64) + next(self.ids))

    def new_seed(self) -> bytes:
        return next(self.seeds).to_bytes(32, "big")

    def config(self, url: str) -> LedgerConfig:
        return LedgerConfig(store_url=url, seal_key=KEY, clock=self.clock, new_id=self.new_id,
                            new_seed=self.new_seed, chain_key=CHAIN_KEY)


class Game:
    """The ledger's ``cuarenta_*`` methods (the registered game's), by their short names."""

    NAMES: ClassVar[dict[str, str]] = {"get_match": "cuarenta_match", "history": "cuarenta_moves"}

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def __getattr__(self, name: str) -> Any:
        return getattr(self.ledger, self.NAMES.get(name, "cuarenta_" + name))


@contextmanager
def ledger_on(url: str, inputs: Inputs | None = None, tables: tuple[str, ...] = ("mesa-1",),
              overrides: dict[str, str] | None = None) -> Iterator[tuple[Ledger, Any]]:
    """A ledger with Cuarenta tables open (``overrides``: the tables' options)."""
    ledger = Ledger((inputs or Inputs()).config(url), games=LEDGER_GAMES)
    try:
        for t in tables:
            ledger.open_table(f"table-{t}", t, None, overrides, game="cuarenta")
        yield ledger, Game(ledger)
    finally:
        ledger.close()


def player(account: str) -> Actor:
    return Actor(account, PLAYER, "test", account)


def fund(ledger: Ledger, accounts: list[str], amount: int = 100_000) -> None:
    for a in accounts:
        ledger.open_account(f"open-{a}", a)
        ledger.deposit(f"fund-{a}", a, amount)


class Referee:
    """Plays a match to its end through the commands, each seat as its own player: the seat to
    act asks for its hand and plays the policy's choice among its legal plays."""

    def __init__(self, game: Any, match: MatchView, prefix: str = "r") -> None:
        self.game = game
        self.match = match
        self.n = count(1)
        self.prefix = prefix
        self.steps: list[MatchStep] = []

    def rid(self) -> str:
        return f"{self.prefix}-{self.match.match_id[-6:]}-{next(self.n)}"

    def hand(self, seat: int) -> HandView:
        return self.game.hand(self.match.match_id, seat,
                              actor=player(self.match.seats[seat]))

    def step(self) -> MatchStep:
        m = self.match
        if m.phase == "awaiting_deal":
            step = self.game.deal(self.rid(), m.match_id)
        else:
            assert m.to_act is not None
            seat = m.to_act
            legal = self.hand(seat).legal
            best = max(legal, key=lambda p: (p.points, len(p.capture)))
            if not best.capture:
                best = min(legal, key=lambda p: (p.capture != (), p.card))
            step = self.game.play(self.rid(), m.match_id, seat, best.card, list(best.capture),
                                  actor=player(m.seats[seat]))
        self.steps.append(step)
        self.match = step.match
        return step

    def finish(self, limit: int = 2000) -> MatchView:
        for _ in range(limit):
            if self.match.phase == "over":
                return self.match
            self.step()
        raise AssertionError("the match did not end")
