"""A croupier for the tests: plays coups with several players, making varied legal (and some
illegal) moves, and records what happened."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import count
from typing import Any
from uuid import UUID

from domain.errors import RuleViolation
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig
from services.trente_et_quarante.views import CoupView

KEY = bytes(range(32))
CHAIN_KEY = bytes(range(100, 132))  # the evidence chain's signing key (fixed: same links)


@dataclass
class FixedInputs:
    """A clock, ids and seeds fixed by the test, so runs can be compared event for event."""

    seed: bytes = bytes(range(1, 33))
    start: datetime = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    ticks: count[int] = field(default_factory=count)
    ids: count[int] = field(default_factory=lambda: count(1))

    def clock(self) -> datetime:
        return self.start + timedelta(milliseconds=next(self.ticks))

    def new_id(self) -> UUID:
        return UUID(int=next(self.ids))

    def new_seed(self) -> bytes:
        return self.seed

    def config(self, url: str) -> LedgerConfig:
        return LedgerConfig(
            store_url=url, seal_key=KEY, clock=self.clock, new_id=self.new_id,
            new_seed=self.new_seed, chain_key=CHAIN_KEY,
        )


class Croupier:
    """Drives one table. ``rid()`` gives fresh request ids."""

    def __init__(self, ledger: Ledger, table_id: str, players: list[str], rng: random.Random):
        self.ledger = ledger
        self.table_id = table_id
        self.players = players
        self.rng = rng
        self.n = 0
        self.refused = 0
        self.coups: list[CoupView] = []

    def rid(self) -> str:
        self.n += 1
        return f"{self.table_id}-r{self.n}"

    def setup(self, preset: str, deposit: int = 1_000_000, overrides: dict[str, str] | None = None
              ) -> None:
        self.ledger.open_table(self.rid(), self.table_id, preset, overrides)
        for p in self.players:
            try:
                self.ledger.open_account(self.rid(), p)
                self.ledger.deposit(self.rid(), p, deposit)
            except RuleViolation:
                pass  # shared between tables

    def try_(self, fn: object, *args: object) -> bool:
        try:
            fn(self.rid(), *args)  # type: ignore[operator]
            return True
        except RuleViolation:
            self.refused += 1
            return False

    def bet(self, coup_id: str, max_stake: int = 5000) -> None:
        """Each player: act on their stakes on the layout, then maybe a new stake."""
        L, rng = self.ledger, self.rng
        coup = L.get_coup(coup_id)
        for s in coup.layout:
            roll = rng.random()
            if s.awaiting_choice:
                self.try_(L.choose_refait31, coup_id, s.stake_id, rng.choice(["partage", "prison"]))
            elif s.status != "free":
                if roll < 0.25:
                    self.try_(L.half_withdraw, coup_id, s.stake_id)
                elif roll < 0.5:
                    self.try_(L.move_imprisoned, coup_id, s.stake_id,
                              rng.choice(["noir", "rouge", "couleur", "inverse"]))
            elif roll < 0.2:
                self.try_(L.withdraw_stake, coup_id, s.stake_id)
            elif roll < 0.4:
                self.try_(L.raise_stake, coup_id, s.stake_id, rng.randint(1, 20) * 100)
        for p in self.players:
            if rng.random() < 0.8:
                chance = rng.choice(["noir", "rouge", "couleur", "inverse"])
                choice = rng.choice([None, "partage", "prison"])
                ok = self.try_(L.place_stake, coup_id, p, chance, rng.randint(1, max_stake // 100)
                               * 100, None, choice)
                if not ok and choice is not None:
                    self.try_(L.place_stake, coup_id, p, chance, 1000)
        for s in L.get_coup(coup_id).layout:
            if not s.insured and rng.random() < 0.15:
                self.try_(L.insure, coup_id, s.stake_id)

    def play_coup(self) -> CoupView | None:
        """One coup, or None if the shoe must close."""
        L = self.ledger
        try:
            coup = L.open_coup(self.rid(), self.table_id)
        except RuleViolation:
            return None
        self.bet(coup.coup_id)
        if self.rng.random() < 0.5:
            L.close_betting(self.rid(), coup.coup_id)
        L.deal(self.rid(), coup.coup_id)
        done = L.settle(self.rid(), coup.coup_id)
        self.coups.append(done)
        return done

    def play_shoe(self, cut: int | None = None) -> str:
        L = self.ledger
        shoe = L.open_shoe(self.rid(), self.table_id)
        size = L.get_shoe(shoe.shoe_id).size
        L.cut(self.rid(), shoe.shoe_id, cut or self.rng.randint(1, size - 1), self.players[0])
        while self.play_coup() is not None:
            pass
        L.close_shoe(self.rid(), shoe.shoe_id)
        return shoe.shoe_id


def cut_table(store_url: str) -> Ledger:
    """A ledger on fixed inputs with table t1 (francaise), ana's account of 10,000 and a shoe
    cut at 100: where the request and cache tests start."""
    from services.bootstrap import LEDGER_GAMES

    ledger = Ledger(FixedInputs().config(store_url), games=LEDGER_GAMES)
    ledger.open_table("t", "t1", "francaise")
    ledger.open_account("a", "ana")
    ledger.deposit("d", "ana", 10_000)
    shoe = ledger.open_shoe("s", "t1")
    ledger.cut("c", shoe.shoe_id, 100, "ana")
    return ledger


def together(*calls: Callable[[], Any]) -> list[Any]:
    """The calls run at the same moment, each in a thread: their answers (or errors), in order."""
    start = threading.Barrier(len(calls))
    answers: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        start.wait()
        try:
            answers[i] = calls[i]()
        except RuleViolation as exc:
            answers[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers
