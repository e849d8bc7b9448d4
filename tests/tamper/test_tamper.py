"""The insider's tampering, each kind on both stores (and on PostgreSQL with the append-only
trigger switched off by its owner): ``sabot export`` + ``sabot-verify`` name the first tampered
position, and so does ``sabot replay`` where it replays that part of the log.

Nothing was notarised before the tampering: the notary first sees the tampered store, so the
Merkle log holds the tampered rows and what finds them is the evidence chain (and the posting
and balance checks). 100 % of the cases are detected, each at its position.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from regulator.conftest import regulator_key, sabot
from sabot_verify.__main__ import run as verify

from services.bootstrap import REGULATOR_GAMES, ROUND_END
from services.regulator.chain import pinned_keys
from services.regulator.notary import Notary
from services.regulator.replay import Replayer, verdict
from services.regulator.source import Database, EventTable

from .conftest import CHAIN_PUBLIC, CHECKPOINT, CHECKPOINT_PUBLIC, Insider, Store, copy_store

P = "sabot.ledger:"


@dataclass
class Case:
    """A tampering: it returns the first tampered position; ``replay``: whether ``sabot replay``
    of the closed shoe covers that part of the log; ``export``: whether the export's own
    chain check names it (a snapshot is not an event; a cut needs the writer's head)."""

    tamper: Callable[[Insider, Store], int]
    replay: bool = True
    export: bool = True
    head: bool = False  # give sabot-verify the writer's head file


def _shoe_positions(i: Insider, s: Store, topic: str) -> list[int]:
    """Positions of ``topic`` events of the closed shoe (between its Shuffled and Closed)."""
    first = i.positions(P + "Shoe.Shuffled")[0]
    last = i.positions(P + "Shoe.Closed")[0]
    return [p for p in i.positions(topic) if first < p < last]


def edit_a_stake(i: Insider, s: Store) -> int:
    pos = _shoe_positions(i, s, P + "Coup.StakePlaced")[10]

    def more(st: dict[str, Any]) -> None:
        st["amount_after"] += 100
        st["stake"]["_data_"]["amount"] += 100

    return i.edit(pos, more)


def edit_a_card(i: Insider, s: Store) -> int:
    pos = _shoe_positions(i, s, P + "Coup.CardDealt")[40]
    return i.edit(pos, lambda st: st.update(code="KH" if st["code"] != "KH" else "QS"))


def edit_a_payment(i: Insider, s: Store) -> int:
    credits = _shoe_positions(i, s, P + "Account.Credited")
    pos = next(p for p in credits if i.row(p)[3]["kind"] == "payment")

    def more(st: dict[str, Any]) -> None:
        st["amount"] += 1_000
        st["balance"] += 1_000

    return i.edit(pos, more)


def edit_a_deposit_before_the_first_shoe(i: Insider, s: Store) -> int:
    pos = i.positions(P + "Account.CashDeposited")[0]
    assert pos < i.positions(P + "Shoe.Shuffled")[0]

    def more(st: dict[str, Any]) -> None:
        st["amount"] += 777_777
        st["balance"] += 777_777

    return i.edit(pos, more)


def edit_the_tables_rules(i: Insider, s: Store) -> int:
    (pos,) = i.positions(P + "Table.Opened")
    return i.edit(pos, lambda st: st["options"].update(max_stake="99000000"))


def edit_an_entrys_balance(i: Insider, s: Store) -> int:
    pos = _shoe_positions(i, s, P + "Account.Debited")[7]
    return i.edit(pos, lambda st: st.update(balance=st["balance"] + 5_000))


def delete_a_card(i: Insider, s: Store) -> int:
    return i.delete(_shoe_positions(i, s, P + "Coup.CardDealt")[25])


def delete_shoe_closed(i: Insider, s: Store) -> int:
    return i.delete(i.positions(P + "Shoe.Closed")[0])


def delete_a_request(i: Insider, s: Store) -> int:
    return i.delete(_shoe_positions(i, s, P + "Request.Recorded")[12])


def delete_the_last_40_events(i: Insider, s: Store) -> int:
    return i.delete_from(i.last_position() - 39)


def swap_two_cards(i: Insider, s: Store) -> int:
    cards = _shoe_positions(i, s, P + "Coup.CardDealt")
    a = cards[30]
    b = next(c for c in cards[31:] if i.row(c)[3]["code"] != i.row(a)[3]["code"])
    return i.swap(a, b)


def _deposit_pair(i: Insider, s: Store) -> list[tuple[str, int, str, dict[str, Any]]]:
    """A balanced pair as the ledger writes one: a player's CashDeposited of 777,777 and the
    cage's Debited, each at its account's next version, with no Request."""
    deposits = i.positions(P + "Account.CashDeposited")
    pid, _, _, dep = i.row(deposits[1])
    debit = next(p for p in i.positions(P + "Account.Debited") if p < deposits[2]
                 and i.row(p)[3]["kind"] == "cash_in")
    cid, _, _, deb = i.row(debit)
    rows = []
    for oid, topic, state, sign in ((pid, P + "Account.CashDeposited", dep, 1),
                                    (cid, P + "Account.Debited", deb, -1)):
        with i.session() as db:
            ident = oid if s.kind == "postgres" else oid.replace("-", "")
            (version,), = db.rows(f"SELECT max(originator_version) FROM {i.events} "
                                  "WHERE originator_id = ?", (ident,))
        state = {**state, "amount": 777_777, "balance": state["balance"] + sign * 777_777}
        rows.append((_text(oid), int(version) + 1, topic, state))
    return rows


def _text(oid: str) -> str:
    import uuid

    return str(uuid.UUID(oid))


def insert_a_deposit_pair_at_the_end(i: Insider, s: Store) -> int:
    return i.insert(_deposit_pair(i, s))


def insert_a_deposit_pair_in_the_middle(i: Insider, s: Store) -> int:
    middle = _shoe_positions(i, s, P + "Coup.MoneyMoved")[20]
    return i.insert(_deposit_pair(i, s), before=middle)


def edit_a_snapshot(i: Insider, s: Store) -> int:
    snaps = [r for r in i.snapshot_rows() if r[2] == P + "Snapshot"]
    oid, version, _, _state = next(r for r in snaps if r[3]["state"]["kind"] == "player")

    def mint(st: dict[str, Any]) -> None:
        st["state"]["balance"] += 1_000_000_000

    i.edit_snapshot(oid, version, mint)
    ident = oid if s.kind == "postgres" else oid.replace("-", "")
    with i.session() as db:
        (pos,), = db.rows(f"SELECT {i.pos} FROM {i.events} WHERE originator_id = ? AND "
                          "originator_version = ?", (ident, version))
    return int(pos)


CASES = {
    "edit a stake": Case(edit_a_stake),
    "edit a card": Case(edit_a_card),
    "edit a payment": Case(edit_a_payment),
    "edit a deposit made before the first shoe": Case(edit_a_deposit_before_the_first_shoe,
                                                       replay=False),
    "edit the table's rules": Case(edit_the_tables_rules),
    "edit an entry's balance": Case(edit_an_entrys_balance),
    "delete a card": Case(delete_a_card),
    "delete Shoe.Closed": Case(delete_shoe_closed),
    "delete a Request": Case(delete_a_request),
    "delete the last 40 events": Case(delete_the_last_40_events, replay=False, export=False,
                                      head=True),
    "swap two cards": Case(swap_two_cards),
    "insert a balanced deposit pair at the end": Case(insert_a_deposit_pair_at_the_end,
                                                      replay=False),
    "insert a balanced deposit pair in the middle": Case(insert_a_deposit_pair_in_the_middle),
    "edit a snapshot": Case(edit_a_snapshot, replay=False, export=False),
}


def export_and_verify(s: Store, capsys: pytest.CaptureFixture[str], head: bool = False,
                      ) -> tuple[int, str, str]:
    """``sabot export`` (default arguments: the whole log) then ``sabot-verify`` with the
    operator's keys pinned: exit code, verifier output, export's stderr."""
    out = s.dir / "export.jsonl"
    capsys.readouterr()
    assert sabot("export", "--store", s.url, "--key", str(s.key_file), "-o", str(out),
                 "--chain-key", CHAIN_PUBLIC.hex()) == 0
    err = capsys.readouterr().err
    text = io.StringIO()
    from sabot_verify.chain import load_head

    code = verify(out.read_text().splitlines(), checkpoint_key=CHECKPOINT_PUBLIC, out=text,
                  chain_keys=[CHAIN_PUBLIC],
                  chain_head=load_head(s.head.read_text()) if head else None)
    return code, text.getvalue(), err


def replay_first_difference(s: Store) -> int | None:
    db = Database(s.url)
    try:
        events = EventTable(db)
        notary = Notary(db, events, CHECKPOINT, "sabot", ROUND_END, create=False)
        replayer = Replayer(events, notary, regulator_key=regulator_key(),
                            chain_keys=pinned_keys([CHAIN_PUBLIC]), games=REGULATOR_GAMES)
        v = verdict(replayer.shoe(s.played.shoe))
        assert not v.identical
        assert v.first_difference is not None
        return v.first_difference.position
    finally:
        db.close()


def test_the_untouched_store_verifies(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    code, text, err = export_and_verify(store, capsys, head=True)
    assert code == 0, text
    assert "evidence chain" not in err, err
    last = text.strip().splitlines()[-1]
    assert last.startswith("VERIFIED") and " links" in last, text
    assert "OK   evidence chain:" in text
    assert "OK   money: every posting belongs to one command, each balanced;" in text
    assert "sum 0" in text
    db = Database(store.url)
    try:
        replayer = Replayer(EventTable(db), None, chain_keys=pinned_keys([CHAIN_PUBLIC]),
                            games=REGULATOR_GAMES)
        assert verdict(replayer.shoe(store.played.shoe)).identical
    finally:
        db.close()


def _check(s: Store, case: Case, guard: str, capsys: pytest.CaptureFixture[str]) -> None:
    first = case.tamper(Insider(s, guard), s)
    code, text, err = export_and_verify(s, capsys, head=case.head)
    assert code == 1, text
    assert text.strip().splitlines()[-1] == f"NOT VERIFIED; first tampered position {first}", (
        text)
    if case.export:  # `sabot export` checked the chain too, and said where it breaks
        assert "evidence chain: " in err and f"first at position {first}:" in err, err
    if case.replay:
        assert replay_first_difference(s) == first


@pytest.mark.parametrize("name", list(CASES))
def test_tampering_is_found_at_its_position(
    store: Store, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _check(store, CASES[name], "", capsys)


@pytest.mark.postgres
@pytest.mark.parametrize("name", list(CASES))
def test_on_postgres_with_the_trigger_disabled_by_its_owner(
    postgres_template: Store, tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for s in copy_store(postgres_template, tmp_path):
        _check(s, CASES[name], "disable-trigger", capsys)


@pytest.mark.parametrize("name", ["edit a card", "delete a Request",
                                  "insert a balanced deposit pair in the middle"])
def test_the_notary_reports_where_the_chain_breaks(
    store: Store, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The notary checks every event it notarises against the chain: ``sabot checkpoint``
    notarises all the same (the tree records what the store holds), says where the chain
    breaks, and exits 1."""
    first = CASES[name].tamper(Insider(store), store)
    capsys.readouterr()
    code = sabot("checkpoint", "--store", store.url, "--key", str(store.key_file),
                 "--chain-key", CHAIN_PUBLIC.hex())
    err = capsys.readouterr().err
    assert code == 1, err
    assert f"evidence chain: 1 problem(s); first at position {first}:" in err, err
    assert "notarised up to leaf" in err
