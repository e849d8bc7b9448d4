"""The acceptance test of issues 13 and 14: one ledger holding all three games (a Trente et
Quarante shoe played to its close, Treinta y Una rounds, a whole Cuarenta match), on SQLite and
PostgreSQL. The regulator's replay of every shoe, round and match answers identical; the export
``sabot-verify`` reads answers VERIFIED with every game counted; and one stored event changed
per game (a Trente et Quarante card, a Treinta y Una card, a Cuarenta play), past the
append-only guard as an insider would, is NOT VERIFIED at that event's position."""

from __future__ import annotations

import json
import os
import random
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sabot_verify.integrity import parse
from sabot_verify.treinta_y_una import round_shoes

from services import topics as T
from services.bootstrap import REGULATOR_GAMES
from services.cuarenta.replay import replay_match
from services.regulator.replay import Replayer, verdict
from tests.cuarenta.support import Game, Referee, fund
from tests.treinta_y_una.support import Croupier, fund_players, game, open_table

from .conftest import PG_ADMIN, Played, fresh_pg_database, postgres_or_skip, regulator_key
from .play import Player, make_ledger
from .test_pending import export, verify

ROUNDS = 2


@dataclass
class Three(Played):
    """What the play left: the shoe, the rounds' shoes and the match."""

    match: str = ""
    rounds: list[str] = field(default_factory=list)  # Treinta y Una's


def _play(url: str) -> Three:
    reg = regulator_key()
    draw = random.Random(47).randbytes
    ledger, rng = make_ledger(url, 41, new_seed=lambda: draw(32),
                              regulator_key=reg.public_key().public_bytes_raw())
    out = Three(url, Ed25519PrivateKey.from_private_bytes(bytes([41]) * 32), reg)
    try:
        sid, coups = Player(ledger, rng, "t-fr", "francaise").shoe()
        out.shoes.append(sid)
        out.coups[sid] = coups
        open_table(ledger, "tyu-1", commission="5%")
        fund_players(ledger)
        croupier = Croupier(ledger, game(ledger))
        for _ in range(ROUNDS):
            view = croupier.play()
            assert view.phase == "settled"
            out.rounds.append(view.round_id)
        ledger.open_table("ct", "mesa", "seed", {"commission_rate": "5%"}, game="cuarenta")
        fund(ledger, ["eva", "fede"], 10_000)
        cuarenta = Game(ledger)
        m = cuarenta.open_match("o1", "mesa", "eva fede", 500).match
        assert Referee(cuarenta, m).finish().phase == "over"
        out.match = m.match_id
    finally:
        ledger.close()
    notary = out.notary()
    signed = notary.sync()  # a checkpoint at every game's round end, none by hand
    assert [c.coup for c in signed] == [*coups, *out.rounds, out.match]
    notary.checkpoint_now()  # the whole log's, for the export's anchor
    return out


@pytest.fixture(scope="module",
                params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def three(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[Three]:
    if request.param == "sqlite":
        yield _play(f"sqlite:///{tmp_path_factory.mktemp('three') / 'store.db'}")
        return
    postgres_or_skip()
    name = f"sabot_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    try:
        yield _play(fresh_pg_database(name))
    finally:
        import psycopg

        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _closed_round_shoes(p: Three) -> list[str]:
    exp = parse(export(p))
    closed = {r["event"]["originator_id"] for r in exp.events
              if (r.get("event") or {}).get("topic") == T.SHOE_CLOSED}
    return sorted(s for s in round_shoes(exp.events) if s in closed)


def test_every_shoe_round_and_match_replays_identical(three: Three) -> None:
    replayer = Replayer(three.events(), three.notary(), games=REGULATOR_GAMES)
    rounds = _closed_round_shoes(three)
    assert len(rounds) == ROUNDS
    for sid in [*three.shoes, *rounds]:
        v = verdict(replayer.shoe(sid))
        assert v.identical and v.steps > 20, f"{sid}: {v}"
    v = verdict(replay_match(three.events(), three.match))
    assert v.identical and v.steps > 100, str(v)


def test_the_export_of_all_three_games_verifies(three: Three) -> None:
    code, text, summary = verify(export(three), checkpoint_key=three.public_key)
    assert code == 0, text
    assert summary["verdict"] == "VERIFIED" and summary["pending"] == [], text
    assert "FAIL" not in text and "PENDING" not in text
    sid = three.shoes[0]
    assert f"OK   shoe {sid}: commitment, shuffle and cut verified " \
           f"({len(three.coups[sid])} coups)" in text
    assert text.count("OK   coup") == len(three.coups[sid])
    assert text.count("OK   treinta y una round") == ROUNDS
    assert text.count("OK   cuarenta match") == 1
    assert f"OK   cuarenta match {three.match} (mesa): " in text and "(won; " in text
    assert text.strip().splitlines()[-1].startswith("VERIFIED:")


def _stored(p: Played) -> tuple[str, str]:
    return ("stored_events", "rowid") if p.url.startswith("sqlite") else (
        "sabot_events", "notification_id")


def _edited(state: bytes, change: Callable[[dict[str, Any]], None]) -> bytes:
    st = json.loads(state)
    change(st)
    return json.dumps(st, separators=(",", ":"), sort_keys=True).encode()


def _tamper_and_verify(p: Three, tmp_path: Path, pos: int,
                       change: Callable[[dict[str, Any]], None]) -> tuple[int, str]:
    """The insider's UPDATE of the event at ``pos`` (SQLite: in a copy of the store, its guard
    triggers dropped; PostgreSQL: the triggers off as the owner, put back after), then the
    export and the verifier's answer."""
    table, col = _stored(p)
    if p.url.startswith("sqlite"):
        tmp_path.mkdir(parents=True, exist_ok=True)
        copy = tmp_path / "tampered.db"
        with sqlite3.connect(p.url.removeprefix("sqlite:///")) as src, \
                sqlite3.connect(copy) as dst:
            src.backup(dst)  # the WAL's pages too
        src.close()
        dst.close()
        with sqlite3.connect(copy) as conn:
            for (trigger,) in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?",
                    (table,)).fetchall():
                conn.execute(f'DROP TRIGGER "{trigger}"')
            (state,) = conn.execute(f"SELECT state FROM {table} WHERE {col} = ?",
                                    (pos,)).fetchone()
            conn.execute(f"UPDATE {table} SET state = ? WHERE {col} = ?",
                         (_edited(bytes(state), change), pos))
        conn.close()
        tampered = Played(f"sqlite:///{copy}", p.key, p.regulator)
        code, text, _ = verify(export(tampered), checkpoint_key=p.public_key)
        return code, text
    import psycopg

    def put(conn: psycopg.Connection[Any], state: bytes) -> None:
        conn.execute("SET session_replication_role = replica")
        conn.execute(f"UPDATE {table} SET state = %s WHERE {col} = %s", (state, pos))
        conn.commit()

    with psycopg.connect(p.url) as conn:
        row = conn.execute(f"SELECT state FROM {table} WHERE {col} = %s", (pos,)).fetchone()
        assert row is not None
        original = bytes(row[0])
        put(conn, _edited(original, change))
        try:
            code, text, _ = verify(export(p), checkpoint_key=p.public_key)
        finally:
            put(conn, original)
    return code, text


def _position(p: Three, originator: str, topic: str, n: int = 0) -> int:
    return [e.position for e in p.events().by_originator(UUID(originator))
            if e.topic == topic][n]


def _card(field: str, other: str, instead: str) -> Callable[[dict[str, Any]], None]:
    def change(st: dict[str, Any]) -> None:
        st[field] = other if st[field] != other else instead
    return change


def test_a_changed_card_or_play_of_each_game_is_found_at_its_position(
        three: Three, tmp_path: Path) -> None:
    sid = three.shoes[0]
    exp = parse(export(three))
    drawn = next(r["event"] for r in exp.events
                 if (r.get("event") or {}).get("topic", "").endswith("TreintaYUnaRound.CardDrawn"))
    cases = {
        "trente et quarante card": (_position(three, three.coups[sid][3], T.COUP_CARD_DEALT, 1),
                                    _card("code", "KH", "QS")),
        "treinta y una card": (drawn["position"], _card("code", "7O", "6O")),
        "cuarenta play": (_position(three, three.match, T.CUARENTA_MATCH_PLAYED, 5),
                          _card("card", "KS", "KH")),
    }
    for what, (pos, change) in cases.items():
        code, text = _tamper_and_verify(three, tmp_path / what.replace(" ", "-"), pos, change)
        assert code == 1, f"{what}: {text}"
        last = text.strip().splitlines()[-1]
        assert last == f"NOT VERIFIED; first tampered position {pos}", f"{what}: {text}"
    # the store itself is untouched (PostgreSQL: put back): it still verifies
    code, text, _ = verify(export(three), checkpoint_key=three.public_key)
    assert code == 0, text
