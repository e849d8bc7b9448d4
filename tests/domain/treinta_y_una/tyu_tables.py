"""Helpers of the Treinta y Una tests: rigged shoes, whole games, money per account."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from domain.cards import Card, DeckKind, canonical_deck, card_from_code
from domain.treinta_y_una.banker import BankerChoice, BankerReason
from domain.treinta_y_una.facts import Fact
from domain.treinta_y_una.movements import Movement, Role
from domain.treinta_y_una.round import (
    Phase,
    Round,
    Step,
    carta,
    deal,
    me_planto,
    open_round,
    place_stake,
    settle,
)
from domain.treinta_y_una.rules import TableRules
from domain.treinta_y_una.stakes import Stake

DECK = canonical_deck(DeckKind.SPANISH_40)


def cards(codes: str) -> tuple[Card, ...]:
    return tuple(card_from_code(c, DeckKind.SPANISH_40) for c in codes.split())


def rig(hands: Sequence[str], draws: str = "") -> tuple[Card, ...]:
    """A 40-card shoe that deals ``hands`` (three codes each, in turn order: the punters who
    staked from the mano, the banker last) and then gives ``draws`` in order; the other cards
    follow in canonical order."""
    h = len(hands)
    slots: list[Card | None] = [None] * len(DECK)
    for k, hand in enumerate(hands):
        three = cards(hand)
        assert len(three) == 3, hand
        for r, card in enumerate(three):
            slots[r * h + k] = card
    for j, card in enumerate(cards(draws)):
        slots[3 * h + j] = card
    used = [c for c in slots if c is not None]
    assert len(set(used)) == len(used), "a card twice in the rigged shoe"
    rest = iter(c for c in DECK if c not in used)
    return tuple(c if c is not None else next(rest) for c in slots)


@dataclass
class Played:
    """A game played command by command: every step, in order."""

    steps: list[Step] = field(default_factory=list)

    @property
    def round(self) -> Round:
        return self.steps[-1].round

    @property
    def facts(self) -> list[Fact]:
        return [f for s in self.steps for f in s.facts]

    @property
    def movements(self) -> list[Movement]:
        return [m for s in self.steps for m in s.movements]

    def of(self, kind: type[Fact]) -> list[Fact]:
        return [f for f in self.facts if isinstance(f, kind)]

    def add(self, step: Step) -> Round:
        self.steps.append(step)
        return step.round


def kept(player: str) -> BankerChoice:
    return BankerChoice(player, BankerReason.KEPT)


def play_game(
    rules: TableRules,
    seats: Sequence[str],
    banker: str | BankerChoice,
    bank: int,
    stakes: Mapping[str, int],
    shoe: Sequence[Card],
    words: Mapping[str, Sequence[str]] | None = None,
    carried: Sequence[Stake] = (),
    settle_it: bool = True,
) -> Played:
    """Open, stake (in ``stakes`` order), deal, then each player in turn says his ``words`` in
    order ("carta" / "planto"), then "me planto"; then settle."""
    played = Played()
    choice = kept(banker) if isinstance(banker, str) else banker
    r = played.add(open_round(rules, seats, choice, bank, carried))
    for player, amount in stakes.items():
        r = played.add(place_stake(rules, r, player, amount))
    r = played.add(deal(rules, r, shoe))
    said = {p: list(w) for p, w in (words or {}).items()}
    while r.phase is Phase.PLAYING:
        player = r.whose_turn
        assert player is not None
        queue = said.get(player, [])
        word = queue.pop(0) if queue else "planto"
        r = played.add((carta if word == "carta" else me_planto)(rules, r, player))
    if settle_it:
        played.add(settle(rules, r))
    return played


def player_net(movements: Iterable[Movement]) -> Counter[str]:
    """Each player's money in minus out (the banker's own account included); zeros left out."""
    net: Counter[str] = Counter()
    for m in movements:
        if m.destination is Role.PLAYER:
            net[m.player] += m.amount
        if m.source is Role.PLAYER:
            net[m.player] -= m.amount
    return Counter({p: v for p, v in net.items() if v})


def account_balances(movements: Iterable[Movement], check: bool = True) -> Counter[Role]:
    """What the table's own accounts (stakes, bank) and the house hold after the movements;
    with ``check``, that neither stakes nor bank ever holds less than 0 on the way."""
    held: Counter[Role] = Counter()
    for m in movements:
        if m.source is not Role.PLAYER:
            held[m.source] -= m.amount
        if m.destination is not Role.PLAYER:
            held[m.destination] += m.amount
        if check:
            assert held[Role.BANK] >= 0, f"the bank paid more than it held: {m}"
            assert held[Role.STAKES] >= 0, f"the stakes paid more than they held: {m}"
    return held
