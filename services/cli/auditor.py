"""Auditor's commands: ``sabot shuffle`` and ``sabot deal`` (the odds live in services.cli.odds)."""

from __future__ import annotations

import argparse
from typing import Any
from uuid import UUID

from domain.cards import parse_deck_kind
from domain.shuffle import commitment, cut, order_digest, parse_seed, shuffle
from services.cli import CliError


def _uuid(text: str) -> UUID:
    try:
        return UUID(text)
    except ValueError:
        raise CliError(f"--shoe-id: not a UUID: {text!r}") from None


def register(sub: Any) -> None:
    p = sub.add_parser("shuffle", help="rebuild a shoe per SABOT-SHUFFLE-1 and print it")
    p.add_argument("--seed", required=True, help="64 hex digits (32 bytes)")
    p.add_argument("--shoe-id", required=True, help="the shoe's UUID")
    p.add_argument("--deck", default="FRENCH-52", help="FRENCH-52, FRENCH-40 or SPANISH-40")
    p.add_argument("--decks", type=int, default=6)
    p.add_argument("--cut", type=int, default=None, help="cut position, 1..N-1 (default: no cut)")
    p.set_defaults(func=cmd_shuffle)


def cmd_shuffle(args: argparse.Namespace) -> int:
    seed = parse_seed(args.seed, "--seed")
    shoe_id = _uuid(args.shoe_id)
    kind = parse_deck_kind(args.deck, "--deck")
    cards = shuffle(seed, shoe_id, kind, args.decks)
    print("algorithm   SABOT-SHUFFLE-1")
    print(f"commitment  {commitment(seed, shoe_id)}")
    print(f"digest      {order_digest(cards)}  (before the cut)")
    if args.cut is not None:
        cards = cut(cards, args.cut)
        print(f"digest      {order_digest(cards)}  (after the cut at {args.cut})")
    print(" ".join(c.code for c in cards))
    return 0
