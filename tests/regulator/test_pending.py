"""A shoe in play in the export (issue 12 item 8): held for the chain and the money, listed as
pending, its card checks deferred; ``sabot-verify`` answers VERIFIED with the pending list
(exit 0), checks it with the regulator's key, still fails a tampered event in it at its
position, and verifies it whole once it has closed. On SQLite and PostgreSQL."""

from __future__ import annotations

import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from cryptography.hazmat.primitives import serialization
from sabot_verify.__main__ import run

from services.regulator.export import PENDING_CLOSED_LATER, PENDING_IN_PLAY, write_export

from .conftest import PG_ADMIN, Played, fresh_pg_database, play, postgres_or_skip, sabot
from .play import CHAIN_PUBLIC, make_ledger


def play_live_sqlite(where: Path) -> Played:
    return play(f"sqlite:///{where / 'live.db'}", [("t-live", "francaise", 1)], seed=23,
                in_play=2)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def live(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Played]:
    """A live store: one shoe closed, a second in play with two coups (fresh per test)."""
    if request.param == "sqlite":
        yield play_live_sqlite(tmp_path)
        return
    postgres_or_skip()
    name = f"sabot_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    yield play(fresh_pg_database(name), [("t-live", "francaise", 1)], seed=23, in_play=2)
    import psycopg

    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def export(p: Played, **kw: Any) -> list[str]:
    buf = io.StringIO()
    write_export(buf, p.events(), p.notary(), p.public_key, **kw)
    return buf.getvalue().splitlines()


def verify(lines: list[str], **kw: Any) -> tuple[int, str, dict[str, Any]]:
    out = io.StringIO()
    summary: dict[str, Any] = {}
    kw.setdefault("chain_keys", [CHAIN_PUBLIC])  # the operator's keys, pinned
    code = run(lines, checkpoint_key=kw.pop("checkpoint_key"), out=out, summary=summary, **kw)
    return code, out.getvalue(), summary


def regulator_pem(p: Played) -> bytes:
    return p.regulator.private_bytes(serialization.Encoding.PEM,
                                     serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption())


def coups_of(p: Played, sid: str) -> int:
    return len(p.coups[sid])


def test_a_live_export_verifies_with_the_shoe_in_play_pending(live: Played) -> None:
    p = live
    assert p.open_shoe is not None
    lines = export(p)
    header, end = json.loads(lines[0]), json.loads(lines[-1])
    # every existing field kept; the shoe in play listed apart, with what it holds so far
    assert header["selection"] == {"shoes": p.shoes} and header["coverage"] == "log"
    assert header["pending"] == [{
        "shoe_id": p.open_shoe, "table_id": "t-live", "game": "trente-et-quarante",
        "position": header["pending"][0]["position"], "coups": 2, "settled": 2,
        "reason": PENDING_IN_PLAY,
    }]
    assert end["pending"] == 1
    # its events are all there (chain and money continuity): every coup's Opened
    opened = {json.loads(x)["event"]["originator_id"] for x in lines
              if '"topic":"sabot.ledger:Coup.Opened"' in x}
    assert set(p.coups[p.open_shoe]) <= opened
    code, text, summary = verify(lines, checkpoint_key=p.public_key)
    assert code == 0, text
    last = text.strip().splitlines()[-1]
    assert last.startswith("VERIFIED:") and "1 shoe(s) pending" in last, text
    assert f"{coups_of(p, p.shoes[0])} coups" in last
    assert "FAIL" not in text and "OK   evidence chain" in text and "OK   money" in text
    pending = [ln for ln in text.splitlines() if ln.startswith("PENDING")]
    assert pending == [
        f"PENDING shoe {p.open_shoe} (table t-live, trente-et-quarante): 2 coups so far "
        "(2 settled); in play: seed not revealed until Shoe.Closed; card checks deferred "
        "(give --regulator-key to open the escrowed seed)"]
    assert summary["verdict"] == "VERIFIED" and summary["exit"] == 0
    assert [x["shoe_id"] for x in summary["pending"]] == [p.open_shoe]
    assert summary["pending"][0]["coups"] == 2 and summary["failures"] == []
    assert summary["first_tampered_position"] is None
    # with the regulator's key, the shoe in play is checked too, so far: nothing pending
    code, text, summary = verify(lines, checkpoint_key=p.public_key,
                                 regulator_key=regulator_pem(p))
    assert code == 0, text
    assert "PENDING" not in text and summary["pending"] == []
    assert f"OK   shoe {p.open_shoe}: commitment, shuffle and cut verified (2 coups); in play: " \
        "checked with the escrowed seed, so far" in text
    assert text.count("OK   coup") == coups_of(p, p.shoes[0]) + 2
    # an export of the shoe in play alone: the same answer
    lines = export(p, shoe_ids=[p.open_shoe])
    assert [x["shoe_id"] for x in json.loads(lines[0])["pending"]] == [p.open_shoe]
    code, text, summary = verify(lines, checkpoint_key=p.public_key)
    assert code == 0 and "1 shoe(s) pending" in text, text
    code, text, _ = verify(lines, checkpoint_key=p.public_key, regulator_key=regulator_pem(p))
    assert code == 0 and text.count("OK   coup") == 2, text


def _event_table(p: Played) -> tuple[str, str]:
    return ("stored_events", "rowid") if p.url.startswith("sqlite") else (
        "sabot_events", "notification_id")


def edit_a_card_in_play(p: Played) -> int:
    """An insider edits a card of the shoe in play (past the append-only guard)."""
    assert p.open_shoe is not None
    cid = p.coups[p.open_shoe][1]
    (pos,) = [e.position for e in p.events().by_originator(UUID(cid))
              if e.topic == "sabot.ledger:Coup.CardDealt"][:1]
    table, col = _event_table(p)
    if p.url.startswith("sqlite"):
        with sqlite3.connect(p.url.removeprefix("sqlite:///")) as conn:
            for (trigger,) in conn.execute(  # the append-only guard, dropped by the insider
                    "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?",
                    (table,)).fetchall():
                conn.execute(f'DROP TRIGGER "{trigger}"')
            (state,) = conn.execute(f"SELECT state FROM {table} WHERE {col} = ?",
                                    (pos,)).fetchone()
            conn.execute(f"UPDATE {table} SET state = ? WHERE {col} = ?",
                         (_changed(bytes(state)), pos))
        return pos
    import psycopg

    with psycopg.connect(p.url) as conn:
        row = conn.execute(f"SELECT state FROM {table} WHERE {col} = %s", (pos,)).fetchone()
        assert row is not None
        conn.execute("SET session_replication_role = replica")
        conn.execute(f"UPDATE {table} SET state = %s WHERE {col} = %s",
                     (_changed(bytes(row[0])), pos))
        conn.commit()
    return pos


def _changed(state: bytes) -> bytes:
    st = json.loads(state)
    st["code"] = "KH" if st["code"] != "KH" else "QS"
    return json.dumps(st, separators=(",", ":"), sort_keys=True).encode()


def test_a_tampered_event_in_the_shoe_in_play_fails_at_its_position(live: Played) -> None:
    p = live
    pos = edit_a_card_in_play(p)
    for kw in ({}, {"shoe_ids": [p.open_shoe]}):
        lines = export(p, **kw)
        code, text, summary = verify(lines, checkpoint_key=p.public_key)
        assert code == 1, text
        assert text.strip().splitlines()[-1] == f"NOT VERIFIED; first tampered position {pos}"
        assert f"FAIL position {pos} (leaf " in text  # its notarised hash catches it
        assert summary["verdict"] == "NOT VERIFIED" and summary["first_tampered_position"] == pos
        assert [x["shoe_id"] for x in summary["pending"]] == [p.open_shoe]  # still in play
        # the regulator's key changes nothing to that
        code, text, _ = verify(lines, checkpoint_key=p.public_key, regulator_key=regulator_pem(p))
        assert code == 1 and text.strip().endswith(f"first tampered position {pos}"), text


def close_the_shoe(p: Played) -> None:
    """The croupier closes the shoe in play (its seed revealed in Shoe.Closed)."""
    assert p.open_shoe is not None
    ledger, _ = make_ledger(p.url, seed=91)
    try:
        ledger.close_shoe("late-close-1", p.open_shoe)
    finally:
        ledger.close()


def test_once_closed_a_new_export_verifies_the_shoe_whole(live: Played) -> None:
    p = live
    assert p.open_shoe is not None
    close_the_shoe(p)
    # anchored before the close (the notary has not seen it yet): still pending, and said why
    lines = export(p)
    header = json.loads(lines[0])
    assert header["selection"]["shoes"] == p.shoes
    assert [(x["shoe_id"], x["reason"]) for x in header["pending"]] == [
        (p.open_shoe, PENDING_CLOSED_LATER)]
    code, text, _ = verify(lines, checkpoint_key=p.public_key)
    assert code == 0 and "1 shoe(s) pending" in text, text
    # a new anchor past the close: the shoe is verified whole, nothing pending
    notary = p.notary()
    notary.sync()
    notary.checkpoint_now()
    lines = export(p)
    header = json.loads(lines[0])
    assert header["selection"]["shoes"] == [*p.shoes, p.open_shoe]
    assert header["pending"] == [] and json.loads(lines[-1])["pending"] == 0
    code, text, summary = verify(lines, checkpoint_key=p.public_key)
    assert code == 0, text
    assert "PENDING" not in text and summary["pending"] == []
    assert text.count("OK   coup") == coups_of(p, p.shoes[0]) + 2
    assert f"OK   shoe {p.open_shoe}: commitment, shuffle and cut verified (2 coups)\n" in text


@pytest.fixture
def live_sqlite(tmp_path: Path) -> Played:
    """The live store on SQLite alone (fresh per test)."""
    return play_live_sqlite(tmp_path)


def test_the_command_line_exit_codes(live_sqlite: Played, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """``sabot export`` then ``sabot-verify``: 0 for VERIFIED with a shoe pending (listed on
    stdout, and in ``--format json``), 1 for NOT VERIFIED, 2 for a usage error. On SQLite
    alone: the command line is the same on both stores; the export is tested above on both."""
    p = live_sqlite
    assert p.url.startswith("sqlite")
    key = tmp_path / "op.key"
    key.write_bytes(p.key.private_bytes(serialization.Encoding.PEM,
                                        serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption()))
    out = tmp_path / "export.jsonl"
    assert sabot("export", "--store", p.url, "--key", str(key), "-o", str(out), "--quiet") == 0
    err = capsys.readouterr().err
    assert "1 shoe in play" in err and p.open_shoe in err, err
    beside = Path(sys.executable).parent / "sabot-verify"
    cmd = str(beside) if beside.exists() else shutil.which("sabot-verify") or ""
    assert cmd, "the sabot-verify console script is installed"
    pub = p.public_key.hex()

    def sabot_verify(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([cmd, *argv], capture_output=True, text=True, timeout=120)

    pinned = ("--checkpoint-key", pub, "--chain-public-key", CHAIN_PUBLIC.hex())
    done = sabot_verify(str(out), *pinned, "-v")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"PENDING shoe {p.open_shoe}" in done.stdout
    done = sabot_verify(str(out), *pinned, "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads(done.stdout)
    assert doc["verdict"] == "VERIFIED" and doc["exit"] == 0
    assert [x["shoe_id"] for x in doc["pending"]] == [p.open_shoe]
    assert doc["report"][-1].startswith("VERIFIED:")
    # a tampered line: NOT VERIFIED, exit 1, in JSON too
    lines = out.read_text().splitlines()
    i = next(i for i, x in enumerate(lines) if '"topic":"sabot.ledger:Coup.CardDealt"' in x
             and p.coups[p.open_shoe][0] in x)
    rec = json.loads(lines[i])
    rec["event"]["state"]["code"] = "KH" if rec["event"]["state"]["code"] != "KH" else "QS"
    lines[i] = json.dumps(rec)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    done = sabot_verify(str(bad), *pinned, "--format", "json")
    assert done.returncode == 1, done.stdout + done.stderr
    doc = json.loads(done.stdout)
    assert doc["verdict"] == "NOT VERIFIED" and doc["first_tampered_position"] == rec["position"]
    assert sabot_verify(str(out), "--format", "yaml").returncode == 2


def test_the_per_shoe_check_is_chosen_by_game() -> None:
    """Trente et Quarante's is built in; another game's module registers its own."""
    from sabot_verify import shoes

    assert shoes.game_check("trente-et-quarante") is shoes.trente_et_quarante
    assert shoes.game_check("no_such_game") is None
    assert shoes.game_check("__main__") is None

    def fake(ctx: shoes.ShoeContext) -> list[shoes.Verdict]:
        return [shoes.Verdict(f"shoe {ctx.shoe_id}", True)]

    shoes.register_game("a-test-game", fake)
    try:
        assert shoes.game_check("a-test-game") is fake
    finally:
        del shoes.GAMES["a-test-game"]


def test_a_games_own_shoe_check_is_not_overridden() -> None:
    import sabot_verify.__main__  # noqa: F401  (registers the fallbacks)
    from sabot_verify import shoes, treinta_y_una

    assert shoes.GAMES["treinta-y-una"] is treinta_y_una._shoe_check
