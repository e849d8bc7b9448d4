"""A refait at 31 under the francaise preset (player_choice): prison, partage, choices."""

from __future__ import annotations

from services.bootstrap import LEDGER_GAMES
from services.ledger.api import Ledger

from .play import FixedInputs

SEED_WITH_31_IN_COUP_5 = bytes([6]) * 32  # shoe UUID(int=1), cut at 200: refait 31 in coup 5


def test_refait31_choices(store_url: str) -> None:
    ledger = Ledger(FixedInputs(seed=SEED_WITH_31_IN_COUP_5).config(store_url), games=LEDGER_GAMES)
    ledger.open_table("t", "t1", "francaise")
    for p in ("ana", "bruno", "carla"):
        ledger.open_account("a" + p, p)
        ledger.deposit("d" + p, p, 10_000)
    shoe = ledger.open_shoe("s", "t1")
    assert shoe.shoe_id == "00000000-0000-0000-0000-000000000001"
    ledger.cut("c", shoe.shoe_id, 200, "ana")
    for i in range(4):
        coup = ledger.open_coup(f"o{i}", "t1")
        ledger.deal(f"d{i}", coup.coup_id)
        ledger.settle(f"s{i}", coup.coup_id)
    coup = ledger.open_coup("o4", "t1")
    ana = ledger.place_stake("pa", coup.coup_id, "ana", "noir", 1000).stake
    bruno = ledger.place_stake("pb", coup.coup_id, "bruno", "rouge", 1000).stake
    carla = ledger.place_stake("pc", coup.coup_id, "carla", "couleur", 1000).stake
    assert ana and bruno and carla
    dealt = ledger.deal("d4", coup.coup_id)
    assert dealt.result == "refait" and dealt.refait_total == 31
    assert dealt.announcement and "après" in dealt.announcement
    settled = ledger.settle("s4", coup.coup_id)
    fates = {f.stake_id: f.fate for f in settled.fates}
    assert fates[ana.stake_id] == fates[bruno.stake_id] == "imprisoned"
    assert fates[carla.stake_id] == "returned"  # couleur/inverse on a 31: returned (francaise)
    assert ledger.get_account("carla").balance == 10_000

    nxt = ledger.open_coup("o5", "t1")
    carried = {s.stake_id: s for s in nxt.layout}
    assert set(carried) == {ana.stake_id, bruno.stake_id}
    assert all(s.status == "prison" and s.awaiting_choice for s in carried.values())
    chose = ledger.choose_refait31("ca", nxt.coup_id, ana.stake_id, "partage")
    assert chose.stake is not None and chose.stake.status == "free"
    assert chose.stake.amount == 500
    assert [(m.kind, m.amount, m.credit_account) for m in chose.movements] == [
        ("partage", 500, "table:t1:house_partage")
    ]
    prison = ledger.choose_refait31("cb", nxt.coup_id, bruno.stake_id, "prison")
    assert prison.stake is not None and prison.stake.status == "prison"
    assert not prison.stake.awaiting_choice
    ledger.deal("d5", nxt.coup_id)
    after = ledger.settle("s5", nxt.coup_id)
    assert {f.stake_id for f in after.fates} >= {ana.stake_id, bruno.stake_id}
    balances = ledger.balances()
    assert sum(balances.values()) == 0
    assert balances["table:t1:house_partage"] == 500
    topics = [s.topic.rsplit(".", 1)[-1] for s in ledger.last_coups("t1", 1)[0].steps]
    assert topics.count("Refait31Chosen") == 2
    ledger.close()
