"""``sabot rules treinta-y-una …`` and ``sabot odds --game treinta-y-una``: Treinta y Una's
rule book on the command line.

- ``sabot rules treinta-y-una hand 1O 12B 11C [--format json]``: the hand's best total, whether
  it is a treinta y una real, whether it is over 31 (SHUFFLE.md's SPANISH-40 codes);
- ``sabot rules treinta-y-una options [--preset P] [--option K=V] [--format json]``: the table
  rules, each option with its value, default and source;
- ``sabot odds --game treinta-y-una [--format json] [--monte-carlo N] [--seed HEX]
  [--preset P] [--option K=V] [--no-monte-carlo]``: the exact figures of a hand's first three
  cards and the banker's edge by Monte-Carlo on N deals through the engine (``DEFAULT_DEALS``
  unless ``--monte-carlo N`` says otherwise; ``--no-monte-carlo``: the exact figures only)
  against punters who stand at 15 ... 30. ``--preset`` not given means this game's default preset
  (another game's preset is refused, naming it); ``--decks`` may only be 1.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from domain.errors import InvalidArgument
from domain.treinta_y_una import montecarlo
from domain.treinta_y_una.hand import HandValue, evaluate, parse_hand
from domain.treinta_y_una.odds import ThreeCardOdds, three_card_odds
from domain.treinta_y_una.rules import (
    DEFAULT_PRESET,
    OPTIONS,
    PRESET_NAMES,
    TableRules,
    table_rules,
)
from services.cli import CliError
from services.cli.options import overrides, parse_seed, whole

FORMATS = ("table", "json")
GAME = "treinta-y-una"
DEFAULT_DEALS = 1_000  # the Monte-Carlo's deals when none are given: ~3 s, SE ~3.3% per edge


def register(games: Any) -> None:
    p = games.add_parser(
        GAME,
        help="Treinta y Una: a hand's value, the table options",
        description="Ask Treinta y Una's rule book (RULES.md §2, seed 003).",
    )
    sub = p.add_subparsers(dest="question", required=True, metavar="QUESTION")
    h = sub.add_parser(
        "hand",
        help="a hand's best total and whether it is a treinta y una real",
        description="The best total of a hand (aces 1 or 11, figures 10), whether it is a "
        "treinta y una real (two figures and an ace) and whether it is over 31.",
    )
    h.add_argument("cards", nargs="+", metavar="CARD", help="SPANISH-40 codes: 1O 12B 11C")
    h.add_argument("--format", default="table", help="table or json")
    h.set_defaults(func=cmd_hand)
    o = sub.add_parser(
        "options",
        help="the table rules of a preset, each option with its default and source",
        description="The table rules of a preset with overrides: value, default, source.",
    )
    o.add_argument("--preset", default=DEFAULT_PRESET, help=f"one of {', '.join(PRESET_NAMES)}")
    o.add_argument(
        "--option", action="append", default=[], metavar="K=V", help="override one option"
    )
    o.add_argument("--format", default="table", help="table or json")
    o.set_defaults(func=cmd_options)


def _format(text: str) -> str:
    if text not in FORMATS:
        raise CliError(f"--format: must be table or json, got {text!r}")
    return text


def hand_report(value: HandValue, codes: Sequence[str]) -> dict[str, Any]:
    return {
        "cards": list(codes),
        "total": value.total,
        "real": value.real,
        "bust": value.bust,
        "aces_high": value.aces_high,
    }


def cmd_hand(args: argparse.Namespace) -> int:
    fmt = _format(args.format)
    cards = parse_hand(args.cards)
    value = evaluate(cards)
    report = hand_report(value, [c.code for c in cards])
    if fmt == "json":
        print(json.dumps(report))
        return 0
    words = "treinta y una real" if value.real else ("over 31" if value.bust else "")
    print(f"{' '.join(report['cards'])} = {value.total}" + (f": {words}" if words else ""))
    return 0


def cmd_options(args: argparse.Namespace) -> int:
    fmt = _format(args.format)
    rules = table_rules(args.preset, overrides(args.option))
    values = rules.options()
    rows = [
        (
            o.name,
            values[o.name],
            o.default_text,
            o.source,
        )
        for o in OPTIONS
    ]
    if fmt == "json":
        print(
            json.dumps(
                {
                    "preset": rules.preset,
                    "options": {n: {"value": v, "default": d, "source": s} for n, v, d, s in rows},
                },
                indent=2,
            )
        )
        return 0
    print(f"preset {rules.preset}")
    for name, value, default, source in rows:
        mark = "" if value == default else " *"
        print(f"  {name:<20} {value:<16}{mark:<2} default {default:<16} {source}")
    return 0


# --- sabot odds --game treinta-y-una ------------------------------------------------------------


def _rules_for_odds(args: argparse.Namespace) -> TableRules:
    preset = getattr(args, "preset", None) or DEFAULT_PRESET
    decks = getattr(args, "decks", None)
    if decks is not None and str(decks).strip() != "1":
        raise InvalidArgument("--decks", "OUT_OF_RANGE", f"{GAME} is played with one deck")
    return table_rules(preset, overrides(getattr(args, "option", None) or []))


def cmd_odds(args: argparse.Namespace) -> int:
    fmt = _format(args.format)
    rules = _rules_for_odds(args)
    deals: int | None = None if getattr(args, "no_monte_carlo", False) else DEFAULT_DEALS
    if args.monte_carlo is not None:
        if deals is None:
            raise CliError("--monte-carlo: not with --no-monte-carlo")
        deals = montecarlo.check_deals(whole(args.monte_carlo, "--monte-carlo"), "--monte-carlo")
    seed = parse_seed(args.seed if args.seed is not None else "0")
    odds = three_card_odds()
    mc = None
    if deals:
        from services.cli.progress import Progress

        with Progress("monte-carlo", total=deals, unit="deals",
                      quiet=getattr(args, "quiet", False)) as progress:
            mc = montecarlo.run(rules, deals, seed, progress=progress.update)
    if fmt == "json":
        print(json.dumps(odds_json(rules, odds, mc), indent=2))
    else:
        print(odds_table(rules, odds, mc))
    return 0


def _fraction(x: Fraction) -> dict[str, Any]:
    return {"exact": f"{x.numerator}/{x.denominator}", "value": float(x)}


def odds_json(
    rules: TableRules, odds: ThreeCardOdds, mc: montecarlo.MonteCarlo | None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "game": GAME,
        "preset": rules.preset,
        "rules": rules.options(),
        "three_cards": {
            "subsets": odds.subsets,
            "real": _fraction(odds.real),
            "thirty_one": _fraction(odds.thirty_one),
            "bust": _fraction(odds.bust),
            "mean_total": _fraction(odds.mean_total),
            "totals": {
                str(t): {**_fraction(p), "subsets": odds.counts[t]} for t, p in odds.totals.items()
            },
            "aces_high": {str(n): _fraction(p) for n, p in odds.aces_high.items()},
        },
    }
    if mc is not None:
        out["monte_carlo"] = {
            "deals": mc.deals,
            "seed": f"{mc.seed:x}",
            "banker_stands_at": mc.banker_stands_at,
            "edges": [
                {
                    "stand_at": e.stand_at,
                    "edge": e.edge.value,
                    "se": e.edge.se,
                    "punter_wins": e.punter_wins,
                    "punter_loses": e.punter_loses,
                    "void": e.void,
                    "punter_bust": e.punter_bust,
                }
                for e in mc.edges
            ],
        }
    return out


def odds_table(rules: TableRules, odds: ThreeCardOdds, mc: montecarlo.MonteCarlo | None) -> str:
    lines = [
        f"sabot odds --game {GAME}: preset {rules.preset}; a hand's first three cards from a "
        f"full 40-card deck, exact (rational, over the {odds.subsets} subsets)",
        "",
        f"{'figure':<26} {'exact':>12} {'value':>10}",
    ]

    def row(label: str, x: Fraction) -> str:
        return f"{label:<26} {f'{x.numerator}/{x.denominator}':>12} {float(x) * 100:9.5f}%"

    lines.append(row("P(treinta y una real)", odds.real))
    lines.append(row("P(31)", odds.thirty_one))
    lines.append(row("P(over 31)", odds.bust))
    for n, p in odds.aces_high.items():
        lines.append(row(f"P({n} ace(s) counted 11)", p))
    lines.append(
        f"{'mean best total':<26} {odds.mean_total!s:>12} {float(odds.mean_total):10.5f}"
    )
    lines += [
        "",
        "best three-card total:",
        f"{'total':>5} {'subsets':>8} {'exact':>12} {'value':>10}",
    ]
    for t, p in odds.totals.items():
        lines.append(
            f"{t:>5} {odds.counts[t]:>8} {f'{p.numerator}/{p.denominator}':>12} "
            f"{float(p) * 100:9.5f}%"
        )
    if mc is not None:
        lines += [
            "",
            f"monte-carlo: {mc.deals} deals through the engine, seed {mc.seed:x}; one banker "
            f"against one punter; the banker draws below {mc.banker_stands_at} (stands at once "
            "if the punter went over 31); rules: tie="
            f"{rules.tie.value} bust={rules.bust.value} commission={rules.commission}",
            f"{'stands at':>9} {'banker edge':>12} {'SE':>9} {'punter wins':>12} {'loses':>8} "
            f"{'void':>8} {'over 31':>8}",
        ]
        for e in mc.edges:
            lines.append(
                f"{e.stand_at:>9} {e.edge.value * 100:11.3f}% {e.edge.se * 100:8.3f}% "
                f"{e.punter_wins * 100:11.2f}% {e.punter_loses * 100:7.2f}% {e.void * 100:7.2f}% "
                f"{e.punter_bust * 100:7.2f}%"
            )
    return "\n".join(lines)
