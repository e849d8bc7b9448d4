"""What a played card takes from the table: the legal captures, their kinds and points.

A played card captures (seed 001, §3; RULES.md §3):
1. a *base*: one table card of the same rank; or, the played card being A–7, two or more table
   cards A–7 whose values add up to it ("sumas combinadas": J, Q, K never sum and are never
   summed, so A + 7 never make a J);
2. then the *run*: the consecutive cards upward from the played rank, one of each rank while the
   table holds one (… 6, 7, J, Q, K: 7 is followed by J). The run is always taken whole;
3. a **caída** when the base is, by rank, the card the opponent has just played; a **limpia**
   when the capture leaves the table empty; both together score both.

A capture set is the set of table cards taken (the played card is not in it). Where the table
holds two cards of a rank, either may be taken: the sets differ only in suits, which nothing in
the game counts, except the card just played (taking it by rank is the caída). So:
- ``legal_captures`` lists one capture per distinct outcome (the ranks taken, and the caída),
  each with the cards that have lain longest on the table: a short list whatever the table;
- ``capture_named`` checks any set a play names, directly (the card taken of a rank is the
  player's choice);
- ``every_capture_set`` spells every set out (for the command line, which shows them all).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from itertools import combinations, product

from domain.cards import Card
from domain.cuarenta.ranks import NEXT_RANK, RANK_INDEX, SUM_VALUES, card_order
from domain.cuarenta.rules import CaptureChoice, CuarentaRules
from domain.cuarenta.scoring import Source, withheld


class CaptureKind(StrEnum):
    CAPTURE = "capture"  # cards taken, no points
    CAIDA = "caida"
    LIMPIA = "limpia"
    CAIDA_LIMPIA = "caida_limpia"


class BaseKind(StrEnum):
    RANK = "rank"  # the same rank
    SUM = "sum"  # values adding up to the played card


@dataclass(frozen=True, slots=True)
class Capture:
    """One legal capture of ``card``: the table cards it takes, its kind and its points."""

    card: Card  # the card played
    base: tuple[Card, ...]  # the card of the same rank, or the cards summed (table order)
    base_kind: BaseKind
    run: tuple[Card, ...]  # the consecutive cards after the base, upward
    caida: bool
    limpia: bool
    points: int  # what the capture scores for the side
    withheld: int  # what the 38-point rule withheld (0 if nothing)

    @property
    def taken(self) -> tuple[Card, ...]:
        """Every table card taken: the base, then the run."""
        return self.base + self.run

    @property
    def codes(self) -> frozenset[str]:
        return frozenset(c.code for c in self.taken)

    @property
    def kind(self) -> CaptureKind:
        if self.caida and self.limpia:
            return CaptureKind.CAIDA_LIMPIA
        if self.caida:
            return CaptureKind.CAIDA
        if self.limpia:
            return CaptureKind.LIMPIA
        return CaptureKind.CAPTURE


# --- the parts of a capture -------------------------------------------------------------------


def _by_rank(table: Sequence[Card]) -> dict[str, list[Card]]:
    """The table's cards by rank, each rank's in table order (longest on the table first)."""
    out: dict[str, list[Card]] = {}
    for card in table:
        out.setdefault(card.rank, []).append(card)
    return out


def run_ranks(table: Sequence[Card], card: Card) -> tuple[str, ...]:
    """The ranks of the run after ``card``'s rank: each next rank while the table holds one.
    The base takes only ranks up to the played one, so the run is the same whatever the base."""
    present = {c.rank for c in table}
    ranks: list[str] = []
    rank = NEXT_RANK[card.rank]
    while rank is not None and rank in present:
        ranks.append(rank)
        rank = NEXT_RANK[rank]
    return tuple(ranks)


def _sum_shapes(counts: dict[str, int], target: int) -> Iterator[tuple[str, ...]]:
    """Every multiset of ranks A–7 (at most as many of a rank as the table holds, at least two
    cards) whose values add up to ``target``, as a sorted tuple of ranks."""
    ranks = [r for r in SUM_VALUES if counts.get(r, 0) and SUM_VALUES[r] <= target]

    def walk(k: int, left: int) -> Iterator[tuple[str, ...]]:
        if left == 0:
            yield ()
            return
        if k == len(ranks):
            return
        rank, value = ranks[k], SUM_VALUES[ranks[k]]
        for n in range(min(counts[rank], left // value), -1, -1):
            for rest in walk(k + 1, left - n * value):
                yield (rank,) * n + rest

    for shape in walk(0, target):
        if len(shape) >= 2:
            yield shape


def _scored(
    rules: CuarentaRules,
    card: Card,
    base: tuple[Card, ...],
    kind: BaseKind,
    run: tuple[Card, ...],
    table_size: int,
    last_played: Card | None,
    side_points: int,
) -> Capture:
    caida = kind is BaseKind.RANK and last_played is not None and base[0] == last_played
    limpia = len(base) + len(run) == table_size
    points = held = 0
    for source, earned, value in (
        (Source.CAIDA, caida, rules.caida_points),
        (Source.LIMPIA, limpia, rules.limpia_points),
    ):
        if not earned:
            continue
        if withheld(rules, source, side_points):
            held += value
        else:
            points += value
    return Capture(card, base, kind, run, caida, limpia, points, held)


def _in_table_order(cards: Iterable[Card], table: Sequence[Card]) -> tuple[Card, ...]:
    position = {c: i for i, c in enumerate(table)}
    return tuple(sorted(cards, key=position.__getitem__))


# --- the legal captures -----------------------------------------------------------------------


def legal_captures(
    rules: CuarentaRules,
    table: Sequence[Card],
    card: Card,
    last_played: Card | None = None,
    side_points: int = 0,
) -> tuple[Capture, ...]:
    """The captures ``card`` may make on ``table``, one per distinct outcome, for a side with
    ``side_points``.

    ``last_played``: the card the opponent has just played, if it is still on the table (taking
    it by rank is a caída). Of a rank the table holds more than once, each capture takes the
    cards that have lain there longest (the caída its own card). Under ``capture_choice =
    most_cards`` only the captures taking the most cards are legal. Ordered by the cards taken
    (rank, then suit)."""
    by_rank = _by_rank(table)
    run = tuple(by_rank[rank][0] for rank in run_ranks(table, card))
    same = by_rank.get(card.rank, [])
    bases: list[tuple[BaseKind, tuple[Card, ...]]] = []
    if last_played is not None and last_played in same:
        bases.append((BaseKind.RANK, (last_played,)))  # the caída
        others = [c for c in same if c != last_played]
        if others:
            bases.append((BaseKind.RANK, (others[0],)))
    elif same:
        bases.append((BaseKind.RANK, (same[0],)))
    target = SUM_VALUES.get(card.rank)
    if target is not None:  # J, Q, K never sum
        counts = {rank: len(cards) for rank, cards in by_rank.items()}
        for shape in _sum_shapes(counts, target):
            chosen = [
                c for rank in dict.fromkeys(shape) for c in by_rank[rank][: shape.count(rank)]
            ]
            bases.append((BaseKind.SUM, _in_table_order(chosen, table)))
    captures = [
        _scored(rules, card, base, kind, run, len(table), last_played, side_points)
        for kind, base in bases
    ]
    if rules.capture_choice is CaptureChoice.MOST_CARDS and captures:
        most = max(len(c.taken) for c in captures)
        captures = [c for c in captures if len(c.taken) == most]
    captures.sort(key=lambda c: sorted(card_order(t) for t in c.taken))
    return tuple(captures)


def capture_named(
    rules: CuarentaRules,
    table: Sequence[Card],
    card: Card,
    named: Iterable[Card],
    last_played: Card | None = None,
    side_points: int = 0,
) -> Capture | None:
    """The capture taking exactly the table cards ``named``, or None if no legal capture does.

    Legal: the cards below the played rank are a sum (at least two, all A–7, adding up to the
    played card, itself A–7) and none is of the played rank; or exactly one card is of the
    played rank and none is below; and the cards above it are the whole run, one of each rank.
    The cards must be on the table (the caller checks, to name the ones that are not)."""
    cards = tuple(named)
    if not cards or len(set(cards)) != len(cards) or not set(cards) <= set(table):
        return None
    played = RANK_INDEX[card.rank]
    lower = [c for c in cards if RANK_INDEX[c.rank] < played]
    equal = [c for c in cards if c.rank == card.rank]
    higher = sorted((c for c in cards if RANK_INDEX[c.rank] > played), key=card_order)
    if [c.rank for c in higher] != list(run_ranks(table, card)):
        return None
    target = SUM_VALUES.get(card.rank)
    if len(equal) == 1 and not lower:
        capture = _scored(
            rules, card, (equal[0],), BaseKind.RANK, tuple(higher), len(table), last_played,
            side_points,
        )
    elif (
        not equal
        and target is not None
        and len(lower) >= 2
        and sum(SUM_VALUES[c.rank] for c in lower) == target
    ):
        capture = _scored(
            rules, card, _in_table_order(lower, table), BaseKind.SUM, tuple(higher), len(table),
            last_played, side_points,
        )
    else:
        return None
    if rules.capture_choice is CaptureChoice.MOST_CARDS:
        options = legal_captures(rules, table, card, last_played, side_points)
        if len(capture.taken) < max(len(c.taken) for c in options):
            return None
    return capture


def every_capture_set(
    rules: CuarentaRules,
    table: Sequence[Card],
    card: Card,
    last_played: Card | None = None,
    side_points: int = 0,
) -> Iterator[Capture]:
    """Every legal capture set, spelt out: each of ``legal_captures`` with every choice of the
    cards of a rank the table holds more than once (the caída's card aside). Lazily: the count
    is a product of the ranks' counts (the command line stops at a limit)."""
    by_rank = _by_rank(table)
    seen: set[frozenset[Card]] = set()
    for option in legal_captures(rules, table, card, last_played, side_points):
        if option.base_kind is BaseKind.RANK:
            if option.caida:
                base_choices: list[tuple[Card, ...]] = [option.base]
            else:
                base_choices = [(c,) for c in by_rank[card.rank] if c != last_played]
        else:
            base_choices = list(_sum_choices(by_rank, option.base, table))
        run_choices = product(*(by_rank[c.rank] for c in option.run))
        for base, run in product(base_choices, list(run_choices)):
            key = frozenset((*base, *run))
            if key in seen:
                continue
            seen.add(key)
            yield replace(option, base=base, run=tuple(run))


def _sum_choices(
    by_rank: dict[str, list[Card]], base: tuple[Card, ...], table: Sequence[Card]
) -> Iterator[tuple[Card, ...]]:
    """Every choice of cards with the ranks of ``base`` (n of a rank out of the table's)."""
    need: dict[str, int] = {}
    for c in base:
        need[c.rank] = need.get(c.rank, 0) + 1
    for picks in product(*(combinations(by_rank[rank], n) for rank, n in need.items())):
        yield _in_table_order((c for pick in picks for c in pick), table)
