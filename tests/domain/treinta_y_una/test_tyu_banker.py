"""The bank: drawn by lot for the first game (reproducible from the seed), then passed to
whoever made 31; the banker who made 31 keeps it."""

from __future__ import annotations

import hashlib
import hmac
from collections import Counter
from uuid import UUID

import pytest
from tyu_tables import cards, play_game, rig

from domain.errors import InvalidArgument
from domain.treinta_y_una.banker import (
    LOT_PERSONALIZATION,
    BankerChoice,
    BankerReason,
    BankLot,
    check_lot,
    draw_banker,
    next_banker,
)
from domain.treinta_y_una.facts import RoundOpened, RoundSettled
from domain.treinta_y_una.hand import evaluate
from domain.treinta_y_una.rules import table_rules

RULES = table_rules()
SEATS = ("ana", "bea", "carlos", "dani")
SEED = bytes(range(32))
SHOE = UUID("00000000-0000-0000-0000-000000000001")


def _lot_by_hand(seed: bytes, nonce: bytes, n: int) -> int:
    """SP 800-90A HMAC_DRBG spelt out from SHUFFLE.md, then one rejection-sampled draw."""

    def mac(k: bytes, m: bytes) -> bytes:
        return hmac.new(k, m, hashlib.sha256).digest()

    k, v = b"\x00" * 32, b"\x01" * 32
    data = seed + nonce + LOT_PERSONALIZATION
    k = mac(k, v + b"\x00" + data)
    v = mac(k, v)
    k = mac(k, v + b"\x01" + data)
    v = mac(k, v)
    limit = 2**64 - (2**64 % n)
    while True:
        v = mac(k, v)
        x = int.from_bytes(v[:8], "big")
        k = mac(k, v + b"\x00")
        v = mac(k, v)
        if x < limit:
            return x % n


def test_the_lot_is_the_published_drbg_draw() -> None:
    choice = draw_banker(SEED, SHOE, SEATS)
    index = _lot_by_hand(SEED, SHOE.bytes, len(SEATS))
    assert choice == BankerChoice(SEATS[index], BankerReason.LOT, BankLot(SHOE, SEATS, index))
    for i in range(2, 30):
        nonce = UUID(int=i)
        assert draw_banker(SEED, nonce, SEATS).lot.index == _lot_by_hand(  # type: ignore[union-attr]
            SEED, nonce.bytes, len(SEATS)
        )


def test_the_lot_is_reproducible_and_checkable() -> None:
    choice = draw_banker(SEED, SHOE, SEATS)
    assert draw_banker(SEED, SHOE, SEATS) == choice
    assert check_lot(SEED, choice)
    assert not check_lot(bytes(32), choice) or draw_banker(bytes(32), SHOE, SEATS) == choice
    forged = BankerChoice("ana" if choice.player != "ana" else "bea", BankerReason.LOT, choice.lot)
    assert not check_lot(SEED, forged)
    assert not check_lot(SEED, BankerChoice("ana", BankerReason.KEPT))


def test_the_lot_is_fair() -> None:
    """4,000 lots among four seats: each seat within 4 standard deviations of 1,000."""
    counts = Counter(draw_banker(SEED, UUID(int=i), SEATS).player for i in range(4000))
    assert set(counts) == set(SEATS)
    assert all(abs(n - 1000) < 4 * (4000 * 0.25 * 0.75) ** 0.5 for n in counts.values())


def test_the_lot_refuses_bad_input() -> None:
    with pytest.raises(InvalidArgument) as err:
        draw_banker(b"short", SHOE, SEATS)
    assert err.value.field == "seed"
    with pytest.raises(InvalidArgument) as err:
        draw_banker(SEED, SHOE, ())
    assert err.value.field == "seats"


def hands(*totals: str) -> list[tuple[str, object]]:
    return [
        (p, evaluate(cards(codes)))
        for p, codes in zip(("carlos", "dani", "ana"), totals, strict=False)
    ]


PLAIN_31 = "10O 10C 4O 7O"
REAL = "1B 12B 11B"
LOW = "2C 3C 4C"


@pytest.mark.parametrize(
    ("rules", "banker", "players", "expected"),
    [
        (RULES, REAL, (PLAIN_31, LOW, LOW), BankerChoice("bea", BankerReason.KEPT_31)),
        (RULES, PLAIN_31.replace("O", "E"), (REAL,), BankerChoice("bea", BankerReason.KEPT_31)),
        (
            RULES,
            LOW,
            (LOW.replace("C", "O"), PLAIN_31),
            BankerChoice("dani", BankerReason.PASSED_31),
        ),
        # several 31s: the first in turn order (carlos before ana)
        (
            RULES,
            LOW,
            (PLAIN_31, LOW.replace("C", "O"), REAL),
            BankerChoice("carlos", BankerReason.PASSED_31),
        ),
        (
            table_rules(overrides={"several_31": "real_first"}),
            LOW,
            (PLAIN_31, LOW.replace("C", "O"), REAL),
            BankerChoice("ana", BankerReason.PASSED_31),
        ),
        (RULES, LOW, (LOW.replace("C", "O"),), BankerChoice("bea", BankerReason.KEPT)),
        (
            table_rules(overrides={"bank_without_31": "passes_to_mano"}),
            LOW,
            (LOW.replace("C", "O"),),
            BankerChoice("carlos", BankerReason.PASSED_TO_MANO),
        ),
    ],
)
def test_next_banker(rules, banker, players, expected) -> None:  # type: ignore[no-untyped-def]
    got = next_banker(rules, SEATS, "bea", evaluate(cards(banker)), hands(*players))
    assert got == expected


def test_a_player_over_31_did_not_make_31() -> None:
    got = next_banker(RULES, SEATS, "bea", evaluate(cards(LOW)), hands("10O 10C 4O 7O 1O"))
    assert got.reason is BankerReason.KEPT


def test_the_bank_passes_through_games() -> None:
    """Game 1 by lot; ana, second in turn, draws to 31 and takes the bank; in game 2 the bank
    (ana) makes 31 and keeps it although a player has 31 too."""
    lot = draw_banker(SEED, SHOE, SEATS)
    banker = lot.player
    order = [SEATS[(SEATS.index(banker) + k) % 4] for k in (1, 2, 3)]
    first = play_game(
        RULES,
        SEATS,
        lot,
        100_000,
        {order[0]: 1000, order[1]: 1000},
        rig(["10O 10C 4O", "10B 11B 4B", "10E 11E 5E"], "7B"),
        {order[1]: ["carta"]},
    )
    assert first.steps[0].facts[0] == RoundOpened(SEATS, lot, 100_000, order[0])
    settled = first.of(RoundSettled)[0]
    assert settled.next_banker == BankerChoice(order[1], BankerReason.PASSED_31)  # type: ignore[attr-defined]
    second_banker = first.round.next_banker
    assert second_banker is not None
    second_order = [SEATS[(SEATS.index(second_banker.player) + k) % 4] for k in (1, 2, 3)]
    second = play_game(
        RULES,
        SEATS,
        second_banker,
        50_000,
        {second_order[0]: 1000},
        rig(["1O 12O 11O", "10E 11E 4E"], "7E"),
        {second_banker.player: ["carta"]},
    )
    assert second.round.hand_of(second_banker.player).value.total == 31
    assert second.round.next_banker == BankerChoice(second_banker.player, BankerReason.KEPT_31)
