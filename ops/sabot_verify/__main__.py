"""``sabot-verify EXPORT [--regulator-key KEY] [--checkpoint-key KEY]``.

Checks an export (docs/export-format.md) with nothing but the standard library and
``cryptography``: every leaf hash, inclusion proof, signed checkpoint and consistency proof, then
every shoe's commitment, shuffle and cut, and every coup's deal, outcome and settlement. Prints a
verdict per coup; exit 0 only when everything verifies, 1 when something does not, 2 on usage.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any
from uuid import UUID

from sabot_verify import actors
from sabot_verify.integrity import Problem, check, parse
from sabot_verify.proofs import Bad, load_x25519, open_escrow
from sabot_verify.shoe import commitment
from sabot_verify.shoes import Verdict, verify_shoes


def _read_key(text: str) -> bytes:
    path = Path(text)
    raw = path.read_text().strip() if path.exists() else text.strip()
    try:
        key = bytes.fromhex(raw)
    except ValueError:
        raise Bad("--checkpoint-key: expected 64 hex digits or a file holding them") from None
    if len(key) != 32:
        raise Bad("--checkpoint-key: expected 32 bytes")
    return key


def run(
    lines: list[str], regulator_key: bytes | None = None, checkpoint_key: bytes | None = None,
    out: Any = sys.stdout,
) -> int:
    exp = parse(lines)
    key = checkpoint_key
    if key is None:
        key = bytes.fromhex(exp.header["checkpoint_key"])
        print("note: checkpoint key taken from the export; pin it with --checkpoint-key", file=out)
    problems, checkpoints = check(exp, key)
    problems += actors.problems(exp.events)  # each event's actor is its command's
    reg = load_x25519(regulator_key) if regulator_key is not None else None

    def seed_of(shoe_id: str, shuffled: dict[str, Any]) -> bytes | None:
        closed = [
            r["event"]["state"].get("seed")
            for r in exp.events
            if r.get("event") and r["event"]["originator_id"] == shoe_id
            and r["event"]["topic"] == "sabot.ledger:Shoe.Closed"
        ]
        if closed and closed[0]:
            return bytes.fromhex(closed[0])
        if reg is None:
            return None
        sealed = shuffled.get("escrowed_seed")  # Shoe.Shuffled v2: sealed with the shoe id
        if sealed:
            try:
                return open_escrow(bytes.fromhex(sealed), UUID(shoe_id), reg)
            except Bad:
                pass  # another regulator's key, or altered: the commitment check fails below
        for candidate in exp.escrow:  # legacy escrow records: the commitment picks the seed
            try:
                seed = open_escrow(candidate, UUID(int=0), reg)
            except Bad:
                continue
            if commitment(seed, UUID(shoe_id)) == shuffled.get("commitment"):
                return seed
        return None

    shoes = exp.header.get("selection", {}).get("shoes")
    index_of = {r["position"]: r["index"] for r in exp.events}
    verdicts: list[Verdict] = verify_shoes(exp.events, shoes, seed_of, checkpoints, index_of)
    for v in verdicts:
        print(f"{'OK  ' if v.ok else 'FAIL'} {v.what}: {v.detail}", file=out)
    for line in actors.report(exp.events):  # who did what
        print(line, file=out)
    for p in problems:
        print(f"FAIL {p.message}", file=out)
    failed_at = [p.position for p in problems if p.position is not None]
    failed_at += [v.position for v in verdicts if not v.ok and v.position is not None]
    bad = bool(problems) or any(not v.ok for v in verdicts)
    coups = sum(1 for v in verdicts if v.what.startswith("coup"))
    if bad:
        first = f"; first tampered position {min(failed_at)}" if failed_at else ""
        print(f"NOT VERIFIED{first}", file=out)
        return 1
    print(
        f"VERIFIED: {len(exp.events)} events, {len(exp.checkpoints)} checkpoints, "
        f"{coups} coups",
        file=out,
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sabot-verify", description=__doc__.split("\n")[2])
    parser.add_argument("export", help="an export file (JSON Lines), or - for stdin")
    parser.add_argument("--regulator-key", help="the regulator's X25519 private key (PEM file)")
    parser.add_argument("--checkpoint-key", help="the operator's Ed25519 checkpoint public key "
                        "(64 hex digits, or a file holding them)")
    args = parser.parse_args(argv)
    try:
        text = sys.stdin.read() if args.export == "-" else Path(args.export).read_text("utf-8")
        reg = Path(args.regulator_key).read_bytes() if args.regulator_key else None
        cpk = _read_key(args.checkpoint_key) if args.checkpoint_key else None
    except (OSError, UnicodeDecodeError, Bad) as exc:
        print(f"sabot-verify: error: {exc}", file=sys.stderr)
        return 2
    try:
        return run(text.splitlines(), reg, cpk)
    except (Bad, KeyError, TypeError, ValueError) as exc:  # a malformed export does not verify
        print(f"NOT VERIFIED: malformed export: {exc!r}")
        return 1


__all__ = ["Problem", "main", "run"]

if __name__ == "__main__":
    sys.exit(main())
