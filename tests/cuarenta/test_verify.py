"""``sabot-verify`` on an export holding Trente et Quarante shoes and Cuarenta matches (one won,
one in play): VERIFIED, every match played again from its hands' seeds by the verifier's own
code; a changed play, capture, deal or payout found at its position."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from regulator.play import CHAIN_PUBLIC, Player, make_ledger
from sabot_verify.__main__ import run
from sabot_verify.cuarenta import capture_sizes, check_capture, verify_matches

from services import topics as T
from services.bootstrap import ROUND_END
from services.regulator.checkpoint import public_key_bytes
from services.regulator.export import write_export
from services.regulator.notary import Notary
from services.regulator.source import Database, EventTable

from .support import Game, Referee, fund

REGULATOR = X25519PrivateKey.from_private_bytes(b"\x42" * 32)
NOTARY_KEY = Ed25519PrivateKey.from_private_bytes(b"\x07" * 32)


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], dict[str, str]]:
    url = f"sqlite:///{Path(tmp_path_factory.mktemp('verify')) / 'store.db'}"
    draw = random.Random(5).randbytes
    ledger, rng = make_ledger(url, 3, new_seed=lambda: draw(32),
                              regulator_key=REGULATOR.public_key().public_bytes_raw())
    ids: dict[str, str] = {}
    try:
        Player(ledger, rng, "t-fr", "francaise").shoe()
        ledger.open_table("ct", "mesa", "seed", {"commission_rate": "5%"}, game="cuarenta")
        ledger.open_table("ct4", "mesa-4", "seed", {"table_at_hand_end": "last_capturer"},
                          game="cuarenta")
        fund(ledger, ["ana", "beto", "carla", "dani"], 10_000)
        game = Game(ledger)
        won = game.open_match("o1", "mesa", "ana beto", 500).match
        Referee(game, won).finish()
        four = game.open_match("o4", "mesa-4", "ana beto carla dani", 200).match
        Referee(game, four, "f").finish()
        live = game.open_match("o2", "mesa", "ana beto", 500).match
        ref = Referee(game, live, "x")
        for _ in range(9):
            ref.step()
        ids = {"won": won.match_id, "four": four.match_id, "live": live.match_id}
    finally:
        ledger.close()
    db = Database(url)
    notary = Notary(db, EventTable(db), NOTARY_KEY, "sabot-test", ROUND_END)
    notary.sync()
    notary.checkpoint_now()
    buf = io.StringIO()
    write_export(buf, EventTable(Database(url)), notary, public_key_bytes(NOTARY_KEY.public_key()))
    return buf.getvalue().splitlines(), ids


def _verify(lines: list[str], **kw: Any) -> tuple[int, str]:
    out = io.StringIO()
    kw.setdefault("chain_keys", [CHAIN_PUBLIC])  # the operator's keys, pinned
    code = run(lines, checkpoint_key=public_key_bytes(NOTARY_KEY.public_key()), out=out, **kw)
    return code, out.getvalue()


def test_the_export_verifies(export: tuple[list[str], dict[str, str]]) -> None:
    lines, ids = export
    code, text = _verify(lines)
    assert code == 0, text
    assert f"OK   cuarenta match {ids['won']} (mesa): " in text and "(won; " in text
    assert f"OK   cuarenta match {ids['four']} (mesa-4): " in text
    assert f"OK   cuarenta match {ids['live']} (mesa): verified to hand 1, in play" in text
    assert "OK   coup" in text and "VERIFIED:" in text


def test_the_regulator_key_opens_the_hand_in_play(
        export: tuple[list[str], dict[str, str]], tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization

    lines, ids = export
    pem = REGULATOR.private_bytes(serialization.Encoding.PEM,
                                  serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption())
    code, text = _verify(lines, regulator_key=pem)
    assert code == 0, text
    # the deal and eight plays
    assert f"OK   cuarenta match {ids['live']} (mesa): 1 hands, 8 plays replayed (in play" in text


def _records(lines: list[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines[1:]]


def _seed_of(records: list[dict[str, Any]]) -> Any:
    seeds = {r["event"]["originator_id"]: r["event"]["state"]["seed"] for r in records
             if r.get("event") and r["event"]["topic"] == T.SHOE_CLOSED}
    return lambda shoe, _: bytes.fromhex(seeds[shoe]) if shoe in seeds else None


@pytest.mark.parametrize("what", ["card", "capture", "dealt", "payout", "turn"])
def test_a_change_is_found_at_its_position(export: tuple[list[str], dict[str, str]],
                                           what: str) -> None:
    lines, ids = export
    records = _records(lines)
    mine = [r for r in records if r.get("event")
            and r["event"]["originator_id"] == ids["won"]]
    topic = {"card": T.CUARENTA_MATCH_PLAYED, "capture": T.CUARENTA_MATCH_CAPTURED,
             "dealt": T.CUARENTA_MATCH_DEALT, "payout": T.CUARENTA_MATCH_MONEY_MOVED,
             "turn": T.CUARENTA_MATCH_PLAYED}[what]
    target = [r for r in mine if r["event"]["topic"] == topic][-1 if what == "payout" else 5]
    s = target["event"]["state"]
    if what == "card":
        s["card"] = "KS" if s["card"] != "KS" else "KH"
    elif what == "capture":
        s["kind"] = "caida_limpia"
    elif what == "dealt":
        s["cards"][2]["commitment"] = "00" * 32
    elif what == "payout":
        s["amount"] += 1
    else:
        s["turn"] += 1
    found = [v for v in verify_matches(records, _seed_of(records)) if ids["won"] in v.what]
    assert len(found) == 1 and not found[0].ok
    assert found[0].position == target["event"]["position"], found[0].detail
    # and the whole verifier says NOT VERIFIED at that position (the chain agrees)
    code, text = _verify([lines[0], *(json.dumps(r, sort_keys=True, separators=(",", ":"))
                                      for r in records)])
    assert code == 1 and f"first tampered position {target['event']['position']}" in text


def test_the_seeds_examples() -> None:
    """The verifier's own capture rules on seed 001's examples."""
    assert check_capture(["7C", "4D", "AS"], "7H", ["7C"]) == ["7C"]
    assert check_capture(["7C", "4D", "AS"], "7H", ["4D", "AS", "7C"]) is None
    table = ["2C", "3D", "6S", "7D", "JH", "KS"]
    assert check_capture(table, "5H", ["2C", "3D", "6S", "7D", "JH"]) is not None
    assert check_capture(table, "5H", ["2C", "3D", "6S", "7D", "JH", "KS"]) is None
    assert check_capture(table, "5H", ["2C", "3D"]) is None  # the run is taken whole
    assert check_capture(["AS", "7C", "JD", "QH"], "JS", ["JD", "QH"]) == ["JD"]
    assert check_capture(["AS", "7C", "JD", "QH"], "JS", ["AS", "7C"]) is None
    assert max(capture_sizes(table, "5H")) == 5
