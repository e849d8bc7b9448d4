"""``sabot odds``: the exact odds and house edges of a preset, optionally checked by Monte-Carlo."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from domain.cards import check_deck_count
from domain.errors import InvalidArgument
from domain.estimates import Estimate
from domain.trente_et_quarante import montecarlo
from domain.trente_et_quarante.odds import (
    CoupOdds,
    Edge,
    french_coup_odds,
    house_edges,
    infinite_coup_odds,
)
from domain.trente_et_quarante.rules import (
    DEFAULT_PRESET,
    PRESET_NAMES,
    HouseRules,
    house_rules,
)
from services.cli import CliError
from services.cli import rules as game_rules
from services.cli.options import overrides, parse_seed, whole
from services.cli.progress import Progress, quiet_argument

FORMATS = ("table", "json")


def register(sub: Any) -> None:
    p = sub.add_parser(
        "odds",
        help="exact odds and house edges of the first coup (rational arithmetic)",
        description="Exact odds of the first coup from a full shoe, the infinite-deck values "
        "and each chance's house edge; --monte-carlo N checks them on N coups of the engine.",
    )
    p.add_argument(
        "--game", default=game_rules.DEFAULT_GAME,
        help=f"the game (default {game_rules.DEFAULT_GAME}; "
        f"also {', '.join(game_rules.GAME_MODULES)})",
    )
    p.add_argument("--preset", default=None,
                   help="the game's preset (default: the game's own; trente-et-quarante: one "
                        f"of {', '.join(PRESET_NAMES)})")
    p.add_argument(
        "--option", action="append", default=[], metavar="K=V", help="override one house rule"
    )
    p.add_argument("--decks", default=None, help="number of decks, 1..8 (default: the preset's)")
    p.add_argument("--format", default="table", help="table or json")
    p.add_argument("--monte-carlo", default=None, metavar="N",
                   help="also play N coups (treinta-y-una: N deals, 1,000 unless told)")
    p.add_argument("--no-monte-carlo", action="store_true",
                   help="the exact figures only (treinta-y-una plays 1,000 deals unless told)")
    p.add_argument("--seed", default="0", metavar="HEX", help="Monte-Carlo seed (hexadecimal)")
    quiet_argument(p)
    p.set_defaults(func=cmd_odds)


def _overrides(options: Sequence[str], decks: str | None) -> dict[str, str]:
    out = overrides(options)
    if decks is not None:
        if "decks" in out:
            raise CliError("--decks: give the decks once (--decks or --option decks=N)")
        out["decks"] = decks
    return out


def cmd_odds(args: argparse.Namespace) -> int:
    if args.game != game_rules.DEFAULT_GAME:
        module = game_rules.game_module(args.game)
        if module is None:
            known = ", ".join(game_rules.games())
            raise CliError(f"--game: unknown game {args.game!r} (one of {known})")
        code: int = module.cmd_odds(args)
        return code
    if args.format not in FORMATS:
        raise CliError(f"--format: must be table or json, got {args.format!r}")
    if args.preset is None:
        args.preset = DEFAULT_PRESET
    if args.preset not in PRESET_NAMES:
        names = ", ".join(PRESET_NAMES)
        raise InvalidArgument(
            "--preset", "UNKNOWN_PRESET", f"unknown preset {args.preset!r} (one of {names})"
        )
    if args.decks is not None:
        check_deck_count(whole(args.decks, "--decks"), "--decks")
    coups = None
    if args.monte_carlo is not None:
        coups = montecarlo.check_coups(whole(args.monte_carlo, "--monte-carlo"), "--monte-carlo")
    seed = parse_seed(args.seed)
    rules = house_rules(args.preset, _overrides(args.option, args.decks))
    odds = french_coup_odds(rules.decks)
    infinite = infinite_coup_odds()
    edges = house_edges(odds, rules)
    inf_edges = house_edges(infinite, rules)
    mc = None
    if coups:
        with Progress("monte-carlo", total=coups, unit="coups",
                      quiet=getattr(args, "quiet", False)) as progress:
            mc = montecarlo.run(rules, edges, coups, seed, progress=progress.update)
    if args.format == "json":
        json.dump(to_json(rules, odds, infinite, edges, inf_edges, mc), sys.stdout, indent=2)
        print()
    else:
        print(to_table(rules, odds, infinite, edges, inf_edges, mc))
    return 0


# --- output ---------------------------------------------------------------------------------


def _pct(x: Fraction | float) -> str:
    return f"{float(x) * 100:9.5f}%"


def _est(e: Estimate) -> str:
    if math.isnan(e.value):
        return f"{'-':>10} {'':>10}"
    return f"{e.value * 100:9.5f}% {e.se * 100:9.5f}%"


def _label(name: str) -> str:
    if name.startswith(("noir_total_", "rouge_total_")):
        row, _, t = name.rpartition("_")
        return f"P({row.replace('_total', '')} row = {t})"
    if name.startswith("refait_"):
        return f"P(refait at {name[7:]})"
    return f"P({name} wins)"


def _edge_key(e: Edge) -> tuple[Any, str]:
    return (e.chance, e.treatment)


def to_table(
    rules: HouseRules,
    odds: CoupOdds,
    infinite: CoupOdds,
    edges: Sequence[Edge],
    inf_edges: Sequence[Edge],
    mc: montecarlo.MonteCarlo | None,
) -> str:
    lines = [
        f"sabot odds: preset {rules.preset}, {rules.decks} deck(s); the first coup from a full "
        "shoe, exact (rational)",
        f"rules: refait31={rules.refait31.value} prison_refait31={rules.prison_refait31.value} "
        f"couleur_inverse_on_refait31={rules.couleur_inverse_on_refait31.value} "
        f"insurance_rate={rules.insurance_rate}",
        "",
    ]
    head = f"{'figure':<22} {'exact':>10} {'infinite':>10}"
    if mc:
        head += f" {'monte-carlo':>10} {'SE':>10} {'z':>6}"
    lines.append(head)
    checks = {c.name: c for c in montecarlo.checks(odds.figures(), mc, edges)} if mc else {}
    inf_fig = infinite.figures()
    for name, value in odds.figures().items():
        line = f"{_label(name):<22} {_pct(value)} {_pct(inf_fig[name])}"
        if mc:
            c = checks[name]
            line += f" {_est(c.estimate)} {c.z:6.2f}{' !' if c.flagged else ''}"
        lines.append(line)
    lines += ["", *EDGE_LEGEND]
    head = (
        f"{'chance':<8} {'treatment':<12} {'literature':>10} {'on layout':>10} {'per stake':>10} "
        f"{'coups':>7} {'inf./lit.':>10}"
    )
    if mc:
        head += "".join(
            f" {'MC/' + w:>10} {'SE':>10} {'z':>6}" for w in ("lit.", "layout", "stake")
        )
    lines.append(head)
    inf_by_key = {_edge_key(e): e for e in inf_edges}
    for e in edges:
        treat = e.treatment + ("" if e.default else "*")
        line = (
            f"{e.chance.value:<8} {treat:<12} {_pct(e.per_coup_played)} {_pct(e.per_coup)} "
            f"{_pct(e.loss_per_stake)} {float(e.coups_per_stake):7.4f} "
            f"{_pct(inf_by_key[_edge_key(e)].per_coup_played)}"
        )
        if mc:
            name = f"edge_{e.chance.value}_{e.treatment}"
            for way in ("per_coup_played", "per_coup", "per_stake"):
                c = checks[f"{name}_{way}"]
                line += f" {_est(c.estimate)} {c.z:6.2f}{' !' if c.flagged else '  '}"
        lines.append(line)
    lines.append(
        "* on request (player's choice or insurance); prison figures use the "
        "steady-state approximation (later coups have the first coup's law)"
    )
    lines += comparison(odds, edges)
    if mc:
        flagged = [c.name for c in checks.values() if c.flagged]
        lines += [
            "",
            f"monte-carlo: {mc.coups} coups through the engine, seed {mc.seed:x}; "
            f"{len(flagged)} of {len(checks)} exact figures outside {montecarlo.Z_LIMIT} SE"
            + (f": {', '.join(flagged)}" if flagged else ""),
        ]
    return "\n".join(lines)


EDGE_LEGEND = (
    "house edge, expected loss per unit staked, in three conventions:",
    "  literature  per coup played, pushes counted, the prison's outcome credited to the coup "
    "the stake was placed on (the figure the literature quotes)",
    "  on layout   per coup the stake lies on the layout (its prison coups and pushes counted "
    "as coups)",
    "  per stake   over the stake's life until it leaves the layout (pushes not counted)",
)
CONVENTIONS = {
    "literature": "the literature's figure: the expected loss per unit per coup played, pushes "
    "(refaits at 32..40; a 31 for an insured stake) counted as coups played, the prison's "
    "outcome credited to the coup the stake was placed on",
    "per_coup_played": "the same figure as literature, named by its convention",
    "per_coup": "per coup the stake lies on the layout (its prison coups and pushes counted as "
    "coups)",
    "per_stake": "over the stake's life until it leaves the layout (pushes not counted)",
}


def comparison(odds: CoupOdds, edges: Sequence[Edge]) -> list[str]:
    """Prison against partage, stated in the literature's convention (and why the figure per
    coup on the layout reads the other way)."""
    partage = odds.refait31 / 2  # a partage's figure is the same in every per-coup convention
    prisons = {e.treatment: e for e in edges if e.treatment in ("prison", "prison_lost")}
    out = []
    for e in prisons.values():
        name = "second prison" if e.treatment == "prison" else "prison, lost on a second 31"
        word = _relation(e.per_coup_played, partage, ("more than", "less than", "as much as"))
        layout = _relation(e.per_coup, partage, ("above", "below", "equal to"))
        out.append(
            f"{name}: {_pct(e.per_coup_played).strip()} per coup played against "
            f"{_pct(partage).strip()} for partage: it costs the player {word} partage "
            f"(per coup on the layout it is {_pct(e.per_coup).strip()}, {layout} partage's, "
            "because the coups the stake spends in prison count as coups there)"
        )
    return out


def _relation(x: Fraction, y: Fraction, words: tuple[str, str, str]) -> str:
    """``words[0]`` if x > y, ``words[1]`` if x < y, else ``words[2]``."""
    return words[0] if x > y else words[1] if x < y else words[2]


DECIMALS = 12


def _decimal(x: Fraction, places: int = DECIMALS) -> str:
    """``x`` rounded half-even to ``places`` decimals, exactly (from the fraction, not a float)."""
    scaled = x * 10**places
    q, r = divmod(scaled.numerator, scaled.denominator)
    if 2 * r > scaled.denominator or (2 * r == scaled.denominator and q % 2):
        q += 1
    sign = "-" if q < 0 else ""
    digits = str(abs(q)).rjust(places + 1, "0")
    return f"{sign}{digits[:-places]}.{digits[-places:]}"


def _frac(x: Fraction) -> dict[str, Any]:
    return {"exact": f"{x.numerator}/{x.denominator}", "value": float(x),
            "decimal": _decimal(x)}


def _est_json(e: Estimate) -> dict[str, Any]:
    return {"value": e.value, "se": e.se, "n": e.n}


def to_json(
    rules: HouseRules,
    odds: CoupOdds,
    infinite: CoupOdds,
    edges: Sequence[Edge],
    inf_edges: Sequence[Edge],
    mc: montecarlo.MonteCarlo | None,
) -> dict[str, Any]:
    checks = {c.name: c for c in montecarlo.checks(odds.figures(), mc, edges)} if mc else {}
    inf_fig = infinite.figures()
    figures: dict[str, Any] = {}
    for name, value in odds.figures().items():
        item: dict[str, Any] = {**_frac(value), "infinite": float(inf_fig[name])}
        if name in checks:
            item["monte_carlo"] = {**_est_json(checks[name].estimate), "z": checks[name].z}
        figures[name] = item
    inf_by_key: Mapping[tuple[Any, str], Edge] = {_edge_key(e): e for e in inf_edges}
    edge_rows: list[dict[str, Any]] = []
    for e in edges:
        row: dict[str, Any] = {
            "chance": e.chance.value,
            "treatment": e.treatment,
            "default": e.default,
            "literature": _frac(e.per_coup_played),
            "per_coup_played": _frac(e.per_coup_played),
            "per_coup": _frac(e.per_coup),
            "per_stake": _frac(e.loss_per_stake),
            "coups_per_stake": _frac(e.coups_per_stake),
            "coups_played": _frac(e.coups_played),
            "infinite_literature": float(inf_by_key[_edge_key(e)].per_coup_played),
            "infinite_per_coup": float(inf_by_key[_edge_key(e)].per_coup),
        }
        name = f"edge_{e.chance.value}_{e.treatment}"
        if f"{name}_per_coup" in checks:
            for way in ("per_coup_played", "per_coup", "per_stake"):
                c = checks[f"{name}_{way}"]
                row[f"monte_carlo_{way}"] = {**_est_json(c.estimate), "z": c.z}
        edge_rows.append(row)
    out: dict[str, Any] = {
        "preset": rules.preset,
        "decks": rules.decks,
        "rules": rules.options(),
        "figures": figures,
        "conventions": CONVENTIONS,
        "edges": edge_rows,
        "comparison": comparison(odds, edges),
    }
    if mc:
        out["monte_carlo"] = {
            "coups": mc.coups,
            "seed": f"{mc.seed:x}",
            "flagged": [c.name for c in checks.values() if c.flagged],
        }
    return out
