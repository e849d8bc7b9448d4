"""Cuarenta on the ledger, on both stores: whole matches (two players, two teams), the money
double-entry and at zero, refusals that store nothing, request ids replayed, forfeits."""

from __future__ import annotations

import pytest

from domain.errors import FailedPrecondition, InvalidArgument, RuleViolation
from services import topics as T
from services.cuarenta.commands import commission_account, stakes_account
from services.ledger.errors import PermissionDenied, RequestIdReused

from .support import Inputs, Referee, fund, ledger_on, player


def _events(ledger) -> list:  # type: ignore[no-untyped-def]
    return ledger.read_events(0, 10_000)


def test_a_two_player_match_to_the_end(store_url: str) -> None:
    with ledger_on(store_url) as (ledger, game):
        fund(ledger, ["ana", "beto"])
        opened = game.open_match("open", "mesa-1", ["ana", "beto"], stake=5_000,
                                 overrides={"commission_rate": "5%"})
        m = opened.match
        assert (m.phase, m.hand, m.points, m.held) == ("awaiting_deal", 1, (0, 0), (0, 0))
        assert [mv.kind for mv in opened.moves] == ["opened", "money", "money", "hand_begun"]
        assert ledger.get_account("ana").balance == 95_000
        assert ledger.get_account(stakes_account("mesa-1")).balance == 10_000
        ref = Referee(game, m)
        end = ref.finish()
        assert end.phase == "over" and end.winner in (0, 1)
        assert max(end.points) >= 40 or end.end == "four_of_a_kind"
        winner, loser = (("ana", "beto") if end.winner == 0 else ("beto", "ana"))
        assert ledger.get_account(winner).balance == 95_000 + 9_500
        assert ledger.get_account(loser).balance == 95_000
        assert ledger.get_account(stakes_account("mesa-1")).balance == 0
        assert ledger.get_account(commission_account("mesa-1")).balance == 500
        assert sum(ledger.balances().values()) == 0
        # every hand's shoe: committed before its deal, its seed revealed at its end
        history = game.history(m.match_id)
        kinds = [mv.kind for mv in history]
        assert kinds[0] == "opened" and kinds[-1] == "money"
        assert kinds.count("hand_begun") == end.hands
        played = [mv for mv in history if mv.kind == "played"]
        assert played and all(mv.card and mv.position is not None for mv in played)
        topics = [e.topic for e in _events(ledger)]
        assert topics.count(T.SHOE_CLOSED) == end.hands == topics.count(T.SHOE_SHUFFLED)
        assert topics.count(T.CUARENTA_MATCH_WON) == 1


def test_two_teams_of_two(store_url: str) -> None:
    with ledger_on(store_url, tables=("mesa-4",)) as (ledger, game):
        seats = ["ana", "beto", "carla", "dani"]
        fund(ledger, seats)
        m = game.open_match("open4", "mesa-4", seats, stake=1_001).match
        assert m.options["players"] == "4"
        # each side's stake shared between partners, the odd minor unit to the lower seat
        assert [ledger.get_account(a).balance for a in seats] == [
            100_000 - 501, 100_000 - 501, 100_000 - 500, 100_000 - 500]
        end = Referee(game, m).finish()
        won = [a for i, a in enumerate(seats) if i % 2 == end.winner]
        lost = [a for i, a in enumerate(seats) if i % 2 != end.winner]
        assert sum(ledger.get_account(a).balance for a in won) == 2 * 100_000 + 1_001
        assert sum(ledger.get_account(a).balance for a in lost) == 2 * 100_000 - 1_001
        assert ledger.get_account(stakes_account("mesa-4")).balance == 0
        deals = [mv for mv in game.history(m.match_id) if mv.kind == "dealt"]
        assert {mv.seat for mv in deals} == {0, 1, 2, 3}


def test_refusals_store_nothing(store_url: str) -> None:
    with ledger_on(store_url) as (ledger, game):
        fund(ledger, ["ana", "beto"], 1_000)
        with pytest.raises(FailedPrecondition) as funds:
            game.open_match("o0", "mesa-1", ["ana", "beto"], stake=5_000)
        assert (funds.value.field, funds.value.reason) == ("stake", "INSUFFICIENT_FUNDS")
        with pytest.raises(InvalidArgument):
            game.open_match("o1", "mesa-1", ["ana", "ana"])
        m = game.open_match("o2", "mesa-1", ["ana", "beto"], stake=100).match
        with pytest.raises(FailedPrecondition) as early:
            game.play("p0", m.match_id, 0, "AS", actor=player("ana"))
        assert early.value.reason == "WRONG_PHASE"
        m = game.deal("d1", m.match_id).match
        before = len(_events(ledger))
        mine = game.hand(m.match_id, 0, actor=player("ana"))
        theirs = game.hand(m.match_id, 1, actor=player("beto"))
        assert len(mine.cards) == 5 and mine.to_act and not theirs.to_act
        # out of turn
        with pytest.raises(FailedPrecondition) as turn:
            game.play("p1", m.match_id, 1, theirs.cards[0].card, actor=player("beto"))
        assert (turn.value.field, turn.value.reason) == ("seat", "OUT_OF_TURN")
        # another player's seat
        with pytest.raises(PermissionDenied):
            game.play("p2", m.match_id, 0, mine.cards[0].card, actor=player("beto"))
        # a card not held (the opponent's)
        with pytest.raises(FailedPrecondition) as held:
            game.play("p3", m.match_id, 0, theirs.cards[0].card, actor=player("ana"))
        assert held.value.reason == "CARD_NOT_HELD"
        # an illegal capture: the table is empty
        with pytest.raises(FailedPrecondition) as cap:
            game.play("p4", m.match_id, 0, mine.cards[0].card, [theirs.cards[0].card],
                      actor=player("ana"))
        assert (cap.value.field, cap.value.reason) == ("capture", "NOT_ON_TABLE")
        # a hand is its holder's only
        with pytest.raises(PermissionDenied):
            game.hand(m.match_id, 0, actor=player("beto"))
        with pytest.raises(FailedPrecondition) as timing:
            game.forfeit("f0", m.match_id, 0, "turn_time", actor=player("beto"))
        assert timing.value.reason == "TURN_NOT_EXPIRED"
        assert len(_events(ledger)) == before


def test_request_ids_replayed(store_url: str) -> None:
    with ledger_on(store_url) as (ledger, game):
        fund(ledger, ["ana", "beto"])
        first = game.open_match("o", "mesa-1", ["ana", "beto"], stake=100)
        assert game.open_match("o", "mesa-1", ["ana", "beto"], stake=100) == first
        with pytest.raises(RequestIdReused):
            game.open_match("o", "mesa-1", ["ana", "beto"], stake=200)
        mid = first.match.match_id
        dealt = game.deal("d", mid)
        assert game.deal("d", mid) == dealt
        card = game.hand(mid, 0, actor=player("ana")).legal[0]
        played = game.play("p", mid, 0, card.card, list(card.capture), actor=player("ana"))
        n = len(_events(ledger))
        again = game.play("p", mid, 0, card.card, list(card.capture), actor=player("ana"))
        assert again == played and len(_events(ledger)) == n
        assert ledger.get_account("ana").balance == 100_000 - 100


def test_forfeits(store_url: str) -> None:
    inputs = Inputs()
    with ledger_on(store_url, inputs) as (ledger, game):
        fund(ledger, ["ana", "beto"])
        m = game.open_match("o", "mesa-1", ["ana", "beto"], stake=300,
                            overrides={"turn_seconds": "30"}).match
        m = game.deal("d", m.match_id).match
        with pytest.raises(PermissionDenied):
            game.forfeit("f1", m.match_id, 0, "turn_time", actor=player("ana"))
        inputs.skip = 31
        done = game.forfeit("f2", m.match_id, 0, "turn_time", actor=player("beto"))
        assert (done.match.phase, done.match.winner, done.match.end) == ("over", 1, "forfeit")
        assert ledger.get_account("beto").balance == 100_300
        with pytest.raises(RuleViolation) as over:
            game.forfeit("f3", m.match_id, 1, "abandoned", actor=player("beto"))
        assert over.value.reason == "MATCH_OVER"
        m2 = game.open_match("o2", "mesa-1", ["ana", "beto"], stake=300).match
        with pytest.raises(PermissionDenied):
            game.forfeit("f4", m2.match_id, 0, "abandoned", actor=player("beto"))
        gone = game.forfeit("f5", m2.match_id, 0, "abandoned", actor=player("ana"))
        assert gone.match.winner == 1 and ledger.get_account("beto").balance == 100_600


def test_a_restarted_ledger_rebuilds_the_match(sqlite_store_url: str) -> None:
    """The writer forgets its state: the next command rebuilds the rule book's match from the
    stored inputs and the shoes' sealed seeds."""
    inputs = Inputs()
    with ledger_on(sqlite_store_url, inputs) as (ledger, game):
        fund(ledger, ["ana", "beto"])
        m = game.open_match("o", "mesa-1", ["ana", "beto"]).match
        ref = Referee(game, m)
        for _ in range(30):
            ref.step()
        seen = ref.match
    with ledger_on(sqlite_store_url, inputs) as (ledger, game):
        assert game.get_match(seen.match_id) == seen
        ref = Referee(game, seen, prefix="again")
        assert ref.finish().phase == "over"


def _strings(value: object) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return {s for v in value.values() for s in _strings(v)}
    if isinstance(value, list | tuple):
        return {s for v in value for s in _strings(v)}
    return set()


def test_the_log_holds_no_card_in_a_hand(store_url: str) -> None:
    """After every step, no stored event (nor any stored answer) of the hand names a card
    still in a hand: hands are positions until played. (Every hand deals the same 40 cards,
    so the events from the hand's first deal on are read.)"""
    with ledger_on(store_url) as (ledger, game):
        fund(ledger, ["ana", "beto"])
        m = game.open_match("o", "mesa-1", ["ana", "beto"]).match
        ref = Referee(game, m)
        checked = 0
        while ref.match.phase != "over" and checked < 60:
            ref.step()
            if ref.match.phase == "over":
                break
            held = {c.card for s in (0, 1) for c in ref.hand(s).cards}
            events = _events(ledger)
            start = max(e.position for e in events if e.topic == T.CUARENTA_MATCH_DEALT
                        and e.state["deal"] == 1)
            stored = set().union(*(_strings(e.state) for e in events if e.position >= start))
            assert not held & stored, held & stored
            checked += 1
        assert checked == 60


def test_every_played_card_opens_its_commitment(sqlite_store_url: str) -> None:
    """Each Played face and salt opens the commitment its Dealt recorded (no seed needed), and
    agrees with the hand's seed once revealed (``hidden.check_against_seed``)."""
    from uuid import UUID

    from services.ledger.hidden import HiddenCard, ShownCard, check_against_seed, check_shown

    with ledger_on(sqlite_store_url) as (ledger, game):
        fund(ledger, ["ana", "beto"])
        m = game.open_match("o", "mesa-1", ["ana", "beto"]).match
        Referee(game, m).finish()
        events = _events(ledger)
        shoe_of: dict[int, str] = {}
        hidden: dict[tuple[str, int], HiddenCard] = {}
        shown: dict[str, list[ShownCard]] = {}
        seeds = {e.originator_id: e.state["seed"] for e in events if e.topic == T.SHOE_CLOSED}
        for e in events:
            s = e.state
            if e.topic == T.CUARENTA_MATCH_HAND_BEGUN:
                shoe_of[s["hand"]] = s["shoe_id"]
            elif e.topic == T.CUARENTA_MATCH_DEALT:
                for c in s["cards"]:
                    hidden[(shoe_of[s["hand"]], c["position"])] = HiddenCard.from_dict(c)
            elif e.topic == T.CUARENTA_MATCH_PLAYED:
                shoe = shoe_of[s["hand"]]
                card = ShownCard(s["position"], m.seats[s["seat"]], s["card"], s["salt"])
                assert check_shown(card, hidden[(shoe, s["position"])])
                forged = ShownCard(card.position, card.holder,
                                   "KS" if card.code != "KS" else "KH", card.salt)
                assert not check_shown(forged, hidden[(shoe, s["position"])])
                shown.setdefault(shoe, []).append(card)
        assert shown and set(shown) <= set(seeds)
        for shoe, cards in shown.items():
            assert check_against_seed(bytes.fromhex(seeds[shoe]), UUID(shoe), "FRENCH-40", 1,
                                      None, cards) == []


def test_the_reconciliation_closes_with_the_commission(store_url: str) -> None:
    with ledger_on(store_url, overrides={"commission_rate": "5%"}) as (ledger, game):
        fund(ledger, ["ana", "beto"])
        for n in range(2):
            m = game.open_match(f"o{n}", "mesa-1", ["ana", "beto"], stake=1_000).match
            Referee(game, m, f"r{n}").finish()
        game.open_match("live", "mesa-1", ["ana", "beto"], stake=300)
        r = ledger.cuarenta_reconcile("mesa-1")
        assert r.balanced and (r.in_play, r.held, r.stakes_account) == (1, 600, 600)
        assert r.commission_account == 200 == sum(d.commission for d in r.days)
        (day,) = r.days
        assert (day.matches, day.stakes, day.payouts, day.players_net) == (2, 4_000, 3_800,
                                                                         -200)
