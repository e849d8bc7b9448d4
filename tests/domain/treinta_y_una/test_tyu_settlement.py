"""The showdown, hand by hand: even money, the tie rule, reals, over 31, the commission, the
bank's cover, stakes carried over. Seats ana, bea, carlos, dani; bea holds the bank, so the
turn order is carlos, dani, ana, bea."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

from tyu_tables import account_balances, play_game, player_net, rig

from domain.treinta_y_una.banker import BankerReason
from domain.treinta_y_una.facts import (
    CarriedStakeReturned,
    HandBust,
    HandShown,
    Outcome,
    ReturnReason,
    RoundSettled,
    ShowdownDue,
    StakeCarried,
    StakeSettled,
)
from domain.treinta_y_una.movements import MovementKind, Role
from domain.treinta_y_una.round import Phase, settle
from domain.treinta_y_una.rules import table_rules, with_options
from domain.treinta_y_una.stakes import Stake

RULES = table_rules()
VOID = table_rules("empate_nulo")
SEATS = ("ana", "bea", "carlos", "dani")
BANK = 100_000


def game(rules, hands, draws="", words=None, stakes=None, bank=BANK, carried=()):  # type: ignore[no-untyped-def]
    stakes = stakes or {"carlos": 1000}
    return play_game(rules, SEATS, "bea", bank, stakes, rig(hands, draws), words, carried)


def settled(played) -> dict[str, StakeSettled]:  # type: ignore[no-untyped-def]
    return {f.player: f for f in played.of(StakeSettled)}


def kinds(played, step: int = -1) -> list[tuple[str, str, int]]:  # type: ignore[no-untyped-def]
    return [(m.kind.value, m.player, m.amount) for m in played.steps[step].movements]


def test_more_than_the_banker_wins_even_money() -> None:
    played = game(RULES, ["10O 10C 7O", "10E 10B 5E"])  # carlos 27, banker 25
    assert settled(played)["carlos"] == StakeSettled("carlos", Outcome.WON, 1000, 1, 1000)
    assert kinds(played) == [
        ("return", "carlos", 2000),
        ("payment", "carlos", 1000),
        ("bank_returned", "bea", 99_000),
    ]
    assert player_net(played.movements) == {"carlos": 1000, "bea": -1000}


def test_less_than_the_banker_loses() -> None:
    played = game(RULES, ["10O 2C 1C", "10E 10B 5E"])  # carlos 23 (the ace at 11), banker 25
    assert settled(played)["carlos"].outcome is Outcome.LOST
    assert kinds(played) == [
        ("collection", "carlos", 1000),
        ("return", "carlos", 1000),
        ("bank_returned", "bea", 101_000),
    ]


def test_a_tie_goes_to_the_banker_by_default() -> None:
    played = game(RULES, ["10O 10C 5O", "10E 10B 5E"])  # 25 each
    assert settled(played)["carlos"].outcome is Outcome.LOST
    assert player_net(played.movements) == {"carlos": -1000, "bea": 1000}


def test_a_tie_is_void_and_the_stake_stays_for_the_next_game() -> None:
    first = game(VOID, ["10O 10C 5O", "10E 10B 5E"])
    assert settled(first)["carlos"] == StakeSettled("carlos", Outcome.VOID, 1000, 0, 0)
    assert kinds(first) == [("bank_returned", "bea", BANK)]
    end = first.round
    assert end.carried == (Stake("carlos", 1000, 2000),)
    assert first.of(RoundSettled)[-1] == RoundSettled(end.next_banker, (("carlos", 1000),))
    # the next game: the stake is there already, no new stake movement; carlos wins it
    second = play_game(
        VOID,
        SEATS,
        end.next_banker,
        BANK,
        {},
        rig(["10O 10C 7O", "10E 10B 5E"]),
        carried=end.carried,
    )
    assert second.steps[0].facts[1] == StakeCarried("carlos", 1000)
    assert [m.kind for m in second.steps[0].movements] == [MovementKind.BANK_PUT_UP]
    assert settled(second)["carlos"].outcome is Outcome.WON
    both = first.movements + second.movements
    assert player_net(both) == {"carlos": 1000, "bea": -1000}
    assert account_balances(both) == Counter()  # the table's accounts empty, no commission


def test_a_carried_stake_goes_back_if_its_player_left_or_the_bank_cannot_cover_it() -> None:
    carried = (Stake("carlos", 1000, 2000), Stake("eva", 500, 1000), Stake("bea", 700, 1400))
    played = game(
        VOID, ["10O 10C 7O", "10E 10B 5E"], stakes={"dani": 500}, bank=1500, carried=carried
    )
    opened = played.steps[0]
    assert CarriedStakeReturned("eva", 1000, ReturnReason.NOT_SEATED) in opened.facts
    assert CarriedStakeReturned("bea", 1400, ReturnReason.BANKER) in opened.facts
    assert CarriedStakeReturned("carlos", 2000, ReturnReason.BANK_CANNOT_COVER) in opened.facts
    assert ("return", "carlos", 2000) in kinds(played, 0)


def test_a_real_pays_double() -> None:
    played = game(RULES, ["1O 12O 11O", "10E 10B 5E"])  # carlos real, banker 25
    assert settled(played)["carlos"] == StakeSettled("carlos", Outcome.WON, 1000, 2, 2000)
    assert ("payment", "carlos", 2000) in kinds(played)


def test_a_real_outranks_a_plain_31() -> None:
    hands = ["1O 12O 11O", "10E 10B 5E"]  # the banker draws 6: a plain 31
    played = game(RULES, hands, "6E", {"bea": ["carta"]})
    assert played.of(HandShown)[0] == HandShown(
        "bea", played.round.hand_of("bea").cards, 31, False, False
    )
    assert settled(played)["carlos"].outcome is Outcome.WON
    assert settled(played)["carlos"].paid == 2000
    plain = with_options(RULES, real_outranks_plain=False)  # then 31 equals 31: the tie rule
    assert settled(game(plain, hands, "6E", {"bea": ["carta"]}))["carlos"].outcome is Outcome.LOST
    void = with_options(VOID, real_outranks_plain=False)
    assert settled(game(void, hands, "6E", {"bea": ["carta"]}))["carlos"].outcome is Outcome.VOID


def test_a_plain_31_does_not_beat_a_bankers_real() -> None:
    played = game(RULES, ["10O 10C 4O", "1E 12E 11E"], "7O", {"carlos": ["carta"]})
    assert played.round.hand_of("carlos").value.total == 31
    assert settled(played)["carlos"] == StakeSettled("carlos", Outcome.LOST, 1000, 2, 2000)


def test_the_bankers_real_collects_double_from_every_player() -> None:
    # carlos 27 stands; dani goes over 31 (lost at once); ana draws to a plain 31
    hands = ["10O 12O 7O", "10B 11B 5B", "10C 11C 4C", "1E 12E 11E"]
    played = game(
        RULES,
        hands,
        "7B 7C",
        {"dani": ["carta"], "ana": ["carta"]},
        stakes={"carlos": 1000, "dani": 1000, "ana": 1000},
    )
    result = settled(played)
    assert {p: (s.outcome, s.multiple, s.paid) for p, s in result.items()} == {
        p: (Outcome.LOST, 2, 2000) for p in ("carlos", "dani", "ana")
    }
    assert kinds(played) == [
        ("collection", "carlos", 2000),
        ("collection", "dani", 1000),  # dani paid 1000 at once
        ("collection", "ana", 2000),
        ("bank_returned", "bea", BANK + 6000),
    ]
    assert player_net(played.movements) == {
        "carlos": -2000,
        "dani": -2000,
        "ana": -2000,
        "bea": 6000,
    }
    assert played.round.next_banker.reason is BankerReason.KEPT_31  # type: ignore[union-attr]


def test_two_reals_are_equal() -> None:
    hands = ["1O 12O 11O", "1E 12E 11E"]
    assert settled(game(RULES, hands))["carlos"] == StakeSettled(
        "carlos",
        Outcome.LOST,
        1000,
        2,
        2000,  # the banker's real collects double
    )
    assert settled(game(VOID, hands))["carlos"].outcome is Outcome.VOID


def test_over_31_loses_at_once_even_if_the_banker_goes_over_too() -> None:
    hands = ["10B 11B 5B", "10C 10O 3C", "10E 12E 5E"]  # carlos 32; ana 23; banker 25 -> 32
    played = game(
        RULES,
        hands,
        "7B 7E",
        {"carlos": ["carta"], "bea": ["carta"]},
        stakes={"carlos": 1000, "ana": 1000},
    )
    busts = played.of(HandBust)
    assert [f.player for f in busts] == ["carlos", "bea"]  # type: ignore[attr-defined]
    assert isinstance(played.steps[-2].facts[-1], ShowdownDue)  # the banker over 31: no turn left
    result = settled(played)
    assert result["carlos"] == StakeSettled("carlos", Outcome.LOST, 1000, 1, 1000)
    assert result["ana"] == StakeSettled("ana", Outcome.WON, 1000, 1, 1000)  # 23 beats over 31
    assert player_net(played.movements) == {"carlos": -1000, "ana": 1000}
    shown = [f.player for f in played.of(HandShown)]  # type: ignore[attr-defined]
    assert shown == ["ana"]  # carlos and the banker were shown when they went over


def test_over_31_at_showdown_counts_as_nothing_and_two_such_hands_tie() -> None:
    hands = ["10B 11B 5B", "10E 10C 5E"]
    words = {"carlos": ["carta"], "bea": ["carta"]}
    showdown = table_rules(overrides={"bust": "at_showdown"})
    played = game(showdown, hands, "7B 7E", words)
    assert played.of(HandBust) == []
    assert settled(played)["carlos"].outcome is Outcome.LOST  # tie: to the banker
    void = with_options(showdown, tie=VOID.tie)
    assert settled(game(void, hands, "7B 7E", words))["carlos"].outcome is Outcome.VOID
    # a punter over 31 against a banker who is not
    assert settled(game(showdown, hands, "7B", {"carlos": ["carta"]}))["carlos"].outcome is (
        Outcome.LOST
    )


def test_the_house_commission_is_its_own_movement_rounded_down() -> None:
    rules = with_options(RULES, commission=Fraction(1, 20))
    hands = ["10O 10C 7O", "10B 7C 4B", "10E 11E 5E"]  # carlos 27 wins, ana 21 loses
    played = game(rules, hands, stakes={"carlos": 1010, "ana": 1010})
    assert kinds(played) == [
        ("collection", "ana", 1010),
        ("bank_commission", "bea", 50),
        ("return", "ana", 1010),
        ("return", "carlos", 2020),
        ("payment", "carlos", 1010),
        ("commission", "carlos", 50),
        ("bank_returned", "bea", BANK - 50),
    ]
    commission = [m for m in played.movements if m.destination is Role.HOUSE]
    assert [(m.kind, m.source) for m in commission] == [
        (MovementKind.BANK_COMMISSION, Role.BANK),
        (MovementKind.COMMISSION, Role.PLAYER),
    ]
    assert settled(played)["carlos"].commission == 50
    net = player_net(played.movements)
    assert net == {"carlos": 960, "ana": -1010, "bea": -50}
    assert sum(net.values()) + account_balances(played.movements)[Role.HOUSE] == 0


def test_the_bank_never_pays_more_than_it_holds() -> None:
    rules = table_rules(overrides={"bank_cover": "even_money"})
    hands = ["1O 12O 11O", "1C 12C 11C", "10E 10B 5E"]  # two reals against a bank of 2000
    played = game(rules, hands, stakes={"carlos": 1000, "ana": 1000}, bank=2000)
    result = settled(played)
    assert result["carlos"] == StakeSettled("carlos", Outcome.WON, 1000, 2, 2000, 0)
    assert result["ana"] == StakeSettled("ana", Outcome.WON, 1000, 2, 0, 2000)
    assert [m for m in played.movements if m.kind is MovementKind.BANK_RETURNED] == []
    account_balances(played.movements)  # never below 0 on the way


def test_collections_come_before_payments_and_the_bank_returns_last() -> None:
    hands = ["10O 10C 7O", "10B 7C 4B", "2C 3C 4C", "10E 11E 5E"]
    played = game(RULES, hands, stakes={"carlos": 1000, "dani": 1000, "ana": 1000})
    order = [m.kind for m in played.steps[-1].movements]
    assert order == [
        MovementKind.COLLECTION,
        MovementKind.RETURN,
        MovementKind.COLLECTION,
        MovementKind.RETURN,
        MovementKind.RETURN,
        MovementKind.PAYMENT,
        MovementKind.BANK_RETURNED,
    ]
    assert [f.player for f in played.of(StakeSettled)] == ["dani", "ana", "carlos"]  # type: ignore[attr-defined]


def test_the_showdown_shows_the_banker_first_then_the_players_in_turn() -> None:
    hands = ["10O 10C 7O", "10B 7C 4B", "10E 11E 5E"]
    played = game(RULES, hands, stakes={"carlos": 1000, "ana": 1000})
    assert [f.player for f in played.of(HandShown)] == ["bea", "carlos", "ana"]  # type: ignore[attr-defined]
    assert played.round.phase is Phase.SETTLED
    assert played.round.bank == 0 and played.round.stakes == ()


def test_settle_twice_is_refused() -> None:
    played = game(RULES, ["10O 10C 7O", "10E 10B 5E"])
    import pytest

    from domain.errors import FailedPrecondition

    with pytest.raises(FailedPrecondition):
        settle(RULES, played.round)
