"""Property tests: captures against a brute-force reading of the rule, and whole matches.

Whole matches (random packs from SABOT-SHUFFLE-1, random legal plays, random options, now and
then a forfeit): every card of a hand ends captured or on the table, never twice; points only
increase; the match ends exactly when a side reaches 40; money sums to zero; the same seed and
plays give the same facts.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace
from itertools import combinations

from cuarenta_support import Run, cards, rules, seeded_pack, stacked_pack
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.cards import Card, canonical_deck
from domain.cuarenta.captures import (
    CaptureKind,
    capture_named,
    every_capture_set,
    legal_captures,
)
from domain.cuarenta.facts import (
    CardsCaptured,
    EndReason,
    Forfeited,
    HandBegun,
    HandScored,
    MatchWon,
    RondaScored,
)
from domain.cuarenta.match import LastPlay, Match, Phase, Play, forfeit, legal_plays
from domain.cuarenta.policy import choose
from domain.cuarenta.ranks import DECK, RANK_INDEX, SUM_VALUES
from domain.cuarenta.rules import GAME_POINTS, CuarentaRules
from domain.cuarenta.stakes import Role, balances, commission, pot, side_seats

DECK_CARDS = canonical_deck(DECK)

# --- captures: the rule book against the rule read literally ----------------------------------


def brute_force(table: tuple[Card, ...], card: Card) -> set[frozenset[Card]]:
    """Every subset S of the table such that S = B ∪ R: B one card of the played rank, or at
    least two A–7 cards adding up to the played A–7; R one card of each rank upward from the
    played rank, as far as the table left after B holds one."""
    out: set[frozenset[Card]] = set()
    r = RANK_INDEX[card.rank]
    for size in range(1, len(table) + 1):
        for subset in combinations(table, size):
            for bsize in range(1, size + 1):
                for base in combinations(subset, bsize):
                    same = bsize == 1 and base[0].rank == card.rank
                    summed = (
                        bsize >= 2
                        and card.rank in SUM_VALUES
                        and all(c.rank in SUM_VALUES for c in base)
                        and sum(SUM_VALUES[c.rank] for c in base) == SUM_VALUES[card.rank]
                    )
                    if not (same or summed):
                        continue
                    rest = [c for c in subset if c not in base]
                    left = [c for c in table if c not in base]
                    run, rank = [], r + 1
                    while any(RANK_INDEX[c.rank] == rank for c in left):
                        run.append(rank)
                        rank += 1
                    if sorted(RANK_INDEX[c.rank] for c in rest) == run:
                        out.add(frozenset(subset))
    return out


@settings(max_examples=300)
@given(
    cards=st.lists(st.sampled_from(DECK_CARDS), min_size=1, max_size=9, unique=True),
    last=st.integers(0, 9),
)
def test_captures_are_exactly_the_sets_the_rule_allows(cards: list[Card], last: int) -> None:
    card, table = cards[0], tuple(cards[1:])
    r = rules()
    last_played = table[last] if last < len(table) else None
    expected = brute_force(table, card)
    every = list(every_capture_set(r, table, card, last_played))
    assert {frozenset(c.taken) for c in every} == expected
    assert len(every) == len(expected)
    options = legal_captures(r, table, card, last_played)
    assert {frozenset(c.taken) for c in options} <= expected
    assert bool(options) == bool(expected)
    for subset in expected:
        named = capture_named(r, table, card, subset, last_played)
        assert named is not None and frozenset(named.taken) == subset
        caida = last_played in subset and last_played.rank == card.rank
        assert named.caida == caida
        assert named.limpia == (len(subset) == len(table))
        assert named.points == 2 * named.caida + 2 * named.limpia
    # a few sets that are not legal are refused
    for size in (1, 2):
        for few in combinations(table, size):
            if frozenset(few) not in expected:
                assert capture_named(r, table, card, few, last_played) is None


# --- whole matches ----------------------------------------------------------------------------

OPTIONS = st.fixed_dictionaries(
    {
        "players": st.sampled_from([2, 4]),
        "rule_38": st.sampled_from(["off", "no_limpia", "caida_only"]),
        "four_of_a_kind": st.sampled_from(["wins_match", "ronda"]),
        "table_at_hand_end": st.sampled_from(["nobody", "last_capturer"]),
        "must_capture": st.booleans(),
        "capture_choice": st.sampled_from(["player", "most_cards"]),
        "caida_across_deals": st.booleans(),
        "carton_rounding": st.sampled_from(["points_column", "up_to_tanto"]),
        "stake": st.integers(0, 10_001),
        "commission_rate": st.sampled_from(["0", "5%", "1/3"]),
    }
)


def random_chooser(rng: random.Random) -> object:
    def pick(m: Match) -> Play | None:
        plays = legal_plays(m)
        return rng.choice(plays) if plays else None

    return pick


def play_match(
    r: CuarentaRules, seed: int, random_plays: bool, forfeit_at: int | None
) -> Run:
    """A whole match; the invariants are checked after every command."""
    rng = random.Random(seed)
    pick = random_chooser(rng) if random_plays else choose
    run = Run(r, dealer=seed % r.players)
    packs: dict[int, tuple[Card, ...]] = {}
    commands = 0
    while run.match.phase is not Phase.OVER:
        before = run.match
        if forfeit_at is not None and commands == forfeit_at:
            seat = before.to_act if before.to_act is not None else rng.randrange(r.players)
            reason = "turn_time" if before.to_act is not None and rng.random() < 0.5 else (
                "abandoned"
            )
            run.apply(forfeit(before, seat, reason))
        elif before.phase is Phase.AWAITING_PACK:
            packs[before.hand + 1] = seeded_pack(seed, before.hand + 1)
            run.begin(packs[before.hand + 1])
        elif before.phase is Phase.AWAITING_DEAL:
            run.deal()
        else:
            p = pick(before)  # type: ignore[operator]
            assert p is not None
            run.play(p.seat, p.card.code, p.codes if p.capture else ())
        commands += 1
        check_state(before, run.match, packs)
        assert commands < 5_000
    return run


def check_state(before: Match, after: Match, packs: dict[int, tuple[Card, ...]]) -> None:
    # points only increase
    assert after.points[0] >= before.points[0] and after.points[1] >= before.points[1]
    # a match not over has no side at 40
    if after.phase is not Phase.OVER:
        assert max(after.points) < GAME_POINTS
    # during a hand every card of its pack is in exactly one place
    if after.pack:
        places = [*after.stock, *after.table, *after.won[0], *after.won[1]]
        for hand in after.hands:
            places.extend(hand)
        assert Counter(places) == Counter(packs[after.hand])
        assert len(places) == len(set(places)) == 40


def check_facts(run: Run, r: CuarentaRules) -> None:
    facts = run.facts
    won = [f for f in facts if isinstance(f, MatchWon)]
    assert len(won) == 1 and facts[-1] is won[0]  # the match ends once, with nothing after
    winner = won[0]
    totals = [0, 0]
    reached: list[int] = []
    for f in facts:
        if isinstance(f, (CardsCaptured, RondaScored)):
            assert f.points >= 0 and f.total == totals[f.side] + f.points
            totals[f.side] = f.total
        elif isinstance(f, HandScored):
            for side in (0, 1):
                assert f.totals[side] == totals[side] + f.carton[side]
            totals = list(f.totals)
            kept = 0 if f.left_to is None else len(f.left_on_table)
            assert sum(f.cards) == 40 - len(f.left_on_table) + kept  # every card, once
        if max(totals) >= GAME_POINTS:
            reached.append(facts.index(f))
    assert tuple(totals) == winner.totals == run.match.points
    if winner.reason is EndReason.POINTS:
        # the fact that brought a side to 40 is the last before MatchWon
        assert reached and reached[0] == len(facts) - 2
        assert totals[winner.side] >= GAME_POINTS
    else:
        assert max(totals) < GAME_POINTS
        if winner.reason is EndReason.FORFEIT:
            (gone,) = [f for f in facts if isinstance(f, Forfeited)]
            assert gone.side == 1 - winner.side
    # money: every movement moves money, all of it is paid out, the winners get the rest
    net = balances(run.movements)
    assert sum(net.values()) == 0
    assert net.get((Role.TABLE, None), 0) == 0
    assert net.get((Role.HOUSE, None), 0) == commission(r)
    side_net = {
        side: sum(net.get((Role.PLAYER, s), 0) for s in side_seats(r.players, side))
        for side in (0, 1)
    }
    assert side_net[winner.side] == pot(r) - commission(r) - r.stake
    assert side_net[1 - winner.side] == -r.stake


@settings(max_examples=40)
@given(options=OPTIONS, seed=st.integers(0, 2**32), random_plays=st.booleans())
def test_whole_matches_keep_the_invariants(
    options: dict[str, object], seed: int, random_plays: bool
) -> None:
    r = rules(**options)
    run = play_match(r, seed, random_plays, None)
    check_facts(run, r)
    assert sum(isinstance(f, HandBegun) for f in run.facts) >= 1


@settings(max_examples=25)
@given(options=OPTIONS, seed=st.integers(0, 2**32), at=st.integers(0, 300))
def test_forfeits_end_the_match_and_pay_the_other_side(
    options: dict[str, object], seed: int, at: int
) -> None:
    r = rules(**options)
    run = play_match(r, seed, True, at)
    check_facts(run, r)


@settings(max_examples=15)
@given(options=OPTIONS, seed=st.integers(0, 2**32), random_plays=st.booleans())
def test_the_same_seed_and_plays_give_the_same_facts(
    options: dict[str, object], seed: int, random_plays: bool
) -> None:
    r = rules(**options)
    first = play_match(r, seed, random_plays, None)
    again = play_match(r, seed, random_plays, None)
    assert first.facts == again.facts and first.movements == again.movements
    assert first.match == again.match


def test_the_policy_plays_whole_matches_for_two_and_four() -> None:
    for players in (2, 4):
        for seed in range(3):
            r = rules(players=players, stake=1000)
            run = play_match(r, seed, False, None)
            check_facts(run, r)
            assert run.match.winner in (0, 1)


def test_the_policy_prefers_the_capture_worth_most_else_the_most_cards_else_the_lowest() -> None:
    run = Run(rules())
    run.begin(stacked_pack("3S KS 2S QS 5S", "5H 7H AH KH 4H"))
    run.deal()
    m = run.match
    assert choose(m) == Play(0, cards("2S")[0], None)  # nothing to take: the lowest card
    # 2S takes 2C then 3D, 5S takes 2C + 3D, KS takes KD, 3S takes 3D: no points anywhere,
    # the most cards: 2S and 5S; the first in hand order
    p = choose(replace(m, table=cards("KD 2C 3D")))
    assert p is not None and p.card == cards("2S")[0] and p.codes == ("2C", "3D")
    # the opponent has just played KD: KS takes it by caída, worth 2
    p = choose(replace(m, table=cards("3C KD"), last_played=LastPlay(1, cards("KD")[0])))
    assert p is not None and p.card == cards("KS")[0] and p.capture is not None
    assert p.capture.kind is CaptureKind.CAIDA
