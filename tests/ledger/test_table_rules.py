"""The rules of issue 12 through the ledger, on both stores: the table maximum per player and
chance, insurance only where it insures, the ``finish_coup`` shortage, prisoners when a table
closes (``close_table``), a moved prisoner on a second 31; each played shoe then replays
identical (the regulator's replay) and verifies (the standalone verifier, from an export)."""

from __future__ import annotations

import dataclasses
import io
import json
import sqlite3
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sabot_verify.__main__ import run

from domain.errors import FailedPrecondition
from services.bootstrap import LEDGER_GAMES, REGULATOR_GAMES, ROUND_END
from services.ledger.api import Ledger
from services.ledger.table import Table
from services.regulator.checkpoint import public_key_bytes
from services.regulator.export import write_export
from services.regulator.notary import Notary
from services.regulator.replay import Replayer, verdict
from services.regulator.source import Database, EventTable

from .play import CHAIN_KEY, FixedInputs
from .scenes import LEDGER_FIRST_31, LEDGER_SHORT, LEDGER_TWIN_31, Scene

PLAYERS = ("anne", "bruno", "chiara")
DEPOSIT = 100_000


def ledger_for(url: str, evidence: bool = True) -> Ledger:
    ledger = Ledger(dataclasses.replace(FixedInputs().config(url), evidence=evidence),
                    games=LEDGER_GAMES)
    for p in PLAYERS:
        ledger.open_account(f"open-{p}", p)
        ledger.deposit(f"cash-{p}", p, DEPOSIT)
    return ledger


def refused(call: object, *args: object) -> FailedPrecondition:
    with pytest.raises(FailedPrecondition) as err:
        call(*args)  # type: ignore[operator]
    return err.value


def open_scene(ledger: Ledger, table: str, scene: Scene, preset: str,
               options: dict[str, str] | None = None) -> str:
    overrides = {"decks": str(scene.decks), "cut_card": scene.cut_card.value, **(options or {})}
    ledger.open_table(f"{table}-open", table, preset, overrides)
    shoe = ledger.open_shoe(f"{table}-shoe", table, str(scene.shoe_id))
    ledger.cut(f"{table}-cut", shoe.shoe_id, scene.cut, "anne")
    return shoe.shoe_id


def replays_and_verifies(url: str, shoe_id: str) -> None:
    """The regulator's replay finds the shoe identical, and an export of it verifies."""
    key = Ed25519PrivateKey.from_private_bytes(bytes([9]) * 32)
    db = Database(url)
    events = EventTable(db)
    notary = Notary(db, events, key, "sabot-test", ROUND_END)
    notary.sync()
    notary.checkpoint_now()
    v = verdict(Replayer(events, notary, seal_key=bytes(range(32)),
                         games=REGULATOR_GAMES).shoe(shoe_id))
    assert v.identical, str(v)
    buf = io.StringIO()
    write_export(buf, events, notary, public_key_bytes(key.public_key()), shoe_ids=[shoe_id])
    out = io.StringIO()
    chain = Ed25519PrivateKey.from_private_bytes(CHAIN_KEY).public_key().public_bytes_raw()
    code = run(buf.getvalue().splitlines(), checkpoint_key=public_key_bytes(key.public_key()),
               out=out, chain_keys=[chain])
    assert code == 0 and "FAIL" not in out.getvalue(), out.getvalue()


# --- the table maximum per player and chance ---------------------------------------------------


def test_the_maximum_per_player_and_chance(store_url: str) -> None:
    """Stacked, raised and carried-over (in prison) stakes all count; the minimum is per stake."""
    assert LEDGER_FIRST_31.pattern().startswith("A")
    ledger = ledger_for(store_url)
    open_scene(ledger, "t-max", LEDGER_FIRST_31, "italiana", {"max_stake": "5000"})
    coup = ledger.open_coup("c1", "t-max").coup_id
    first = ledger.place_stake("p1", coup, "anne", "noir", 3000).stake
    assert first is not None
    err = refused(ledger.place_stake, "p2", coup, "anne", "noir", 3000)
    assert (err.field, err.reason) == ("amount", "ABOVE_MAXIMUM") and "5000" in err.message
    second = ledger.place_stake("p3", coup, "anne", "noir", 1000).stake
    assert second is not None
    err = refused(ledger.raise_stake, "r1", coup, second.stake_id, 1001)
    assert (err.field, err.reason) == ("amount", "ABOVE_MAXIMUM")
    ledger.raise_stake("r2", coup, second.stake_id, 1000)  # 5000 in all: exactly the maximum
    ledger.place_stake("p4", coup, "bruno", "noir", 5000)  # another player's own maximum
    ledger.place_stake("p5", coup, "anne", "couleur", 5000)  # another chance's
    assert ledger.get_account("anne").balance == DEPOSIT - 10_000
    assert ledger.deal("d1", coup).refait_total == 31
    ledger.settle("s1", coup)  # a 31 under italiana: every stake in prison
    nxt = ledger.open_coup("c2", "t-max").coup_id
    assert {s.status for s in ledger.get_coup(nxt).layout} == {"prison"}
    err = refused(ledger.place_stake, "p6", nxt, "anne", "noir", 100)  # carried over: 5000
    assert (err.field, err.reason) == ("amount", "ABOVE_MAXIMUM")
    ledger.half_withdraw("h1", nxt, first.stake_id)  # 3000 leaves the chance
    ledger.place_stake("p7", nxt, "anne", "noir", 3000)
    err = refused(ledger.place_stake, "p8", nxt, "anne", "noir", 100)
    assert (err.field, err.reason) == ("amount", "ABOVE_MAXIMUM")
    balances = ledger.balances()
    assert sum(balances.values()) == 0
    ledger.close()


# --- insurance only where it insures ----------------------------------------------------------


def test_insurance_is_refused_where_a_31_returns_the_stake(store_url: str) -> None:
    ledger = ledger_for(store_url)
    open_scene(ledger, "t-ins", LEDGER_FIRST_31, "francaise")
    coup = ledger.open_coup("c1", "t-ins").coup_id
    colour = ledger.place_stake("p1", coup, "anne", "inverse", 1000).stake
    row = ledger.place_stake("p2", coup, "anne", "noir", 1000).stake
    assert colour is not None and row is not None
    before = ledger.read_events(0, 10_000)
    err = refused(ledger.insure, "i1", coup, colour.stake_id)
    assert (err.field, err.reason) == ("stake_id", "NOTHING_TO_INSURE")
    assert "couleur_inverse_on_refait31" in err.message
    assert ledger.get_account("anne").balance == DEPOSIT - 2000  # no premium taken
    assert len(ledger.read_events(0, 10_000)) == len(before)  # nothing stored
    sold = ledger.insure("i2", coup, row.stake_id)
    assert [m.kind for m in sold.movements] == ["premium"]
    ledger.close()


# --- the finish_coup shortage ------------------------------------------------------------------


def test_a_coup_the_cards_behind_the_cut_card_cannot_finish_is_void(store_url: str) -> None:
    assert LEDGER_SHORT.pattern() == "dddd."
    last = LEDGER_SHORT.deals()[-1]
    assert last.cut_card_reached and not last.complete and last.cards  # dealt, then ran out
    ledger = ledger_for(store_url)
    shoe = open_scene(ledger, "t-short", LEDGER_SHORT, "italiana")
    for i in range(4):
        coup = ledger.open_coup(f"c{i}", "t-short").coup_id
        ledger.deal(f"d{i}", coup)
        ledger.settle(f"s{i}", coup)
    coup = ledger.open_coup("c5", "t-short").coup_id
    ledger.place_stake("p1", coup, "anne", "noir", 1000)
    ledger.place_stake("p2", coup, "bruno", "rouge", 700)
    dealt = ledger.deal("d5", coup)
    assert dealt.result == "void" and dealt.cut_card_reached
    assert len(dealt.cards) == len(last.cards) and dealt.rouge_total is None
    settled = ledger.settle("s5", coup)
    assert settled.movements == () and {f.fate for f in settled.fates} == {"void"}
    assert {(s.account_id, s.amount, s.status) for s in settled.layout} == {
        ("anne", 1000, "free"), ("bruno", 700, "free")}
    err = refused(ledger.open_coup, "c6", "t-short")
    assert err.reason == "SHOE_MUST_CLOSE"
    closed = ledger.close_shoe("x", shoe)
    assert sorted((m.kind, m.account_id, m.amount) for m in closed.returned) == [
        ("return", "anne", 1000), ("return", "bruno", 700)]
    assert ledger.get_account("anne").balance == DEPOSIT == ledger.get_account("bruno").balance
    ledger.close()
    replays_and_verifies(store_url, shoe)


# --- prisoners when a table closes -------------------------------------------------------------


def _prisoners(ledger: Ledger, table: str, options: dict[str, str] | None = None) -> str:
    """Coup 1 of LEDGER_FIRST_31 is a refait at 31: anne's noir and bruno's couleur go to
    prison; chiara's insured rouge stays free (the 31 is void for it)."""
    assert LEDGER_FIRST_31.pattern().startswith("A")
    shoe = open_scene(ledger, table, LEDGER_FIRST_31, "italiana", options)
    coup = ledger.open_coup(f"{table}-c1", table).coup_id
    ledger.place_stake(f"{table}-p1", coup, "anne", "noir", 1001)
    ledger.place_stake(f"{table}-p2", coup, "bruno", "couleur", 400)
    insured = ledger.place_stake(f"{table}-p3", coup, "chiara", "rouge", 300).stake
    assert insured is not None
    ledger.insure(f"{table}-i3", coup, insured.stake_id)
    assert ledger.deal(f"{table}-d1", coup).refait_total == 31
    fates = {f.account_id: f.fate for f in ledger.settle(f"{table}-s1", coup).fates}
    assert fates == {"anne": "imprisoned", "bruno": "imprisoned", "chiara": "void"}
    returned = ledger.close_shoe(f"{table}-x", shoe).returned  # chiara's free stake goes back
    assert [(m.account_id, m.amount) for m in returned] == [("chiara", 300)]
    return shoe


def test_closing_a_table_settles_its_prisoners_as_a_partage(store_url: str) -> None:
    ledger = ledger_for(store_url)
    shoe = _prisoners(ledger, "t-close")
    coup = ledger.get_table("t-close").coup_id
    closed = ledger.close_table("close", "t-close")
    assert (closed.table_id, closed.coup_id, closed.prisoners_at_close) == (
        "t-close", coup, "half_returned")
    assert [(m.kind, m.account_id, m.amount, m.debit_account, m.credit_account)
            for m in closed.settled] == [
        ("partage", "bruno", 200, "table:t-close:layout", "table:t-close:house_partage"),
        ("partage", "anne", 500, "table:t-close:layout", "table:t-close:house_partage"),
        ("return", "bruno", 200, "table:t-close:layout", "bruno"),
        ("return", "anne", 501, "table:t-close:layout", "anne"),  # the odd unit: the player's
    ]
    assert ledger.close_table("close", "t-close") == closed  # a retry: the first answer
    balances = ledger.balances()
    assert balances["anne"] == DEPOSIT - 500 and balances["bruno"] == DEPOSIT - 200
    assert balances["chiara"] == DEPOSIT - 3  # the premium of 1 % on 300
    assert balances["table:t-close:house_partage"] == 700
    assert balances["table:t-close:layout"] == 0 and sum(balances.values()) == 0
    view = ledger.get_table("t-close")
    assert view.closed and view.close_time is not None and view.layout == ()
    fates = [(f.account_id, f.fate) for f in ledger.get_coup(coup).fates][-2:]
    assert fates == [("anne", "half_returned"), ("bruno", "half_returned")]
    for again in (lambda: ledger.open_shoe("again", "t-close"),
                  lambda: ledger.close_table("close-2", "t-close")):
        err = refused(again)
        assert (err.field, err.reason) == ("table_id", "TABLE_CLOSED")
    steps = ledger.last_coups("t-close", 1)[0].steps
    assert [s.topic.rsplit(":", 1)[1] for s in steps][-6:] == [
        "Coup.MoneyMoved"] * 4 + ["Coup.StakeHalfReturned"] * 2
    closing = [e for e in ledger.read_events(0, 10_000) if e.topic == Table.Closed.TOPIC]
    assert [(e.state["coup_id"], e.state["prisoners_at_close"], e.state["stakes"])
            for e in closing] == [(coup, "half_returned", 2)]
    ledger.close()
    replays_and_verifies(store_url, shoe)


def test_closing_a_table_can_return_its_prisoners_whole(store_url: str) -> None:
    ledger = ledger_for(store_url)
    shoe = _prisoners(ledger, "t-back", {"prisoners_at_close": "returned"})
    closed = ledger.close_table("close", "t-back")
    assert closed.prisoners_at_close == "returned"
    assert [(m.kind, m.account_id, m.amount) for m in closed.settled] == [
        ("return", "bruno", 400), ("return", "anne", 1001)]
    balances = ledger.balances()
    assert balances["anne"] == balances["bruno"] == DEPOSIT
    assert balances["table:t-back:house_partage"] == 0
    ledger.close()
    replays_and_verifies(store_url, shoe)


def test_a_table_closes_only_between_shoes(store_url: str) -> None:
    ledger = ledger_for(store_url)
    ledger.open_table("o", "t-idle", "francaise")
    closed = ledger.close_table("close-idle", "t-idle")  # never played: nothing to settle
    assert (closed.coup_id, closed.settled) == (None, ())
    ledger.open_table("o2", "t-busy", "francaise")
    ledger.open_shoe("s2", "t-busy")
    err = refused(ledger.close_table, "close-busy", "t-busy")
    assert (err.field, err.reason) == ("table_id", "SHOE_OPEN")
    assert not ledger.get_table("t-busy").closed
    ledger.close()


def test_a_table_opened_before_the_option_reads_its_default(tmp_path: Path) -> None:
    """A version 1 ``Table.Opened`` (no ``prisoners_at_close`` in its options) is upcast with
    the default: its recorded options stay complete, and its close halves the prisoners."""
    path = tmp_path / "v1.db"
    url = f"sqlite:///{path}"
    ledger = ledger_for(url, evidence=False)  # a store from before the evidence chain: its
    _prisoners(ledger, "t-old")  # events are rewritten below as version 1 wrote them
    ledger.close()
    with sqlite3.connect(path) as conn:
        rowid, state = conn.execute(
            "SELECT rowid, state FROM stored_events WHERE topic = ?", (Table.Opened.TOPIC,)
        ).fetchone()
        old = json.loads(state)
        del old["class_version"], old["options"]["prisoners_at_close"]
        conn.execute("DROP TRIGGER sabot_stored_events_no_update")  # an old store had no guard
        conn.execute("UPDATE stored_events SET state = ? WHERE rowid = ?",
                     (json.dumps(old).encode(), rowid))
    ledger = Ledger(FixedInputs().config(url), games=LEDGER_GAMES)
    try:
        assert ledger.get_table("t-old").options["prisoners_at_close"] == "half_returned"
        closed = ledger.close_table("close-old", "t-old")
        assert [m.kind for m in closed.settled] == ["partage", "partage", "return", "return"]
    finally:
        ledger.close()
    upcast = {"table_id": "t", "options": {"decks": "6"}}
    Table.Opened.upcast_v1_v2(upcast)
    assert upcast == {"table_id": "t", "options": {"decks": "6",
                                                   "prisoners_at_close": "half_returned"}}


# --- a prisoner follows prison_refait31 whatever chance it lies on ------------------------------


@pytest.mark.parametrize(("rule", "fate", "status"),
                         [("second_prison", "second_prison", "second_prison"),
                          ("lost", "prison_lost", None)])
def test_a_prisoner_moved_onto_couleur_on_a_second_31(
    store_url: str, rule: str, fate: str, status: str | None
) -> None:
    assert LEDGER_TWIN_31.pattern().startswith("AA")
    ledger = ledger_for(store_url)
    table = f"t-move-{rule.replace('_', '-')}"
    shoe = open_scene(ledger, table, LEDGER_TWIN_31, "italiana",
                      {"couleur_inverse_on_refait31": "returned", "prison_refait31": rule})
    coup = ledger.open_coup("c1", table).coup_id
    stake = ledger.place_stake("p1", coup, "anne", "noir", 1000).stake
    free = ledger.place_stake("p2", coup, "bruno", "inverse", 600).stake
    assert stake is not None and free is not None
    ledger.deal("d1", coup)
    first = {f.stake_id: f.fate for f in ledger.settle("s1", coup).fates}
    assert first == {stake.stake_id: "imprisoned", free.stake_id: "returned"}
    coup = ledger.open_coup("c2", table).coup_id
    moved = ledger.move_imprisoned("m1", coup, stake.stake_id, "couleur")
    assert moved.stake is not None
    assert (moved.stake.chance, moved.stake.amount, moved.stake.status) == (
        "couleur", 500, "prison")
    again = ledger.place_stake("p3", coup, "bruno", "inverse", 600).stake  # free, on C/I
    assert again is not None
    assert ledger.deal("d2", coup).refait_total == 31
    second = {f.stake_id: (f.fate, f.status_after) for f in ledger.settle("s2", coup).fates}
    assert second[stake.stake_id] == (fate, status)  # the prison rule, not "returned"
    assert second[again.stake_id] == ("returned", None)  # the C/I policy is for free stakes
    balances = ledger.balances()
    assert balances[f"table:{table}:house_partage"] == 500
    assert balances[f"table:{table}:house_prison"] == (500 if status is None else 0)
    assert balances["bruno"] == DEPOSIT
    coup = ledger.open_coup("c3", table).coup_id  # play the shoe out: the replay covers it all
    ledger.deal("d3", coup)
    ledger.settle("s3", coup)
    ledger.close_shoe("x", shoe)
    ledger.close()
    replays_and_verifies(store_url, shoe)
