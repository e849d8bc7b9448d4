"""Cuarenta's read models (services/cuarenta/projection.py, through the registry's
``Game.projections``): every match's history move by move and the table's reconciliation with
the commission, rebuilt from the log on SQLite and PostgreSQL, equal the ledger's queries; no
card in a hand in the read model's bytes."""

from __future__ import annotations

from services.bootstrap import READ_GAMES
from services.cuarenta.projection import MatchesView, move
from services.projections.service import ReadModels
from tests.projections.rows import view_bytes

from .support import Referee, fund, ledger_on

GAME = "cuarenta"


def test_rebuilt_read_models_equal_the_ledgers_queries(store_url: str) -> None:
    with ledger_on(store_url, overrides={"commission_rate": "5%"}) as (ledger, game):
        fund(ledger, ["ana", "beto", "caro", "dino"])
        played = []
        for n in range(2):
            m = game.open_match(f"o{n}", "mesa-1", ["ana", "beto"], stake=1_000).match
            played.append(Referee(game, m, f"r{n}").finish())
        four = game.open_match("o4", "mesa-1", ["ana", "beto", "caro", "dino"],
                               stake=500).match
        played.append(Referee(game, four, "r4").finish())
        live = game.open_match("live", "mesa-1", ["caro", "dino"], stake=300).match
        game.deal("live-deal", live.match_id)
        models = ReadModels(ledger.app, games=READ_GAMES)
        try:
            expected = ledger.cuarenta_reconcile("mesa-1")
            assert expected.balanced and expected.in_play == 1 and expected.commission_account
            assert models.game_reconcile(GAME, "mesa-1") == expected
            for m in [*played, live]:
                history = game.history(m.match_id)
                assert [move(s) for s in models.game_steps(GAME, m.match_id)] == history
            digests = models.digests()
            assert models.rebuild() == digests
            assert models.game_reconcile(GAME, "mesa-1") == expected
            assert {g.view: g.events_behind for g in models.lag()}["cuarenta_matches"] == 0
            check = models.reconcile()  # the bankrolls: every balance as the write side's
            assert check.ok and check.accounts >= 4 + 2
        finally:
            models.close()


def test_no_card_in_a_hand_in_the_read_model(store_url: str) -> None:
    with ledger_on(store_url) as (ledger, game):
        fund(ledger, ["ana", "beto"])
        m = game.open_match("o", "mesa-1", ["ana", "beto"], stake=1_000).match
        referee = Referee(game, m)
        referee.step()  # the first deal
        for _ in range(4):
            referee.step()  # plays of the first hand
        assert referee.match.hand == 1
        held = {c.card for s in (0, 1) for c in referee.hand(s).cards}
        assert len(held) >= 6
        models = ReadModels(ledger.app, games=READ_GAMES)
        try:
            models.catch_up()
            matches = models.game_view(GAME)
            assert isinstance(matches, MatchesView)
            stored = view_bytes(models.projector.store, matches)
            played = [s.data["card"] for s in models.game_steps(GAME, m.match_id)
                      if s.kind == "played"]
            assert len(played) == 4 and all(f'"{c}"'.encode() in stored for c in played)
            assert not [c for c in held if f'"{c}"'.encode() in stored]
        finally:
            models.close()
