"""The regulator's view of Treinta y Una: an export holding both games, every round recomputed
by the standalone verifier (ops/sabot_verify/treinta_y_una.py) from its shoe's seed, and a
changed card found at its position."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sabot_verify.integrity import parse
from sabot_verify.proofs import load_x25519, open_escrow
from sabot_verify.treinta_y_una import lot_index, round_shoes, value, verify_rounds

from services.bootstrap import REGULATOR_GAMES
from services.regulator.export import write_export
from tests.regulator.conftest import Played, regulator_key
from tests.regulator.play import CHAIN_PUBLIC, Player, make_ledger
from tests.treinta_y_una.support import Croupier, fund_players, game, open_table


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Played:
    path: Path = tmp_path_factory.mktemp("tyu-verify") / "store.db"
    url = f"sqlite:///{path}"
    reg = regulator_key()
    ledger, rng = make_ledger(url, 31, regulator_key=reg.public_key().public_bytes_raw())
    out = Played(url, Ed25519PrivateKey.from_private_bytes(bytes([31]) * 32), reg)
    try:
        teq = Player(ledger, rng, "t-fr", "francaise")
        sid = teq.open_shoe()
        for _ in range(3):
            teq.coup()
        ledger.close_shoe(teq.rid(), sid)
        out.shoes.append(sid)
        open_table(ledger, "tyu-1", commission="5%")
        fund_players(ledger)
        croupier = Croupier(ledger, game(ledger))
        for _ in range(4):
            croupier.play()
        # one round left in play: its seed is sealed, escrowed to the regulator
        view = croupier.stakes(croupier.open())
        croupier.tyu.deal("in-play-deal", view.round_id)
    finally:
        ledger.close()
    notary = out.notary()
    notary.sync()
    notary.checkpoint_now()
    return out


def _export(p: Played) -> list[str]:
    buf = io.StringIO()
    write_export(buf, p.events(), p.notary(), p.public_key)
    return buf.getvalue().splitlines()


def _seeds(exp: Any, reg: Any = None) -> Any:
    def seed_of(shoe_id: str, shuffled: dict[str, Any]) -> bytes | None:
        for r in exp.events:
            e = r.get("event") or {}
            if e.get("originator_id") == shoe_id and e.get("topic", "").endswith("Shoe.Closed"):
                return bytes.fromhex(e["state"]["seed"])
        if reg is not None and shuffled.get("escrowed_seed"):
            return open_escrow(bytes.fromhex(shuffled["escrowed_seed"]), UUID(shoe_id), reg)
        return None

    return seed_of


def test_every_round_verifies_and_the_one_in_play_needs_the_regulator(played: Played) -> None:
    exp = parse(_export(played))
    verdicts = verify_rounds(exp.events, _seeds(exp))
    assert len(verdicts) == 5
    assert all(v.ok for v in verdicts), [v for v in verdicts if not v.ok]
    assert sum("stakes settled" in v.detail for v in verdicts) == 4
    assert "not checked" in verdicts[-1].detail
    pem = played.regulator.private_bytes(serialization.Encoding.PEM,
                                         serialization.PrivateFormat.PKCS8,
                                         serialization.NoEncryption())
    keyed = verify_rounds(exp.events, _seeds(exp, load_x25519(pem)))
    assert all(v.ok for v in keyed) and "cards dealt face down" in keyed[-1].detail
    assert len(round_shoes(exp.events)) == 5


def _tampered(exp: Any, topic: str, change: Any) -> tuple[list[dict[str, Any]], int]:
    records = copy.deepcopy(exp.events)
    for r in records:
        e = r.get("event") or {}
        if e.get("topic", "").endswith("TreintaYUnaRound." + topic.split(".")[-1]):
            change(e["state"])
            return records, e["position"]
    raise AssertionError(topic)


@pytest.mark.parametrize("topic", ["HandShown", "CardDrawn", "CardDealt"])
def test_a_changed_card_is_found_at_its_position(played: Played, topic: str) -> None:
    exp = parse(_export(played))

    def change(state: dict[str, Any]) -> None:
        if topic == "HandShown":
            card = state["shown"][0]
            card["code"] = "7O" if card["code"] != "7O" else "6O"
        elif topic == "CardDrawn":
            state["code"] = "7O" if state["code"] != "7O" else "6O"
        else:
            state["commitment"] = "0" * 64

    records, position = _tampered(exp, topic, change)
    bad = [v for v in verify_rounds(records, _seeds(exp)) if not v.ok]
    assert len(bad) == 1 and bad[0].position == position, bad
    assert "position" in bad[0].detail


def test_a_changed_outcome_or_lot_is_found(played: Played) -> None:
    exp = parse(_export(played))
    records, position = _tampered(
        exp, "StakeSettled",
        lambda s: s.update(outcome="won" if s["outcome"] != "won" else "lost"))
    bad = [v for v in verify_rounds(records, _seeds(exp)) if not v.ok]
    assert [v.position for v in bad] == [position]

    def lot(state: dict[str, Any]) -> None:
        state["lot"]["index"] = (state["lot"]["index"] + 1) % len(state["seats"])

    records, position = _tampered(exp, "TreintaYUnaRound.Opened", lot)
    bad = [v for v in verify_rounds(records, _seeds(exp)) if not v.ok]
    assert [v.position for v in bad] == [position] and "lot" in bad[0].detail


def test_the_verifiers_own_rules() -> None:
    assert value(["1O", "12B", "11C"]) == (31, True, False)
    assert value(["1O", "12B", "11C", "10O"]) == (31, False, False)
    assert value(["1O", "1C", "5B"]) == (27, False, False)
    assert value(["10O", "11C", "7B", "5E"]) == (32, False, True)
    from domain.treinta_y_una.banker import draw_banker

    seed = bytes(range(32))
    nonce = UUID(int=5)
    assert lot_index(seed, nonce, 4) == draw_banker(seed, nonce, list("abcd")).lot.index  # type: ignore[union-attr]
    _ = json


def test_sabot_verify_verifies_an_export_of_both_games(played: Played) -> None:
    from sabot_verify.__main__ import run

    lines = _export(played)
    out = io.StringIO()
    code = run(lines, checkpoint_key=played.public_key, out=out, chain_keys=[CHAIN_PUBLIC])
    text = out.getvalue()
    assert code == 0, text
    assert text.count("OK   treinta y una round") == 5 and "FAIL" not in text
    assert "OK   coup" in text
    # a changed card, its leaf re-hashed or not, is found at its position
    records = [json.loads(line) for line in lines]
    for r in records:
        e = r.get("event") or {}
        if e.get("topic", "").endswith("TreintaYUnaRound.CardDrawn"):
            e["state"]["code"] = "7O" if e["state"]["code"] != "7O" else "6O"
            position = e["position"]
            break
    out = io.StringIO()
    code = run([json.dumps(r, sort_keys=True, separators=(",", ":")) for r in records],
               checkpoint_key=played.public_key, out=out, chain_keys=[CHAIN_PUBLIC])
    assert code == 1 and f"first tampered position {position}" in out.getvalue()


def test_the_regulators_replay_of_both_games_is_identical(played: Played) -> None:
    from services.regulator.replay import Replayer, verdict

    exp = parse(_export(played))
    replayer = Replayer(played.events(), played.notary(), games=REGULATOR_GAMES)
    closed = [s for s in round_shoes(exp.events)
              if any((r.get("event") or {}).get("originator_id") == s
                     and r["event"]["topic"].endswith("Shoe.Closed") for r in exp.events)]
    assert len(closed) == 4
    for sid in closed + played.shoes:
        v = verdict(replayer.shoe(sid))
        assert v.identical, str(v)
        assert v.steps > 20
