"""The match as a state machine: phases, turns, the commands' facts, and every refusal."""

from __future__ import annotations

from dataclasses import replace

import pytest
from cuarenta_support import Run, cards, rules, stacked_pack

from domain.cards import Card, DeckKind, canonical_deck, card_from_code
from domain.cuarenta.captures import CaptureKind
from domain.cuarenta.facts import (
    CardPlayed,
    CardsCaptured,
    Dealt,
    EndReason,
    Forfeited,
    ForfeitReason,
    FourOfAKindDealt,
    HandBegun,
    HandScored,
    MatchOpened,
    MatchWon,
    RondaScored,
)
from domain.cuarenta.match import (
    LastPlay,
    Match,
    Phase,
    begin_hand,
    deal,
    forfeit,
    legal_plays,
    open_match,
    play,
    turn_expired,
    view,
)
from domain.cuarenta.ranks import DECK
from domain.cuarenta.stakes import MovementKind
from domain.errors import FailedPrecondition, InvalidArgument, RuleViolation
from domain.shuffle import order_digest

PACK = stacked_pack("2S 3S KS QS JS", "5H 7H AH KH 4H")


def dealt(pack: tuple[Card, ...] = PACK, **options: object) -> Run:
    run = Run(rules(**options))
    run.begin(pack)
    run.deal()
    return run


def refused(error: type[RuleViolation], field: str, reason: str, call: object) -> None:
    assert callable(call)
    with pytest.raises(error) as err:
        call()
    assert (err.value.field, err.value.reason) == (field, reason)


# --- opening, hands and deals -----------------------------------------------------------------


def test_open_match_holds_the_stakes_and_awaits_a_pack() -> None:
    step = open_match(rules(stake=500))
    m = step.match
    assert m.phase is Phase.AWAITING_PACK and m.points == (0, 0) and m.table == ()
    assert m.dealer == 1 and m.first == 0  # by default the last seat deals, seat 0 leads
    (opened,) = step.facts
    assert isinstance(opened, MatchOpened) and opened.players == 2
    assert opened.options == m.rules.options()
    assert [(x.kind, x.seat, x.amount) for x in step.movements] == [
        (MovementKind.STAKE, 0, 500),
        (MovementKind.STAKE, 1, 500),
    ]


def test_a_dealer_out_of_range() -> None:
    refused(InvalidArgument, "dealer", "UNKNOWN_SEAT", lambda: open_match(rules(), 2))


def test_begin_hand_commits_the_pack_and_the_table_starts_empty() -> None:
    m = open_match(rules()).match
    step = begin_hand(m, PACK)
    (begun,) = step.facts
    assert begun == HandBegun(1, 1, 0, order_digest(PACK))
    assert step.match.phase is Phase.AWAITING_DEAL and step.match.table == ()
    assert step.match.stock == PACK


EIGHT = card_from_code("8S", DeckKind.FRENCH_52)


@pytest.mark.parametrize(
    "pack",
    [
        PACK[:-1],  # 39 cards
        (*PACK[:-1], PACK[0]),  # a card twice
        (*PACK[:-1], EIGHT),  # a card not in the Cuarenta pack
        (*PACK, EIGHT),  # 41 cards
    ],
)
def test_a_pack_that_is_not_one_french_40_deck(pack: tuple[Card, ...]) -> None:
    m = open_match(rules()).match
    refused(InvalidArgument, "pack", "NOT_A_PACK", lambda: begin_hand(m, pack))


def test_deal_gives_five_to_each_from_the_seat_after_the_dealer() -> None:
    run = Run(rules())
    run.begin(PACK)
    step = run.deal()
    assert step.facts == (
        Dealt(1, 1, 0, cards("2S 3S KS QS JS")),
        Dealt(1, 1, 1, cards("5H 7H AH KH 4H")),
    )
    m = run.match
    assert m.phase is Phase.PLAYING and m.to_act == 0 and m.deals == 1
    assert len(m.stock) == 30


def test_four_players_deal_twice_in_seat_order_partners_opposite() -> None:
    run = Run(rules(players=4), dealer=2)
    run.begin(PACK)
    step = run.deal()
    assert [f.seat for f in step.facts if isinstance(f, Dealt)] == [3, 0, 1, 2]
    assert run.match.to_act == 3 and run.match.rules.deals_per_hand == 2
    assert len(run.match.stock) == 20


def test_two_players_play_in_turn_over_four_deals() -> None:
    run = dealt()
    seats = []
    while run.match.phase is not Phase.AWAITING_PACK:
        if run.match.phase is Phase.AWAITING_DEAL:
            run.deal()
            continue
        p = legal_plays(run.match)[-1]
        seats.append(p.seat)
        run.play(p.seat, p.card.code, p.codes)
    assert seats == [0, 1] * 20  # 40 plays: each deal ten, seat 0 first, the dealer last
    assert sum(isinstance(f, Dealt) for f in run.facts) == 8
    assert sum(isinstance(f, HandScored) for f in run.facts) == 1
    assert run.match.dealer == 0 and run.match.first == 1  # the deal passes to the next seat


# --- refusals ---------------------------------------------------------------------------------


def test_plays_out_of_turn_of_a_card_not_held_or_unknown() -> None:
    m = dealt().match
    refused(FailedPrecondition, "seat", "OUT_OF_TURN", lambda: play(m, 1, "5H"))
    refused(FailedPrecondition, "card", "CARD_NOT_HELD", lambda: play(m, 0, "5H"))
    refused(InvalidArgument, "card", "UNKNOWN_CARD", lambda: play(m, 0, "8S"))
    refused(InvalidArgument, "seat", "UNKNOWN_SEAT", lambda: play(m, 2, "2S"))
    assert m == dealt().match  # nothing changed


def test_commands_in_the_wrong_phase() -> None:
    opened = open_match(rules()).match
    refused(FailedPrecondition, "match", "WRONG_PHASE", lambda: deal(opened))
    refused(FailedPrecondition, "match", "WRONG_PHASE", lambda: play(opened, 0, "2S"))
    playing = dealt().match
    refused(FailedPrecondition, "match", "WRONG_PHASE", lambda: deal(playing))
    refused(FailedPrecondition, "match", "WRONG_PHASE", lambda: begin_hand(playing, PACK))


def on_table(m: Match, table: str, last: tuple[int, str] | None = None, **changes: object) -> Match:
    """The match with that table (and who played its last card), for single-play tests."""
    lp = LastPlay(last[0], cards(last[1])[0]) if last else None
    return replace(m, table=cards(table), last_played=lp, **changes)  # type: ignore[arg-type]


def test_an_illegal_capture_set_is_refused_naming_the_rule() -> None:
    m = on_table(dealt().match, "2C 3D 6C", to_act=1)
    # 5H can take 2C 3D (2 + 3 = 5), then 6C: only that set
    refused(FailedPrecondition, "capture", "ILLEGAL_CAPTURE", lambda: play(m, 1, "5H", ["2C"]))
    refused(
        FailedPrecondition, "capture", "ILLEGAL_CAPTURE", lambda: play(m, 1, "5H", ["2C", "3D"])
    )
    refused(FailedPrecondition, "capture", "NOT_ON_TABLE", lambda: play(m, 1, "5H", ["KC"]))
    refused(InvalidArgument, "capture[0]", "UNKNOWN_CARD", lambda: play(m, 1, "5H", ["9C"]))
    refused(InvalidArgument, "capture", "DUPLICATE_CARD", lambda: play(m, 1, "5H", "2C 2C"))
    step = play(m, 1, "5H", "6C 3D 2C")  # any order
    captured = step.facts[1]
    assert isinstance(captured, CardsCaptured)
    assert [c.code for c in captured.taken] == ["2C", "3D", "6C"]
    assert captured.kind is CaptureKind.LIMPIA and captured.points == 2 and captured.total == 2


def test_no_capture_named_takes_the_only_set_and_a_choice_must_be_named() -> None:
    m = on_table(dealt().match, "2C 3D 6C", to_act=1)
    step = play(m, 1, "5H")  # one legal set: taken
    assert isinstance(step.facts[1], CardsCaptured)
    choice = on_table(dealt().match, "AC 3D 4D", to_act=1)  # 4H takes A+3 or the 4
    refused(
        FailedPrecondition, "capture", "CAPTURE_CHOICE_REQUIRED", lambda: play(choice, 1, "4H")
    )
    step = play(choice, 1, "4H", ["4D"])
    assert [c.code for c in step.match.table] == ["AC", "3D"]


def test_leaving_a_card_that_could_capture_and_must_capture() -> None:
    m = on_table(dealt().match, "2C 3D", to_act=1)
    step = play(m, 1, "5H", [])
    assert step.facts == (CardPlayed(1, 1, 1, 1, cards("5H")[0], False),)
    assert [c.code for c in step.match.table] == ["2C", "3D", "5H"]
    strict = on_table(dealt(must_capture=True).match, "2C 3D", to_act=1)
    refused(FailedPrecondition, "capture", "MUST_CAPTURE", lambda: play(strict, 1, "5H", []))
    assert play(strict, 1, "7H", []).match.table[-1] == cards("7H")[0]  # 7 takes nothing here


# --- caída, limpia and the end of the match ---------------------------------------------------


def test_caida_and_limpia_through_plays() -> None:
    run = dealt(pack=stacked_pack("5S 3S KS QS JS", "5H 7H AH KH 4H"))
    run.play(0, "5S", [])
    step = run.play(1, "5H", ["5S"])
    captured = step.facts[1]
    assert isinstance(captured, CardsCaptured)
    assert captured.kind is CaptureKind.CAIDA_LIMPIA and captured.points == 4
    assert run.match.points == (0, 4) and run.match.table == ()
    assert run.match.won == ((), cards("5H 5S"))
    run.play(0, "KS", [])
    step = run.play(1, "KH", None)  # the only set: a caída and limpia again
    assert step.facts[-1].kind is CaptureKind.CAIDA_LIMPIA  # type: ignore[union-attr]


def test_a_caida_takes_the_opponent_s_card_not_the_partner_s() -> None:
    # four players: seat 0 played 5S, seat 1 then KH; seat 2 (seat 0's partner) takes 5S
    m = on_table(
        dealt(players=4).match,
        "5S KH",
        last=(1, "KH"),
        to_act=2,
        hands=(cards("AS"), cards("AH"), cards("5D"), cards("AD")),
    )
    step = play(m, 2, "5D", ["5S"])
    assert step.facts[-1].kind is CaptureKind.CAPTURE  # type: ignore[union-attr]
    m = on_table(m, "KH 5S", last=(1, "5S"))  # had the opponent (seat 1) just played the 5
    assert play(m, 2, "5D", ["5S"]).facts[-1].kind is CaptureKind.CAIDA  # type: ignore[union-attr]


def test_a_capture_reaching_40_ends_the_match_at_once() -> None:
    m = on_table(dealt(stake=100).match, "5H KS", last=(1, "5H"), points=(38, 12))
    m = replace(m, hands=(cards("5S 3S KD QS JS"), m.hands[1]))
    step = play(m, 0, "5S", ["5H"])  # a caída (KS stays): 38 + 2
    kinds = [type(f) for f in step.facts]
    assert kinds == [CardPlayed, CardsCaptured, MatchWon]
    assert step.facts[-1] == MatchWon(0, EndReason.POINTS, (40, 12))
    over = step.match
    assert over.phase is Phase.OVER and over.winner == 0 and over.to_act is None
    assert over.hands[0] == cards("3S KD QS JS")  # mid-deal: the rest is never played
    assert [(x.kind, x.seat, x.amount) for x in step.movements] == [(MovementKind.PAYOUT, 0, 200)]
    refused(FailedPrecondition, "match", "MATCH_OVER", lambda: play(over, 1, "7H"))
    refused(FailedPrecondition, "match", "MATCH_OVER", lambda: forfeit(over, 1, "abandoned"))


def test_at_38_a_limpia_does_not_go_out_but_a_caida_does() -> None:
    m = replace(on_table(dealt().match, "2C 3D", points=(38, 0)), hands=(cards("5S"), ()))
    step = play(m, 0, "5S", None)
    captured = step.facts[1]
    assert isinstance(captured, CardsCaptured) and captured.kind is CaptureKind.LIMPIA
    assert (captured.points, captured.withheld, captured.total) == (0, 2, 38)
    assert step.match.phase is not Phase.OVER
    m = replace(on_table(m, "5H", last=(1, "5H")), hands=(cards("5S"), ()))
    step = play(m, 0, "5S", None)  # a caída that clears the table: the caída's 2 count
    assert step.facts[1].kind is CaptureKind.CAIDA_LIMPIA  # type: ignore[union-attr]
    assert step.facts[-1] == MatchWon(0, EndReason.POINTS, (40, 0))


# --- ronda and four of a kind -----------------------------------------------------------------

RONDA = stacked_pack("5S 5H 5D KC 2S", "AH 2H 3H 4H 6H")
FOUR = stacked_pack("AH 2H 3H 4H 6H", "QS QH QD QC 2S")


def test_a_ronda_scores_at_the_deal() -> None:
    run = Run(rules())
    run.begin(RONDA)
    step = run.deal()
    assert step.facts[2:] == (RondaScored(1, 1, 0, 0, 2, 0, 2),)  # no rank said
    assert run.match.points == (2, 0) and run.match.phase is Phase.PLAYING


def test_four_of_a_kind_dealt_wins_the_match() -> None:
    run = Run(rules(stake=50))
    run.begin(FOUR)
    step = run.deal()
    assert step.facts[2:] == (
        FourOfAKindDealt(1, 1, 1, 1, "Q"),
        MatchWon(1, EndReason.FOUR_OF_A_KIND, (0, 0)),
    )
    assert run.match.phase is Phase.OVER
    assert [(x.kind, x.seat, x.amount) for x in step.movements] == [(MovementKind.PAYOUT, 1, 100)]


def test_four_of_a_kind_as_a_ronda() -> None:
    run = Run(rules(four_of_a_kind="ronda"))
    run.begin(FOUR)
    assert run.deal().facts[2:] == (RondaScored(1, 1, 1, 1, 2, 0, 2),)


def test_a_ronda_reaching_40_ends_the_match_and_the_38_rule_can_withhold_it() -> None:
    m = replace(begin_hand(open_match(rules()).match, RONDA).match, points=(38, 0))
    step = deal(m)
    assert step.facts[-1] == MatchWon(0, EndReason.POINTS, (40, 0))
    strict = replace(
        begin_hand(open_match(rules(rule_38="caida_only")).match, RONDA).match, points=(38, 0)
    )
    step = deal(strict)
    assert step.facts[2:] == (RondaScored(1, 1, 0, 0, 0, 2, 38),)
    assert step.match.phase is Phase.PLAYING


# --- a caída across a deal --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("across", "kind"), [(True, CaptureKind.CAIDA), (False, CaptureKind.CAPTURE)]
)
def test_the_last_card_of_a_deal_and_the_first_play_of_the_next(
    across: bool, kind: CaptureKind
) -> None:
    pack = stacked_pack("AS 2S 3S 4S 5S", "AH 2H 3H 4H 7H", "7S KS QS JS 6S")
    run = Run(rules(caida_across_deals=across))
    run.begin(pack)
    run.deal()
    run.match = replace(
        run.match, hands=((), cards("7H")), table=cards("KD"), to_act=1, turn=9
    )
    step = run.play(1, "7H", [])  # the dealer's last card of deal 1 stays on the table
    assert run.match.phase is Phase.AWAITING_DEAL and step.facts[0].turn == 10  # type: ignore[union-attr]
    run.deal()
    step = run.play(0, "7S", ["7H"])
    assert step.facts[-1].kind is kind  # type: ignore[union-attr]


# --- the end of a hand ------------------------------------------------------------------------


def last_play(
    won: tuple[int, int], table: str, points: tuple[int, int] = (0, 0), **options: object
) -> Match:
    """The hand's last play awaits: seat 1 (the dealer) holds KH; the sides have won that many
    cards (any cards: only the counts matter to the cartón)."""
    deck = [c for c in canonical_deck(DECK) if c.code not in {"KH", *table.split()}]
    m = dealt(PACK, **options).match
    return replace(
        m,
        deals=m.rules.deals_per_hand,
        hands=((), cards("KH")),
        table=cards(table),
        won=(tuple(deck[: won[0]]), tuple(deck[won[0] : won[0] + won[1]])),
        to_act=1,
        points=points,
        last_capturer=0,
    )


def test_the_hand_ends_with_the_carton_and_the_cards_left_count_for_nobody() -> None:
    step = play(last_play((22, 16), "QS"), 1, "KH", [])
    scored = step.facts[-1]
    assert scored == HandScored(1, (22, 16), (8, 0), (0, 0), cards("QS KH"), None, (8, 0))
    m = step.match
    assert m.phase is Phase.AWAITING_PACK and m.points == (8, 0)
    assert m.dealer == 0 and m.table == () and m.won == ((), ())
    nxt = begin_hand(m, PACK)
    assert nxt.facts[0] == HandBegun(2, 0, 1, order_digest(PACK))


def test_cards_left_to_the_last_capturer() -> None:
    step = play(last_play((21, 17), "QS", table_at_hand_end="last_capturer"), 1, "KH", [])
    scored = step.facts[-1]
    assert isinstance(scored, HandScored)
    assert scored.cards == (23, 17) and scored.carton == (9, 0) and scored.left_to == 0


def test_the_carton_of_both_sides_and_a_tie_at_40_goes_to_the_side_not_dealing() -> None:
    step = play(last_play((20, 18), "QS", points=(36, 36)), 1, "KH", [])  # 20, 18, 2 left
    assert step.facts[-1] == MatchWon(0, EndReason.POINTS, (42, 36))
    # 20 cards each: seat 1's last card takes the table's last (a limpia: 34), then both
    # cartóns (6 each) bring both sides to 40; side 0 does not deal, counts first and wins
    m = last_play((20, 18), "KS", points=(34, 32))
    step = play(m, 1, "KH", None)
    captured, scored, won = step.facts[-3:]
    assert isinstance(captured, CardsCaptured) and captured.kind is CaptureKind.LIMPIA
    assert captured.total == 34
    assert isinstance(scored, HandScored)
    assert (scored.cards, scored.carton, scored.totals) == ((20, 20), (6, 6), (40, 40))
    assert won == MatchWon(0, EndReason.POINTS, (40, 40))
    # the same with seat 0 dealing: side 1 counts first
    m = replace(
        m, dealer=0, won=(m.won[1], m.won[0]), points=(32, 34), hands=(cards("KH"), ()), to_act=0
    )
    assert play(m, 0, "KH", None).facts[-1] == MatchWon(1, EndReason.POINTS, (40, 40))


def test_the_carton_at_38_under_caida_only() -> None:
    step = play(last_play((30, 8), "QS", points=(38, 0), rule_38="caida_only"), 1, "KH", [])
    scored = step.facts[-1]
    assert isinstance(scored, HandScored)
    assert scored.carton == (0, 0) and scored.withheld == (16, 0) and scored.totals == (38, 0)


# --- forfeits ---------------------------------------------------------------------------------


def test_abandoning_forfeits_at_any_phase() -> None:
    step = forfeit(open_match(rules(stake=10, commission_rate="10%")).match, 1, "abandoned")
    assert step.facts == (
        Forfeited(1, 1, ForfeitReason.ABANDONED),
        MatchWon(0, EndReason.FORFEIT, (0, 0)),
    )
    assert [(x.kind, x.seat, x.amount) for x in step.movements] == [
        (MovementKind.COMMISSION, None, 2),
        (MovementKind.PAYOUT, 0, 18),
    ]


def test_turn_time_only_for_the_seat_whose_turn_it_is() -> None:
    m = dealt().match
    refused(FailedPrecondition, "seat", "NOT_ON_TURN", lambda: forfeit(m, 1, "turn_time"))
    refused(InvalidArgument, "reason", "UNKNOWN_REASON", lambda: forfeit(m, 0, "bored"))
    step = forfeit(m, 0, ForfeitReason.TURN_TIME)
    assert step.facts[-1] == MatchWon(1, EndReason.FORFEIT, (0, 0))
    assert not turn_expired(m.rules, 59.9) and turn_expired(m.rules, 60)
    refused(
        FailedPrecondition,
        "seat",
        "NOT_ON_TURN",
        lambda: forfeit(open_match(rules()).match, 0, "turn_time"),
    )


def test_a_team_forfeits_and_the_other_team_is_paid() -> None:
    step = forfeit(open_match(rules(players=4, stake=100)).match, 2, "abandoned")
    assert step.facts[0] == Forfeited(2, 0, ForfeitReason.ABANDONED)
    assert [(x.seat, x.amount) for x in step.movements] == [(1, 100), (3, 100)]


def test_a_seat_sees_its_own_cards_and_of_the_others_only_how_many() -> None:
    m = play(dealt().match, 0, "2S", []).match
    mine = view(m, 1)
    assert mine.own == cards("5H 7H AH KH 4H") and mine.held == (4, 5)
    assert mine.table == cards("2S") and mine.stock == 30 and mine.to_act == 1
    watcher = view(m)
    assert watcher.own == () and watcher.held == (4, 5)
    codes = {c.code for c in m.pack} - {"2S", "5H", "7H", "AH", "KH", "4H"}
    assert not codes & {c.code for c in mine.own + mine.table}  # nobody else's cards, no pack
    refused(InvalidArgument, "seat", "UNKNOWN_SEAT", lambda: view(m, 5))
