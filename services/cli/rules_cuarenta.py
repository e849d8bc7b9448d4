"""``sabot rules cuarenta …``: Cuarenta's rule book answers questions.

- ``captures --table 2C 3D 6S 7D JH KS --card 5H [--last-played CODE] [--score N]``: every legal
  capture set of the card on that table, with its kind and points (``--format json``: a list of
  objects ``{"cards": [...], "kind": ..., "points": ...}``);
- ``carton N``: the points for N cards won in a hand;
- ``options``: every option with its default and its source.

``sabot odds --game cuarenta`` (``cmd_odds``): the exact chance of a ronda (and of four of a
rank) in five cards dealt, the rondas to expect in a hand, and with ``--monte-carlo N`` the same
counted on N hands dealt from SABOT-SHUFFLE-1 packs.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from fractions import Fraction
from itertools import islice
from math import comb
from typing import Any, NoReturn
from uuid import UUID

from domain.cuarenta.captures import BaseKind, Capture, every_capture_set
from domain.cuarenta.ranks import RANKS, parse_card, parse_cards, shuffled_pack
from domain.cuarenta.rules import (
    HAND_SIZE,
    OPTIONS,
    PACK_SIZE,
    PRESET_NAMES,
    CuarentaRules,
    FourOfAKind,
    cuarenta_rules,
)
from domain.cuarenta.scoring import CARTON_MINIMUM, carton, rank_counts, tally
from domain.errors import InvalidArgument
from services.cli import CliError
from services.cli.options import overrides, parse_seed, whole

FORMATS = ("text", "json")
GAME = "cuarenta"
LIMIT = 1000


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line on stderr, exit code 2."""

    def error(self, message: str) -> NoReturn:
        _one_line(self, message)


def _one_line(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    parser.exit(2, f"sabot: error: {parser.prog}: {message}\n")


def register(games: Any) -> None:
    p = games.add_parser(
        GAME,
        help="Cuarenta: legal captures, the cartón, the options",
        description="Cuarenta's rule book (seed 001, RULES.md §3).",
    )
    p.error = functools.partial(_one_line, p)  # the parser is made by rules.py: one line too
    sub = p.add_subparsers(dest="question", required=True, parser_class=_Parser)

    c = sub.add_parser(
        "captures",
        help="every legal capture set of a card on a table",
        description="Every capture set the card may take from the table (same rank, sums "
        "among A-7, then the consecutive cards upward), with its kind and points.",
    )
    c.add_argument("--table", nargs="*", default=[], metavar="CODE", help="the table's cards")
    c.add_argument("--card", required=True, metavar="CODE", help="the card played")
    c.add_argument(
        "--last-played", default=None, metavar="CODE",
        help="the card the opponent has just played (on the table): taking it is a caída",
    )
    c.add_argument(
        "--score", default="0", metavar="N", help="the playing side's points (38-point rule)"
    )
    c.add_argument(
        "--limit", default=str(LIMIT), metavar="N",
        help=f"list at most N sets (default {LIMIT}; two cards of a rank double the sets)",
    )
    _common(c)
    c.set_defaults(func=cmd_captures)

    k = sub.add_parser(
        "carton", help="the points for N cards won in a hand",
        description="The cartón: the points a side scores for the cards it won in a hand.",
    )
    k.add_argument("cards", metavar="N", help=f"cards won, 0 to {PACK_SIZE}")
    _common(k)
    k.set_defaults(func=cmd_carton)

    o = sub.add_parser("options", help="every option, its default and its source")
    _common(o)
    o.set_defaults(func=cmd_options)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", default="seed", help=f"one of {', '.join(PRESET_NAMES)}")
    p.add_argument("--option", action="append", default=[], metavar="K=V", help="one option")
    p.add_argument("--format", default="text", help="text or json")


def _rules(args: argparse.Namespace) -> CuarentaRules:
    if args.format not in FORMATS:
        raise CliError(f"--format: must be text or json, got {args.format!r}")
    return cuarenta_rules(args.preset, overrides(args.option))


def _print_json(value: object) -> None:
    json.dump(value, sys.stdout, indent=2, ensure_ascii=False)
    print()


# --- captures -------------------------------------------------------------------------------


def capture_json(capture: Capture) -> dict[str, Any]:
    return {
        "cards": [c.code for c in capture.taken],
        "kind": capture.kind.value,
        "points": capture.points,
        "withheld": capture.withheld,
        "base": [c.code for c in capture.base],
        "by": capture.base_kind.value,
        "run": [c.code for c in capture.run],
    }


def capture_text(capture: Capture) -> str:
    cards = " ".join(c.code for c in capture.taken)
    base = " + ".join(c.code for c in capture.base)
    how = f"{base} = {capture.card.rank}" if capture.base_kind is BaseKind.SUM else base
    if capture.run:
        how += ", then " + " ".join(c.code for c in capture.run)
    points = f"{capture.points} point{'s' if capture.points != 1 else ''}"
    if capture.withheld:
        points += f" ({capture.withheld} withheld by the 38-point rule)"
    return f"{cards:<24} {capture.kind.value:<13} {points:<10}  [{how}]"


def cmd_captures(args: argparse.Namespace) -> int:
    rules = _rules(args)
    table = parse_cards(args.table, "--table")
    card = parse_card(args.card, "--card")
    if card in table:
        raise InvalidArgument("--card", "ON_THE_TABLE", f"{card} is on the table, not in hand")
    last = None
    if args.last_played is not None:
        last = parse_card(args.last_played, "--last-played")
        if last not in table:
            raise InvalidArgument(
                "--last-played", "NOT_ON_TABLE", f"{last} is not on the table"
            )
    score = whole(args.score, "--score")
    if score < 0:
        raise InvalidArgument("--score", "OUT_OF_RANGE", f"must be 0 or more, got {score}")
    limit = whole(args.limit, "--limit")
    if limit < 1:
        raise InvalidArgument("--limit", "OUT_OF_RANGE", f"must be 1 or more, got {limit}")
    found = list(islice(every_capture_set(rules, table, card, last, score), limit + 1))
    captures, more = found[:limit], len(found) > limit
    if more:
        print(f"sabot: note: the first {limit} capture sets only (--limit)", file=sys.stderr)
    if args.format == "json":
        _print_json([capture_json(c) for c in captures])
        return 0
    if not captures:
        print(f"{card} takes nothing: it stays on the table")
        return 0
    for capture in captures:
        print(capture_text(capture))
    return 0


# --- carton and options ---------------------------------------------------------------------


def cmd_carton(args: argparse.Namespace) -> int:
    rules = _rules(args)
    cards = whole(args.cards, "cards")
    points = carton(rules, cards, "cards")
    if args.format == "json":
        t = tally(points)
        _print_json(
            {
                "cards": cards,
                "points": points,
                "perros": t.perros,
                "tantos": t.tantos,
                "odd": t.odd,
                "rounding": rules.carton_rounding.value,
            }
        )
        return 0
    note = f" (under {CARTON_MINIMUM} cards nothing)" if cards < CARTON_MINIMUM else ""
    print(f"{cards} cards: {tally(points)}{note}")
    return 0


def cmd_options(args: argparse.Namespace) -> int:
    rules = _rules(args)
    values = rules.options()
    rows = [
        {
            "option": option.name,
            "value": values[option.name],
            "default": option.default_text,
            "source": option.source,
        }
        for option in OPTIONS
    ]
    if args.format == "json":
        _print_json({"preset": rules.preset, "options": rows})
        return 0
    print(f"preset {rules.preset}")
    for row in rows:
        print(f"{row['option']:<20} {row['value']:<14} default {row['default']:<14} "
              f"{row['source']}")
    return 0


# --- sabot odds --game cuarenta -------------------------------------------------------------

FIVE_CARD_HANDS = comb(PACK_SIZE, HAND_SIZE)
SUITS = 4
RANK_COUNT = len(RANKS)


def five_card_odds() -> dict[str, Fraction]:
    """Exact chances for one player's five from a full pack: three of a rank exactly (the
    other two cards of other ranks), four of a rank, either. Five cards hold at most one rank
    three times or more."""
    others = PACK_SIZE - SUITS
    three = RANK_COUNT * comb(SUITS, 3) * comb(others, 2)
    four = RANK_COUNT * comb(SUITS, 4) * comb(others, 1)
    return {
        "three_of_a_rank": Fraction(three, FIVE_CARD_HANDS),
        "four_of_a_rank": Fraction(four, FIVE_CARD_HANDS),
        "ronda_or_better": Fraction(three + four, FIVE_CARD_HANDS),
    }


def hand_expectations(rules: CuarentaRules) -> dict[str, Fraction]:
    """Per hand (the whole pack dealt in fives): the rondas and fours of a rank to expect. Every
    five of the pack is a uniform five-card draw, so by linearity it is 8 × the chance."""
    fives = PACK_SIZE // HAND_SIZE
    odds = five_card_odds()
    ronda = odds["ronda_or_better"] if rules.four_of_a_kind is FourOfAKind.RONDA else odds[
        "three_of_a_rank"
    ]
    return {
        "fives_per_hand": Fraction(fives),
        "rondas_per_hand": fives * ronda,
        "fours_per_hand": fives * odds["four_of_a_rank"],
    }


def count_hands(hands: int, seed: int) -> dict[str, int]:
    """Deal ``hands`` packs (SABOT-SHUFFLE-1, FRENCH-40 × 1, seed from ``seed``, shoe ids 1…N)
    in fives and count rondas (three of a rank exactly), fours of a rank and hands with any."""
    key = seed.to_bytes(32, "big")
    counts = {"fives": 0, "three_of_a_rank": 0, "four_of_a_rank": 0, "hands_with_one": 0}
    for i in range(hands):
        pack = shuffled_pack(key, UUID(int=i + 1))
        found = False
        for start in range(0, PACK_SIZE, HAND_SIZE):
            most = max(rank_counts(pack[start : start + HAND_SIZE]).values())
            counts["fives"] += 1
            if most == 3:
                counts["three_of_a_rank"] += 1
                found = True
            elif most == 4:
                counts["four_of_a_rank"] += 1
                found = True
        counts["hands_with_one"] += found
    return counts


def cmd_odds(args: argparse.Namespace) -> int:
    """``sabot odds --game cuarenta``: ``--option`` sets Cuarenta options; ``--preset`` names a
    Cuarenta preset (the Trente et Quarante default is ignored); ``--decks`` does not apply."""
    fmt = "text" if args.format == "table" else args.format
    if fmt not in FORMATS:
        raise CliError(f"--format: must be table or json, got {args.format!r}")
    if args.decks is not None:
        raise CliError("--decks: Cuarenta is dealt from one 40-card pack")
    preset = args.preset if args.preset in PRESET_NAMES else "seed"
    rules = cuarenta_rules(preset, overrides(args.option))
    odds = five_card_odds()
    per_hand = hand_expectations(rules)
    mc = None
    if args.monte_carlo is not None:
        n = whole(args.monte_carlo, "--monte-carlo")
        if not 1 <= n <= 1_000_000:
            raise InvalidArgument("--monte-carlo", "OUT_OF_RANGE", f"must be 1 to 1000000, got {n}")
        mc = count_hands(n, parse_seed(args.seed))
    if fmt == "json":
        out: dict[str, Any] = {
            "game": GAME,
            "options": rules.options(),
            "five_cards": {k: _fraction(v) for k, v in odds.items()},
            "per_hand": {k: _fraction(v) for k, v in per_hand.items()},
        }
        if mc is not None:
            out["monte_carlo"] = mc
        _print_json(out)
        return 0
    print("Cuarenta: one player's five cards from a full 40-card pack (exact)")
    for name, value in odds.items():
        print(f"  {name.replace('_', ' '):<18} {value.numerator:>6}/{value.denominator:<7} "
              f"{float(value) * 100:8.4f}%")
    print(f"Per hand ({PACK_SIZE // HAND_SIZE} fives dealt, four_of_a_kind = "
          f"{rules.four_of_a_kind.value}):")
    print(f"  rondas to expect   {float(per_hand['rondas_per_hand']):.6f}"
          f"   fours of a rank {float(per_hand['fours_per_hand']):.6f}")
    if mc is not None:
        fives = mc["fives"]
        hands = fives // (PACK_SIZE // HAND_SIZE)
        print(f"Monte-Carlo: {hands} hands, {fives} fives")
        for label, key, among in (
            ("three of a rank", "three_of_a_rank", fives),
            ("four of a rank", "four_of_a_rank", fives),
            ("hands with one", "hands_with_one", hands),
        ):
            print(f"  {label:<18} {mc[key]:>8} {mc[key] / among * 100:8.4f}%")
    return 0


def _fraction(value: Fraction) -> dict[str, Any]:
    return {"fraction": str(value), "value": float(value)}
