"""``sabot-verify EXPORT [--trust FILE] [--checkpoint-public-key KEY] [--chain-public-key KEY]...
[--known-checkpoint FILE]... [--regulator-key KEY] [--chain-head FILE] [-v] [--format text|json]``.

Checks an export (docs/export-format.md: SABOT-EXPORT-2, or an older SABOT-EXPORT-1) with
nothing but the standard library and ``cryptography``: every leaf hash, the multi-leaf proof
against the anchor (SABOT-EXPORT-2: leaves and ``nodes`` folded into its root as the file is
read; SABOT-EXPORT-1: each event's inclusion proof), that a shoe's export leaves nothing of its
unit out (``sabot_verify.unit``), every signed checkpoint and consistency proof; the
evidence chain (every batch against the link its writer signed); that every posting belongs to
exactly one command whose postings balance, and (whole log) every balance re-derived and every
snapshot against its link; then every shoe's commitment, shuffle and cut, and every coup's
deal, outcome and settlement; and each checkpoint the regulator received earlier
(``--known-checkpoint``) against the export's, so a truncated or rewritten log is found.
A shoe in play whose seed is neither revealed nor opened (``--regulator-key``) is PENDING: its
events are checked as every event is, its cards are not, and it is listed apart, not failed.
Prints one verdict line (``-v``: a line per shoe, coup, the chain, the money and who did what).

Exit codes (docs/export-format.md, "Exit codes"): 0 VERIFIED (with the operator's keys pinned:
``--checkpoint-public-key`` and ``--chain-public-key``, or ``--trust FILE``), 1 NOT VERIFIED
(or a malformed export), 2 usage, 3 UNVERIFIABLE (nothing failed, but no trust anchor: a key
not pinned, or an earlier checkpoint the export cannot be checked against), 4 a file that
cannot be read. The first tampered position is the least position where the stored log
differs from what was notarised or chained; when the log is intact, the least where what it
records breaks the rules.
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from sabot_verify import actors, unit
from sabot_verify.chain import Slot, key_id, load_head, walk_export
from sabot_verify.cuarenta import verify_matches
from sabot_verify.integrity import Export, Problem, check, parse
from sabot_verify.money import MoneyFinding, check_money
from sabot_verify.proofs import Bad, check_checkpoint, load_x25519
from sabot_verify.seeds import seeds
from sabot_verify.shoes import (
    GAMES,
    IN_PLAY,
    Pending,
    ShoeContext,
    Verdict,
    check_shoes,
    register_game,
)
from sabot_verify.site import SiteCheck, check_site, site_id
from sabot_verify.stream import Unsure, verify_log
from sabot_verify.treinta_y_una import verify_rounds
from sabot_verify.trust import (
    NOT_VERIFIED,
    UNREADABLE,
    UNVERIFIABLE,
    USAGE,
    VERIFIED,
    KnownResult,
    Trust,
    Unreadable,
    check_known,
    load_checkpoint,
    load_trust,
    public_key,
    read_text,
)


def _checked_apart(lines: str) -> Any:
    """A shoe whose game's rounds are checked apart (``verify_rounds``, ``verify_matches``,
    each with lines of its own): the shoe's own line."""
    def check(ctx: ShoeContext) -> list[Verdict]:
        return [Verdict(f"shoe {ctx.shoe_id}", True, None,
                        f"commitment and shuffle verified; its play: the {lines} lines")]
    return check


for _game, _lines in (("treinta-y-una", "treinta y una round"), ("cuarenta", "cuarenta match")):
    if _game not in GAMES:  # a game's own module registers its shoe check: it wins
        register_game(_game, _checked_apart(_lines))


def _chain(exp: Export, chain_keys: list[bytes] | None, head: dict[str, Any] | None,
           out: Any) -> tuple[list[Problem], Any]:
    """The evidence chain over the exported events, in log order: its problems and the walk
    (with the header's key when none is pinned: the verdict is then UNVERIFIABLE at best)."""
    trusted: dict[str, Ed25519PublicKey] = {}
    keys = chain_keys
    if not keys and exp.header.get("chain_key"):
        keys = [bytes.fromhex(exp.header["chain_key"])]
    for k in keys or []:
        trusted[key_id(k)] = Ed25519PublicKey.from_public_bytes(k)
    records: list[tuple[int, int | None, dict[str, Any] | None]] = []
    for i, r in enumerate(exp.events):
        ev, raw = r.get("event"), exp.proven.get(i)  # its state's bytes, proven: not re-encoded
        if raw is not None and isinstance(ev, dict):
            ev = Slot(ev, raw)
        records.append((r["position"], r["index"], ev))
    for r in exp.leaves:  # another unit's event: its hash in the chain stands for it
        records.append((r["position"], r["index"], {"chain_hash": r.get("chain_hash")}))
    for r in exp.unnotarised + exp.tail:
        records.append((r["position"], None, r.get("event")))
    records.sort(key=lambda x: (x[0], x[1] is None))
    whole = exp.header.get("coverage") == "log"
    walk = walk_export(records, trusted, head if whole else None, whole=whole)
    problems = [Problem(f.position, f.message) for f in walk.findings]
    if not walk.links and not problems and records:
        problems.append(Problem(records[0][0], "evidence chain: no verified link in the export"))
    if head is not None and not whole and int(head["seq"]) > walk.last_seq:
        print(f"note: the export ends before link {head['seq']} of the writer's head", file=out)
    return problems, walk


@dataclass
class _Found:
    """What the verdict is made of, read buffered (``_buffered``) or as a stream
    (``sabot_verify.stream``)."""

    header: dict[str, Any]
    events: int
    checkpoints: int
    links: int
    verdicts: list[Verdict]
    pending: list[Pending]
    sited: SiteCheck
    problems: list[Problem] = field(default_factory=list)
    money: list[MoneyFinding] = field(default_factory=list)
    accounts: int | None = None  # accounts re-derived (the whole log)
    chain_ok: bool = True
    against: KnownResult = field(default_factory=KnownResult)
    who: list[str] = field(default_factory=list)  # who did what (``actors``)

    @property
    def coups(self) -> int:
        return sum(1 for v in self.verdicts if v.what.startswith("coup"))


def _earlier(known: list[dict[str, Any]], key: bytes, problems: list[Problem]
             ) -> list[dict[str, Any]]:
    """The checkpoints the regulator received earlier that the operator's key signed."""
    earlier = []
    for cp in known:
        try:
            check_checkpoint(cp, key)
            earlier.append(cp)
        except Bad as exc:
            problems.append(Problem(None, f"the checkpoint received earlier ({cp.get('file')}):"
                                          f" {exc}"))
    return earlier


def _buffered(exp: Export, key: bytes, reg: X25519PrivateKey | None,
              chain_keys: list[bytes] | None, chain_head: dict[str, Any] | None,
              known: list[dict[str, Any]], site: str | None, detail: Any) -> _Found:
    """Every check over the export held in memory (any export; SABOT-EXPORT-1 too)."""
    problems, checkpoints = check(exp, key)
    problems += actors.problems(exp.events)  # each event's actor is its command's
    problems += unit.problems(exp)  # nothing of a unit left out of its export
    chain_found, walk = _chain(exp, chain_keys, chain_head, detail)
    problems += chain_found
    sited = check_site(exp, site)  # whose log: the site its signed links and checkpoints name
    problems += sited.problems
    whole = exp.header.get("coverage") == "log"
    earlier = _earlier(known, key, problems)
    positions = [r["position"] for r in exp.events + exp.unnotarised + exp.tail
                 if isinstance(r.get("position"), int)]
    exported = [c for c in exp.checkpoints if isinstance(c.get("size"), int)]
    against = check_known(earlier, exp.events, exported, whole,
                          max(positions) if positions else None)
    problems += [Problem(at, message) for at, message in against.failures]
    contents = [r["event"] for r in exp.events if r.get("event")]
    contents += [r["event"] for r in exp.unnotarised + exp.tail if r.get("event")]
    contents.sort(key=lambda e: e["position"])
    money, accounts = check_money(contents, walk.after or 0, whole, exp.snapshots, walk.links)
    seed_of = seeds(exp.events, exp.escrow, reg)
    listed = exp.header.get("selection", {}).get("shoes")
    claimed = [str(p.get("shoe_id")) for p in exp.header.get("pending") or []
               if isinstance(p, dict)]
    # the whole log: every shoe shuffled in it (closed ones replayed, the others pending);
    # ranges: the shoes the header lists, closed or pending
    shoes = None if whole else [*(listed or []), *claimed]
    index_of = {r["position"]: r["index"] for r in exp.events}
    verdicts, pending = check_shoes(exp.events, shoes, seed_of, checkpoints, index_of)
    verdicts += verify_rounds(exp.events, seed_of)  # Treinta y Una's rounds
    verdicts += verify_matches(exp.events, seed_of)  # Cuarenta's matches
    return _Found(exp.header, len(exp.events), len(exp.checkpoints), len(walk.links), verdicts,
                  pending, sited, problems, money,
                  len(accounts.balances) if accounts is not None else None,
                  not chain_found, against, actors.report(exp.events))


def _streamed(lines: Iterable[str], key: bytes | None, reg: X25519PrivateKey | None,
              chain_keys: list[bytes] | None, chain_head: dict[str, Any] | None,
              site: str | None) -> _Found:
    """A whole log's export verified as it is read (``sabot_verify.stream``)."""
    got = verify_log(lines, key, chain_keys, chain_head, site, reg)
    return _Found(got.header, got.events, len(got.checkpoints), got.links, got.verdicts,
                  got.pending, got.sited, accounts=got.accounts, who=got.who)


def _detail(f: _Found, reg: X25519PrivateKey | None, detail: Any) -> None:
    """The lines before the verdict: a line per shoe and coup, who did what, the chain, the
    site, the money, the shoes pending, the earlier checkpoints, every failure."""
    claimed = [str(p.get("shoe_id")) for p in f.header.get("pending") or []
               if isinstance(p, dict)]
    if reg is not None:
        for pend in f.pending:
            if pend.reason == IN_PLAY:
                pend.reason = "in play: its escrowed seed does not open with this regulator key"
    for v in f.verdicts:
        print(f"{'OK  ' if v.ok else 'FAIL'} {v.what}: {v.detail}", file=detail)
    for line in f.who:
        print(line, file=detail)
    if f.chain_ok:
        print(f"OK   evidence chain: {f.links} links verified", file=detail)
    if f.sited.site is not None and not f.sited.problems:
        print(f"OK   site {f.sited.site}: named by the export's signed links and checkpoints"
              f"{' (pinned)' if f.sited.pinned == f.sited.site else ''}", file=detail)
    if not f.money:
        derived = (f"; {f.accounts} accounts re-derived, sum 0"
                   if f.accounts is not None else "")
        print(f"OK   money: every posting belongs to one command, each balanced{derived}",
              file=detail)
    unsaid = sorted({p.shoe_id for p in f.pending} - set(claimed))
    if unsaid:  # an export of an older format, or a header edited (it is not notarised)
        print(f"note: shoes in play the export's header does not list as pending: {unsaid}",
              file=detail)
    for pend in f.pending:  # held, chained and in the money; its cards not checked yet
        print(f"PENDING shoe {pend.shoe_id} (table {pend.table_id}, {pend.game}): "
              f"{pend.coups} coups so far ({pend.settled} settled); {pend.reason}", file=detail)
    for size in f.against.proven:
        print(f"OK   the checkpoint of size {size} received earlier: the export's log holds it",
              file=detail)
    for why in f.against.unchecked:
        print(f"UNCHECKED {why}", file=detail)
    for p in f.problems:
        print(f"FAIL {p.message}", file=detail)
    for m in f.money:
        where = f"position {m.position}: " if m.position is not None else ""
        print(f"FAIL money: {where}{m.message}", file=detail)


def _verdict(f: _Found, unpinned: list[str]) -> tuple[str, int, str, int | None]:
    """The verdict, its exit code, its line and the first tampered position."""
    # the log's own integrity first (notarised, chained); then what it records
    failed_at = [p.position for p in f.problems if p.position is not None]
    if not failed_at:
        failed_at = [v.position for v in f.verdicts if not v.ok and v.position is not None]
        failed_at += [m.position for m in f.money if m.position is not None]
    bad = bool(f.problems) or bool(f.money) or any(not v.ok for v in f.verdicts)
    first_at = min(failed_at) if bad and failed_at else None
    sited = f.sited
    counts = (f"{f.events} events, {f.checkpoints} checkpoints, {f.coups} coups, "
              f"{f.links} links" + (f"; site {sited.site}" if sited.site else ""))
    held = (f"; {len(f.pending)} shoe(s) pending: card checks deferred, listed above"
            if f.pending else "")
    if bad:
        first = f"; first tampered position {first_at}" if first_at is not None else ""
        line = f"NOT VERIFIED{first}" + (f"; {sited.mismatch}" if sited.mismatch else "")
        return "NOT VERIFIED", NOT_VERIFIED, line, first_at
    if unpinned or f.against.unchecked or sited.unverifiable:
        reasons: list[str] = []
        if unpinned:
            reasons.append(f"not pinned: {' and '.join(unpinned)} (or --trust FILE); the "
                           "export's own keys vouch for nothing")
        if f.against.unchecked:
            reasons.append(f"{len(f.against.unchecked)} checkpoint(s) received earlier not "
                           "checked")
        if sited.unverifiable:
            reasons.append(sited.unverifiable)
        line = f"UNVERIFIABLE: nothing failed ({counts}{held}); " + "; ".join(reasons)
        return "UNVERIFIABLE", UNVERIFIABLE, line, None
    return "VERIFIED", VERIFIED, f"VERIFIED: {counts}{held}", None


def _summary(f: _Found, verdict: str, code: int, first_at: int | None,
             unpinned: list[str]) -> dict[str, Any]:
    """The verdict as data (docs/export-format.md, "sabot-verify --format json")."""
    return {
        "verdict": verdict,
        "exit": code,
        "first_tampered_position": first_at,
        "events": f.events, "checkpoints": f.checkpoints, "coups": f.coups,
        "links": f.links,
        "unpinned": unpinned,
        "site": f.sited.to_json(),
        "known_checkpoints": {"proven": f.against.proven, "unchecked": f.against.unchecked},
        "shoes": [{"what": v.what, "ok": v.ok, "position": v.position, "detail": v.detail}
                  for v in f.verdicts if v.what.startswith("shoe")],
        "pending": [pend.to_json() for pend in f.pending],
        "failures": [
            *({"position": p.position, "message": p.message} for p in f.problems),
            *({"position": m.position, "message": f"money: {m.message}"} for m in f.money),
            *({"position": v.position, "message": f"{v.what}: {v.detail}"}
              for v in f.verdicts if not v.ok),
        ],
    }


class _Replay:
    """``lines`` read once as a stream (``first``), and again when needed (``again``): a list
    as it is; a file that can seek, from where it stood; anything else spooled to a temporary
    file as the stream reads it, never held in memory."""

    def __init__(self, lines: Iterable[str]) -> None:
        self.lines = lines
        self.listed = isinstance(lines, (list, tuple))
        self.spool: TextIO | None = None
        self.start: int | None = None  # where a seekable file stood
        if not self.listed and isinstance(lines, io.TextIOBase):
            try:
                self.start = lines.tell() if lines.seekable() else None
            except OSError:  # read on by next() already: its position is not known
                self.start = None
        self.source = iter(lines)

    def __enter__(self) -> _Replay:
        if not self.listed and self.start is None:
            self.spool = tempfile.TemporaryFile("w+", encoding="utf-8")
        return self

    def __exit__(self, *_exc: object) -> None:
        if self.spool is not None:
            self.spool.close()

    def _kept(self, line: str) -> str:
        if self.spool is not None:
            self.spool.write(line if line.endswith("\n") else line + "\n")
        return line

    def first(self) -> Iterator[str]:
        return self.source if self.spool is None else map(self._kept, self.source)

    def again(self) -> Iterable[str]:
        """Every line: a list's or a seekable file's again; else those the stream read
        (spooled), then those it left unread (as they come: a narrowed export, which the
        stream does not read past its header, is never copied)."""
        if self.start is not None and isinstance(self.lines, io.TextIOBase):
            self.lines.seek(self.start)
            return self.lines
        if self.spool is None:
            return self.lines
        self.spool.seek(0)
        return itertools.chain(self.spool, self.source)


def run(
    lines: Iterable[str], regulator_key: bytes | None = None,
    checkpoint_key: bytes | None = None,
    out: Any = sys.stdout, chain_keys: list[bytes] | None = None,
    chain_head: dict[str, Any] | None = None, summary: dict[str, Any] | None = None,
    known: list[dict[str, Any]] | None = None, verbose: bool = True,
    site: str | None = None,
) -> int:
    """Verify an export: the verdict printed to ``out`` (``verbose``: the detail first), the
    exit code returned (0 VERIFIED, pending shoes or not; 1 NOT VERIFIED; 3 UNVERIFIABLE: no
    failure, but a key not pinned or an earlier checkpoint in ``known`` not checkable);
    ``summary``, when given, is filled with the same as data (docs/export-format.md,
    "sabot-verify --format json"). ``site``: the site whose log it must be (pinned;
    ``sabot_verify.site``). A whole log's export is verified as it is read
    (``sabot_verify.stream``); anything the stream cannot vouch for is verified again from
    the export held in memory, whose verdict stands."""
    detail = out if verbose else io.StringIO()
    unpinned = []
    if checkpoint_key is None:
        unpinned.append("the checkpoint key (--checkpoint-public-key)")
    if not chain_keys:
        unpinned.append("the chain key (--chain-public-key)")
    reg = load_x25519(regulator_key) if regulator_key is not None else None
    with _Replay(lines) as replay:
        found: _Found | None = None
        if not known:
            try:
                found = _streamed(replay.first(), checkpoint_key, reg, chain_keys, chain_head,
                                  site)
            except Unsure:
                found = None
        if found is None:
            exp = parse(replay.again())
            key = checkpoint_key if checkpoint_key is not None else bytes.fromhex(
                exp.header["checkpoint_key"])
            found = _buffered(exp, key, reg, chain_keys, chain_head, known or [], site, detail)
    _detail(found, reg, detail)
    verdict, code, line, first_at = _verdict(found, unpinned)
    if summary is not None:
        summary.update(_summary(found, verdict, code, first_at, unpinned))
    if not verbose:
        line = line.replace("listed above", "-v lists them")
        if code != VERIFIED:
            line += " (-v says what)"
    print(line, file=out)
    return code


def _open(path: str) -> TextIO:
    try:
        return open(path, encoding="utf-8")
    except OSError as exc:
        raise Unreadable(f"export {path}: {exc.strerror or exc}") from None


def _first_line(source: TextIO, name: str) -> str:
    try:
        return source.readline()
    except (OSError, UnicodeDecodeError) as exc:
        raise Unreadable(f"export {name}: {exc}") from None


def _header_keys(text: str) -> set[bytes]:
    """The public keys the export's header names (to tell a private key given in their
    place): empty when the header is unreadable (the verification says why)."""
    try:
        header = json.loads(text.split("\n", 1)[0])
        return {bytes.fromhex(header[k]) for k in ("checkpoint_key", "chain_key")
                if isinstance(header.get(k), str)}
    except (ValueError, TypeError, AttributeError):
        return set()


def _version() -> str:
    try:
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("sabot")
        except PackageNotFoundError:
            pass
    except ImportError:  # pragma: no cover
        pass
    from sabot_verify import __version__

    return __version__


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="sabot-verify",
        description="Checks a Sabot export (SABOT-EXPORT-2 or -1, docs/export-format.md) and "
        "prints one verdict line. Exit codes: 0 VERIFIED, 1 NOT VERIFIED, 2 usage, 3 UNVERIFIABLE "
        "(nothing failed, but no trust anchor: pin the operator's public keys), 4 a file that "
        "cannot be read.")
    parser.add_argument("export", help="an export file (JSON Lines), or - for stdin")
    parser.add_argument("--version", action="version",
                        version=f"sabot-verify {_version()} (SABOT-EXPORT-2, SABOT-EXPORT-1)")
    parser.add_argument("--trust", metavar="FILE",
                        help="the regulator's trust file (SABOT-TRUST-1, TOML or JSON): the "
                        "operator's pinned public keys and earlier checkpoints")
    parser.add_argument("--checkpoint-public-key", dest="checkpoint_key",
                        metavar="KEY", help="the operator's Ed25519 checkpoint PUBLIC key "
                        "(64 hex digits, a file holding them, or a PEM public key); its old "
                        "name --checkpoint-key works until the next release")
    parser.add_argument("--chain-public-key", dest="chain_key", action="append",
                        metavar="KEY", help="a PUBLIC key of the ledger's evidence chain (as "
                        "above); repeat it for each key used since the log began; its old name "
                        "--chain-key works until the next release")
    parser.add_argument("--site", metavar="SITE",
                        help="the site whose log it must be (its signed links and checkpoints "
                        "name it; a group's site, SABOT_SITE): another site's is NOT VERIFIED; "
                        "a site's export with none pinned is UNVERIFIABLE; overrides the trust "
                        "file's site")
    parser.add_argument("--known-checkpoint", action="append", metavar="FILE",
                        help="a checkpoint received earlier (JSON: `sabot store checkpoint`, "
                        "`sabot regulator checkpoint --format json`, or an export's checkpoint "
                        "line); the export must still hold its tree; repeatable")
    parser.add_argument("--regulator-key", help="the regulator's X25519 private key (PEM file)")
    parser.add_argument("--chain-head", help="the ledger writer's head file (SABOT_CHAIN_HEAD): "
                        "the export must reach the last link it records")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="a line per shoe, coup, the chain, the money and who did what, "
                        "before the verdict")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="json: one JSON object on stdout (verdict, exit, "
                        "first_tampered_position, counts, shoes, pending, failures, report)")
    # the old names (where `sabot` takes private keys): accepted for one release, not shown
    parser.add_argument("--checkpoint-key", dest="checkpoint_key", help=argparse.SUPPRESS)
    parser.add_argument("--chain-key", dest="chain_key", action="append", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    opened: list[TextIO] = []
    try:
        return _answer(args, opened)
    finally:
        for f in opened:
            f.close()


def _answer(args: argparse.Namespace, opened: list[TextIO]) -> int:
    """Read the keys, the trust and the export named in ``args``; verify; the exit code."""
    try:
        source = sys.stdin if args.export == "-" else _open(args.export)
        if source is not sys.stdin:
            opened.append(source)
        first = _first_line(source, args.export)  # read on line by line: never held whole
        named = _header_keys(first)
        lines: Iterable[str] = itertools.chain([first], source)
        if source is not sys.stdin and source.seekable():  # read again from the file itself
            source.seek(0)
            lines = source
        trust = load_trust(args.trust) if args.trust else Trust()
        reg = None
        if args.regulator_key:
            try:
                reg = Path(args.regulator_key).read_bytes()
            except OSError as exc:
                raise Unreadable(f"--regulator-key {args.regulator_key}: {exc.strerror}") from None
        cpk = (public_key(args.checkpoint_key, "--checkpoint-public-key", named)
               if args.checkpoint_key else trust.checkpoint_key)
        chain = [public_key(k, "--chain-public-key", named) for k in args.chain_key or []]
        chain = chain or trust.chain_keys
        known = trust.known + [load_checkpoint(f) for f in args.known_checkpoint or []]
        head = load_head(read_text(args.chain_head, "--chain-head")) if args.chain_head else None
        site = site_id(args.site, "--site") if args.site is not None else trust.site
    except Unreadable as exc:
        print(f"sabot-verify: error: cannot read {exc}", file=sys.stderr)
        return UNREADABLE
    except Bad as exc:
        print(f"sabot-verify: error: {exc}", file=sys.stderr)
        return USAGE
    except (ValueError, KeyError, TypeError) as exc:
        print(f"sabot-verify: error: --chain-head: {exc}", file=sys.stderr)
        return USAGE
    summary: dict[str, Any] = {}
    json_out = args.format == "json"
    report = io.StringIO() if json_out else sys.stdout
    try:
        code = run(lines, reg, cpk, out=report,
                   chain_keys=chain or None,
                   chain_head=head, summary=summary, known=known,
                   verbose=args.verbose or json_out, site=site)
    except (OSError, UnicodeDecodeError) as exc:  # the file, not its content
        print(f"sabot-verify: error: cannot read export {args.export}: {exc}", file=sys.stderr)
        return UNREADABLE
    except (Bad, KeyError, TypeError, ValueError) as exc:  # a malformed export does not verify
        print(f"NOT VERIFIED: malformed export: {exc!r}", file=report)
        code = NOT_VERIFIED
        summary = {"verdict": "NOT VERIFIED", "exit": 1, "first_tampered_position": None,
                   "pending": [], "failures": [{"position": None,
                                                "message": f"malformed export: {exc!r}"}]}
    if isinstance(report, io.StringIO):
        summary["report"] = report.getvalue().splitlines()
        print(json.dumps(summary, indent=2, sort_keys=True))
    return code


__all__ = ["Problem", "main", "run"]

if __name__ == "__main__":
    sys.exit(main())
