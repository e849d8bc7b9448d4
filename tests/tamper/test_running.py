"""The insider tampers with the store under a RUNNING writer (issue 20): the writer spends only
what its evidence chain covers. Each kind of ``test_tamper.CASES``, on both stores and on
PostgreSQL with the append-only trigger disabled by its owner: the writer, started before the
tampering, stops writing as soon as anything loads a tampered event (no command acts on it),
names the position, says so to the health monitor and the metrics, and writes nothing more;
the cashier's payout of inserted money is refused. A store put back in time under it (an
earlier copy restored in place; its end deleted) stops it before its next save, naming the
link it lost, and its head file keeps that link. A tampered tail is refused at start.
"""

from __future__ import annotations

import logging
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest
from eventsourcing.application import AggregateNotFoundError
from regulator.play import CHAIN_KEY, SEAL_KEY

from domain.errors import FailedPrecondition
from services.bootstrap import LEDGER_GAMES
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig
from services.ledger.evidence import LINKED_TOPIC, ChainBroken, EvidenceBroken, read_head
from services.ledger.ids import account_uuid

from .conftest import Insider, Store, copy_store
from .test_tamper import CASES

RUNNING = [n for n in CASES if n != "edit a snapshot"]  # a snapshot is refused, not spent:
# tests/tamper/test_evidence.py::test_an_edited_snapshot_is_refused_and_reported


def open_ledger(s: Store, batching: bool = False) -> Ledger:
    return Ledger(LedgerConfig(store_url=s.url, seal_key=SEAL_KEY, chain_key=CHAIN_KEY,
                               chain_head=str(s.head)), batching=batching, games=LEDGER_GAMES)


def all_rows(i: Insider) -> list[tuple[int, str, str]]:
    """(position, originator id, topic) of every stored event, in log order."""
    with i.session() as db:
        rows = db.rows(f"SELECT {i.pos}, originator_id, topic FROM {i.events} ORDER BY {i.pos}")
    return [(int(p), str(uuid.UUID(str(o))), str(t)) for p, o, t in rows]


def batch_ids(rows: list[tuple[int, str, str]], position: int) -> set[str]:
    """The aggregates with an event in the batch holding ``position`` (between two links)."""
    links = [p for p, _, t in rows if t == LINKED_TOPIC]
    lo = max((p for p in links if p < position), default=0)
    hi = min((p for p in links if p >= position), default=10**12)
    return {o for p, o, t in rows if lo < p < hi and t != LINKED_TOPIC}


def load(led: Ledger, oid: str) -> Any:
    """Load an aggregate from the store through the writer (as a command's decision does)."""
    return led._writer.read(lambda unit: unit.app.repository.get(uuid.UUID(oid)))


def stops_at_the_tampering(s: Store, name: str, guard: str) -> None:
    led = open_ledger(s)  # started on the untouched store
    try:
        someone = s.played.players[2]
        led.deposit("warm-up", someone, 5)  # running: it wrote, and caches that account
        insider = Insider(s, guard)
        before = all_rows(insider)
        head = read_head(s.head.read_text())
        first = CASES[name].tamper(insider, s)
        after = all_rows(insider)
        end = insider.last_position()
        ids = batch_ids(before, first) | {o for p, o, t in after if p == first}
        stopped = 0
        for oid in sorted(ids):
            try:
                load(led, oid)
            except EvidenceBroken:
                stopped += 1
            except AggregateNotFoundError:  # a deleted Request: nothing left to load
                pass
        cut = name == "delete the last 40 events"  # nothing left to load: caught at the save
        assert stopped or cut, f"no aggregate of the tampered batch was refused ({ids})"
        with pytest.raises(EvidenceBroken) as refused:  # writing stopped
            led.deposit("after-the-break", someone, 7)
        assert refused.value.reason == "EVIDENCE_BROKEN"
        state = led.writer_state()
        assert state["active"] is False, state  # health: sabot.writer NOT_SERVING
        if cut:  # the links it signed are gone, and so are some events' links
            assert (f"link {head['seq']} is missing" in state["evidence_broken"]
                    or "covered by none" in state["evidence_broken"]), state
        else:
            assert f"position {first}:" in state["evidence_broken"], state
        assert "sabot_writer_evidence_broken 1.0" in led.writer_metrics()
        assert insider.last_position() == end  # nothing written after the break
        assert all_rows(insider) == after
        assert read_head(s.head.read_text())["seq"] == head["seq"]  # its head file kept
    finally:
        led.close()


@pytest.mark.parametrize("name", RUNNING)
def test_a_running_writer_stops_at_the_tampering(store: Store, name: str) -> None:
    stops_at_the_tampering(store, name, "")


@pytest.mark.postgres
@pytest.mark.parametrize("name", RUNNING)
def test_on_postgres_with_the_trigger_disabled_by_its_owner(
    postgres_template: Store, tmp_path: Path, name: str
) -> None:
    for s in copy_store(postgres_template, tmp_path):
        stops_at_the_tampering(s, name, "disable-trigger")


@pytest.mark.parametrize("where", ["end", "middle"])
@pytest.mark.parametrize("warm", [False, True], ids=["cold", "cached"])
def test_the_cashier_never_pays_out_inserted_money(
    store: Store, where: str, warm: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """The issue's case: a balanced deposit inserted while the server runs; the cashier's
    payout of it is refused, whether the account was cached (refused on the balance the
    writer knows; its next save collides with the inserted event and the reload stops the
    writer) or not (its load stops the writer)."""
    led = open_ledger(store, batching=True)
    try:
        insider = Insider(store)
        case = "insert a balanced deposit pair " + (
            "at the end" if where == "end" else "in the middle")
        player_rows = all_rows(insider)
        dep = [p for p, _, t in player_rows if t == "sabot.ledger:Account.CashDeposited"][1]
        oid = next(o for p, o, _ in player_rows if p == dep)
        name = next(n for n in store.played.players if str(account_uuid(n)) == oid)
        balance = led.get_account(name).balance if warm else None
        end_before = insider.last_position()
        CASES[case].tamper(insider, store)
        end = insider.last_position()
        assert end == end_before + 2
        with pytest.raises(FailedPrecondition):  # EvidenceBroken, or the balance it knows
            led.withdraw("cash-out", name, 777_777 + (balance or 0))
        with pytest.raises(EvidenceBroken):
            led.withdraw("cash-out-2", name, 1)  # its next save collides / its load breaks
        with pytest.raises(EvidenceBroken):
            led.deposit("after", store.played.players[2], 1)
        assert insider.last_position() == end  # nothing paid, nothing written
        assert led.writer_state()["active"] is False
        said = [r for r in caplog.records if r.levelno == logging.ERROR
                and "evidence chain broken: position" in r.getMessage()]
        assert len(said) == 1, [r.getMessage() for r in caplog.records]  # one line, once
    finally:
        led.close()


def test_a_writer_refuses_to_start_on_a_tampered_tail(store: Store) -> None:
    """Inserted after the last link while the server was stopped: its start refuses, naming
    the position (the head file's link is there; the walk from it finds what no link covers)."""
    first = CASES["insert a balanced deposit pair at the end"].tamper(Insider(store), store)
    with pytest.raises(ChainBroken, match=f"position {first}: stored after the last link"):
        open_ledger(store)


def back_in_time(s: Store, restore: Any) -> None:
    """Writes, a point to go back to, more writes; ``restore`` puts the store back there under
    the running writer: its next command stops it, naming the link it lost."""
    led = open_ledger(s)
    try:
        who = s.played.players[2]
        led.deposit("before-1", who, 3)
        mark = restore("mark")
        for k in range(5):
            led.deposit(f"lost-{k}", who, 10 + k)
        signed = read_head(s.head.read_text())
        restore("restore")
        insider = Insider(s)
        end = insider.last_position()
        with pytest.raises(EvidenceBroken, match=f"link {signed['seq']} is missing"):
            led.deposit("after", who, 1)
        state = led.writer_state()
        assert state["active"] is False and f"link {signed['seq']} is missing" in (
            state["evidence_broken"])
        assert insider.last_position() == end == mark  # nothing written on the older store
        with pytest.raises(EvidenceBroken):  # and nothing later either
            led.deposit("after-2", who, 1)
        assert read_head(s.head.read_text()) == signed  # never overwritten by a lower link
        history = (s.head.parent / (s.head.name + ".links")).read_text().splitlines()
        assert [read_head(line)["seq"] for line in history[-6:]] == list(
            range(signed["seq"] - 5, signed["seq"] + 1))  # the links it signed, kept
    finally:
        led.close()
    with pytest.raises(ChainBroken, match=f"signed link {signed['seq']}"):
        open_ledger(s)  # and a restart refuses the store


def test_a_sqlite_store_put_back_in_time_stops_the_writer(sqlite_template: Store,
                                                          tmp_path: Path) -> None:
    for s in copy_store(sqlite_template, tmp_path):
        back_in_time(s, SqliteRestore(s, tmp_path / "earlier.db"))


class SqliteRestore:
    """An online copy of the store (as a backup takes it), later put back in its place."""

    def __init__(self, s: Store, saved: Path) -> None:
        self.s, self.saved = s, saved
        self.path = s.url.removeprefix("sqlite:///")

    def __call__(self, step: str) -> int:
        src, dst = ((self.path, self.saved) if step == "mark" else (self.saved, self.path))
        a, b = sqlite3.connect(src), sqlite3.connect(dst)
        a.backup(b)
        a.close()
        b.close()
        return Insider(self.s).last_position()


class CutTheEnd:
    """The end deleted under the running writer (what a failover to a standby behind it, or
    a point-in-time recovery, leaves), as the owner past the append-only trigger."""

    def __init__(self, s: Store, guard: str) -> None:
        self.s, self.guard = s, guard
        self.mark = 0

    def __call__(self, step: str) -> int:
        insider = Insider(self.s, self.guard)
        if step == "mark":
            self.mark = insider.last_position()
        else:
            insider.delete_from(self.mark + 1)
        return self.mark


@pytest.mark.postgres
@pytest.mark.parametrize("guard", ["replica", "disable-trigger"])
def test_a_postgres_store_that_lost_its_end_stops_the_writer(
    postgres_template: Store, tmp_path: Path, guard: str
) -> None:
    for s in copy_store(postgres_template, tmp_path):
        back_in_time(s, CutTheEnd(s, guard))


def test_links_under_another_key_count_only_where_a_trusted_link_vouches_for_them(
    store: Store,
) -> None:
    """The insider's own key signs a well-chained batch at the end (a deposit for itself): the
    writer, whose head file names the link before it, refuses to start, naming that link. A
    writer under a new key (rotated) with the same head file starts, and loads and spends
    events signed under the old key: the previous hashes chain them to its head file's link."""
    end = Insider(store).last_position()
    head = read_head(store.head.read_text())
    insider = Ledger(LedgerConfig(store_url=store.url, seal_key=SEAL_KEY,
                                  chain_key=bytes([0x66]) * 32), games=LEDGER_GAMES)
    insider.deposit("mine", store.played.players[1], 500_000)
    insider.close()
    with pytest.raises(ChainBroken, match=rf"position {end + 4}: link {head['seq'] + 1} is "
                                          "signed by key .*, which this writer does not hold"):
        open_ledger(store)
    Insider(store).delete_from(end + 1)  # undo it: the store as the writer left it
    rotated = Ledger(LedgerConfig(store_url=store.url, seal_key=SEAL_KEY,
                                  chain_key=bytes([0x77]) * 32, chain_head=str(store.head)),
                                  games=LEDGER_GAMES)
    try:
        rich = store.played.players[0]
        balance = rotated.get_account(rich).balance  # its events: links under the old key
        assert rotated.withdraw("out", rich, 1_000).balance == balance - 1_000
        assert rotated.writer_state()["active"] is True
    finally:
        rotated.close()
