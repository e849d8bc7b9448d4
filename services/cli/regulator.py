"""The regulator's offline commands: ``sabot keys regulator|checkpoint|chain`` and ``sabot store
checkpoint|export|replay|proof``.

Their settings are services/settings.py's (the same on every command): the store is ``--store``
(``SABOT_STORE``, old name ``SABOT_STORE_URL``); the notary's Ed25519 checkpoint key is
``--checkpoint-private-key`` (``SABOT_CHECKPOINT_KEY``; old flag ``--key``): 64 hex digits, a file
of them, or the PEM file ``sabot keys checkpoint`` writes. Only the notary signs: ``store
checkpoint`` takes the store's writer lock (waiting up to ``--wait`` seconds, else an error);
``--follow`` stands by until it is free. ``store export`` only reads: it exports up to the
store's latest signed checkpoint (``sabot store checkpoint`` or a running server's notary signs
them) and needs the notary's public key only (``--checkpoint-public-key``,
``SABOT_CHECKPOINT_PUBLIC_KEY``; or the public half of a private key given). Each checks the
ledger's evidence chain over what it reads (``--chain-public-key``: the chain's public key,
repeatable, old flag ``--chain-key``; default: the key its first link introduces) and says
where it is broken.

Given a read store (``--read-store``, ``SABOT_READ_STORE``: a standby of ``--store``), ``store
export|replay|proof`` read it instead of ``--store`` and say on stderr how far behind it is;
``export`` then never signs (the notary stays on the primary): it exports up to the latest
checkpoint the read store holds, verified by sabot-verify as any export.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from services import bootstrap
from services.cli import CliError, commands, keep_old_names, settings_of
from services.cli.exits import Exit
from services.cli.progress import Progress, quiet_argument
from services.regulator.chain import ChainProblem, pinned_keys
from services.regulator.checkpoint import key_id, public_key_bytes
from services.regulator.escrow import generate_regulator_key
from services.regulator.escrow_table import EscrowTable
from services.regulator.export import (
    ExportError,
    ExportSummary,
    StoreTampered,
    damaged,
    write_export,
)
from services.regulator.merkle import ProofError
from services.regulator.notary import Notary, NotaryBusy, follow_with
from services.regulator.replay import Replayer, ReplayStep, verdict
from services.regulator.replica import NotACopy
from services.regulator.site import SiteMismatch
from services.regulator.source import StoreError
from services.settings import Settings, add_flags


def register(sub: Any) -> None:
    sub = commands(sub)
    keys = sub.group("keys")
    store = sub.group("store")
    p = keys.add_parser("regulator", help="the regulator's X25519 key pair for seed escrow "
                                          "(NAME.pub: SABOT_REGULATOR_PUBLIC_KEY)")
    p.add_argument("--out", required=True, help="writes OUT.key (PEM, private) and OUT.pub (hex)")
    p.set_defaults(func=cmd_regulator_keygen)

    p = keys.add_parser("checkpoint", help="the notary's Ed25519 checkpoint key pair "
                                           "(NAME.key: SABOT_CHECKPOINT_KEY)")
    p.add_argument("--out", required=True, help="writes OUT.key (PEM, private) and OUT.pub (hex)")
    p.set_defaults(func=cmd_checkpoint_keygen, pair="checkpoint")

    p = keys.add_parser("chain", help="the ledger's Ed25519 evidence chain key pair "
                                      "(NAME.key: SABOT_CHAIN_KEY)")
    p.add_argument("--out", required=True, help="writes OUT.key (PEM, private) and OUT.pub (hex)")
    p.set_defaults(func=cmd_checkpoint_keygen, pair="chain")

    p = store.add_parser("checkpoint", help="the notary: notarise new events and sign the "
                                            "tree head")
    add_flags(p, "store", "checkpoint_key", "chain_public_keys", "site")
    p.add_argument("--follow", action="store_true",
                   help="keep notarising as the log grows (a checkpoint at every coup end)")
    p.add_argument("--interval", type=float, default=0.2, help="seconds between polls")
    _wait_arg(p)
    p.set_defaults(func=cmd_checkpoint)

    p = store.add_parser("export", help="the canonical export for regulators (JSON Lines, "
                                        "docs/export-format.md)")
    add_flags(p, "store", "read_store", "checkpoint_public_key", "checkpoint_key",
              "chain_public_keys", "site")
    p.add_argument("--shoe", action="append", help="only this shoe (repeatable)")
    p.add_argument("--since", help="ISO 8601 time: events at or after it")
    p.add_argument("--until", help="ISO 8601 time: events before it")
    p.add_argument("-o", "--output", help="file to write (default: stdout)")
    p.add_argument("--known-size", type=int, action="append", metavar="M",
                   help="the size of a checkpoint the regulator holds: the anchor carries the "
                        "consistency proof from it (for a narrowed export; repeatable)")
    p.add_argument("--wait", type=float, default=0.0,
                   help="given the private checkpoint key: seconds to wait for the notary's "
                        "lock (default: 0)")
    quiet_argument(p)
    p.set_defaults(func=cmd_export)

    p = store.add_parser("replay", help="replay a coup or a shoe beside its recorded events")
    add_flags(p, "store", "read_store", "regulator_key", "chain_public_keys")
    _unused_key(p)
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--coup", help="coup id")
    group.add_argument("--shoe", help="shoe id")
    p.add_argument("--all", action="store_true", help="print every step, not only differences")
    quiet_argument(p)
    p.set_defaults(func=cmd_replay)

    p = store.add_parser("proof", help="an inclusion or consistency proof (JSON)")
    add_flags(p, "store", "read_store")
    _unused_key(p)
    p.add_argument("--position", type=int, help="inclusion proof of the event at this position")
    p.add_argument("--from-size", type=int, help="consistency proof from this tree size")
    p.add_argument("--size", type=int, help="tree size (default: the latest checkpoint's)")
    p.set_defaults(func=cmd_proof)
    keep_old_names(sub)


def _unused_key(p: argparse.ArgumentParser) -> None:
    """The previous release's ``--key`` of a command that never used it: still accepted (and
    never read), hidden."""
    p.add_argument("--key", dest="unused_key", default=None, help=argparse.SUPPRESS)


def _chain_keys(settings: Settings) -> dict[str, Any] | None:
    return pinned_keys(settings.chain_public_keys) if settings.chain_public_keys else None


def _say_chain(problems: list[ChainProblem]) -> None:
    """The chain's problems, on stderr (at most 10 lines)."""
    if not problems:
        return
    first = min(problems, key=lambda p: p.position)
    print(f"evidence chain: {len(problems)} problem(s); first at position {first.position}: "
          f"{first.message}", file=sys.stderr)
    for p in sorted(problems, key=lambda p: p.position)[1:10]:
        print(f"evidence chain: position {p.position}: {p.message}", file=sys.stderr)


def _wait_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--wait", type=float, default=0.0,
                   help="seconds to wait while another notary writes the store (default: 0)")


def _hold(notary: Notary, wait: float) -> None:
    """The store's writer lock for this command, or a clear error."""
    if not notary.hold(wait):
        raise CliError(f"--store: {NotaryBusy(notary.writer.where)}; stop it, or give --wait")


# Where each pair's private half belongs, as `sabot keys` says it (the chain key is the
# server's own: it signs every batch the writer saves).
_PRIVATE_HOME = {
    "regulator": "the regulator's machine only: keep it off the server",
    "checkpoint": "the notary's: SABOT_CHECKPOINT_KEY / --checkpoint-private-key, on the server "
                  "or the notary's host only",
    "chain": "the server's: SABOT_CHAIN_KEY / --chain-private-key, on the servers only",
}


def _write_pair(out: str, private_pem: bytes, public: bytes, pair: str = "regulator") -> None:
    key_path, pub_path = Path(out + ".key"), Path(out + ".pub")
    if not key_path.parent.is_dir():  # never made: a typo would make folders anywhere
        raise CliError(f"--out: {key_path.parent}: no such folder; make it first")
    if key_path.exists():
        raise CliError(f"--out: {key_path} exists; refusing to overwrite a key")
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(private_pem)
    pub_path.write_text(public.hex() + "\n")
    print(f"private key {key_path} ({_PRIVATE_HOME[pair]}), public key {pub_path}")
    print(public.hex())


def cmd_regulator_keygen(args: argparse.Namespace) -> int:
    pem, pub = generate_regulator_key()
    _write_pair(args.out, pem, pub)
    return 0


def cmd_checkpoint_keygen(args: argparse.Namespace) -> int:
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    _write_pair(args.out, pem, public_key_bytes(key.public_key()),
                getattr(args, "pair", "checkpoint"))
    return 0


def _notary(args: argparse.Namespace, *, sign: bool = False) -> Notary:
    """The store's Merkle log: one that signs with the checkpoint key (``sign``, which it
    requires) or one that only reads (it creates and changes nothing): on the read store when
    there is one (then never one that signs), saying on stderr how far behind it is."""
    settings = settings_of(args)
    if sign:
        settings.require("checkpoint_key")  # before any connection
    reading = settings.read_store is not None
    flag = settings.sources.get("read_store", "--read-store") if reading else "--store"
    try:
        db = bootstrap.read_database(settings) if reading else bootstrap.store_database(settings)
    except StoreError as exc:
        raise CliError(f"{flag}: {exc}") from None
    except Exception as exc:  # never the URL: it may hold a password
        raise CliError(f"{flag}: cannot connect: {type(exc).__name__}") from None
    if reading:
        try:
            lag = bootstrap.read_lag(settings, db)
        except NotACopy as exc:
            db.close()
            raise CliError(f"{flag}: {exc}") from None
        if lag is not None:
            print(f"sabot: read store: {lag.text()}", file=sys.stderr)
    try:  # its checkpoints name the store's site (docs/operations.md, "Many sites")
        return bootstrap.store_notary(settings, db, sign=sign and not reading)
    except SiteMismatch as exc:
        db.close()
        where = settings.sources.get("site", "--site")
        raise CliError(f"{where}: {exc}", Exit.REFUSED) from None


def cmd_checkpoint(args: argparse.Namespace) -> int:
    notary = _notary(args, sign=True)
    try:
        return _checkpoint_with(args, notary)
    finally:
        notary.db.close()


def _checkpoint_with(args: argparse.Namespace, notary: Notary) -> int:
    if args.follow:
        assert notary.key is not None
        stop = threading.Event()
        print("notarising; Ctrl-C to stop", file=sys.stderr)
        try:  # on the command's notary: follow_with releases its lock, taken again below
            follow_with(notary, stop, args.interval,
                        on_standby=lambda text: print(text, file=sys.stderr))
        except KeyboardInterrupt:
            stop.set()
    _hold(notary, args.wait)
    try:
        signed = notary.sync()
        latest = notary.checkpoint_now()
    finally:
        notary.release()
    print(f"notarised up to leaf {notary.size}; {len(signed)} coup checkpoints signed",
          file=sys.stderr)
    print(json.dumps(latest.to_json() if latest else None, sort_keys=True))
    _say_chain(notary.chain_problems)
    return 1 if notary.chain_problems else 0


def _time(text: str | None, field: str) -> datetime | None:
    if text is None:
        return None
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise CliError(f"{field}: not an ISO 8601 time: {text!r}") from None
    if t.tzinfo is None:
        raise CliError(f"{field}: give a time zone (e.g. {text}+00:00)")
    return t


def cmd_export(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    try:
        try:  # from a read store: never signed here (the notary stays on the primary)
            notary = _notary(args, sign=settings.checkpoint_key is not None)
            try:
                return _export_with(args, notary)
            finally:
                notary.db.close()
        except (ProofError, KeyError) as exc:  # loading, notarising or signing a damaged tree
            if isinstance(exc, KeyError) and "Merkle" not in str(exc):
                raise
            raise damaged(exc) from None
    except StoreTampered as exc:  # one line, exit 1: as a chain break (docs/export-format.md)
        print(f"sabot: error: {exc}", file=sys.stderr)
        return 1


def _export_with(args: argparse.Namespace, notary: Notary) -> int:
    """Export up to the latest signed checkpoint, reading only: the notary signs. Given the
    private checkpoint key (the previous release's way) and the notary's lock free, it
    notarises the store first, as ``store checkpoint`` does."""
    if notary.key is not None and notary.hold(args.wait):
        try:  # held to the end: the tree does not grow under the export
            notary.sync()
            if notary.size == 0:  # as ExportEvents: an empty store, an empty export
                print("the store holds no event yet: nothing to export", file=sys.stderr)
                return 0
            notary.checkpoint_now()
            summary = _export(args, notary, public_key_bytes(notary.key.public_key()))
        finally:
            notary.release()
    else:
        if notary.key is not None:
            print("another notary is writing this store (a running server?): exporting up to "
                  "its latest checkpoint", file=sys.stderr)
            notary.refresh()
        found = _export_read_only(args, notary)
        if found is None:
            return 0
        summary = found
    hashed = (f" (and {summary.elided} other leaves of its span as hashes)"
              if summary.elided else "")
    print(f"exported {summary.events} events{hashed}, {summary.checkpoints} checkpoints "
          f"(anchor {summary.anchor})", file=sys.stderr)
    if summary.pending:  # held for the chain and the money, listed in the header's "pending"
        n = len(summary.pending)
        print(f"{n} shoe{'s' if n > 1 else ''} in play, pending (card checks deferred until "
              f"closed): {', '.join(str(x['shoe_id']) for x in summary.pending)}",
              file=sys.stderr)
    _say_chain(summary.chain_problems)
    return 0


def _export_read_only(args: argparse.Namespace, notary: Notary) -> ExportSummary | None:
    """The export up to the latest signed checkpoint, with the notary's public key (or a
    private key's public half); None for an empty store."""
    settings = settings_of(args)
    if not notary.events.positions(0, 1):  # as ExportEvents: an empty store, an empty export
        print("the store holds no event yet: nothing to export", file=sys.stderr)
        return None
    latest = notary.latest_checkpoint()
    if latest is None:
        where = "--read-store" if settings.read_store is not None else "--store"
        raise CliError(f"{where}: no signed checkpoint yet: `sabot store checkpoint` (or a "
                       "server with SABOT_CHECKPOINT_KEY) signs them")
    public = settings.checkpoint_public_key
    if public is None:
        settings.require("checkpoint_public_key")
    assert public is not None
    if key_id(public) != latest.key_id:
        where = settings.sources.get("checkpoint_public_key") or \
            settings.sources.get("checkpoint_key", "--checkpoint-public-key")
        raise CliError(f"{where}: not the key that signed the store's latest checkpoint "
                       f"(key id {latest.key_id})")
    summary = _export(args, notary, public)
    if latest.position is not None:
        left = len(notary.events.positions(latest.position, 100_000))
        if left:
            print(f"{left}{'+' if left >= 100_000 else ''} events after the latest checkpoint "
                  "are not in the export (`sabot store checkpoint` notarises them)",
                  file=sys.stderr)
    return summary


def _export(args: argparse.Namespace, notary: Notary, public: bytes) -> ExportSummary:
    since, until = _time(args.since, "--since"), _time(args.until, "--until")
    if args.shoe and (since or until):
        raise CliError("--shoe: give either shoes or a time range, not both")
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout  # noqa: SIM115
    whole = not (args.shoe or since or until)
    latest = notary.latest_checkpoint()
    try:  # progress: the event records written (of the anchor's leaves, for the whole log)
        with Progress("export", total=latest.size if whole and latest else None,
                      unit="events", quiet=args.quiet) as progress:
            return write_export(
                _Counted(out, progress), notary.events, notary, public, shoe_ids=args.shoe,
                since=since, until=until, chain_keys=_chain_keys(settings_of(args)),
                known_sizes=args.known_size,
            )
    except StoreTampered:
        raise
    except ExportError as exc:
        raise CliError(str(exc)) from None
    finally:
        if args.output:
            out.close()


# An event record's own keys in its canonical line (docs/export-format.md: "index", "kind",
# "leaf_hash" sorted): what the export's progress counts.
_EVENT_RECORD = '"kind":"event","leaf_hash"'


class _Counted:
    """A text sink that tells ``progress`` how many event records went through it."""

    def __init__(self, out: Any, progress: Progress) -> None:
        self.out = out
        self.progress = progress

    def write(self, text: str) -> int:
        self.progress.advance(text.count(_EVENT_RECORD))
        return int(self.out.write(text))


def _show(step: ReplayStep) -> str:
    mark = "=" if step.same else "≠"
    return f"{step.position!s:>8} {mark} {step.what}: {step.recorded!r} | {step.replayed!r}"


def cmd_replay(args: argparse.Namespace) -> int:
    notary = _notary(args)
    try:
        return _replay_with(args, notary)
    finally:
        notary.db.close()


def _replay_with(args: argparse.Namespace, notary: Notary) -> int:
    settings = settings_of(args)
    reg = None
    if settings.regulator_key is not None:
        reg = X25519PrivateKey.from_private_bytes(settings.regulator_key)
    escrow = EscrowTable(bootstrap.read_url(settings)) if reg is not None else None
    replayer = Replayer(notary.events, notary, games=bootstrap.REGULATOR_GAMES,
                        regulator_key=reg, escrow=escrow,
                        chain_keys=_chain_keys(settings))
    steps = replayer.coup(args.coup) if args.coup else replayer.shoe(args.shoe)

    def stream(progress: Progress) -> Any:
        for s in steps:
            if args.all or not s.same:
                progress.clear()
                print(_show(s))
            progress.advance()
            yield s

    with Progress("replay", unit="steps", quiet=args.quiet or bool(args.coup)) as progress:
        v = verdict(stream(progress))
    print(f"verdict: {v}")
    return 0 if v.identical else 1


def cmd_proof(args: argparse.Namespace) -> int:
    notary = _notary(args)
    latest = notary.latest_checkpoint()
    size = args.size or (latest.size if latest else notary.size)
    try:
        return _proof(notary, args, size)
    except ProofError as exc:
        raise CliError(f"--size: {exc}") from None


def _proof(notary: Notary, args: argparse.Namespace, size: int) -> int:
    out: dict[str, Any] = {"size": size, "root": notary.root(size).hex()}
    if args.position is not None:
        leaf = notary.leaf_at_position(args.position)
        if leaf is None:
            raise CliError(f"--position: no notarised event at position {args.position}")
        out["inclusion"] = {
            "position": args.position, "index": leaf[0], "leaf_hash": leaf[1].hex(),
            "proof": [h.hex() for h in notary.inclusion_proof(leaf[0], size)],
        }
    if args.from_size is not None:
        out["consistency"] = {
            "from": args.from_size, "root_from": notary.root(args.from_size).hex(),
            "proof": [h.hex() for h in notary.consistency_proof(args.from_size, size)],
        }
    print(json.dumps(out, sort_keys=True))
    return 0
