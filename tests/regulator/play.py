"""Play whole shoes on a real ledger, deterministically, for the regulator's tests and bench."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from uuid import UUID

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from domain.errors import RuleViolation
from services.bootstrap import LEDGER_GAMES
from services.ledger.api import Ledger, LedgerConfig
from services.ledger.game import LedgerGame

SEAL_KEY = bytes(range(32))
CHAIN_KEY = bytes([0x5C]) * 32  # the evidence chain's signing key (raw Ed25519 private key)
CHAIN_PUBLIC = Ed25519PrivateKey.from_private_bytes(CHAIN_KEY).public_key().public_bytes_raw()


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def make_ledger(
    url: str,
    seed: int = 1,
    new_seed: Callable[[], bytes] | None = None,
    regulator_key: bytes | None = None,
    chain_head: str | None = None,
    batching: bool = False,
    evidence: bool = True,
    site: str | None = None,
    games: Sequence[LedgerGame] = LEDGER_GAMES,
) -> tuple[Ledger, random.Random]:
    rng = random.Random(seed)
    ids = random.Random(seed + 1000)
    config = LedgerConfig(
        store_url=url,
        seal_key=SEAL_KEY,
        clock=Clock(),
        new_id=lambda: UUID(int=ids.getrandbits(128), version=4),
        new_seed=new_seed or (lambda: rng.randbytes(32)),
        regulator_key=regulator_key,
        chain_key=CHAIN_KEY,
        chain_head=chain_head,
        evidence=evidence,
        site=site,
    )
    return Ledger(config, batching=batching, games=games), rng


class Player:
    """A table with players staking at random; every call is one ledger command."""

    def __init__(self, ledger: Ledger, rng: random.Random, table: str, preset: str) -> None:
        self.ledger, self.rng, self.table = ledger, rng, table
        self.n = 0
        self.players = [f"{table}-p{i}" for i in range(3)]
        self.ledger.open_table(self.rid(), table, preset)
        for p in self.players:
            self.ledger.open_account(self.rid(), p)
            self.ledger.deposit(self.rid(), p, 10_000_000)

    def rid(self) -> str:
        self.n += 1
        return f"{self.table}-r{self.n}"

    def optional(self, command: Callable[..., object], *args: object) -> None:
        """A command the table's rules may refuse (refused: nothing is recorded)."""
        with contextlib.suppress(RuleViolation):
            command(self.rid(), *args)

    def open_shoe(self) -> str:
        shoe = self.ledger.open_shoe(self.rid(), self.table)
        self.ledger.cut(self.rid(), shoe.shoe_id, self.rng.randint(1, 311), self.players[0])
        return shoe.shoe_id

    def coup(self) -> tuple[str, bool]:
        """One coup with stakes; returns (coup id, cut card reached)."""
        coup = self.ledger.open_coup(self.rid(), self.table)
        cid = coup.coup_id
        table = self.ledger.get_table(self.table)
        for s in table.layout:
            r = self.rng.random()
            if s.awaiting_choice and r < 0.5:
                self.ledger.choose_refait31(self.rid(), cid, s.stake_id, "partage")
            elif s.status != "free" and r < 0.3:
                self.optional(self.ledger.half_withdraw, cid, s.stake_id)
            elif s.status != "free" and r < 0.6:
                chance = self.rng.choice(["noir", "rouge", "couleur", "inverse"])
                self.optional(self.ledger.move_imprisoned, cid, s.stake_id, chance)
            elif s.status == "free" and r < 0.2:
                self.ledger.raise_stake(self.rid(), cid, s.stake_id, 100)
            elif s.status == "free" and r < 0.3:
                self.ledger.withdraw_stake(self.rid(), cid, s.stake_id)
        for p in self.players:
            mine = [s for s in self.ledger.get_table(self.table).layout if s.account_id == p]
            if mine:
                continue
            row = self.rng.choice(["noir", "rouge"])
            placed = self.ledger.place_stake(
                self.rid(), cid, p, row, 100 * self.rng.randint(1, 50)
            )
            if self.rng.random() < 0.3:
                colour = self.rng.choice(["couleur", "inverse"])
                self.ledger.place_stake(self.rid(), cid, p, colour, 100 * self.rng.randint(1, 9))
            if placed.stake is not None and self.rng.random() < 0.2:
                self.ledger.insure(self.rid(), cid, placed.stake.stake_id)
        dealt = self.ledger.deal(self.rid(), cid)
        self.ledger.settle(self.rid(), cid)
        return cid, dealt.cut_card_reached

    def shoe(self, max_coups: int = 200) -> tuple[str, list[str]]:
        """A whole shoe, up to the cut card, then closed."""
        sid = self.open_shoe()
        coups = []
        for _ in range(max_coups):
            cid, end = self.coup()
            coups.append(cid)
            if end:
                break
        self.ledger.close_shoe(self.rid(), sid)
        return sid, coups
