"""Full shoes with several players under each preset, on SQLite and on PostgreSQL."""

from __future__ import annotations

import random

import pytest

from domain.cards import DeckKind
from domain.shuffle import commitment, load_sabot, order_digest
from services.bootstrap import LEDGER_GAMES
from services.ledger.api import Ledger
from services.trente_et_quarante.views import CoupView

from .play import Croupier, FixedInputs

TAKES = ("collection", "partage", "prison_loss")
GIVES = ("return", "payment")
COLOUR = ("couleur", "inverse")


def check_settlement_order(coup: CoupView) -> None:
    """RULES.md: what the house takes before what it gives; Couleur/Inverse before Rouge/Noir."""
    kinds = [m.kind for m in coup.movements]
    assert set(kinds) <= set(TAKES) | set(GIVES)
    phases = [0 if k in TAKES else 1 for k in kinds]
    assert phases == sorted(phases), kinds
    for phase in (0, 1):
        chances = [m.chance for m, ph in zip(coup.movements, phases, strict=True) if ph == phase]
        rank = [0 if c in COLOUR else 1 for c in chances]
        assert rank == sorted(rank), chances
    assert [m.seq for m in coup.movements] == list(range(1, len(coup.movements) + 1))


def check_books(ledger: Ledger, table_id: str, players: list[str]) -> None:
    balances = ledger.audit_balances()
    assert balances == ledger.balances()
    assert sum(balances.values()) == 0
    assert all(balances[p] >= 0 for p in players)
    table = ledger.get_table(table_id)
    assert balances[table.layout_account] == sum(s.amount for s in table.layout)


@pytest.mark.parametrize("preset", ["francaise", "espanola", "italiana"])
def test_full_shoe_each_preset(store_url: str, preset: str) -> None:
    inputs = FixedInputs()
    ledger = Ledger(inputs.config(store_url), games=LEDGER_GAMES)
    players = ["ana", "bruno", "carla", "dario"]
    croupier = Croupier(ledger, "t1", players, random.Random(preset))
    croupier.setup(preset)
    start = {p: ledger.get_account(p).balance for p in players}
    shoe_id = croupier.play_shoe(cut=150)
    coups = croupier.coups
    assert 15 <= len(coups) <= 60
    assert croupier.refused > 0  # some moves were illegal and refused

    shoe = ledger.get_shoe(shoe_id)
    assert shoe.closed and shoe.seed is not None and shoe.cut_card_reached
    seed = bytes.fromhex(shoe.seed)
    from uuid import UUID

    assert commitment(seed, UUID(shoe_id)) == shoe.commitment
    sabot = load_sabot(seed, UUID(shoe_id), DeckKind.FRENCH_52, 6, 150)
    assert shoe.order_digest == order_digest(sabot.cards)
    position = 0
    for coup in coups:
        assert coup.phase == "settled"
        assert coup.start_position == position
        for card in coup.cards:
            assert sabot.cards[card.position].code == card.code
        totals: dict[str, int] = {"noir": 0, "rouge": 0}
        for card in coup.cards:
            totals[card.row] += sabot.cards[card.position].value
            assert card.running_total == totals[card.row]
        if coup.result in ("noir", "rouge", "refait"):
            assert coup.noir_total == totals["noir"] and coup.rouge_total == totals["rouge"]
            assert coup.announcement
        check_settlement_order(coup)
        position = coup.start_position + len(coup.cards)
    assert coups[-1].cut_card_reached

    # every recorded step of the last coups, in order
    recall = ledger.last_coups("t1", 10)
    assert [c.coup.coup_id for c in recall] == [c.coup_id for c in reversed(coups[-10:])]
    for item in recall:
        topics = [s.topic.rsplit(".", 1)[-1] for s in item.steps]
        assert topics[0] == "Opened"
        assert "BettingClosed" in topics and "Resolved" in topics and "Settled" in topics
        closed, resolved = topics.index("BettingClosed"), topics.index("Resolved")
        settled = topics.index("Settled")
        assert all(t == "CardDealt" for t in topics[closed + 1 : resolved])
        assert resolved - closed - 1 == len(item.coup.cards)
        bets = {"StakePlaced", "StakeRaised", "StakeWithdrawn", "InsuranceBought",
                "Refait31Chosen", "StakeHalfWithdrawn", "StakeMoved", "StakeCarriedOver"}
        assert not bets & set(topics[closed:])
        moves = [i for i, t in enumerate(topics) if t == "MoneyMoved" and i < settled]
        assert all(resolved < i for i in moves)

    check_books(ledger, "t1", players)
    # the house's take equals what the players lost
    end = {p: ledger.get_account(p).balance for p in players}
    balances = ledger.balances()
    house = sum(v for k, v in balances.items() if k.startswith("table:t1:"))
    assert house == sum(start.values()) - sum(end.values())
    assert balances["table:t1:layout"] == sum(
        s.amount for s in ledger.get_table("t1").layout
    )
    # free stakes went back at the shoe's end; only prisoners stay
    assert all(s.status != "free" for s in ledger.get_table("t1").layout)
    ledger.close()


def test_two_tables_share_players(sqlite_store_url: str) -> None:
    ledger = Ledger(FixedInputs().config(sqlite_store_url), games=LEDGER_GAMES)
    players = ["ana", "bruno"]
    a = Croupier(ledger, "ta", players, random.Random(1))
    b = Croupier(ledger, "tb", players, random.Random(2))
    a.setup("francaise")
    b.setup("espanola", overrides={"decks": "2"})
    a.play_shoe()
    b.play_shoe()
    check_books(ledger, "ta", players)
    check_books(ledger, "tb", players)
    assert ledger.get_table("tb").options["decks"] == "2"
    ledger.close()
