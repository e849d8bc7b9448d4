"""The played log ends with a table closed with a stake in prison (``prisoners_at_close`` is
``half_returned``): recall, reconciliation and bankrolls account for the close's movements.
The other read-model tests compare every figure with the domain's mirror, the close included."""

from __future__ import annotations

from services.bootstrap import READ_GAMES
from services.projections import default_views, gamingday
from services.projections.projector import Projector
from services.projections.recall import recall
from services.projections.reports import prison_outstanding

from .game import Game


def test_the_close_is_in_every_read_model(game: Game) -> None:
    assert game.closed_with_prisoners >= 1
    p = Projector(game.ledger.app, default_views(gamingday.DEFAULT, games=READ_GAMES))
    p.catch_up()
    table = game.ledger.get_table("t-it")
    assert table.closed and table.layout == () and table.close_time is not None
    (last,) = recall(p.store, coup_id=table.coup_id)
    halves = [s for s in last.steps if s.kind == "Coup.StakeHalfReturned"]
    assert len(halves) == game.closed_with_prisoners
    moved = [s for s in last.steps if s.kind == "Coup.MoneyMoved"]
    for h in halves:  # the house's half, then the rest back to the player
        mine = [(s.detail["kind"], s.amount) for s in moved if s.stake_id == h.stake_id]
        before = h.detail["amount_before"]
        assert mine[-1] == ("return", before - before // 2)
        assert mine[:-1] in ([("partage", before // 2)], [])
    with p.store.read() as tx:
        entries = tx.query(
            "SELECT kind, cause, amount FROM {s}rm_statement WHERE account_id = ? "
            "ORDER BY seq DESC LIMIT 1", ("table:t-it:house_partage",))
        balance = tx.one("SELECT balance FROM {s}rm_account WHERE account_id = ?",
                         ("table:t-it:house_partage",))
    assert entries[0][0] == "partage" and entries[0][1] == table.coup_id
    assert balance is not None and int(balance[0]) == game.ledger.balances()[
        "table:t-it:house_partage"]
    days = sorted({k[1] for k in game.exp.recon if k[0] == "t-it"})
    assert prison_outstanding(p.store, "t-it", days[-1]) == 0
