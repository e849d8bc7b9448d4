"""The money: both stakes held on the table, the winner paid, the commission its own movement."""

from __future__ import annotations

from cuarenta_support import rules

from domain.cuarenta.stakes import (
    MovementKind,
    Role,
    balances,
    commission,
    hold_stakes,
    pay_winner,
    shares,
    side_seats,
)


def test_two_players_stake_and_the_winner_takes_the_pot() -> None:
    r = rules(stake=1000)
    held = hold_stakes(r)
    assert [(m.kind, m.seat, m.amount, m.source, m.destination) for m in held] == [
        (MovementKind.STAKE, 0, 1000, Role.PLAYER, Role.TABLE),
        (MovementKind.STAKE, 1, 1000, Role.PLAYER, Role.TABLE),
    ]
    paid = pay_winner(r, 1)
    assert [(m.kind, m.seat, m.amount) for m in paid] == [(MovementKind.PAYOUT, 1, 2000)]
    net = balances((*held, *paid))
    assert net == {(Role.PLAYER, 0): -1000, (Role.PLAYER, 1): 1000, (Role.TABLE, None): 0}
    assert sum(net.values()) == 0


def test_the_commission_is_its_own_movement_rounded_down() -> None:
    r = rules(stake=1001, commission_rate="5%")  # pot 2002: 100.1 -> 100
    assert commission(r) == 100
    paid = pay_winner(r, 0)
    assert [(m.kind, m.seat, m.amount, m.destination) for m in paid] == [
        (MovementKind.COMMISSION, None, 100, Role.HOUSE),
        (MovementKind.PAYOUT, 0, 1902, Role.PLAYER),
    ]
    net = balances((*hold_stakes(r), *paid))
    assert net[(Role.HOUSE, None)] == 100 and net[(Role.TABLE, None)] == 0
    assert net[(Role.PLAYER, 0)] == 1902 - 1001 and net[(Role.PLAYER, 1)] == -1001
    assert sum(net.values()) == 0


def test_teams_share_their_stake_and_their_winnings() -> None:
    r = rules(players=4, stake=1001)
    assert side_seats(4, 0) == (0, 2) and side_seats(4, 1) == (1, 3)
    assert [(m.seat, m.amount) for m in hold_stakes(r)] == [(0, 501), (2, 500), (1, 501), (3, 500)]
    assert [(m.seat, m.amount) for m in pay_winner(r, 1)] == [(1, 1001), (3, 1001)]
    assert shares(5, (1, 3)) == ((1, 3), (3, 2))
    assert shares(1, (0, 2)) == ((0, 1),)  # no movement of 0


def test_no_stake_no_movement() -> None:
    r = rules()
    assert r.stake == 0
    assert hold_stakes(r) == () and pay_winner(r, 0) == ()
