"""The actor on every command: it scopes request ids, decides ownership, is recorded with the
request, and a replay of the stored commands (as their actors) gives the same events."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from services.bootstrap import LEDGER_GAMES
from services.ledger.actor import SYSTEM, Actor
from services.ledger.api import Ledger
from services.ledger.errors import PermissionDenied, RequestIdReused
from services.ledger.ids import request_uuid, stake_uuid
from services.ledger.replay import event_log, replay, stored_commands

from .play import FixedInputs

ANA = Actor("ana", "player", "terminal-4", "ana")
BRUNO = Actor("bruno", "player", "ipv4:127.0.0.1:5000", "bruno")
CROUPIER = Actor("c-0173", "croupier", "ipv4:127.0.0.1:5001")
CASHIER = Actor("cashier-12", "cashier", "ipv4:127.0.0.1:5002")


@pytest.fixture
def ledger(store_url: str) -> Iterator[Ledger]:
    ledger = Ledger(FixedInputs().config(store_url), games=LEDGER_GAMES)
    ledger.open_table("t", "t1", "francaise", actor=CROUPIER)
    for who in ("ana", "bruno"):
        ledger.open_account(f"open-{who}", who, actor=CASHIER)
        ledger.deposit(f"cash-{who}", who, 10_000, actor=CASHIER)
    shoe = ledger.open_shoe("s", "t1", actor=CROUPIER)
    ledger.cut("c", shoe.shoe_id, 100, "ana", actor=CROUPIER)
    yield ledger
    ledger.close()


def _end(ledger: Ledger) -> int:
    return ledger.app.recorder.max_notification_id() or 0


def test_a_player_acts_on_its_own_stakes_only(ledger: Ledger) -> None:
    coup = ledger.open_coup("o", "t1", actor=CROUPIER).coup_id
    stake = ledger.place_stake("p", coup, "ana", "noir", 1000, actor=ANA).stake
    assert stake is not None
    end, balances = _end(ledger), ledger.balances()
    for call in (
        lambda: ledger.raise_stake("x1", coup, stake.stake_id, 100, actor=BRUNO),
        lambda: ledger.withdraw_stake("x2", coup, stake.stake_id, actor=BRUNO),
        lambda: ledger.insure("x3", coup, stake.stake_id, actor=BRUNO),
        lambda: ledger.choose_refait31("x4", coup, stake.stake_id, "prison", actor=BRUNO),
        lambda: ledger.move_imprisoned("x5", coup, stake.stake_id, "rouge", actor=BRUNO),
        lambda: ledger.half_withdraw("x6", coup, stake.stake_id, actor=BRUNO),
    ):
        with pytest.raises(PermissionDenied) as denied:
            call()
        assert (denied.value.field, denied.value.reason) == ("stake_id", "NOT_YOUR_STAKE")
    with pytest.raises(PermissionDenied) as denied:
        ledger.place_stake("x7", coup, "ana", "rouge", 100, actor=BRUNO)
    assert (denied.value.field, denied.value.reason) == ("account_id", "NOT_YOUR_ACCOUNT")
    assert (_end(ledger), ledger.balances()) == (end, balances)
    # a withdrawn stake is still ana's
    ledger.withdraw_stake("w", coup, stake.stake_id, actor=ANA)
    with pytest.raises(PermissionDenied):
        ledger.withdraw_stake("x8", coup, stake.stake_id, actor=BRUNO)


def test_request_ids_are_scoped_by_principal(ledger: Ledger) -> None:
    coup = ledger.open_coup("o", "t1", actor=CROUPIER).coup_id
    mine = ledger.place_stake("cage-0001", coup, "ana", "noir", 1000, actor=ANA)
    theirs = ledger.deposit("cage-0001", "bruno", 500, actor=CASHIER)
    assert theirs.balance == 10_500
    end = _end(ledger)
    assert ledger.place_stake("cage-0001", coup, "ana", "noir", 1000, actor=ANA) == mine
    # the same principal from another peer is the same principal
    again = Actor("ana", "player", "terminal-9", "ana")
    assert ledger.place_stake("cage-0001", coup, "ana", "noir", 1000, actor=again) == mine
    assert ledger.deposit("cage-0001", "bruno", 500, actor=CASHIER) == theirs
    assert _end(ledger) == end
    with pytest.raises(RequestIdReused) as reused:
        ledger.place_stake("cage-0001", coup, "ana", "noir", 2000, actor=ANA)
    assert "deposit" not in str(reused.value)
    with pytest.raises(RequestIdReused) as reused:
        ledger.deposit("cage-0001", "bruno", 700, actor=CASHIER)
    assert "place_stake" not in str(reused.value)
    assert request_uuid("cage-0001", "ana") != request_uuid("cage-0001", "cashier-12")
    assert request_uuid("r", "ab:c") != request_uuid("c:r", "ab")


def test_every_request_records_its_actor(ledger: Ledger) -> None:
    coup = ledger.open_coup("o", "t1", actor=CROUPIER).coup_id
    ledger.place_stake("p", coup, "ana", "noir", 1000, actor=ANA)
    ledger.deal("d", coup, actor=CROUPIER)
    by_request = {c.request_id: c.actor for c in stored_commands(ledger)}
    assert by_request["p"] == ANA and by_request["d"] == CROUPIER
    assert by_request["cash-ana"] == CASHIER


def test_client_stake_ids_do_not_collide(ledger: Ledger) -> None:
    coup = ledger.open_coup("o", "t1", actor=CROUPIER).coup_id
    client = "6f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"
    ana = ledger.place_stake("p1", coup, "ana", "noir", 1000, client, actor=ANA).stake
    bruno = ledger.place_stake("p2", coup, "bruno", "noir", 1000, client, actor=BRUNO).stake
    assert ana is not None and bruno is not None
    assert ana.stake_id == str(stake_uuid(coup, "ana", client)) != client
    assert bruno.stake_id != ana.stake_id


def test_a_replay_as_the_recorded_actors_gives_the_same_events(
    ledger: Ledger, store_url: str, tmp_path: object,
) -> None:
    coup = ledger.open_coup("o", "t1", actor=CROUPIER).coup_id
    stake = ledger.place_stake("p", coup, "ana", "noir", 1000, actor=ANA).stake
    assert stake is not None
    ledger.raise_stake("r", coup, stake.stake_id, 100, actor=ANA)
    ledger.place_stake("p", coup, "bruno", "rouge", 700, actor=BRUNO)  # the same request id
    ledger.deal("d", coup, actor=CROUPIER)
    ledger.settle("s", coup, actor=SYSTEM)
    target = replay(ledger, f"sqlite:///{tmp_path}/replayed.db")
    try:
        assert event_log(target) == event_log(ledger)
    finally:
        target.close()
