"""A Treinta y Una table on a real ledger, and a croupier that plays whole rounds."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from services.bootstrap import LEDGER_GAMES
from services.ledger.actor import Actor
from services.ledger.api import Ledger
from services.treinta_y_una.views import RoundView
from tests.ledger.play import FixedInputs

PLAYERS = ["ana", "bea", "carl", "dani"]
CROUPIER = Actor("c-0031", "croupier", "test")


def player(name: str) -> Actor:
    return Actor(name, "player", "test", account=name)


def game(ledger: Ledger) -> Any:
    """The game's commands as the ledger serves them (``tyu_*``), under their short names."""
    return _Game(ledger)


class _Game:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def __getattr__(self, name: str) -> Any:
        return getattr(self.ledger, "tyu_" + name)


def open_table(ledger: Ledger, table_id: str, **overrides: str) -> None:
    """A Treinta y Una table: its ruleset recorded, its stakes, bank and house accounts."""
    ledger.open_table(f"open-{table_id}", table_id, "clasica", overrides, "treinta-y-una")


def fund_players(ledger: Ledger, funds: int = 1_000_000) -> None:
    """An account for each of PLAYERS, ``funds`` deposited in it."""
    for name in PLAYERS:
        ledger.open_account(f"acc-{name}", name)
        ledger.deposit(f"dep-{name}", name, funds)


@contextmanager
def table_ledger(url: str, table_id: str = "tyu-1", funds: int = 1_000_000,
                 inputs: FixedInputs | None = None,
                 **overrides: str) -> Iterator[tuple[Ledger, Any]]:
    ledger = Ledger((inputs or FixedInputs()).config(url), games=LEDGER_GAMES)
    try:
        open_table(ledger, table_id, **overrides)
        fund_players(ledger, funds)
        yield ledger, game(ledger)
    finally:
        ledger.close()


@dataclass
class Croupier:
    """Plays rounds: every punter stakes, each stands at ``stand_at`` (reading his own hand
    as himself), the banker at 25."""

    ledger: Ledger
    tyu: Any
    table_id: str = "tyu-1"
    stand_at: int = 21
    n: int = 0
    log: list[str] = field(default_factory=list)

    def rid(self) -> str:
        self.n += 1
        return f"r{self.n}"

    def open(self, bank: int = 50_000, seats: list[str] | None = None) -> RoundView:
        return self.tyu.open_round(self.rid(), self.table_id, ",".join(seats or PLAYERS), bank,
                                   actor=CROUPIER)

    def stakes(self, view: RoundView, amount: int = 1_000) -> RoundView:
        for name in view.seats:
            if name != view.banker and all(s.player != name for s in view.stakes):
                view = self.tyu.place_stake(self.rid(), view.round_id, name, amount,
                                            actor=player(name))
        return view

    def turns(self, view: RoundView) -> RoundView:
        while view.phase == "playing":
            who = view.whose_turn
            assert who is not None
            hand = self.tyu.my_hand(view.round_id, who, player(who))
            limit = 25 if who == view.banker else self.stand_at
            assert hand.total is not None
            if hand.total < limit:
                self.log.append(f"{who}: carta")
                view = self.tyu.carta(self.rid(), view.round_id, who, actor=player(who))
            else:
                self.log.append(f"{who}: me planto")
                view = self.tyu.me_planto(self.rid(), view.round_id, who, actor=player(who))
        return view

    def play(self, bank: int = 50_000, amount: int = 1_000) -> RoundView:
        view = self.stakes(self.open(bank), amount)
        view = self.tyu.deal(self.rid(), view.round_id, actor=CROUPIER)
        view = self.turns(view)
        return self.tyu.settle(self.rid(), view.round_id, actor=CROUPIER)


def log_bytes(ledger: Ledger) -> bytes:
    """Every stored event of the log, as the feed and an export read them."""
    out = []
    after = 0
    while True:
        events = ledger.read_events(after, 1000)
        if not events:
            break
        for e in events:
            out.append(json.dumps({"topic": e.topic, "state": e.state}, default=str,
                                  sort_keys=True))
        after = events[-1].position
    return "\n".join(out).encode()
