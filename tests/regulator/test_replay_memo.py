"""What a replay remembers never hides a tampering made after it (SQLite and PostgreSQL).

A first replay of a coup checks its links' signatures and parses them into memos
(``chain._CHECKED``, ``chain._PARSED``, by the stored bytes); the rows are then changed behind
the ledger's back, and the same coup replayed again, in the same process, must name the change:
a forged link signature, an edited link body, an edited event of the coup, an edited event of
the shoe (its cut, an earlier coup's deal edited or deleted). Without the notary (only the
evidence chain can see it) and with it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg
import pytest

from services.bootstrap import REGULATOR_GAMES
from services.regulator.chain import pinned_keys
from services.regulator.replay import Replayer, ReplayVerdict, verdict
from services.regulator.source import Database, EventTable
from services.topics import CHAIN_LINKED, SHOE_COUP_DEALT, SHOE_CUT

from .conftest import PG_ADMIN, PG_DB, Played, fresh_pg_database, play, postgres_or_skip
from .play import CHAIN_PUBLIC


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Played]:
    """A fresh store (one shoe played, notarised) per test: the tests tamper with it."""
    if request.param == "sqlite":
        yield play(f"sqlite:///{tmp_path / 'store.db'}", [("t-m", "francaise", 1)], seed=13)
        return
    postgres_or_skip()
    url = fresh_pg_database(PG_DB)
    yield play(url, [("t-m", "francaise", 1)], seed=13)
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{PG_DB}" WITH (FORCE)')


def _table(p: Played) -> tuple[str, str]:
    return ("sabot_events", "notification_id") if p.url.startswith("postgres") else (
        "stored_events", "rowid")


def _rows(p: Played, where: str, params: tuple[Any, ...]) -> list[tuple[int, str, bytes]]:
    table, pos = _table(p)
    db = Database(p.url)
    try:
        return [(int(a), str(b), bytes(c)) for a, b, c in db.rows(
            f"SELECT {pos}, topic, state FROM {table} WHERE {where} ORDER BY {pos}", params)]
    finally:
        db.close()


def _rewrite(p: Played, position: int, state: bytes) -> None:
    """The row at ``position`` given other state bytes, past the append-only guards."""
    _past_the_guards(p, "UPDATE {table} SET state = ? WHERE {pos} = ?", (state, position))


def _delete(p: Played, position: int) -> None:
    """The row at ``position`` deleted, past the append-only guards."""
    _past_the_guards(p, "DELETE FROM {table} WHERE {pos} = ?", (position,))


def _past_the_guards(p: Played, statement: str, params: tuple[Any, ...]) -> None:
    table, pos = _table(p)
    sql = statement.format(table=table, pos=pos)
    if p.url.startswith("postgres"):
        with psycopg.connect(p.url) as conn:
            conn.execute("SET session_replication_role = replica")
            conn.execute(sql.replace("?", "%s"), params)
            conn.commit()
        return
    conn = sqlite3.connect(p.url.removeprefix("sqlite:///"))
    try:
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' "
                                    "AND tbl_name = ?", (table,)).fetchall():
            conn.execute(f'DROP TRIGGER "{name}"')
        conn.execute(sql, params)
        conn.commit()
    finally:
        conn.close()


def _coup_span(p: Played, coup: str) -> list[int]:
    db = Database(p.url)
    try:
        return [e.position for e in EventTable(db).by_originator(UUID(coup))]
    finally:
        db.close()


def _link_after(p: Played, position: int) -> tuple[int, bytes]:
    found = _rows(p, "topic = ? AND {pos} > ?".replace("{pos}", _table(p)[1]),
                  (CHAIN_LINKED, position))
    return found[0][0], found[0][2]


def _edit(state: bytes, change: Callable[[dict[str, Any]], None]) -> bytes:
    data = json.loads(state)
    change(data)
    return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()


def _forge_signature(data: dict[str, Any]) -> None:
    sig = bytearray(bytes.fromhex(data["signature"]))
    sig[5] ^= 0x01
    data["signature"] = sig.hex()


def _twice(p: Played, coup: str, tamper: Callable[[], int], *, notary: bool
           ) -> tuple[ReplayVerdict, ReplayVerdict, int]:
    """Replay ``coup`` (its verdict), tamper, replay it again with the same replayer."""
    db = Database(p.url)
    try:
        replayer = Replayer(EventTable(db), p.notary() if notary else None,
                            regulator_key=p.regulator, chain_keys=pinned_keys([CHAIN_PUBLIC]),
                            games=REGULATOR_GAMES)
        first = verdict(replayer.coup(coup))
        at = tamper()
        return first, verdict(replayer.coup(coup)), at
    finally:
        db.close()


def _tampers(p: Played, coup: str) -> dict[str, Callable[[], int]]:
    span = _coup_span(p, coup)

    def link_signature() -> int:
        at, state = _link_after(p, span[len(span) // 2])
        _rewrite(p, at, _edit(state, _forge_signature))
        return at

    def link_body() -> int:
        at, state = _link_after(p, span[0])
        _rewrite(p, at, _edit(state, lambda d: d.update(timestamp={
            "_type_": "datetime_iso", "_data_": "2027-01-01T00:00:00+00:00"})))
        return at

    def coup_event() -> int:
        at = span[len(span) // 2]
        state = _rows(p, f"{_table(p)[1]} = ?", (at,))[0][2]
        _rewrite(p, at, state.replace(b"}", b',"x":1}', 1) if b"}" in state else state + b" ")
        return at

    def shoe_cut() -> int:
        at, _topic, state = _rows(p, "topic = ?", (SHOE_CUT,))[0]
        _rewrite(p, at, _edit(state, lambda d: d.update(position=int(d["position"]) + 1)))
        return at

    def _earlier_deal() -> tuple[int, bytes]:
        """The deal of a coup before this one (where this coup's cards start)."""
        at, _topic, state = [r for r in _rows(p, "topic = ?", (SHOE_COUP_DEALT,))
                             if r[0] < span[0]][-1]
        return at, state

    def earlier_deal() -> int:
        at, state = _earlier_deal()
        _rewrite(p, at, _edit(state, lambda d: d.update(next_position=d["next_position"] + 1)))
        return at

    def earlier_deal_deleted() -> int:
        at, _state = _earlier_deal()
        _delete(p, at)
        return at

    return {"a forged link signature": link_signature, "an edited link body": link_body,
            "an edited event of the coup": coup_event, "an edited Shoe.Cut": shoe_cut,
            "an edited Shoe.CoupDealt of an earlier coup": earlier_deal,
            "a deleted Shoe.CoupDealt of an earlier coup": earlier_deal_deleted}


CASES = ["a forged link signature", "an edited link body", "an edited event of the coup",
         "an edited Shoe.Cut", "an edited Shoe.CoupDealt of an earlier coup",
         "a deleted Shoe.CoupDealt of an earlier coup"]


@pytest.mark.parametrize("notary", [False, True], ids=["chain-only", "notarised"])
@pytest.mark.parametrize("case", CASES)
def test_a_row_tampered_after_a_good_replay_is_found_by_the_next(
        store: Played, case: str, notary: bool) -> None:
    coup = store.coups[store.shoes[0]][1]
    first, second, at = _twice(store, coup, _tampers(store, coup)[case], notary=notary)
    assert first.identical, str(first)
    assert not second.identical, f"{case}: {second}"
    assert second.first_difference is not None
    if case != "an edited Shoe.Cut":  # a cut moved may first show as a re-dealt card
        assert second.first_difference.position == at, str(second)


def test_a_forged_signature_is_named_by_the_chain(store: Played) -> None:
    coup = store.coups[store.shoes[0]][1]
    first, second, at = _twice(store, coup, _tampers(store, coup)["a forged link signature"],
                               notary=False)
    assert first.identical
    d = second.first_difference
    assert d is not None and d.position == at
    assert d.what == f"evidence chain at position {at}" and "bad signature" in str(d.replayed)
