"""The turn clock on Cuarenta (issue 14: "a forfeit on abandonment or turn time"): the seat to
play lets the table's turn time pass, and the clock (``services/turn_clock.py``) has the
ledger forfeit the match for its side, once, the stakes paid to the other side less the
house's commission; the ledger decides with its own clock and refuses (storing nothing) once
the player played. On SQLite and PostgreSQL, with the ledger's clock injected."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from domain.errors import InvalidArgument, RuleViolation
from services.bootstrap import TURN_GAMES
from services.ledger.api import Ledger
from services.turn_clock import PRINCIPAL, ROLE, TurnClock, request_id
from tests.cuarenta.support import Inputs, fund, ledger_on, player
from tests.ledger.play import together

FORFEITED = "sabot.ledger:CuarentaMatch.Forfeited"
RECORDED = "sabot.ledger:Request.Recorded"


def _events(ledger: Ledger, topic: str) -> list[Any]:
    return [e for e in ledger.read_events(0, 10_000) if e.topic == topic]


def _dealt(game: Any, ledger: Ledger, stake: int = 1_000) -> Any:
    fund(ledger, ["ana", "beto"])
    m = game.open_match("o", "mesa-1", ["ana", "beto"], stake=stake).match
    return game.deal("d", m.match_id).match


def _play(game: Any, m: Any, rid: str) -> Any:
    seat = m.to_act
    legal = game.hand(m.match_id, seat, actor=player(m.seats[seat])).legal
    p = legal[0]
    return game.play(rid, m.match_id, seat, p.card, list(p.capture),
                     actor=player(m.seats[seat])).match


OVERRIDES = {"turn_seconds": "30", "commission_rate": "5%"}


def test_the_seat_that_lets_its_time_pass_forfeits_once(store_url: str) -> None:
    inputs = Inputs()
    with ledger_on(store_url, inputs, overrides=OVERRIDES) as (ledger, game):
        m = _dealt(game, ledger)
        clock = TurnClock(ledger, clock=inputs.clock, games=TURN_GAMES)
        assert clock.tick() == []  # 0 s of 30
        assert clock.turns[m.match_id].seat == m.to_act
        inputs.skip = 29
        assert clock.tick() == []
        inputs.skip = 31
        (acted,) = clock.tick()
        loser = m.to_act
        assert (acted.id, acted.player) == (m.match_id, m.seats[loser])
        assert acted.request_id == request_id("cuarenta", m.match_id, acted.turn)
        done = game.get_match(m.match_id)
        assert (done.phase, done.end, done.winner) == ("over", "forfeit", 1 - loser)
        (forfeit,) = _events(ledger, FORFEITED)
        assert forfeit.state["reason"] == "turn_time"
        assert forfeit.state["elapsed_seconds"] >= 30
        # recorded as the turn clock's command, by its actor and role
        rec = [e for e in _events(ledger, RECORDED) if e.state.get("command") == "cuarenta_forfeit"]
        assert len(rec) == 1
        assert (rec[0].state["actor"]["principal"], rec[0].state["actor"]["role"]) == (
            PRINCIPAL, ROLE)
        # the stakes: 2 x 1000 held, 5% to the house, the rest to the winner
        winner, other = m.seats[1 - loser], m.seats[loser]
        assert ledger.get_account(winner).balance == 100_000 + 1_000 - 100
        assert ledger.get_account(other).balance == 100_000 - 1_000
        assert abs(ledger.get_account("table:mesa-1:house_commission").balance) == 100
        assert sum(ledger.balances().values()) == 0
        assert ledger.get_account("table:mesa-1:stakes").balance == 0
        # nothing more to do: a later pass, a second clock, a retry apply nothing again
        n = ledger.saved_position()
        inputs.skip = 500
        assert clock.tick() == [] and TurnClock(ledger, clock=inputs.clock,
                                                games=TURN_GAMES).tick() == []
        again = ledger.cuarenta_forfeit(acted.request_id, m.match_id, loser, "turn_time",
                                        acted.turn, actor=clock.actor)
        assert again.match.end == "forfeit"
        assert ledger.saved_position() == n and len(_events(ledger, FORFEITED)) == 1


def test_a_play_in_time_moves_the_clock_on(store_url: str) -> None:
    inputs = Inputs()
    with ledger_on(store_url, inputs, overrides=OVERRIDES) as (ledger, game):
        m = _dealt(game, ledger)
        clock = TurnClock(ledger, clock=inputs.clock, games=TURN_GAMES)
        clock.tick()
        first = clock.turns[m.match_id]
        inputs.skip = 20
        m = _play(game, m, "p1")
        assert clock.tick() == []
        second = clock.turns[m.match_id]
        assert second.turn != first.turn and second.seat == m.to_act
        inputs.skip = 40  # 20 s since the play: the next seat still has time
        assert clock.tick() == []
        inputs.skip = 51
        (acted,) = clock.tick()
        assert acted.turn == second.turn and acted.player == m.seats[m.to_act]


def test_the_ledger_refuses_a_claim_once_the_player_played(store_url: str) -> None:
    """The clock holds a turn the player has played since (in time): a claim on it, once the
    old turn's time would have run out, is refused (TURN_MOVED), stores nothing, and the clock
    reads the new turn. (A play after its time is refused itself: test_late_play_*.)"""
    inputs = Inputs()
    with ledger_on(store_url, inputs, overrides=OVERRIDES) as (ledger, game):
        m = _dealt(game, ledger)
        clock = TurnClock(ledger, clock=inputs.clock, games=TURN_GAMES)
        clock._follow()
        clock._refresh()
        stale = clock.turns[m.match_id]
        inputs.skip = 25
        m = _play(game, m, "in-time")  # 25 s of 30: it stands, the turn moves on
        inputs.skip = 45  # the stale turn's time would have run out; the new one has 20 s
        n = ledger.saved_position()
        assert clock._fire() == []
        assert ledger.saved_position() == n and not _events(ledger, FORFEITED)
        with pytest.raises(RuleViolation) as moved:
            ledger.cuarenta_forfeit("x", m.match_id, stale.seat, "turn_time", stale.turn,
                                    actor=clock.actor)
        assert (moved.value.field, moved.value.reason) in (("turn", "TURN_MOVED"),
                                                           ("seat", "NOT_ON_TURN"))
        assert clock.tick() == [] and clock.turns[m.match_id].seat == m.to_act
        # the turn number names one turn: a claim on the new one before its time is refused
        fresh = clock.turns[m.match_id]
        with pytest.raises(RuleViolation) as early:
            ledger.cuarenta_forfeit("y", m.match_id, fresh.seat, "turn_time", fresh.turn,
                                    actor=clock.actor)
        assert early.value.reason == "TURN_NOT_EXPIRED"
        assert ledger.saved_position() == n


def test_a_race_never_applies_both(store_url: str) -> None:
    """The player plays at the moment the clocks of two servers act: one of the three wins, each
    match is forfeited at most once and the money sums to zero."""
    outcomes = set()
    inputs = Inputs()
    with ledger_on(store_url, inputs, overrides=OVERRIDES) as (ledger, game):
        fund(ledger, ["ana", "beto"])
        for attempt in range(4):
            m = game.open_match(f"o{attempt}", "mesa-1", ["ana", "beto"], stake=1_000).match
            m = game.deal(f"d{attempt}", m.match_id).match
            clocks = [TurnClock(ledger, clock=inputs.clock, games=TURN_GAMES) for _ in range(2)]
            for c in clocks:
                c.tick()
            inputs.skip += 31
            seat = m.to_act
            legal = game.hand(m.match_id, seat, actor=player(m.seats[seat])).legal[0]
            play = functools.partial(game.play, f"race-{attempt}", m.match_id, seat,
                                     legal.card, list(legal.capture),
                                     actor=player(m.seats[seat]))
            answer, _, _ = together(play, clocks[0].tick, clocks[1].tick)
            forfeits = [e for e in _events(ledger, FORFEITED) if e.originator_id == m.match_id]
            # 31 s into a 30 s turn by the ledger's clock: whoever reaches the writer first,
            # the play is refused and the side forfeits, once (issue 20)
            assert len(forfeits) == 1 and forfeits[0].state["reason"] == "turn_time"
            assert isinstance(answer, RuleViolation)
            assert answer.reason in ("TURN_TIME_OVER", "MATCH_OVER")  # the play first, or not
            assert game.get_match(m.match_id).end == "forfeit"
            outcomes.add(answer.reason)
            assert sum(ledger.balances().values()) == 0
    assert outcomes  # (which one reaches the writer first each time is the writer's order)


def test_a_restarted_clock_asks_only_about_the_matches_still_running(store_url: str) -> None:
    inputs = Inputs()
    with ledger_on(store_url, inputs, overrides=OVERRIDES) as (ledger, game):
        m = _dealt(game, ledger)
        game.forfeit("gone", m.match_id, 0, "abandoned", actor=player("ana"))
        live = game.deal("d2", game.open_match("o2", "mesa-1", ["ana", "beto"],
                                               stake=10).match.match_id).match
        asked: list[str] = []

        class Counting:  # the ledger, counting the clock's ``cuarenta_turn`` queries
            def __getattr__(self, name: str) -> Any:
                return getattr(ledger, name)

            def game(self, face: Any) -> Any:  # the game's typed commands, bound here
                return face(self)

            def bind(self, declared: Any) -> Any:
                call = ledger.bind(declared)
                if declared.stored != "cuarenta_turn":
                    return call

                def turn(match_id: str) -> Any:
                    asked.append(match_id)
                    return call(match_id)

                return turn

        clock = TurnClock(Counting(), clock=inputs.clock, games=TURN_GAMES)
        assert clock.tick() == []
        assert asked == [live.match_id] and m.match_id in clock.ended
        inputs.skip = 31
        (acted,) = clock.tick()
        assert acted.id == live.match_id
        assert clock.tick() == [] and live.match_id in clock.ended and not clock.turns
        assert asked == [live.match_id]  # its Won read: never asked again


def test_the_clock_reads_only_the_events_of_the_games_with_a_turn_time(store_url: str) -> None:
    """Issue 25: a stake, an account, a table of a game without a turn time cost the clock no
    read: the store hands it only its games' events, and with a hub it reads past the hub's
    position once it finds no more (the next read starts at the log's end)."""
    inputs = Inputs()
    with ledger_on(store_url, inputs, overrides=OVERRIDES) as (ledger, game):
        m = _dealt(game, ledger)
        read: list[Any] = []

        class Reading:
            def __getattr__(self, name: str) -> Any:
                return getattr(ledger, name)

            def read_events(self, after: int = 0, limit: int = 100,
                            topics: Any = None) -> Any:
                found = ledger.read_events(after, limit, topics)
                read.extend(found)
                return found

        class Hub:
            position = 0

        everything = ledger.read_events(0, 10_000)
        hub = Hub()
        hub.position = everything[-1].position
        clock = TurnClock(Reading(), clock=inputs.clock, hub=hub, games=TURN_GAMES)
        assert clock.tick() == [] and clock.turns[m.match_id].seat == m.to_act
        ours = {e.position for e in everything if e.topic.startswith("sabot.ledger:Cuarenta")}
        assert ours and {e.position for e in read} == ours  # (no account's, table's, request's)
        assert len(ours) < len(everything) and clock.after == hub.position
        fund(ledger, ["carla"])  # events of no game with a turn time
        read.clear()
        hub.position = ledger.read_events(0, 10_000)[-1].position
        assert clock.tick() == [] and read == [] and clock.after == hub.position
        inputs.skip = 31
        (acted,) = clock.tick()  # the clock's behaviour: unchanged
        assert acted.id == m.match_id
        hub.position = ledger.read_events(0, 10_000)[-1].position
        assert clock.tick() == [] and m.match_id in clock.ended and not clock.turns
        assert FORFEITED in {e.topic for e in read}
        assert all(e.topic.startswith("sabot.ledger:Cuarenta") for e in read)


def test_read_events_takes_topics(store_url: str) -> None:
    inputs = Inputs()
    with ledger_on(store_url, inputs, overrides=OVERRIDES) as (ledger, _):
        fund(ledger, ["ana"])
        everything = ledger.read_events(0, 10_000)
        only = ledger.read_events(0, 10_000, [RECORDED])
        assert only and only == [e for e in everything if e.topic == RECORDED]
        assert ledger.read_events(0, 10_000, RECORDED) == only  # (one text of words)
        assert ledger.read_events(only[0].position, 1, (RECORDED,)) == only[1:2]
        bads: list[Any] = [[], [1], 5]
        for bad in bads:
            with pytest.raises(InvalidArgument) as refused:
                ledger.read_events(0, 10, bad)
            assert refused.value.reason == "BAD_TOPICS"
