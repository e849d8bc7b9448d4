"""Helpers of the Cuarenta tests: cards from codes, stacked packs, playing a match through."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from uuid import UUID

from domain.cards import Card, canonical_deck
from domain.cuarenta.facts import Fact
from domain.cuarenta.match import Match, Phase, Play, Step, begin_hand, deal, open_match, play
from domain.cuarenta.ranks import DECK, parse_card, shuffled_pack
from domain.cuarenta.rules import CuarentaRules, cuarenta_rules
from domain.cuarenta.stakes import Movement


def cards(codes: str) -> tuple[Card, ...]:
    """``cards("2C 3D 6S")``."""
    return tuple(parse_card(code) for code in codes.split())


def rules(**options: object) -> CuarentaRules:
    """The default rules with options given as Python values (``players=4``)."""
    text = {
        k: ("true" if v is True else "false" if v is False else str(v)) for k, v in options.items()
    }
    return cuarenta_rules("seed", text)


def stacked_pack(*fives: str) -> tuple[Card, ...]:
    """A pack whose first cards are ``fives`` (five codes each, in dealing order: deal 1's
    first seat, its second seat, …), then every other card in canonical order."""
    front = [parse_card(code) for five in fives for code in five.split()]
    assert len(front) == len(set(front)), "a card stacked twice"
    rest = [c for c in canonical_deck(DECK) if c not in front]
    return (*front, *rest)


def seeded_pack(seed: int, hand: int) -> tuple[Card, ...]:
    return shuffled_pack(seed.to_bytes(32, "big"), UUID(int=hand))


class Run:
    """A match played command by command, keeping every fact and movement."""

    def __init__(self, rules: CuarentaRules, dealer: int | None = None) -> None:
        step = open_match(rules, dealer)
        self.match: Match = step.match
        self.facts: list[Fact] = list(step.facts)
        self.movements: list[Movement] = list(step.movements)
        self.history: list[Match] = [self.match]

    def apply(self, step: Step) -> Step:
        self.match = step.match
        self.facts.extend(step.facts)
        self.movements.extend(step.movements)
        self.history.append(step.match)
        return step

    def begin(self, pack: tuple[Card, ...]) -> Step:
        return self.apply(begin_hand(self.match, pack))

    def deal(self) -> Step:
        return self.apply(deal(self.match))

    def play(self, seat: int, card: str, capture: Iterable[str] | str | None = None) -> Step:
        return self.apply(play(self.match, seat, card, capture))

    def play_out(
        self,
        choose: Callable[[Match], Play | None],
        pack_for: Callable[[int], tuple[Card, ...]],
        max_commands: int = 10_000,
    ) -> None:
        """Play to the end: packs from ``pack_for(hand number)``, plays from ``choose``."""
        for _ in range(max_commands):
            m = self.match
            if m.phase is Phase.OVER:
                return
            if m.phase is Phase.AWAITING_PACK:
                self.begin(pack_for(m.hand + 1))
            elif m.phase is Phase.AWAITING_DEAL:
                self.deal()
            else:
                p = choose(m)
                assert p is not None
                self.apply(play(m, p.seat, p.card, p.codes if p.capture else ()))
        raise AssertionError("the match did not end")
