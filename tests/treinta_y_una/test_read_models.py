"""Treinta y Una's read models (services/treinta_y_una/projection.py, through the registry's
``Game.projections``): every round's recall step by step and the reconciliation per table and
gaming day, rebuilt from the log on SQLite and PostgreSQL, equal the ledger's queries; no
face-down card in the read model's bytes before its hand is shown."""

from __future__ import annotations

import time

from services.bootstrap import READ_GAMES
from services.projections.service import ReadModels
from services.treinta_y_una.projection import RoundsView
from tests.projections.rows import view_bytes
from tests.treinta_y_una.support import CROUPIER, Croupier, player, table_ledger

GAME = "treinta-y-una"


def _recall(models: ReadModels, round_id: str) -> list[tuple[object, ...]]:
    return [(s.version, s.kind, s.at, s.data) for s in models.game_steps(GAME, round_id)]


def test_rebuilt_read_models_equal_the_ledgers_queries(store_url: str) -> None:
    with table_ledger(store_url, tie="void_carry_over", commission="5%") as (ledger, tyu):
        croupier = Croupier(ledger, tyu)
        views = [croupier.play() for _ in range(6)]
        cancelled = tyu.cancel_round("cancel", croupier.stakes(croupier.open()).round_id,
                                     actor=CROUPIER)
        live = croupier.stakes(croupier.open())  # not settled: not counted yet
        models = ReadModels(ledger.app, games=READ_GAMES)
        try:
            expected = tyu.reconcile("tyu-1")
            assert expected and all(d.balanced for d in expected)
            assert models.game_reconcile(GAME, "tyu-1") == expected
            assert sum(d.rounds for d in expected) == 7
            for v in [*views, cancelled, live]:
                steps = [(s.version, s.event, s.timestamp, s.data)
                         for s in tyu.recall(v.round_id).steps]
                assert _recall(models, v.round_id) == steps and steps
            digests = models.digests()
            t0 = time.perf_counter()
            assert models.rebuild() == digests  # rebuilt from position 0: the same rows
            assert time.perf_counter() - t0 < 30
            assert models.game_reconcile(GAME, "tyu-1") == expected
            assert models.game_reconcile(GAME, "no-such-table") == []
            units = models.game_units(GAME, "tyu-1")
            assert [u.unit_id for u in units] == [*(v.round_id for v in views),
                                                  cancelled.round_id, live.round_id]
            assert [u.ended_at is None for u in units] == [False] * 7 + [True]
            # the bankrolls: every player's, bank's and house's balance as the write side's
            check = models.reconcile()
            assert check.ok and check.accounts >= 4 + 3
            house = models.player_statement("table:tyu-1:house")
            kinds = {r["kind"] for r in house.records()}
            assert kinds and kinds <= {"commission", "bank_commission"}
            lag = {g.view: g for g in models.lag()}
            assert lag["treinta_y_una_rounds"].events_behind == 0
        finally:
            models.close()


def test_no_face_down_card_in_the_read_model_before_the_showdown(store_url: str) -> None:
    with table_ledger(store_url) as (ledger, tyu):
        croupier = Croupier(ledger, tyu)
        view = croupier.stakes(croupier.open())
        view = tyu.deal("deal", view.round_id, actor=CROUPIER)
        who = view.whose_turn
        assert who is not None
        view = tyu.carta("carta", view.round_id, who, actor=player(who))  # one face up
        hidden = {s.code for h in view.hands
                  for s in tyu.my_hand(view.round_id, h.player, player(h.player)).slots
                  if s.face_down}
        drawn = {s.code for h in view.hands for s in h.slots if not s.face_down}
        assert len(hidden) == 3 * len(view.hands) and drawn and not hidden & drawn
        models = ReadModels(ledger.app, games=READ_GAMES)
        try:
            models.catch_up()
            store, rounds = models.projector.store, models.game_view(GAME)
            assert isinstance(rounds, RoundsView)
            before = view_bytes(store, rounds)
            assert all(f'"{c}"'.encode() in before for c in drawn if c)
            assert not [c for c in hidden if f'"{c}"'.encode() in before]
            kinds = [s.kind for s in models.game_steps(GAME, view.round_id)]
            assert "TreintaYUnaRound.CardDealt" in kinds
            assert "TreintaYUnaRound.HandShown" not in kinds
            # after the showdown, the shown faces (and only then)
            view = croupier.turns(view)
            tyu.settle("settle", view.round_id, actor=CROUPIER)
            models.catch_up()
            after = view_bytes(store, rounds)
            assert all(f'"{c}"'.encode() in after for c in hidden if c)
            shown = [s for s in models.game_steps(GAME, view.round_id)
                     if s.kind.endswith((".HandShown", ".HandBust"))]
            assert {c for s in shown for c in s.data["cards"]} >= hidden
        finally:
            models.close()
