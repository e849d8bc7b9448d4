"""Auditor's commands: ``sabot rules shuffle`` and ``sabot rules trente-et-quarante deal`` (the
odds live in services.cli.odds)."""

from __future__ import annotations

import argparse
import json
import secrets
from typing import Any
from uuid import UUID, uuid4

from domain.cards import DeckKind, check_deck_count, parse_deck_kind
from domain.errors import InvalidArgument
from domain.shuffle import (
    ALGORITHM_ID,
    SEED_BYTES,
    check_cut,
    commitment,
    cut,
    load_sabot,
    order_digest,
    parse_seed,
    shuffle,
)
from domain.trente_et_quarante.deal import CoupDeal, deal_shoe
from domain.trente_et_quarante.outcome import Outcome, Result, judge
from domain.trente_et_quarante.rules import PRESET_NAMES, HouseRules, house_rules
from services.cli import CliError, commands, keep_old_names


def _uuid(text: str) -> UUID:
    try:
        return UUID(text)
    except ValueError:
        raise CliError(f"--shoe-id: not a UUID: {text!r}") from None


def register(sub: Any) -> None:
    sub = commands(sub)
    rules = sub.group("rules")
    p = rules.add_parser("shuffle", help="rebuild a shoe per SABOT-SHUFFLE-1 and print it")
    p.add_argument("--seed", required=True, help="64 hex digits (32 bytes)")
    p.add_argument("--shoe-id", required=True, help="the shoe's UUID")
    p.add_argument("--deck", default="FRENCH-52", help="FRENCH-52, FRENCH-40 or SPANISH-40")
    p.add_argument("--decks", type=int, default=6)
    p.add_argument("--cut", type=int, default=None, help="cut position, 1..N-1 (default: no cut)")
    p.set_defaults(func=cmd_shuffle)

    game = rules.group("trente-et-quarante", "Trente et Quarante: deal a shoe")
    d = game.add_parser(
        "deal",
        help="deal every coup of a Trente et Quarante shoe up to the cut card",
        description="Rebuild a shoe per SABOT-SHUFFLE-1 and deal it coup by coup. Without --seed "
        "a fresh seed, shoe id and a cut in the middle are drawn and printed.",
    )
    d.add_argument("--seed", default=None, help="64 hex digits (32 bytes); default: a fresh one")
    d.add_argument("--shoe-id", default=None, help="the shoe's UUID; default: a fresh one")
    d.add_argument("--deck", default="FRENCH-52", help="FRENCH-52 (Trente et Quarante)")
    d.add_argument("--decks", type=int, default=None, help="1..8; default: the preset's (6)")
    d.add_argument("--cut", type=int, default=None, help="cut position, 1..N-1")
    d.add_argument("--preset", default="francaise", help=", ".join(PRESET_NAMES))
    d.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one house-rule option (repeatable), e.g. cut_card=finish_coup",
    )
    d.add_argument("--format", choices=("table", "json"), default="table")
    d.set_defaults(func=cmd_deal)
    keep_old_names(sub)


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


def _overrides(options: list[str], decks: int | None) -> dict[str, str]:
    overrides: dict[str, str] = {}
    for text in options:
        key, sep, value = text.partition("=")
        key = key.strip()
        if not sep or not key:
            raise CliError(f"--option: expected KEY=VALUE, got {text!r}")
        if key in overrides:
            raise CliError(f"--option: {key} given twice")
        overrides[key] = value.strip()
    if decks is not None:
        check_deck_count(decks, "--decks")
        if "decks" in overrides and overrides["decks"] != str(decks):
            raise CliError("--decks and --option decks= disagree")
        overrides["decks"] = str(decks)
    return overrides


def _rules(preset: str, overrides: dict[str, str]) -> HouseRules:
    """The table's rules, errors named after the command-line flags."""
    try:
        return house_rules(preset, overrides)
    except InvalidArgument as exc:
        if exc.field == "preset":
            raise InvalidArgument("--preset", exc.reason, exc.message) from None
        if exc.field.startswith("overrides."):
            flag = f"--option {exc.field.removeprefix('overrides.')}"
            raise InvalidArgument(flag, exc.reason, exc.message) from None
        raise


def cmd_deal(args: argparse.Namespace) -> int:
    kind = parse_deck_kind(args.deck, "--deck")
    if kind is not DeckKind.FRENCH_52:
        raise InvalidArgument("--deck", "WRONG_DECK", "Trente et Quarante is dealt from FRENCH-52")
    rules = _rules(args.preset, _overrides(args.option, args.decks))
    size = 52 * rules.decks
    drawn = args.seed is None
    if drawn:
        seed = secrets.token_bytes(SEED_BYTES)
        shoe_id = _uuid(args.shoe_id) if args.shoe_id else uuid4()
        cut_at = args.cut if args.cut is not None else size // 2
    else:
        seed = parse_seed(args.seed, "--seed")
        if args.shoe_id is None:
            raise CliError("--shoe-id is required with --seed")
        shoe_id = _uuid(args.shoe_id)
        cut_at = args.cut
    if cut_at is not None:
        check_cut(cut_at, size, "--cut")
    sabot = load_sabot(seed, shoe_id, kind, rules.decks, cut_at)
    coups = deal_shoe(sabot.cards, rules.cut_card)
    report = {
        "algorithm": ALGORITHM_ID,
        "seed": seed.hex(),
        "seed_drawn": drawn,
        "shoe_id": str(shoe_id),
        "commitment": commitment(seed, shoe_id),
        "deck": kind.value,
        "decks": rules.decks,
        "cut": cut_at,
        "digest": order_digest(sabot.cards),
        "rules": rules.options(),
        "coups": [_coup_json(n, c, judge(c)) for n, c in enumerate(coups, 1)],
    }
    text = json.dumps(report, indent=2, ensure_ascii=False) if args.format == "json" else None
    if text is not None:  # piped into head: services.cli.main stops quietly
        print(text)
    else:
        _print_table(report, coups)
    return 0


def _coup_json(number: int, coup: CoupDeal, outcome: Outcome) -> dict[str, Any]:
    return {
        "coup": number,
        "start": coup.start,
        "noir": {"cards": [c.code for c in coup.noir], "total": coup.noir_total},
        "rouge": {"cards": [c.code for c in coup.rouge], "total": coup.rouge_total},
        "result": outcome.result.value,
        "refait_total": outcome.refait_total,
        "couleur": outcome.couleur,
        "winning_chances": sorted(c.value for c in outcome.winning_chances),
        "announcement": outcome.announcement,
        "cut_card_reached": coup.cut_card_reached,
        "complete": coup.complete,
    }


def _row(cards: list[str], total: int | None) -> str:
    return f"{' '.join(cards)} = {total if total is not None else '--'}"


def _verdict(coup: dict[str, Any]) -> tuple[str, str]:
    result = coup["result"]
    if result == Result.REFAIT.value:
        return f"refait {coup['refait_total']}", "-"
    if result == Result.VOID.value:
        return "void", "-"
    return f"{result} wins", "couleur" if coup["couleur"] else "inverse"


def _print_table(report: dict[str, Any], coups: tuple[CoupDeal, ...]) -> None:
    print(f"algorithm   {report['algorithm']}")
    seed_note = "  (drawn now)" if report["seed_drawn"] else ""
    print(f"seed        {report['seed']}{seed_note}")
    print(f"shoe id     {report['shoe_id']}")
    print(f"commitment  {report['commitment']}")
    print(f"shoe        {report['deck']} x {report['decks']}, cut at {report['cut']}")
    print(f"digest      {report['digest']}")
    rules = report["rules"]
    print(f"rules       {rules['preset']}: " + ", ".join(f"{k}={v}" for k, v in rules.items()))
    rows = []
    for c in report["coups"]:
        verdict, colour = _verdict(c)
        rows.append(
            (
                str(c["coup"]),
                _row(c["noir"]["cards"], c["noir"]["total"]),
                _row(c["rouge"]["cards"], c["rouge"]["total"]),
                verdict,
                colour,
                c["announcement"],
            )
        )
    head = ("coup", "noir", "rouge", "result", "colour", "announcement")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head) - 1)]
    for r in [head, *rows]:
        cells = [r[i].rjust(widths[i]) if i == 0 else r[i].ljust(widths[i]) for i in range(5)]
        print("  ".join([*cells, r[5]]))
    end = coups[-1]
    how = "void" if not end.complete else "finished"
    print(f"cut card reached at position {end.next_position}: last coup {how}, the shoe closes")
