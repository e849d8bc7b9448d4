"""A shoe whose stakes were placed, raised and withdrawn by batch calls (``stake_batch``, issue
25 item 2) and whose players were funded by a cashier's batch (``cash_batch``): its export
verifies with ``sabot-verify`` and every coup replays identical, as a shoe played unary does."""

from __future__ import annotations

import random
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from services.bootstrap import REGULATOR_GAMES
from services.ledger.api import Ledger
from services.regulator.replay import Replayer, verdict

from .conftest import Played, regulator_key
from .play import make_ledger
from .test_export_verify import export_lines, verify


class BatchPlayer:
    """A table whose players send whole layouts: one batch per player and coup."""

    def __init__(self, ledger: Ledger, rng: random.Random, table: str) -> None:
        self.ledger, self.rng, self.table, self.n = ledger, rng, table, 0
        self.players = [f"{table}-p{i}" for i in range(3)]
        ledger.open_table(self.rid(), table, "francaise")
        for p in self.players:
            ledger.open_account(self.rid(), p)
        funded = ledger.cash_batch(self.rid(), [
            {"kind": "deposit", "account_id": p, "amount": 10_000_000} for p in self.players])
        assert funded.accepted == 3

    def rid(self) -> str:
        self.n += 1
        return f"{self.table}-b{self.n}"

    def coup(self) -> tuple[str, bool]:
        cid = self.ledger.open_coup(self.rid(), self.table).coup_id
        layout = self.ledger.get_table(self.table).layout
        for p in self.players:
            items: list[dict[str, object]] = []
            for s in layout:
                if s.account_id == p and s.status == "free":
                    r = self.rng.random()
                    if r < 0.3:
                        items.append({"action": "raise", "stake_id": s.stake_id, "amount": 100})
                    elif r < 0.5:
                        items.append({"action": "withdraw", "stake_id": s.stake_id})
            row = self.rng.choice(["noir", "rouge"])
            items.append({"action": "place", "account_id": p, "chance": row,
                          "amount": 100 * self.rng.randint(1, 30)})
            items.append({"action": "place", "account_id": p, "chance": "couleur",
                          "amount": 100 * self.rng.randint(1, 9)})
            items.append({"action": "place", "account_id": p,  # opposed to its row: refused
                          "chance": "rouge" if row == "noir" else "noir", "amount": 100})
            answer = self.ledger.stake_batch(self.rid(), cid, items, False)
            assert answer.items[-1].error is not None
            assert answer.accepted >= 2
        dealt = self.ledger.deal(self.rid(), cid)
        self.ledger.settle(self.rid(), cid)
        return cid, dealt.cut_card_reached


def test_a_shoe_staked_by_batches_verifies_and_replays(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/batch.db"
    reg = regulator_key()
    draw = random.Random(23).randbytes
    ledger, rng = make_ledger(url, 19, new_seed=lambda: draw(32),
                              regulator_key=reg.public_key().public_bytes_raw())
    played = Played(url, Ed25519PrivateKey.from_private_bytes(bytes([19]) * 32), reg)
    try:
        player = BatchPlayer(ledger, rng, "t-batch")
        shoe = ledger.open_shoe(player.rid(), "t-batch")
        ledger.cut(player.rid(), shoe.shoe_id, 150, player.players[0])
        coups = []
        for _ in range(200):
            cid, end = player.coup()
            coups.append(cid)
            if end:
                break
        ledger.close_shoe(player.rid(), shoe.shoe_id)
    finally:
        ledger.close()
    played.shoes, played.coups = [shoe.shoe_id], {shoe.shoe_id: coups}
    notary = played.notary()
    notary.sync()
    notary.checkpoint_now()
    code, text = verify(export_lines(played), checkpoint_key=played.public_key)
    assert code == 0, text
    assert text.count("OK   coup") == len(coups) and "FAIL" not in text
    replayer = Replayer(played.events(), played.notary(), games=REGULATOR_GAMES)
    assert verdict(replayer.shoe(shoe.shoe_id)).identical
    for cid in coups[:3]:
        v = verdict(replayer.coup(cid))
        assert v.identical, str(v)
