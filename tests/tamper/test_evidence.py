"""The evidence chain itself: two racing writers do not fork it, a writer refuses a store that
lost its end, a snapshot that does not match its link is refused, keys rotate, stored states
are canonical, evidence off writes no links, and a chain may begin on a store already in use."""

from __future__ import annotations

import itertools
import json
import logging
import sqlite3
import threading
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from domain.errors import FailedPrecondition
from services.bootstrap import LEDGER_GAMES
from services.ledger.api import Ledger
from services.ledger.config import LedgerConfig
from services.ledger.errors import Conflict
from services.ledger.evidence import (
    CHAIN_ID,
    LINKED_TOPIC,
    ChainBroken,
    Link,
    canonical,
    read_head,
)
from services.ledger.ids import account_uuid
from services.regulator.chain import chain_problems, pinned_keys
from services.regulator.source import Database, EventTable

from .conftest import Insider, Store

KEY = bytes(range(32))
A = bytes([0xA1]) * 32
B = bytes([0xB2]) * 32


def public(raw: bytes) -> bytes:
    return Ed25519PrivateKey.from_private_bytes(raw).public_key().public_bytes_raw()


def ledger(url: str, chain_key: bytes | None = A, **kw: Any) -> Ledger:
    return Ledger(LedgerConfig(store_url=url, seal_key=KEY, chain_key=chain_key, **kw),
                  games=LEDGER_GAMES)


def links(url: str) -> list[tuple[int, Link]]:
    db = Database(url)
    try:
        return [(e.position, Link.parse(e.state, e.position)) for e in EventTable(db).iterate()
                if e.topic == LINKED_TOPIC]
    finally:
        db.close()


def problems(url: str, keys: list[bytes] | None = None) -> list[Any]:
    db = Database(url)
    try:
        return chain_problems(EventTable(db), [(1, 10**12)], pinned_keys(keys) if keys else None)
    finally:
        db.close()


def _past_the_lease(led: Ledger) -> None:
    """Make a standby decide and save as if it held the store's writer lease (a writer that
    has not noticed it lost it, or a store without a lease): it races the holder."""
    led._writer.lease = None
    led._writer.active = True
    recorder: Any = led.app.recorder
    if hasattr(recorder, "fence"):
        recorder.fence = None  # PostgreSQL: its saves no longer pass the lease's fence


def test_two_racing_writers_do_not_fork_the_chain(store_url: str) -> None:
    """Two writers on one store save at once (the lease keeps one active writer; here the
    second is made to write past it): they write different accounts, so only their links
    collide; the loser of each collision decides again on the store's head. One chain, every
    link in place, every deposit stored once."""
    one, two = ledger(store_url), ledger(store_url)
    _past_the_lease(two)
    one.open_account("o1", "ana")
    two.open_account("o2", "bea")
    conflicts = [0]
    collided = [0]  # saves that failed on the chain's key (the loser reads the head again)
    for led in (one, two):
        chain = led.app.evidence
        assert chain is not None
        forget = chain.forget

        def counted(forget: Any = forget) -> None:
            collided[0] += 1
            forget()

        chain.forget = counted  # type: ignore[method-assign]

    def deposits(who: Ledger, account: str) -> None:
        for i in range(40):
            while True:  # a client retries with the same request id
                try:
                    who.deposit(f"{account}-{i}", account, 10)
                    break
                except Conflict:
                    conflicts[0] += 1

    threads = [threading.Thread(target=deposits, args=(one, "ana")),
               threading.Thread(target=deposits, args=(two, "bea"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert one.get_account("ana").balance == 400 and two.get_account("bea").balance == 400
    assert collided[0] > 0  # they did race
    one.close()
    two.close()
    found = links(store_url)
    assert [link.seq for _, link in found] == list(range(1, len(found) + 1))
    for (_, a), (_, b) in itertools.pairwise(found):
        assert b.body["prev"] == a.hash.hex() and b.first == a.first + a.count
    assert problems(store_url, [public(A)]) == []


def test_a_writer_refuses_a_store_that_lost_its_end(store: Store) -> None:
    Ledger(LedgerConfig(store_url=store.url, seal_key=KEY, chain_head=str(store.head)),
           games=LEDGER_GAMES).close()
    Insider(store).delete_from(Insider(store).last_position() - 39)
    with pytest.raises(ChainBroken, match="refusing to write"):
        Ledger(LedgerConfig(store_url=store.url, seal_key=KEY, chain_head=str(store.head)),
               games=LEDGER_GAMES)
    # a rewritten last link is refused too
    other = store.dir / "other.json"
    head = read_head(store.head.read_text())
    head.update(seq=3, link="00" * 32)
    other.write_text(json.dumps(head))
    with pytest.raises(ChainBroken, match="rewritten"):
        Ledger(LedgerConfig(store_url=store.url, seal_key=KEY, chain_head=str(other)),
               games=LEDGER_GAMES)


def test_an_edited_snapshot_is_refused_and_reported(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    from regulator.play import CHAIN_KEY

    rich = store.played.players[0]
    oid = str(account_uuid(rich))
    config = LedgerConfig(store_url=store.url, seal_key=KEY, chain_key=CHAIN_KEY)
    honest = Ledger(config, games=LEDGER_GAMES)
    balance = honest.get_account(rich).balance
    assert honest.app.snapshots is not None
    assert not getattr(honest.app.snapshots, "refused", None)  # the genuine one is used
    honest.close()
    insider = Insider(store)
    (version,) = [v for o, v, t, _ in insider.snapshot_rows()
                  if o == oid and t == "sabot.ledger:Snapshot"]
    insider.edit_snapshot(oid, version, lambda s: s["state"].update(
        balance=s["state"]["balance"] + 1_000_000_000))
    caplog.set_level(logging.ERROR, "services.ledger.evidence")
    reopened = Ledger(config, games=LEDGER_GAMES)
    try:
        assert reopened.get_account(rich).balance == balance  # from its events
        with pytest.raises(FailedPrecondition):
            reopened.withdraw("cash-out", rich, 1_000_000_000)
        refused = reopened.app.snapshots.refused  # type: ignore[union-attr]
        assert refused and refused[-1][1] == version and "edited" in refused[-1][2]
        assert any("snapshot" in r.message and "refused" in r.message for r in caplog.records)
    finally:
        reopened.close()


def test_keys_rotate_with_pinned_keys(sqlite_store_url: str) -> None:
    first = ledger(sqlite_store_url, A)
    first.open_account("o1", "ana")
    first.deposit("d1", "ana", 5)
    first.close()
    second = ledger(sqlite_store_url, B)  # the key rotated: its first link names its key
    second.deposit("d2", "ana", 7)
    second.close()
    found = links(sqlite_store_url)
    rotated = next((p, link) for p, link in found if link.key_id != found[0][1].key_id)
    assert rotated[1].body["public_key"] == public(B).hex()
    assert "public_key" not in found[1][1].body  # only where a key begins
    assert problems(sqlite_store_url, [public(A), public(B)]) == []
    only_a = problems(sqlite_store_url, [public(A)])
    assert [p.position for p in only_a] == [rotated[0]]
    assert "not a trusted one" in only_a[0].message
    # with nothing pinned, only the first link's key is trusted: the new key must be pinned
    assert [p.position for p in problems(sqlite_store_url)] == [rotated[0]]


def test_every_stored_state_is_its_canonical_json(store: Store) -> None:
    """The verifier hashes an exported event's state as canonical JSON: the ledger writes
    exactly those bytes (keys sorted, no spaces, UTF-8)."""
    n = 0
    db = Database(store.url)
    for ev in EventTable(db).iterate():
        assert canonical(json.loads(ev.state)) == ev.state, (ev.position, ev.topic)
        n += 1
    db.close()
    assert n > 3000


def test_evidence_off_writes_no_links(sqlite_store_url: str) -> None:
    off = ledger(sqlite_store_url, evidence=False)
    off.open_account("o1", "ana")
    off.deposit("d1", "ana", 5)
    off.close()
    assert links(sqlite_store_url) == []


def test_a_chain_can_begin_on_a_store_in_use(sqlite_store_url: str) -> None:
    """Events written before the chain (evidence off, or an older version) stay outside it:
    the first link records the log's last position then, and everything after is chained."""
    off = ledger(sqlite_store_url, evidence=False)
    off.open_account("o1", "ana")
    off.deposit("d1", "ana", 5)
    off.close()
    db = Database(sqlite_store_url)
    before = EventTable(db).positions()[-1]
    db.close()
    on = ledger(sqlite_store_url)
    on.deposit("d2", "ana", 7)
    on.close()
    (pos, genesis), = links(sqlite_store_url)
    assert genesis.seq == 1 and genesis.body["after"] == before and genesis.first == 0
    assert problems(sqlite_store_url, [public(A)]) == []
    path = sqlite_store_url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:  # an event inserted after the chain began is not
        conn.execute("INSERT INTO stored_events VALUES (?, ?, ?, ?)",
                     (CHAIN_ID.hex[:-1] + "f", 1, "sabot.ledger:Account.Opened", b"{}"))
    assert [p.position for p in problems(sqlite_store_url, [public(A)])] == [pos + 1]


def test_the_head_file_survives_a_torn_write(sqlite_store_url: str, tmp_path: Any) -> None:
    """The head is written by turns into two fixed slots: a crash that tears the latest write
    leaves the one before, which the store's chain still holds."""
    head = tmp_path / "head"
    writer = ledger(sqlite_store_url, chain_head=str(head))
    writer.open_account("o1", "ana")
    for i in range(3):
        writer.deposit(f"d{i}", "ana", 1)
    writer.close()
    latest = read_head(head.read_text())
    raw = bytearray(head.read_bytes())
    slot = (int(latest["seq"]) % 2) * 256
    raw[slot:slot + 40] = b"\x00" * 40  # torn
    head.write_bytes(bytes(raw))
    assert int(read_head(head.read_text())["seq"]) == int(latest["seq"]) - 1
    ledger(sqlite_store_url, chain_head=str(head)).close()  # still accepted
