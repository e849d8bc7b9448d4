"""No verdict without a trust anchor (issue 20): ``sabot-verify`` answers VERIFIED only with the
operator's public keys pinned (flags or a trust file), says UNVERIFIABLE (exit 3) otherwise, and
a checkpoint the regulator received earlier (``--known-checkpoint``) finds a log whose tail was
deleted with its links and its Merkle rows, which nothing else finds without the writer's head
file. ``sabot store export`` of a store whose Merkle rows were deleted clumsily says so in one
line, exit 1. On both stores.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from regulator.conftest import sabot
from sabot_verify.__main__ import main as verify_main
from sabot_verify.integrity import parse

from services.regulator.checkpoint import sign_checkpoint
from services.regulator.merkle import MemoryTree

from .conftest import CHAIN_PUBLIC, CHECKPOINT, CHECKPOINT_PUBLIC, Insider, Store

P = "sabot.ledger:"


def _verify(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = verify_main(list(argv))
    done = capsys.readouterr()
    return code, done.out, done.err


def _pinned(tmp: Path) -> tuple[str, ...]:
    (tmp / "checkpoint.pub").write_text(CHECKPOINT_PUBLIC.hex() + "\n")
    return ("--checkpoint-public-key", str(tmp / "checkpoint.pub"),
            "--chain-public-key", CHAIN_PUBLIC.hex())


def _export(s: Store, capsys: pytest.CaptureFixture[str]) -> tuple[int, Path, str]:
    out = s.dir / "export.jsonl"
    capsys.readouterr()
    code = sabot("export", "--store", s.url, "--key", str(s.key_file), "-o", str(out),
                 "--chain-key", CHAIN_PUBLIC.hex(), "--quiet")
    return code, out, capsys.readouterr().err


def _checkpoint(s: Store, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """``sabot store checkpoint``: the checkpoint it prints, as the regulator keeps it."""
    capsys.readouterr()
    assert sabot("checkpoint", "--store", s.url, "--key", str(s.key_file),
                 "--chain-key", CHAIN_PUBLIC.hex()) == 0
    found: dict[str, Any] = json.loads(capsys.readouterr().out)
    return found


def _cut_tail(i: Insider, s: Store, *, leaves: bool = True, checkpoints: bool = True,
              nodes: bool = True) -> int:
    """The owner deletes the log's tail from a batch boundary (the last 40 events or so, their
    links with them) and the Merkle rows that notarised it: the first position deleted."""
    last = i.last_position()
    links = [p for p in i.positions(P + "Chain.Linked") if p < last - 39]
    cut = links[-1] + 1
    with i.session() as db:
        db.execute(f"DELETE FROM {i.events} WHERE {i.pos} >= ?", (cut,))
        if leaves:
            db.execute("DELETE FROM regulator_leaves WHERE position >= ?", (cut,))
        (kept,), = db.rows("SELECT count(*) FROM regulator_leaves")
        if checkpoints:
            db.execute("DELETE FROM regulator_checkpoints WHERE size > ?", (int(kept),))
        if nodes:
            db.execute("DELETE FROM regulator_nodes WHERE (idx + 1) * (1 << level) > ?",
                       (int(kept),))
    return cut


def test_without_pinned_keys_there_is_no_verdict(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The keys in the export's header vouch for nothing: a log re-signed end to end with an
    insider's own keys reads the same. Unpinned: UNVERIFIABLE, exit 3, saying why; pinned: one
    VERIFIED line; pinned to a key the log was not signed with: NOT VERIFIED."""
    code, out, _ = _export(store, capsys)
    assert code == 0
    pinned = _pinned(tmp_path)
    code, text, err = _verify(capsys, str(out))
    assert code == 3, text + err
    (line,) = text.splitlines()  # one verdict line
    assert line.startswith("UNVERIFIABLE: nothing failed") and "not pinned" in line, line
    assert "checkpoint key" in line and "chain key" in line
    code, text, _ = _verify(capsys, str(out), "--checkpoint-public-key", pinned[1])
    assert code == 3 and "the chain key" in text and "the checkpoint key" not in text, text
    code, text, _ = _verify(capsys, str(out), *pinned)
    assert code == 0, text
    (line,) = text.splitlines()
    assert line.startswith("VERIFIED: ") and len(line) < 200, line
    # the genuine operator's key, pinned, against the chain the insider signed with his own
    genuine = Ed25519PrivateKey.generate().public_key().public_bytes_raw()
    code, text, _ = _verify(capsys, str(out), pinned[0], pinned[1],
                            "--chain-public-key", genuine.hex(), "-v")
    assert code == 1, text
    assert "not a trusted one" in text and text.splitlines()[-1].startswith("NOT VERIFIED")
    # the JSON says the same
    code, text, _ = _verify(capsys, str(out), "--format", "json")
    doc = json.loads(text)
    assert (code, doc["exit"], doc["verdict"]) == (3, 3, "UNVERIFIABLE") and doc["unpinned"]


@pytest.mark.parametrize("kind", ["toml", "json"])
def test_a_trust_file_pins_the_keys(
    store: Store, tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    known = _checkpoint(store, capsys)
    (tmp_path / "earlier.json").write_text(json.dumps(known))
    code, out, _ = _export(store, capsys)
    assert code == 0
    trust = tmp_path / f"trust.{kind}"
    if kind == "toml":
        trust.write_text('format = "SABOT-TRUST-1"\n'
                         f'checkpoint_public_key = "{CHECKPOINT_PUBLIC.hex()}"\n'
                         f'chain_public_keys = ["{CHAIN_PUBLIC.hex()}"]\n'
                         'known_checkpoints = ["earlier.json"]\n')
    else:
        trust.write_text(json.dumps({
            "format": "SABOT-TRUST-1", "checkpoint_public_key": CHECKPOINT_PUBLIC.hex(),
            "chain_public_keys": [CHAIN_PUBLIC.hex()], "known_checkpoints": ["earlier.json"]}))
    code, text, _ = _verify(capsys, str(out), "--trust", str(trust), "-v")
    assert code == 0, text
    assert f"OK   the checkpoint of size {known['size']} received earlier" in text
    # a trust file of another kind, or naming a private key, is refused: usage, exit 2
    trust.write_text('format = "SABOT-TRUST-0"\n')
    assert _verify(capsys, str(out), "--trust", str(trust))[0] == 2
    private = CHECKPOINT.private_bytes_raw().hex()
    code, _, err = _verify(capsys, str(out), "--checkpoint-public-key", private)
    assert code == 2 and "--checkpoint-public-key" in err and "PRIVATE" in err, err
    assert _verify(capsys, str(out), "--trust", str(tmp_path / "none.toml"))[0] == 4


def test_an_earlier_checkpoint_finds_the_deleted_tail(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The owner deletes the tail of the log, its links and its Merkle rows (leaves, nodes,
    checkpoints): the export signs a checkpoint of the shorter log and its chain holds, so with
    the keys pinned it VERIFIES; the checkpoint the regulator received before finds the cut, in
    the form ``sabot store checkpoint`` prints and in ``sabot regulator checkpoint``'s JSON."""
    known = _checkpoint(store, capsys)
    earlier = tmp_path / "earlier.json"
    earlier.write_text(json.dumps(known))
    cut = _cut_tail(Insider(store), store)
    code, out, err = _export(store, capsys)
    assert code == 0 and "evidence chain" not in err, err
    pinned = _pinned(tmp_path)
    code, text, _ = _verify(capsys, str(out), *pinned)
    assert code == 0, text  # what nothing but the earlier checkpoint (or the head file) finds
    code, text, _ = _verify(capsys, str(out), *pinned, "--known-checkpoint", str(earlier), "-v")
    assert code == 1, text
    assert text.splitlines()[-1] == f"NOT VERIFIED; first tampered position {cut}", text
    assert "the log was truncated" in text
    grpc_form = {"origin": known["origin"], "tree_size": str(known["size"]),
                 "root_hash": base64.b64encode(bytes.fromhex(known["root"])).decode(),
                 "position": str(known["position"]), "coup_id": known["coup"] or "",
                 "key_id": known["key_id"],
                 "signature": base64.b64encode(bytes.fromhex(known["signature"])).decode()}
    earlier.write_text(json.dumps(grpc_form))
    code, text, _ = _verify(capsys, str(out), *pinned, "--known-checkpoint", str(earlier))
    assert (code, text.strip()) == (1, f"NOT VERIFIED; first tampered position {cut} "
                                       "(-v says what)"), text


def test_an_earlier_checkpoint_proves_an_untouched_log(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An earlier tree head of a size the export has no checkpoint of: recomputed from the
    whole log's leaves; the same size with another root says the log was rewritten."""
    code, out, _ = _export(store, capsys)
    assert code == 0
    records = [json.loads(x) for x in out.read_text().splitlines()]
    sizes = {r["size"] for r in records if r["kind"] == "checkpoint"}
    leaves = [r for r in records if r["kind"] == "event"]
    m = next(n for n in range(len(leaves) // 2, len(leaves)) if n not in sizes)
    tree = MemoryTree(bytes.fromhex(r["leaf_hash"]) for r in leaves[:m])
    pinned = _pinned(tmp_path)
    for root, expect in ((tree.root(), 0), (bytes(32), 1)):
        cp = sign_checkpoint(CHECKPOINT, "sabot", m, root, leaves[m - 1]["position"])
        (tmp_path / "earlier.json").write_text(json.dumps(cp.to_json()))
        code, text, _ = _verify(capsys, str(out), *pinned, "-v", "--known-checkpoint",
                                str(tmp_path / "earlier.json"))
        assert code == expect, text
        if expect == 0:
            assert f"OK   the checkpoint of size {m} received earlier" in text
        else:
            assert "the log before it was rewritten" in text
    # signed by another key: not the operator's checkpoint
    other = sign_checkpoint(Ed25519PrivateKey.generate(), "sabot", m, tree.root())
    (tmp_path / "earlier.json").write_text(json.dumps(other.to_json()))
    code, text, _ = _verify(capsys, str(out), *pinned, "-v", "--known-checkpoint",
                            str(tmp_path / "earlier.json"))
    assert code == 1 and "signed by another key" in text, text


@pytest.mark.parametrize("clumsy", ["leaves deleted, checkpoints kept",
                                    "nodes and checkpoints deleted, leaves kept"])
def test_the_export_of_a_clumsy_cut_is_one_line(
    store: Store, clumsy: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Merkle rows deleted so that the tree contradicts itself: ``sabot store export`` says the
    store was tampered with, in one line, exit 1 (no Python KeyError, no traceback)."""
    _checkpoint(store, capsys)
    if clumsy.startswith("leaves"):
        _cut_tail(Insider(store), store, checkpoints=False, nodes=False)
        expect = "leaves were deleted (tampered?)"
    else:
        i = Insider(store)
        with i.session() as db:
            (n,), = db.rows("SELECT count(*) FROM regulator_leaves")
            keep = int(n) - 40
            db.execute("DELETE FROM regulator_checkpoints WHERE size > ?", (keep,))
            db.execute("DELETE FROM regulator_nodes WHERE (idx + 1) * (1 << level) > ?",
                       (keep,))
        expect = "the store's Merkle log is damaged"
    code, _, err = _export(store, capsys)
    assert code == 1, err
    (line,) = err.strip().splitlines()
    assert line.startswith("sabot: error: store: ") and expect in line, line
    assert "KeyError" not in line and "Traceback" not in err


def test_the_command_line(store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
                          ) -> None:
    """``--version``; the old key flags still work, hidden from ``--help``; a file that cannot
    be read is exit 4."""
    with pytest.raises(SystemExit) as done:
        verify_main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.startswith("sabot-verify ")
    with pytest.raises(SystemExit):
        verify_main(["--help"])
    shown = capsys.readouterr().out
    usage = shown.split("\n\n")[0]  # the old names are no options of their own any more
    assert "[--checkpoint-public-key KEY]" in usage and "--checkpoint-key" not in usage
    assert "[--chain-public-key KEY]" in usage and "--chain-key" not in usage
    assert "--checkpoint-key KEY" not in shown and "--chain-key KEY" not in shown
    code, out, _ = _export(store, capsys)
    assert code == 0
    code, text, _ = _verify(capsys, str(out), "--checkpoint-key", CHECKPOINT_PUBLIC.hex(),
                            "--chain-key", CHAIN_PUBLIC.hex())
    assert code == 0 and text.startswith("VERIFIED: "), text
    code, _, err = _verify(capsys, str(tmp_path / "missing.jsonl"))
    assert code == 4 and err.startswith("sabot-verify: error: cannot read"), err
    code, _, err = _verify(capsys, str(out), "--known-checkpoint", str(tmp_path / "x.json"))
    assert code == 4, err
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes(out.read_bytes().replace(b"\n", "\n\u00e9".encode("latin-1"), 3))
    code, _, err = _verify(capsys, str(bad), "--checkpoint-key", CHECKPOINT_PUBLIC.hex())
    assert code == 4 and "cannot read export" in err, err


def test_the_export_is_read_line_by_line_and_shared(store: Store,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """``parse`` takes the open file (never read whole); records share their keys and short
    strings, and hold each inclusion proof as one ``bytes``: what keeps ~3.8 KB an event
    instead of ~12 KB (docs/performance.md)."""
    code, out, _ = _export(store, capsys)
    assert code == 0
    with out.open(encoding="utf-8") as f:
        exp = parse(f)
    a, b = exp.events[0], exp.events[1]
    assert next(k for k in a if k == "leaf_hash") is next(k for k in b if k == "leaf_hash")
    topics = [r["event"]["topic"] for r in exp.events if r["event"]]
    same = [t for t in topics if t == P + "Request.Recorded"]
    assert len(same) > 100 and all(t is same[0] for t in same)
    assert all(isinstance(r["proof"], bytes) and len(r["proof"]) % 32 == 0 for r in exp.events)


def test_a_narrowed_export_carries_the_proof_from_an_earlier_checkpoint(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A shoe's export does not hold the log's first leaves: without the proof it cannot be
    checked against an earlier checkpoint (UNVERIFIABLE, exit 3, naming --known-size); with
    ``sabot store export --known-size M`` its anchor carries the consistency proof from M,
    which proves the regulator's checkpoint, or finds another root."""
    code, whole, _ = _export(store, capsys)
    assert code == 0
    records = [json.loads(x) for x in whole.read_text().splitlines()]
    sizes = {r["size"] for r in records if r["kind"] == "checkpoint"}
    leaves = [r for r in records if r["kind"] == "event"]
    m = next(n for n in range(len(leaves) // 3, len(leaves)) if n not in sizes)
    root = MemoryTree(bytes.fromhex(r["leaf_hash"]) for r in leaves[:m]).root()
    pinned = _pinned(tmp_path)
    earlier = tmp_path / "earlier.json"

    def export_shoe(*extra: str) -> Path:
        out = tmp_path / "shoe.jsonl"
        assert sabot("export", "--store", store.url, "--key", str(store.key_file), "-o",
                     str(out), "--chain-key", CHAIN_PUBLIC.hex(), "--quiet", "--shoe",
                     store.played.shoe, *extra) == 0
        return out

    good = sign_checkpoint(CHECKPOINT, "sabot", m, root, leaves[m - 1]["position"])
    earlier.write_text(json.dumps(good.to_json()))
    code, text, _ = _verify(capsys, str(export_shoe()), *pinned, "--known-checkpoint",
                            str(earlier))
    assert code == 3 and "not checked" in text, text
    out = export_shoe("--known-size", str(m))
    code, text, _ = _verify(capsys, str(out), *pinned, "--known-checkpoint", str(earlier), "-v")
    assert code == 0 and f"OK   the checkpoint of size {m} received earlier" in text, text
    forged = sign_checkpoint(CHECKPOINT, "sabot", m, bytes(32), leaves[m - 1]["position"])
    earlier.write_text(json.dumps(forged.to_json()))
    code, text, _ = _verify(capsys, str(out), *pinned, "--known-checkpoint", str(earlier), "-v")
    assert code == 1 and "the log was rewritten" in text, text
