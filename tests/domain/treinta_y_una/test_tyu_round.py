"""The game as a state machine: seats and turn order, the deal, who may act, the bank's cover."""

from __future__ import annotations

import pytest
from tyu_tables import DECK, kept, play_game, rig

from domain.cards import card_from_code
from domain.errors import FailedPrecondition, InvalidArgument, NotFound, RuleViolation
from domain.treinta_y_una.facts import (
    CardDealt,
    CardDrawn,
    HandBust,
    HandShown,
    Planted,
    RoundOpened,
    ShowdownDue,
    StakePlaced,
    TurnBegan,
)
from domain.treinta_y_una.movements import MovementKind, Role
from domain.treinta_y_una.round import (
    Phase,
    Round,
    carta,
    check_shoe,
    deal,
    me_planto,
    open_round,
    place_stake,
    settle,
    stand_for_absent,
)
from domain.treinta_y_una.rules import table_rules

RULES = table_rules()
SEATS = ("ana", "bea", "carlos", "dani")  # counter-clockwise: bea sits at ana's right


def opened(banker: str = "bea", bank: int = 100_000, rules: object = RULES) -> Round:
    step = open_round(RULES, SEATS, kept(banker), bank)
    return step.round


def staked(banker: str = "bea", players: tuple[str, ...] = ("carlos", "ana")) -> Round:
    r = opened(banker)
    for p in players:
        r = place_stake(RULES, r, p, 1000).round
    return r


def test_turn_order_starts_at_the_bankers_right_and_ends_with_him() -> None:
    r = opened("bea")
    assert r.order == ("carlos", "dani", "ana", "bea")
    assert r.mano == "carlos"
    assert opened("ana").order == ("bea", "carlos", "dani", "ana")
    assert opened("dani").mano == "ana"  # the seats wrap around


def test_open_records_the_banker_and_puts_up_the_bank() -> None:
    step = open_round(RULES, SEATS, kept("bea"), 5000)
    assert step.facts == (RoundOpened(SEATS, kept("bea"), 5000, "carlos"),)
    (m,) = step.movements
    assert (m.kind, m.player, m.amount, m.source, m.destination) == (
        MovementKind.BANK_PUT_UP,
        "bea",
        5000,
        Role.PLAYER,
        Role.BANK,
    )


@pytest.mark.parametrize(
    ("seats", "banker", "bank", "field", "reason"),
    [
        (("ana",), "ana", 0, "seats", "OUT_OF_RANGE"),
        (tuple(f"p{i}" for i in range(9)), "p0", 0, "seats", "OUT_OF_RANGE"),  # max_players 8
        (("ana", "ana"), "ana", 0, "seats[1]", "DUPLICATE_SEAT"),
        (("ana", ""), "ana", 0, "seats[1]", "BAD_PLAYER"),
        (("ana", "bea"), "eva", 0, "banker", "NOT_SEATED"),
        (("ana", "bea"), "ana", -1, "bank", "BAD_AMOUNT"),
    ],
)
def test_open_refuses(
    seats: tuple[str, ...], banker: str, bank: int, field: str, reason: str
) -> None:
    with pytest.raises(InvalidArgument) as err:
        open_round(RULES, seats, kept(banker), bank)
    assert (err.value.field, err.value.reason) == (field, reason)


def test_a_stake_puts_up_the_stake_and_its_cover() -> None:
    step = place_stake(RULES, opened(), "carlos", 1000)
    assert step.facts == (StakePlaced("carlos", 1000, 2000),)
    assert [(m.kind, m.amount, m.source, m.destination) for m in step.movements] == [
        (MovementKind.STAKE, 1000, Role.PLAYER, Role.STAKES),
        (MovementKind.COVER, 1000, Role.PLAYER, Role.STAKES),
    ]


@pytest.mark.parametrize(
    ("player", "amount", "error", "field", "reason"),
    [
        ("bea", 1000, FailedPrecondition, "player", "BANKER_CANNOT_STAKE"),
        ("eva", 1000, NotFound, "player", "NOT_SEATED"),
        ("carlos", 99, InvalidArgument, "amount", "BELOW_MINIMUM"),
        ("carlos", 100_001, InvalidArgument, "amount", "ABOVE_MAXIMUM"),
        ("carlos", 10.5, InvalidArgument, "amount", "NOT_A_WHOLE_AMOUNT"),
        ("carlos", True, InvalidArgument, "amount", "NOT_A_WHOLE_AMOUNT"),
    ],
)
def test_stakes_refused(
    player: str, amount: int, error: type[RuleViolation], field: str, reason: str
) -> None:
    with pytest.raises(error) as err:
        place_stake(RULES, opened(), player, amount)
    assert (err.value.field, err.value.reason) == (field, reason)


def test_one_stake_a_game() -> None:
    r = place_stake(RULES, opened(), "carlos", 1000).round
    with pytest.raises(FailedPrecondition) as err:
        place_stake(RULES, r, "carlos", 500)
    assert (err.value.field, err.value.reason) == ("player", "ALREADY_STAKED")


def test_the_bank_covers_what_it_accepts_at_the_worst_case() -> None:
    r = opened(bank=4000)  # worst case: twice each stake
    r = place_stake(RULES, r, "carlos", 1000).round
    r = place_stake(RULES, r, "dani", 1000).round
    with pytest.raises(FailedPrecondition) as err:
        place_stake(RULES, r, "ana", 100)
    assert (err.value.field, err.value.reason) == ("amount", "BANK_CANNOT_COVER")
    assert "covers 0 more" in err.value.message
    assert len(r.stakes) == 2


def test_the_bank_covers_even_money_under_that_option() -> None:
    rules = table_rules(overrides={"bank_cover": "even_money"})
    r = open_round(rules, SEATS, kept("bea"), 3000).round
    for p in ("carlos", "dani", "ana"):
        r = place_stake(rules, r, p, 1000).round
    r2 = open_round(rules, SEATS, kept("bea"), 2999).round
    r2 = place_stake(rules, r2, "carlos", 2000).round
    with pytest.raises(FailedPrecondition) as err:
        place_stake(rules, r2, "dani", 1000)
    assert "covers 999 more" in err.value.message


def test_the_deal_three_cards_each_right_to_left_face_down() -> None:
    r = staked("bea", ("ana", "carlos"))  # dani stakes nothing: he is not dealt
    shoe = DECK
    step = deal(RULES, r, shoe)
    after = step.round
    assert [h.player for h in after.hands] == ["carlos", "ana", "bea"]  # turn order
    assert [h.positions for h in after.hands] == [(0, 3, 6), (1, 4, 7), (2, 5, 8)]
    assert after.hand_of("ana").cards == (shoe[1], shoe[4], shoe[7])
    dealt = [f for f in step.facts if isinstance(f, CardDealt)]
    assert [(f.player, f.position) for f in dealt] == [
        ("carlos", 0),
        ("ana", 1),
        ("bea", 2),
        ("carlos", 3),
        ("ana", 4),
        ("bea", 5),
        ("carlos", 6),
        ("ana", 7),
        ("bea", 8),
    ]
    assert step.facts[-1] == TurnBegan("carlos")
    assert after.phase is Phase.PLAYING and after.whose_turn == "carlos"
    assert after.next_position == 9


def test_no_deal_without_a_stake_or_with_a_bad_shoe() -> None:
    with pytest.raises(FailedPrecondition) as err:
        deal(RULES, opened(), DECK)
    assert (err.value.field, err.value.reason) == ("stakes", "NO_STAKES")
    r = staked()
    for shoe, reason in [
        (DECK[:39], "BAD_SHOE"),
        ((*DECK[:39], DECK[0]), "BAD_SHOE"),
        ((*DECK[:39], card_from_code("AS")), "NOT_SPANISH"),
    ]:
        with pytest.raises(InvalidArgument) as bad:
            deal(RULES, r, shoe)
        assert (bad.value.field, bad.value.reason) == ("shoe", reason)
    assert check_shoe(DECK) == DECK


def test_only_the_player_whose_turn_it_is_may_act() -> None:
    r = deal(RULES, staked(), DECK).round
    assert r.whose_turn == "carlos"
    for command in (carta, me_planto):
        for other in ("ana", "bea"):
            with pytest.raises(FailedPrecondition) as err:
                command(RULES, r, other)
            assert (err.value.field, err.value.reason) == ("player", "NOT_YOUR_TURN")
            assert "it is carlos's turn" in err.value.message
        with pytest.raises(FailedPrecondition) as err:
            command(RULES, r, "dani")  # seated, no stake
        assert (err.value.field, err.value.reason) == ("player", "NOT_IN_GAME")
        with pytest.raises(NotFound) as missing:
            command(RULES, r, "eva")
        assert missing.value.field == "player"
    r = me_planto(RULES, r, "carlos").round
    assert r.whose_turn == "ana"
    with pytest.raises(FailedPrecondition):
        carta(RULES, r, "carlos")  # his turn has passed


def test_commands_out_of_phase() -> None:
    r = staked()
    with pytest.raises(FailedPrecondition) as err:
        carta(RULES, r, "carlos")
    assert (err.value.field, err.value.reason) == ("phase", "WRONG_PHASE")
    with pytest.raises(FailedPrecondition):
        settle(RULES, r)
    dealt = deal(RULES, r, DECK).round
    for attempt in (
        lambda: place_stake(RULES, dealt, "dani", 1000),
        lambda: deal(RULES, dealt, DECK),
        lambda: settle(RULES, dealt),
    ):
        with pytest.raises(FailedPrecondition) as err:
            attempt()
        assert err.value.field == "phase"


def test_carta_is_face_up_and_the_banker_plays_last() -> None:
    shoe = rig(["2O 3O 4O", "5C 6C 7C", "10E 2E 3E"], "7B 6B 1B")
    r = deal(RULES, staked(), shoe).round  # carlos, ana, bea (banker)
    step = carta(RULES, r, "carlos")
    (drawn,) = step.facts
    assert isinstance(drawn, CardDrawn) and drawn.position == 9 and drawn.card.code == "7B"
    r = step.round
    assert r.hand_of("carlos").face_up == (drawn.card,)
    assert r.whose_turn == "carlos"  # he may ask again
    r = me_planto(RULES, r, "carlos").round
    r = me_planto(RULES, r, "ana").round
    assert r.whose_turn == "bea"
    step = me_planto(RULES, r, "bea")
    assert step.facts == (Planted("bea"), ShowdownDue())
    assert step.round.phase is Phase.SHOWDOWN and step.round.whose_turn is None


def test_stand_for_absent_only_for_the_player_whose_turn_it_is_after_the_turn_time() -> None:
    r = deal(RULES, staked(), DECK).round
    with pytest.raises(FailedPrecondition) as err:
        stand_for_absent(RULES, r, "ana", 600)
    assert (err.value.field, err.value.reason) == ("player", "NOT_YOUR_TURN")
    with pytest.raises(FailedPrecondition) as err:
        stand_for_absent(RULES, r, "carlos", 59)
    assert (err.value.field, err.value.reason) == ("waited_seconds", "TURN_TIME_NOT_UP")
    assert "1 s of his 60 s" in err.value.message
    with pytest.raises(InvalidArgument) as bad:
        stand_for_absent(RULES, r, "carlos", -1)
    assert bad.value.field == "waited_seconds"
    step = stand_for_absent(RULES, r, "carlos", 60)
    assert step.facts == (Planted("carlos", for_absent=True), TurnBegan("ana"))
    # the banker too, when it is his turn
    r = me_planto(RULES, step.round, "ana").round
    step = stand_for_absent(RULES, r, "bea", 61)
    assert step.facts == (Planted("bea", for_absent=True), ShowdownDue())
    none = table_rules(overrides={"turn_seconds": "0"})
    with pytest.raises(FailedPrecondition) as err:
        stand_for_absent(none, deal(none, staked(), DECK).round, "carlos", 10_000)
    assert (err.value.field, err.value.reason) == ("turn_seconds", "NO_TURN_TIME")


def test_a_hand_over_31_loses_at_once_and_is_shown() -> None:
    shoe = rig(["10O 11O 5O", "5C 6C 7C", "10E 2E 3E"], "7B 6B")
    r = deal(RULES, staked(), shoe).round
    step = carta(RULES, r, "carlos")  # 25 + 7 = 32
    bust = next(f for f in step.facts if isinstance(f, HandBust))
    assert bust.player == "carlos" and bust.total == 32
    assert [c.code for c in bust.cards] == ["10O", "11O", "5O", "7B"]
    assert step.facts[-1] == TurnBegan("ana")
    assert [(m.kind, m.amount) for m in step.movements] == [(MovementKind.COLLECTION, 1000)]
    assert step.round.bank == 100_000 + 1000
    assert step.round.hand_of("carlos").out


def test_over_31_at_showdown_says_nothing_and_keeps_the_turn() -> None:
    rules = table_rules(overrides={"bust": "at_showdown"})
    r = open_round(rules, SEATS, kept("bea"), 100_000).round
    r = place_stake(rules, r, "carlos", 1000).round
    shoe = rig(["10O 11O 5O", "10E 2E 3E"], "7B")
    step = carta(rules, deal(rules, r, shoe).round, "carlos")
    assert [type(f) for f in step.facts] == [CardDrawn]  # nobody learns it is over 31
    assert step.movements == () and step.round.whose_turn == "carlos"


def test_the_shoe_can_run_out() -> None:
    rules = table_rules(overrides={"bust": "at_showdown"})
    r = open_round(rules, SEATS, kept("bea"), 100_000).round
    r = place_stake(rules, r, "carlos", 1000).round
    r = deal(rules, r, DECK).round
    for _ in range(40 - 6):
        r = carta(rules, r, "carlos").round
    with pytest.raises(FailedPrecondition) as err:
        carta(rules, r, "carlos")
    assert (err.value.field, err.value.reason) == ("shoe", "SHOE_EXHAUSTED")
    assert me_planto(rules, r, "carlos").round.whose_turn == "bea"


def test_no_fact_names_a_face_down_card_before_its_hand_is_shown() -> None:
    shoe = rig(["10O 11O 5O", "5C 6C 7C", "10E 2E 3E"], "7B 6B")
    played = play_game(
        RULES,
        SEATS,
        "bea",
        100_000,
        {"carlos": 1000, "ana": 1000},
        shoe,
        {"carlos": ["carta"], "ana": ["carta"]},
        settle_it=False,
    )
    face_down = {c for h in played.round.hands for c in h.face_down}
    shown = {c for f in played.of(HandBust) for c in f.cards}  # type: ignore[attr-defined]
    for fact in played.facts:
        values = [getattr(fact, name) for name in fact.__slots__]
        named = {v for v in values if v in face_down} | {
            c for v in values if isinstance(v, tuple) for c in v if c in face_down
        }
        if isinstance(fact, HandBust):
            continue  # shown: it went over 31
        assert not named, fact
    assert shown & face_down == set(played.round.hand_of("carlos").face_down)
    settled = settle(RULES, played.round)
    revealed = {c for f in settled.facts if isinstance(f, HandShown) for c in f.cards}
    assert face_down - shown <= revealed  # at the showdown, every other face-down card


def test_a_game_called_off_before_the_deal_gives_everything_back() -> None:
    from domain.treinta_y_una.facts import RoundCancelled, StakeReturned
    from domain.treinta_y_una.round import cancel_round

    r = staked()
    step = cancel_round(RULES, r)
    assert step.facts == (
        StakeReturned("carlos", 2000),
        StakeReturned("ana", 2000),
        RoundCancelled(kept("bea")),
    )
    assert [(m.kind, m.player, m.amount) for m in step.movements] == [
        (MovementKind.RETURN, "carlos", 2000),
        (MovementKind.RETURN, "ana", 2000),
        (MovementKind.BANK_RETURNED, "bea", 100_000),
    ]
    assert step.round.phase is Phase.SETTLED and step.round.next_banker == kept("bea")
    with pytest.raises(FailedPrecondition):
        cancel_round(RULES, deal(RULES, staked(), DECK).round)
