"""Export, standalone verification and replay of shoes played on a real ledger (SQLite)."""

from __future__ import annotations

import io
import json
from datetime import datetime
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sabot_verify.__main__ import run

from domain.errors import FailedPrecondition
from services.bootstrap import REGULATOR_GAMES
from services.regulator.checkpoint import public_key_bytes
from services.regulator.export import write_export
from services.regulator.replay import Replayer, verdict

from .conftest import Played
from .play import CHAIN_PUBLIC


def export_lines(p: Played, **kw: Any) -> list[str]:
    buf = io.StringIO()
    write_export(buf, p.events(), p.notary(), p.public_key, **kw)
    return buf.getvalue().splitlines()


def verify(lines: list[str], **kw: Any) -> tuple[int, str]:
    out = io.StringIO()
    kw.setdefault("chain_keys", [CHAIN_PUBLIC])  # the operator's keys, pinned
    code = run(lines, checkpoint_key=kw.pop("checkpoint_key", None), out=out, **kw)
    return code, out.getvalue()


def test_every_closed_shoe_verifies(played_sqlite: Played) -> None:
    p = played_sqlite
    lines = export_lines(p)
    header = json.loads(lines[0])
    assert header["selection"]["shoes"] == p.shoes
    code, text = verify(lines, checkpoint_key=p.public_key)
    assert code == 0, text
    n_coups = sum(len(p.coups[s]) for s in p.shoes)
    assert f"{n_coups} coups" in text
    assert text.count("OK   coup") == n_coups and "FAIL" not in text


def test_canonical_and_reproducible(played_sqlite: Played) -> None:
    a = export_lines(played_sqlite, shoe_ids=[played_sqlite.shoes[1]])
    b = export_lines(played_sqlite, shoe_ids=[played_sqlite.shoes[1]])
    assert a == b
    for line in a[:50]:
        rec = json.loads(line)
        assert line == json.dumps(rec, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def test_every_coup_replays_identical(played_sqlite: Played) -> None:
    p = played_sqlite
    replayer = Replayer(p.events(), p.notary(), games=REGULATOR_GAMES)
    for sid in p.shoes:
        v = verdict(replayer.shoe(sid))
        assert v.identical, str(v)
        for cid in p.coups[sid][:3] + p.coups[sid][-2:]:
            v = verdict(replayer.coup(cid))
            assert v.identical and v.steps > 20, str(v)


def test_shoe_in_play_needs_the_regulator_key(played_sqlite: Played) -> None:
    p = played_sqlite
    assert p.open_shoe is not None
    cid = p.coups[p.open_shoe][1]
    # The operator's sealed seed is unavailable (no seal key): without the regulator's key the
    # replay cannot get the seed...
    with pytest.raises(FailedPrecondition) as err:
        verdict(Replayer(p.events(), p.notary(), games=REGULATOR_GAMES).coup(cid))
    assert err.value.field == "shoe_id"
    # ...with it, the seed escrowed in Shoe.Shuffled opens, matches the commitment and the coup
    # replays.
    replayer = Replayer(p.events(), p.notary(), regulator_key=p.regulator, games=REGULATOR_GAMES)
    steps = list(replayer.coup(cid))
    v = verdict(steps)
    assert v.identical, str(v)
    assert any(s.what == "commitment" and s.same for s in steps)
    assert any(s.what == "card dealt" for s in steps)


def test_verifier_opens_the_escrow(played_sqlite: Played, tmp_path: Any) -> None:
    p = played_sqlite
    assert p.open_shoe is not None
    lines = export_lines(p, shoe_ids=[p.open_shoe])
    code, text = verify(lines, checkpoint_key=p.public_key)
    # without the key: VERIFIED, the shoe listed as pending (its cards unchecked), exit 0
    assert code == 0 and f"PENDING shoe {p.open_shoe}" in text and "seed not revealed" in text
    assert "1 shoe(s) pending" in text and "OK   coup" not in text
    from cryptography.hazmat.primitives import serialization

    pem = p.regulator.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    code, text = verify(lines, checkpoint_key=p.public_key, regulator_key=pem)
    assert code == 0, text
    assert text.count("OK   coup") == 3


def test_forged_proofs_are_rejected(played_sqlite: Played) -> None:
    """SABOT-EXPORT-1 (a proof per event, what older exports hold): still read, and a forged
    proof in it still found."""
    p = played_sqlite
    lines = export_lines(p, shoe_ids=[p.shoes[0]], proofs="each")
    assert json.loads(lines[0])["format"] == "SABOT-EXPORT-1"
    assert verify(lines, checkpoint_key=p.public_key)[0] == 0
    recs = [json.loads(x) for x in lines]

    def tampered(i: int, change: Any) -> list[str]:
        copy = json.loads(json.dumps(recs))
        change(copy[i])
        return [json.dumps(r) for r in copy]

    ev = next(i for i, r in enumerate(recs) if r["kind"] == "event" and len(r["proof"]) > 3)
    cp = next(i for i, r in enumerate(recs) if r["kind"] == "checkpoint" and "consistency" in r)

    def flip(h: str) -> str:
        return ("0" if h[0] != "0" else "1") + h[1:]

    def bad_inclusion(r: dict[str, Any]) -> None:
        r["proof"][2] = flip(r["proof"][2])

    def bad_consistency(r: dict[str, Any]) -> None:
        r["consistency"]["proof"][0] = flip(r["consistency"]["proof"][0])

    def bad_root(r: dict[str, Any]) -> None:
        r["root"] = flip(r["root"])

    for i, change, expect in [
        (ev, bad_inclusion, f"position {recs[ev]['position']}"),
        (cp, bad_consistency, f"checkpoint {recs[cp]['size']}"),
        (cp, bad_root, f"checkpoint {recs[cp]['size']}"),
    ]:
        code, text = verify(tampered(i, change), checkpoint_key=p.public_key)
        assert code == 1 and expect in text, text
    # a key other than the operator's
    other = public_key_bytes(Ed25519PrivateKey.generate().public_key())
    code, text = verify(lines, checkpoint_key=other)
    assert code == 1 and "another key" in text


def test_time_range_export(played_sqlite: Played) -> None:
    p = played_sqlite
    stamps_all = sorted(
        datetime.fromisoformat(ts["_data_"]) for e in p.events().iterate()
        if isinstance(ts := json.loads(e.state).get("timestamp"), dict)
    )
    span = stamps_all[-1] - stamps_all[0]
    since = stamps_all[0] + span * 3 / 10  # a window inside the play, whatever its pace
    until = since + span / 5
    lines = export_lines(p, since=since, until=until)
    header = json.loads(lines[0])
    shoes = header["selection"]["shoes"]
    assert shoes and set(shoes) <= set(p.shoes)
    events = [json.loads(x) for x in lines if '"kind":"event"' in x]
    stamps = [e["event"]["state"]["timestamp"]["_data_"] for e in events]
    assert any(since.isoformat() <= t < until.isoformat() for t in stamps)
    code, text = verify(lines, checkpoint_key=p.public_key)
    assert code == 0, text
    assert text.count("OK   coup") == sum(len(p.coups[s]) for s in shoes)
