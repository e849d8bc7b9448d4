"""Treinta y Una on the ledger (services/treinta_y_una): whole rounds with four players on both
stores, turn order, refusals with nothing stored, request ids replayed, the bank passing, the
money between the players' accounts, and the face-down cards kept by position."""

from __future__ import annotations

import itertools

import pytest

from domain.errors import FailedPrecondition, InvalidArgument, RuleViolation
from domain.shuffle import commitment
from domain.treinta_y_una.banker import check_lot, draw_banker
from services.ledger.errors import PermissionDenied
from services.ledger.hidden import HiddenCard, ShownCard, check_against_seed, check_shown
from services.treinta_y_una.round import TreintaYUnaRound
from tests.treinta_y_una.support import (
    CROUPIER,
    PLAYERS,
    Croupier,
    log_bytes,
    player,
    table_ledger,
)

FUNDS = 1_000_000


def _players_total(ledger) -> int:  # type: ignore[no-untyped-def]
    balances = ledger.balances()
    return sum(v for k, v in balances.items() if k in PLAYERS)


def test_full_rounds_with_four_players(store_url: str) -> None:
    with table_ledger(store_url) as (ledger, tyu):
        croupier = Croupier(ledger, tyu)
        bankers = []
        for _ in range(5):
            view = croupier.play()
            assert view.phase == "settled"
            bankers.append((view.banker, view.banker_reason, view.next_banker,
                            view.next_banker_reason))
            # every hand shown, each total the rule book's
            assert all(h.total is not None for h in view.hands)
            assert all(s.code is not None for h in view.hands for s in h.slots)
            assert {r.player for r in view.results} == set(view.seats) - {view.banker}
            # the money stayed between the players and the house, the table emptied
            balances = ledger.balances()
            for role in ("stakes", "bank"):
                assert balances[f"table:tyu-1:{role}"] == 0
            assert _players_total(ledger) + balances["table:tyu-1:house"] == 4 * FUNDS
        # the first banker by lot, then each next banker holds the bank
        assert bankers[0][1] == "lot"
        for (_, _, nxt, why), (b, reason, _, _) in itertools.pairwise(bankers):
            assert b == nxt and reason == why
        assert sum(ledger.balances().values()) == 0
        # the recall: every step in order, the round as it ended
        recall = tyu.recall(view.round_id)
        assert recall.round == tyu.get_round(view.round_id)
        names = [s.event for s in recall.steps]
        assert names[0] == "TreintaYUnaRound.Opened" and names[-1] == "TreintaYUnaRound.Settled"
        assert [s.version for s in recall.steps] == list(range(1, len(names) + 1))
        assert tyu.list_rounds("tyu-1")[-1] == view.round_id
        assert tyu.latest_round("tyu-1") == recall.round


def test_the_lot_is_reproducible_from_the_rounds_seed(sqlite_store_url: str) -> None:
    with table_ledger(sqlite_store_url) as (ledger, tyu):
        view = Croupier(ledger, tyu).play()
        shoe = ledger.get_shoe(view.shoe_id)
        assert shoe.closed and shoe.seed is not None
        seed = bytes.fromhex(shoe.seed)
        from uuid import UUID

        assert commitment(seed, UUID(view.shoe_id)) == view.commitment
        choice = draw_banker(seed, UUID(view.shoe_id), view.seats)
        assert choice.player == view.banker and choice.lot is not None
        assert choice.lot.index == view.lot_index
        assert check_lot(seed, choice)
        # every face shown is the seed's card at its position, and opens its commitment
        shown = [ShownCard(s.position, h.player, s.code or "", "")
                 for h in view.hands for s in h.slots if s.face_down]
        assert len(shown) == 3 * len(view.hands)
        from services.ledger.hidden import shoe_order

        cards = shoe_order(seed, UUID(view.shoe_id), "SPANISH-40", 1, None)
        assert all(cards[s.position].code == s.code for s in shown)
        for event in ledger.read_events(0, 10_000):
            if event.topic == TreintaYUnaRound.HandShown.TOPIC:
                proofs = [ShownCard.from_dict(d) for d in event.state["shown"]]
                assert check_against_seed(seed, UUID(view.shoe_id), "SPANISH-40", 1, None,
                                          proofs) == []
                for p in proofs:
                    slot = next(s for h in view.hands for s in h.slots if s.position == p.position)
                    assert check_shown(p, HiddenCard(p.position, p.holder, slot.commitment))


def test_deal_right_to_left_and_turn_order(sqlite_store_url: str) -> None:
    with table_ledger(sqlite_store_url) as (ledger, tyu):
        croupier = Croupier(ledger, tyu)
        view = croupier.stakes(croupier.open())
        view = tyu.deal("d1", view.round_id, actor=CROUPIER)
        order = [h.player for h in view.hands]
        assert order[-1] == view.banker and order[0] == view.mano
        h = len(order)
        for k, hand in enumerate(view.hands):
            assert [s.position for s in hand.slots] == [k, h + k, 2 * h + k]
            assert all(s.face_down and s.code is None and len(s.commitment) == 64
                       for s in hand.slots)
        assert view.whose_turn == view.mano
        second = order[1]
        before = ledger.saved_position()
        with pytest.raises(FailedPrecondition) as info:
            tyu.carta("out-of-turn", view.round_id, second, actor=player(second))
        assert info.value.reason == "NOT_YOUR_TURN" and info.value.field == "player"
        # issue 20: a player reads no other player's name (the round's views hide them)
        assert info.value.message == f"it is another player's turn, not {second}'s"
        assert all(p not in info.value.message for p in order if p != second)
        with pytest.raises(FailedPrecondition) as info:
            tyu.carta("out-of-turn-c", view.round_id, second, actor=CROUPIER)
        assert f"it is {view.mano}'s turn" in info.value.message  # the house reads them
        with pytest.raises(PermissionDenied) as denied:
            tyu.carta("not-mine", view.round_id, view.mano, actor=player(second))
        assert denied.value.reason == "NOT_YOUR_SEAT"
        with pytest.raises(PermissionDenied):
            tyu.my_hand(view.round_id, view.mano, player(second))
        with pytest.raises(PermissionDenied):
            tyu.my_hand(view.round_id, view.mano, CROUPIER)
        assert ledger.saved_position() == before  # nothing stored on refusal
        # the same request id answers the first answer, stores nothing more
        first = tyu.me_planto("planto-1", view.round_id, view.mano, actor=player(view.mano))
        again = tyu.me_planto("planto-1", view.round_id, view.mano, actor=player(view.mano))
        assert again == first and first.whose_turn == second
        after = ledger.saved_position()
        tyu.me_planto("planto-1", view.round_id, view.mano, actor=player(view.mano))
        assert ledger.saved_position() == after


def test_stakes_beyond_the_cover_or_the_maximum_are_refused(sqlite_store_url: str) -> None:
    with table_ledger(sqlite_store_url, max_stake="5000") as (ledger, tyu):
        croupier = Croupier(ledger, tyu)
        view = croupier.open(bank=6_000)  # worst case: covers 3,000 of stakes
        punters = [p for p in view.seats if p != view.banker]
        tyu.place_stake("s1", view.round_id, punters[0], 2_000, actor=player(punters[0]))
        before = ledger.saved_position()
        with pytest.raises(FailedPrecondition) as info:
            tyu.place_stake("s2", view.round_id, punters[1], 1_500, actor=player(punters[1]))
        assert (info.value.field, info.value.reason) == ("amount", "BANK_CANNOT_COVER")
        with pytest.raises(InvalidArgument) as big:
            tyu.place_stake("s3", view.round_id, punters[1], 6_000, actor=player(punters[1]))
        assert big.value.reason == "ABOVE_MAXIMUM"
        with pytest.raises(FailedPrecondition) as banker:
            tyu.place_stake("s4", view.round_id, view.banker, 100, actor=player(view.banker))
        assert banker.value.reason == "BANKER_CANNOT_STAKE"
        with pytest.raises(PermissionDenied):
            tyu.place_stake("s5", view.round_id, punters[1], 100, actor=player(punters[2]))
        assert ledger.saved_position() == before
        ok = tyu.place_stake("s2", view.round_id, punters[1], 1_000, actor=player(punters[1]))
        assert [s.amount for s in ok.stakes] == [2_000, 1_000]
        with pytest.raises(FailedPrecondition) as short:
            croupier.tyu.open_round("again", "tyu-1", ",".join(PLAYERS), 10, actor=CROUPIER)
        assert short.value.reason == "ROUND_IN_PROGRESS"


def test_the_croupier_stands_for_an_absent_player(sqlite_store_url: str) -> None:
    with table_ledger(sqlite_store_url, turn_seconds="1") as (ledger, tyu):
        croupier = Croupier(ledger, tyu)
        view = tyu.deal("d", croupier.stakes(croupier.open()).round_id, actor=CROUPIER)
        mano = view.mano
        # the fixed clock ticks a millisecond a command: not a second yet
        with pytest.raises(FailedPrecondition) as early:
            tyu.stand_for_absent("a1", view.round_id, mano, actor=CROUPIER)
        assert early.value.reason == "TURN_TIME_NOT_UP"
        inputs = ledger.config
        # move the ledger's clock on by two seconds
        from datetime import timedelta

        clock = inputs.clock

        def later():  # type: ignore[no-untyped-def]
            return clock() + timedelta(seconds=2)

        ledger._writer.clock = later  # type: ignore[attr-defined]
        view = tyu.stand_for_absent("a2", view.round_id, mano, actor=CROUPIER)
        planted = [e for e in ledger.read_events(0, 10_000)
                   if e.topic == TreintaYUnaRound.Planted.TOPIC]
        assert planted[-1].state["for_absent"] is True
        assert planted[-1].state["waited_seconds"] >= 1
        assert view.whose_turn != mano


def test_no_face_down_card_is_stored_before_the_showdown(sqlite_store_url: str) -> None:
    with table_ledger(sqlite_store_url) as (ledger, tyu):
        croupier = Croupier(ledger, tyu)
        view = croupier.stakes(croupier.open())
        view = tyu.deal("d", view.round_id, actor=CROUPIER)
        hidden = {h.player: tyu.my_hand(view.round_id, h.player, player(h.player))
                  for h in view.hands}
        faces = {s.code for hand in hidden.values() for s in hand.slots if s.face_down}
        assert len(faces) == 3 * len(view.hands)
        view = croupier.turns(view)
        stored = log_bytes(ledger)
        busted = {s.code for h in view.hands if h.out for s in
                  hidden[h.player].slots}
        for code in faces - busted:
            assert f'"{code}"'.encode() not in stored, code
        view = tyu.settle("s", view.round_id, actor=CROUPIER)
        stored = log_bytes(ledger)
        for code in faces:
            assert f'"{code}"'.encode() in stored, code


def test_a_refused_command_changes_nothing(sqlite_store_url: str) -> None:
    with table_ledger(sqlite_store_url) as (ledger, tyu):
        croupier = Croupier(ledger, tyu)
        view = croupier.open()
        before = ledger.saved_position()
        for call in (
            lambda: tyu.deal("d", view.round_id, actor=CROUPIER),  # no stakes
            lambda: tyu.settle("s", view.round_id, actor=CROUPIER),
            lambda: tyu.carta("c", view.round_id, view.mano, actor=player(view.mano)),
            lambda: tyu.open_round("o", "tyu-1", "ana,ana", 100, actor=CROUPIER),
            lambda: tyu.place_stake("p", view.round_id, "zed", 100, actor=CROUPIER),
        ):
            with pytest.raises(RuleViolation):
                call()
        assert ledger.saved_position() == before
        cancelled = tyu.cancel_round("x", view.round_id, actor=CROUPIER)
        assert cancelled.phase == "settled" and cancelled.next_banker == view.banker
        assert _players_total(ledger) == 4 * FUNDS


def test_the_commission_is_its_own_movement(sqlite_store_url: str) -> None:
    with table_ledger(sqlite_store_url, commission="5%") as (ledger, tyu):
        croupier = Croupier(ledger, tyu)
        total = 0
        for _ in range(4):
            view = croupier.play()
            commissions = [m for m in view.moved if "commission" in m.kind]
            assert all(m.credit_account == "table:tyu-1:house" for m in commissions)
            total += sum(m.amount for m in commissions)
        assert total > 0
        assert ledger.balances()["table:tyu-1:house"] == total
        assert _players_total(ledger) + total == 4 * FUNDS
        # the reconciliation of the table's gaming day closes, commission included
        (day,) = tyu.reconcile("tyu-1")
        assert day.rounds == 4 and day.balanced and day.commission == total
        assert day.players_net == -total and day.stakes == 4 * 3 * 1_000
        statement = ledger.statement("table:tyu-1:house")
        assert [e.kind for e in statement.entries] and all(
            e.kind in ("commission", "bank_commission") for e in statement.entries)


def test_the_regulators_replay_is_identical_and_finds_a_change(store_url: str) -> None:
    import dataclasses

    from services.treinta_y_una.replay import replay_round

    with table_ledger(store_url, tie="void_carry_over", commission="5%") as (ledger, tyu):
        croupier = Croupier(ledger, tyu)
        views = [croupier.play() for _ in range(4)]
        events = []
        after = 0
        while batch := ledger.read_events(after, 1000):
            events += batch
            after = batch[-1].position
        for view in views:
            seed = bytes.fromhex(ledger.get_shoe(view.shoe_id).seed or "")
            mine = [e for e in events if e.originator_id == view.round_id]
            verdict = replay_round(mine, seed)
            assert verdict.identical, str(verdict)
            assert len(verdict.steps) == len(mine) - 1
        view = views[0]
        mine = [e for e in events if e.originator_id == view.round_id]
        seed = bytes.fromhex(ledger.get_shoe(view.shoe_id).seed or "")
        i = next(i for i, e in enumerate(mine) if e.topic == TreintaYUnaRound.HandShown.TOPIC)
        state = dict(mine[i].state)
        state["total"] = state["total"] + 1
        changed = [*mine[:i], dataclasses.replace(mine[i], state=state), *mine[i + 1:]]
        verdict = replay_round(changed, seed)
        assert not verdict.identical
        assert f"position {mine[i].position}" in verdict.detail and "total" in verdict.detail
