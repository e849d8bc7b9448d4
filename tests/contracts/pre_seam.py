"""The pre-seam log: a short demo played by the code as it stood before the many-games seam
(main ``125b87b``), with a fixed clock, ids and seeds; ``tests/data/pre_seam/events.jsonl`` holds
the raw rows it stored (position, originator id, version, topic, state as stored) and
``expected.json`` what the queries answered over them and the read models' digests.

The files were made once, by that code: ``git worktree add /tmp/pre 125b87b``, copy this file
there, then ``cd /tmp/pre && PYTHONPATH=.:tests python -m contracts.pre_seam OUT_DIR``. They
are a record of what that code stored and answered: ``test_pre_seam_log.py`` holds every later
version to them. Making them again with later code would test nothing (``play`` is kept here
as the record of how they were made, and ``test_pre_seam_log`` also plays it again).

The demo: two tables (``t-fr`` under ``francaise``: refait 31 at the player's choice,
insurance; ``t-it`` under ``italiana`` with an option overridden: prison at once, half
withdrawal, moves of imprisoned stakes), four players (one in GBP), a cashier, a croupier and an
admin, each command with its actor. ``t-fr`` plays two shoes and is closed with a prisoner on
its layout; ``t-it`` is left with its shoe in play (its seed sealed and escrowed) and a coup
open for betting. Every one of the 19 commands runs; refusals (funds, another's stake, a
request id reused with other arguments, ...) store nothing, and one refused stake is retried
with the same request id once the player has the funds; a retry of a stored command answers
the first answer; two players use the same request id text (ids are scoped by principal). The
seeds are searched (``search``) so that a refait 31 falls early on both tables.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

from domain.errors import RuleViolation
from services.bootstrap import LEDGER_GAMES, READ_GAMES, TRANSCODINGS
from services.ledger.actor import Actor
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig
from services.ledger.views import to_dict

DATA = Path(__file__).resolve().parent.parent / "data" / "pre_seam"

SEAL_KEY = bytes(range(32))
CHAIN_KEY = bytes([0x33]) * 32  # Ed25519 private key of the evidence chain
REGULATOR_PRIVATE = bytes([0x42]) * 32  # X25519 private key the seeds are escrowed to
START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

ADMIN = Actor("admin-1", "admin", "10.0.0.2")
CASHIER = Actor("cashier-12", "cashier", "10.0.0.3")
CROUPIER = Actor("c-0173", "croupier", "10.0.0.4")
PLAYERS = ("ana", "bruno", "carla")
GBP_PLAYER = "dave"


def player(name: str) -> Actor:
    return Actor(name, "player", "terminal-4", account=name)


@dataclass
class Inputs:
    """The clock (one second a command), the ids and the seeds of the demo."""

    seeds: list[int]
    now: datetime = START
    ids: random.Random = field(default_factory=lambda: random.Random(1))
    drawn: int = 0

    def clock(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now

    def new_id(self) -> UUID:
        return UUID(int=self.ids.getrandbits(128), version=4)

    def new_seed(self) -> bytes:
        k = self.seeds[self.drawn]
        self.drawn += 1
        return random.Random(f"shoe-{self.drawn}-{k}").randbytes(32)


def regulator_public() -> bytes:
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    return X25519PrivateKey.from_private_bytes(REGULATOR_PRIVATE).public_key().public_bytes_raw()


class Demo:
    def __init__(self, ledger: Ledger) -> None:
        self.L = ledger
        self.n: dict[str, int] = {}
        self.used: set[str] = set()
        self.refused: list[str] = []
        self.prisoners_at_close = False

    def rid(self, who: str) -> str:
        self.n[who] = self.n.get(who, 0) + 1
        return f"r-{self.n[who]}"

    def run(self, name: str, actor: Actor, *args: Any, rid: str | None = None) -> Any:
        answer = getattr(self.L, name)(rid or self.rid(actor.principal), *args, actor=actor)
        self.used.add(name)
        return answer

    def refuse(self, name: str, actor: Actor, *args: Any, rid: str | None = None) -> str:
        request_id = rid or self.rid(actor.principal)
        try:
            getattr(self.L, name)(request_id, *args, actor=actor)
        except RuleViolation as exc:
            self.refused.append(f"{name}: {exc.reason}")
            return request_id
        raise AssertionError(f"{name} was not refused")

    def coup(self, table: str, rng: random.Random, italiana: bool, **kw: Any) -> Any:
        L = self.L
        coup = self.run("open_coup", CROUPIER, table, *kw.get("open_args", ()))
        cid = coup.coup_id
        for s in L.get_coup(cid).layout:
            who = player(s.account_id)
            if s.awaiting_choice:
                self.run("choose_refait31", who, cid, s.stake_id,
                         "prison" if s.account_id == "ana" else "partage")
            elif s.status != "free" and italiana:
                if s.account_id == "bruno":
                    self.run("half_withdraw", who, cid, s.stake_id)
                else:
                    self.run("move_imprisoned", who, cid, s.stake_id, "rouge")
            elif s.status == "free" and rng.random() < 0.3:
                self.run("raise_stake", who, cid, s.stake_id, 200)
            elif s.status == "free" and rng.random() < 0.2:
                self.run("withdraw_stake", who, cid, s.stake_id)
        layout = L.get_coup(cid).layout
        for name, chance in (("ana", "noir"), ("bruno", "rouge"), ("carla", "couleur")):
            opposed = {"noir": "rouge", "rouge": "noir", "couleur": "inverse"}[chance]
            if any(s.account_id == name and s.chance in (chance, opposed) for s in layout):
                continue
            amount = 100 * rng.randint(2, 20)
            placed = self.run("place_stake", player(name), cid, name, chance, amount)
            if name == "ana" and not italiana and rng.random() < 0.6:
                self.run("insure", player(name), cid, placed.stake.stake_id)
        if rng.random() < 0.5:
            self.run("close_betting", CROUPIER, cid)
        dealt = self.run("deal", CROUPIER, cid)
        self.run("settle", CROUPIER, cid)
        return dealt

    def play(self) -> None:
        rng = random.Random(5)
        # the cashier's side: accounts, cash in and out, a GBP account (its own cage)
        for name in PLAYERS:
            self.run("open_account", CASHIER, name)
            self.run("deposit", CASHIER, name, 50_000 if name != "carla" else 1_000)
        self.run("open_account", CASHIER, GBP_PLAYER, "GBP")
        self.run("deposit", CASHIER, GBP_PLAYER, 20_000)
        self.run("withdraw", CASHIER, GBP_PLAYER, 5_000)
        self.refuse("withdraw", CASHIER, GBP_PLAYER, 10**6)  # beyond the balance
        self.refuse("open_account", CASHIER, "ana")  # exists
        # a retry of a stored command: the first answer, nothing stored
        first = self.run("deposit", CASHIER, "ana", 700, rid="cash-in-ana")
        assert self.run("deposit", CASHIER, "ana", 700, rid="cash-in-ana") == first
        self.refuse("deposit", CASHIER, "ana", 800, rid="cash-in-ana")  # same id, other args

        # t-fr: two shoes under francaise, then closed
        self.run("open_table", ADMIN, "t-fr", "francaise")
        shoe = self.run("open_shoe", CROUPIER, "t-fr")
        self.run("cut", CROUPIER, shoe.shoe_id, 57, "ana")
        coup = self.run("open_coup", CROUPIER, "t-fr")
        # carla has too little: refused, cash in, the same request retried goes through
        rid = self.refuse("place_stake", player("carla"), coup.coup_id, "carla", "inverse",
                          5_000)
        self.run("deposit", CASHIER, "carla", 30_000)
        placed = self.run("place_stake", player("carla"), coup.coup_id, "carla", "inverse",
                          5_000, rid=rid)
        # bruno may not touch carla's stake; ana and bruno use the same request id text
        self.refuse("withdraw_stake", player("bruno"), coup.coup_id, placed.stake.stake_id)
        self.run("place_stake", player("ana"), coup.coup_id, "ana", "noir", 1_000, None,
                 "prison", rid="same-id")
        self.run("place_stake", player("bruno"), coup.coup_id, "bruno", "rouge", 1_000,
                 "8f3f0c52-6f2b-4c39-9b44-51d2c7e1a001", None, rid="same-id")
        second = self.run("place_stake", player("bruno"), coup.coup_id, "bruno", "couleur", 300)
        self.run("withdraw_stake", player("bruno"), coup.coup_id, second.stake.stake_id)
        self.run("deal", CROUPIER, coup.coup_id)
        self.run("settle", CROUPIER, coup.coup_id)
        for _ in range(8):
            self.coup("t-fr", rng, italiana=False)
        self.run("close_shoe", CROUPIER, shoe.shoe_id)
        shoe = self.run("open_shoe", CROUPIER, "t-fr")
        self.run("cut", CROUPIER, shoe.shoe_id, 200, "bruno")
        for _ in range(3):  # until a refait 31: its prisoners stay on the layout
            if self.coup("t-fr", rng, italiana=False).result == "refait":
                break
        self.run("close_shoe", CROUPIER, shoe.shoe_id)
        self.refuse("open_coup", CROUPIER, "t-fr")  # no shoe
        self.prisoners_at_close = bool(self.run("close_table", ADMIN, "t-fr").settled)
        self.refuse("open_shoe", CROUPIER, "t-fr")  # closed for good

        # t-it: italiana with an override, ids given by the client, its shoe left in play
        self.run("open_table", ADMIN, "t-it", "italiana", {"max_stake": "500000"})
        shoe_id = "0b9e3d4c-52a1-4e6f-8a7b-3c2d1e0f9a10"
        self.run("open_shoe", CROUPIER, "t-it", shoe_id, "FRENCH-52")
        self.run("cut", CROUPIER, shoe_id, 111, "carla")
        self.coup("t-it", rng, italiana=True,
                  open_args=("4a1b2c3d-0000-4000-8000-00000000c001", shoe_id))
        for _ in range(8):
            self.coup("t-it", rng, italiana=True)
        coup = self.run("open_coup", CROUPIER, "t-it")
        self.run("place_stake", player("ana"), coup.coup_id, "ana", "noir", 400)
        self.run("deposit", CASHIER, "bruno", 1_000)


def play(url: str, seeds: list[int]) -> tuple[Ledger, Demo]:
    inputs = Inputs(seeds)
    ledger = Ledger(LedgerConfig(
        store_url=url, seal_key=SEAL_KEY, clock=inputs.clock, new_id=inputs.new_id,
        new_seed=inputs.new_seed, regulator_key=regulator_public(), chain_key=CHAIN_KEY,
    ), games=LEDGER_GAMES)
    demo = Demo(ledger)
    demo.play()
    return ledger, demo


def raw_rows(ledger: Ledger) -> Iterator[dict[str, Any]]:
    position = 0
    while notes := ledger.app.recorder.select_notifications(position, 1000,
                                                            inclusive_of_start=False):
        for n in notes:
            yield {"position": n.id, "originator_id": str(n.originator_id),
                   "version": n.originator_version, "topic": n.topic,
                   "state": n.state.decode("utf-8")}
        position = notes[-1].id


def answers(ledger: Ledger) -> dict[str, Any]:
    """What the queries answer over the demo's store (the contract test asks them again)."""
    tables, _ = ledger.list_tables(100)
    out: dict[str, Any] = {"tables": [to_dict(t) for t in tables], "shoes": {}, "coups": {},
                           "accounts": {}, "statements": {}, "last_coups": {}}
    for t in tables:
        coups, _ = ledger.list_coups(t.table_id, None, 1000)
        out["coups"].update({c.coup_id: to_dict(c) for c in coups})
        for c in coups:
            out["shoes"][c.shoe_id] = to_dict(ledger.get_shoe(c.shoe_id))
        out["last_coups"][t.table_id] = to_dict(ledger.last_coups(t.table_id, 1))
    balances = ledger.balances()
    out["balances"] = balances
    out["audit_balances"] = ledger.audit_balances()
    for name in sorted(balances):
        out["accounts"][name] = to_dict(ledger.get_account(name))
    for name in (*PLAYERS, GBP_PLAYER):
        out["statements"][name] = to_dict(ledger.statement(name, 0, 1000))
    return out


def search() -> list[int]:
    """Seeds under which every command runs, tried one shoe at a time: a refait 31 early in
    ``t-fr``'s first shoe (a choice to make) and in ``t-it``'s (prisoners to move)."""
    seeds = [0, 0, 0]  # one per shoe
    for i, wanted in ((0, {"choose_refait31"}), (1, {"prisoners at close"}),
                      (2, {"half_withdraw", "move_imprisoned"})):
        for k in range(500):
            seeds[i] = k
            with tempfile.TemporaryDirectory() as tmp:
                ledger, demo = play(f"sqlite:///{tmp}/s.db", seeds)
                ledger.close()
            if wanted <= demo.used | ({"prisoners at close"} if demo.prisoners_at_close else set()):
                break
        else:
            raise AssertionError(f"no seed for shoe {i}")
    return seeds


def rows() -> list[dict[str, Any]]:
    """The pre-seam log's rows, in log order."""
    with (DATA / "events.jsonl").open(encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def expected() -> dict[str, Any]:
    return dict(json.loads((DATA / "expected.json").read_text(encoding="utf-8")))


def main(out_dir: str) -> int:
    from services.projections.service import ReadModels

    seeds = search()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/demo.db"
        ledger, demo = play(url, seeds)
        assert len(demo.used) == 19 and demo.prisoners_at_close, sorted(demo.used)
        stored = list(raw_rows(ledger))
        expected = answers(ledger)
        ledger.close()
        models = ReadModels.open(url, games=READ_GAMES, transcodings=TRANSCODINGS)
        try:
            digests = models.rebuild()
        finally:
            models.close()
    with (out / "events.jsonl").open("w") as f:
        for row in stored:
            f.write(json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n")
    expected.update({"seeds": seeds, "commands": sorted(demo.used), "refused": demo.refused,
                     "read_model_digests": digests, "events": len(stored)})
    (out / "expected.json").write_text(json.dumps(expected, sort_keys=True, indent=1) + "\n")
    print(f"{len(stored)} rows, commands {len(demo.used)}, refused {demo.refused}, seeds {seeds}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
