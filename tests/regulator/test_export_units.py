"""A shoe's export is the shoe (SABOT-EXPORT-2, issue 25 item 3): its own events, the commands
that wrote them and what they wrote (the postings), every other leaf of its span as hashes
only, and one multi-leaf proof against one signed checkpoint. Played on both stores: two
tables whose coups alternate, so that another table's play lies inside the shoe's span.

Each tampering of the export file (an event of the shoe left out, one from elsewhere added, a
leaf moved, a proof hash or a chain hash changed) is NOT VERIFIED, naming what.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import random
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sabot_verify.__main__ import run

from services.bootstrap import ROUND_END
from services.regulator.checkpoint import public_key_bytes
from services.regulator.export import write_export
from services.regulator.merkle import gap_blocks
from services.regulator.notary import Notary
from services.regulator.source import Database, EventTable

from .conftest import PG_ADMIN, fresh_pg_database, postgres_or_skip, regulator_key
from .play import CHAIN_PUBLIC, Player, make_ledger

KEY = Ed25519PrivateKey.from_private_bytes(b"\x25" * 32)
PUBLIC = public_key_bytes(KEY.public_key())
P = "sabot.ledger:"


@dataclass
class Two:
    """Two tables played coup for coup: ``shoe`` closed on t-a; ``other``: t-b's shoe in
    play at the end."""

    url: str
    shoe: str
    coups: list[str]
    other: str
    batching: bool = False

    def export(self, **kw: Any) -> list[str]:
        db = Database(self.url)
        try:
            events = EventTable(db)
            notary = Notary(db, events, KEY, "sabot-test", ROUND_END, create=False)
            buf = io.StringIO()
            write_export(buf, events, notary, PUBLIC, **kw)
            return buf.getvalue().splitlines()
        finally:
            db.close()


def _play(url: str, batching: bool = False) -> Two:
    """``batching``: the batching writer, with a cashier's deposits submitted while t-a plays,
    so that batches mix the shoe's commands with others (one link over both)."""
    pub = regulator_key().public_key().public_bytes_raw()
    draw = random.Random(41).randbytes
    ledger, rng = make_ledger(url, seed=41, new_seed=lambda: draw(32), regulator_key=pub,
                              batching=batching)
    try:
        a, b = Player(ledger, rng, "t-a", "francaise"), Player(ledger, rng, "t-b", "italiana")
        deposits = 0

        def cash() -> Any:
            nonlocal deposits
            deposits += 1
            return ledger.submit("deposit", f"cash-{deposits}", b.players[1], 100)
        shoe, other = a.open_shoe(), b.open_shoe()
        coups = []

        def b_coup() -> None:
            nonlocal other
            if b.coup()[1]:  # t-b's cut card: its next shoe
                ledger.close_shoe(b.rid(), other)
                other = b.open_shoe()

        for _ in range(200):
            waiting = [cash() for _ in range(3)] if batching else []
            cid, end = a.coup()
            for f in waiting:
                f.result(timeout=60)
            coups.append(cid)
            b_coup()
            if end:
                break
        ledger.close_shoe(a.rid(), shoe)
        for _ in range(3):
            b_coup()
    finally:
        ledger.close()
    db = Database(url)
    try:
        notary = Notary(db, EventTable(db), KEY, "sabot-test", ROUND_END)
        notary.sync()
        notary.checkpoint_now()
    finally:
        db.close()
    return Two(url, shoe, coups, other, batching)


@pytest.fixture(scope="module", params=["sqlite", "sqlite-batching",
                                        pytest.param("postgres", marks=pytest.mark.postgres)])
def two(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
        ) -> Iterator[Two]:
    if request.param.startswith("sqlite"):
        yield _play(f"sqlite:///{tmp_path_factory.mktemp('units')}/store.db",
                    batching=request.param.endswith("batching"))
        return
    postgres_or_skip()
    name = f"sabot_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    yield _play(fresh_pg_database(name))
    import psycopg

    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def verify(lines: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    code = run(lines, checkpoint_key=PUBLIC, out=out, chain_keys=[CHAIN_PUBLIC])
    return code, out.getvalue()


def records(lines: list[str]) -> list[dict[str, Any]]:
    return [json.loads(x) for x in lines]


def lines_of(recs: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(r, sort_keys=True, separators=(",", ":")) for r in recs]


def test_the_shoes_export_holds_the_shoe_and_verifies(two: Two) -> None:
    recs = records(two.export(shoe_ids=[two.shoe]))
    assert recs[0]["format"] == "SABOT-EXPORT-2" and recs[0]["selection"]["shoes"] == [two.shoe]
    full = [r for r in recs if r["kind"] == "event"]
    hashed = [r for r in recs if r["kind"] == "leaf"]
    assert not any("proof" in r for r in full)  # one multi-leaf proof, not a proof per event
    assert hashed and all(set(r) >= {"index", "position", "leaf_hash", "chain_hash"}
                          for r in hashed)
    # nothing of the other table's play in full: its coups are all leaf records
    whole = {r["position"]: r["event"] for r in records(two.export()) if r["kind"] == "event"}
    coup_ids = {e["originator_id"] for e in whole.values() if e["topic"] == P + "Coup.Opened"
                and e["state"].get("table_id") == "t-b"}
    coups = set(two.coups)
    mine = {p for p, e in whole.items() if e["originator_id"] in coups or e["originator_id"]
            == two.shoe}
    other_table = {p for p, e in whole.items() if e["originator_id"] in coup_ids
                   and min(mine) < p < max(mine)}  # t-b's coups inside the shoe's span
    assert other_table and not other_table & {r["position"] for r in full}
    assert other_table <= {r["position"] for r in hashed}
    # every event of the shoe's coups in full, and every posting of their commands
    assert mine <= {r["position"] for r in full}
    assert any(r["event"]["topic"] == P + "Account.Credited" for r in full)
    if two.batching:  # some links cover the shoe's events and others' leaf records at once
        kinds: set[str] = set()
        mixed = 0
        for r in sorted(full + hashed, key=lambda x: x["index"]):
            if r["kind"] == "event" and r["event"]["topic"] == P + "Chain.Linked":
                mixed += kinds == {"event", "leaf"}
                kinds = set()
            else:
                kinds.add(r["kind"])
        assert mixed > 0
    code, text = verify(lines_of(recs))
    assert code == 0, text
    assert f"{len(two.coups)} coups" in text and text.count("OK   coup") == len(two.coups)
    assert "OK   evidence chain:" in text and "FAIL" not in text
    # the leaves' indices and the nodes records stand for the whole tree, in order
    covered = sorted([(r["index"], r["index"] + 1) for r in full + hashed]
                     + [(r["first"], r["stop"]) for r in recs if r["kind"] == "nodes"])
    assert covered[0][0] == 0 and all(a[1] == b[0] for a, b in itertools.pairwise(covered))
    assert covered[-1][1] == recs[0]["anchor"]
    for r in recs:
        if r["kind"] == "nodes":
            assert len(r["hashes"]) == len(gap_blocks(r["first"], r["stop"]))


def test_the_shoes_export_is_smaller_than_its_span(two: Two) -> None:
    new = "\n".join(two.export(shoe_ids=[two.shoe]))
    old = "\n".join(two.export(shoe_ids=[two.shoe], proofs="each"))
    assert len(new) < 0.7 * len(old), (len(new), len(old))
    code, text = verify(old.splitlines())  # the older format still verifies
    assert code == 0, text


def _index_of(recs: list[dict[str, Any]], test: Callable[[dict[str, Any]], bool]) -> int:
    return next(i for i, r in enumerate(recs) if test(r))


def _card(r: dict[str, Any]) -> bool:
    return r["kind"] == "event" and r["event"]["topic"] == P + "Coup.CardDealt"


def _posting(r: dict[str, Any]) -> bool:
    return r["kind"] == "event" and r["event"]["topic"] == P + "Account.Credited"


def _flip(h: str) -> str:
    return ("0" if h[0] != "0" else "1") + h[1:]


def left_out(recs: list[dict[str, Any]]) -> str:
    i = _index_of(recs, _card)
    gone = recs.pop(i)
    return f"leaf {gone['index']} before it in neither a record nor the multi-leaf proof"


def _link(r: dict[str, Any]) -> bool:
    return r["kind"] == "event" and r["event"]["topic"] == P + "Chain.Linked"


def left_out_as_a_leaf(recs: list[dict[str, Any]]) -> str:
    """The card kept as a leaf record with its true hashes: the Merkle proof and the link's
    digest hold; the unit does not."""
    from sabot_verify.chain import event_hash

    i = _index_of(recs, lambda r: _card(r) and r["index"] > 100)
    r = recs[i]
    leaves = [x for x in recs if x["kind"] in ("event", "leaf")]
    k = leaves.index(r)
    before = max(j for j in range(k) if _link(leaves[j]))
    closing = min(j for j in range(k, len(leaves)) if _link(leaves[j]))
    first = int(leaves[closing]["event"]["state"]["first"])
    recs[i] = {"kind": "leaf", "index": r["index"], "position": r["position"],
               "leaf_hash": r["leaf_hash"],
               "chain_hash": event_hash(first + k - before - 1, r["event"]).hex()}
    return "which the export does not hold in full (left out?)"


def posting_left_out_as_a_leaf(recs: list[dict[str, Any]]) -> str:
    i = _index_of(recs, _posting)
    r = recs[i]
    recs[i] = {"kind": "leaf", "index": r["index"], "position": r["position"],
               "leaf_hash": r["leaf_hash"], "chain_hash": "00" * 32}
    return "which the export does not hold in full (left out?)"


def added_from_elsewhere(recs: list[dict[str, Any]]) -> str:
    i = _index_of(recs, _card)
    recs.insert(i + 5, json.loads(json.dumps(recs[i])))
    return f"leaf {recs[i]['index']} again, or out of its place (added or moved)"


def moved(recs: list[dict[str, Any]]) -> str:
    i = _index_of(recs, _card)
    recs[i], recs[i + 1] = recs[i + 1], recs[i]
    return "(left out, or this leaf moved)"


def proof_hash_changed(recs: list[dict[str, Any]]) -> str:
    i = _index_of(recs, lambda r: r["kind"] == "nodes")
    recs[i]["hashes"][0] = _flip(recs[i]["hashes"][0])
    return "does not lead to the anchor checkpoint's root"


def leaf_hash_changed(recs: list[dict[str, Any]]) -> str:
    i = _index_of(recs, lambda r: r["kind"] == "leaf" and r["index"] > 50)
    recs[i]["leaf_hash"] = _flip(recs[i]["leaf_hash"])
    return "does not lead to the anchor checkpoint's root"


def chain_hash_changed(recs: list[dict[str, Any]]) -> str:
    i = _index_of(recs, lambda r: r["kind"] == "leaf" and r["index"] > 50)
    recs[i]["chain_hash"] = _flip(recs[i]["chain_hash"])
    return f"position {recs[i]['position']}"


def shoe_closed_left_out(recs: list[dict[str, Any]]) -> str:
    i = _index_of(recs, lambda r: r["kind"] == "event"
                  and r["event"]["topic"] == P + "Shoe.Closed")
    recs.pop(i)
    return "before it in neither a record nor the multi-leaf proof"


TAMPERINGS = {f.__name__: f for f in (
    left_out, left_out_as_a_leaf, posting_left_out_as_a_leaf, added_from_elsewhere, moved,
    proof_hash_changed, leaf_hash_changed, chain_hash_changed, shoe_closed_left_out)}


@pytest.mark.parametrize("name", list(TAMPERINGS))
def test_a_tampered_shoe_export_is_not_verified(two: Two, name: str) -> None:
    recs = records(two.export(shoe_ids=[two.shoe]))
    said = TAMPERINGS[name](recs)
    code, text = verify(lines_of(recs))
    assert code == 1, text
    assert text.strip().splitlines()[-1].startswith("NOT VERIFIED"), text
    assert said in text, text
