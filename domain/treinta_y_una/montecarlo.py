"""The banker's edge by Monte-Carlo, played through the real engine (``round``'s commands).

Each deal is a 40-card Spanish deck shuffled by SABOT-SHUFFLE-1 (``domain.shuffle.shuffle``):
seed ``SHA-256(b"SABOT-TYU-MC-1" || seed as 32 big-endian bytes)``, shoe id ``UUID(int=i)``
for the ``i``-th deal (1, 2, ...): the same seed gives the same decks and the same estimates.
On each deck one game is played for every punter's policy (common random numbers: the policies
are compared on the same cards), a banker against one punter:

- the punter "stands at t": he says "carta" while his total is below ``t``, then "me planto";
- the banker (the policy simulated): if the punter is already out (over 31, lost at once) he
  stands at once; else he says "carta" while his total is below ``banker_stands_at`` (default
  28: of the fixed thresholds 23 to 29, the one whose worst edge over the punters' policies 15
  to 30 was highest in a 4,000-deal run) and stands there; he does not look at the punter's
  face-up cards.

The edge is the punter's expected loss per unit staked, with its standard error: with no house
commission (the default), the banker's expected gain. A commission on the punter's winnings
counts in his loss; one on the banker's collections does not.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from uuid import UUID

from domain.cards import Card, DeckKind
from domain.errors import InvalidArgument
from domain.estimates import Estimate, check_samples, sample_mean
from domain.money import players_net
from domain.shuffle import shuffle
from domain.treinta_y_una.banker import BankerChoice, BankerReason
from domain.treinta_y_una.facts import Outcome, StakeSettled
from domain.treinta_y_una.movements import Role
from domain.treinta_y_una.round import (
    Phase,
    Step,
    carta,
    deal,
    me_planto,
    open_round,
    place_stake,
    settle,
)
from domain.treinta_y_una.rules import TableRules

STAND_AT = tuple(range(15, 31))  # the punters' policies: stand at 15 ... 30
BANKER_STANDS_AT = 28
MAX_DEALS = 10_000_000
PERSONALIZATION = b"SABOT-TYU-MC-1"
BANKER, PUNTER = "banca", "punto"


@dataclass(frozen=True, slots=True)
class EdgeEstimate:
    """The banker against a punter who stands at ``stand_at``."""

    stand_at: int
    edge: Estimate  # the banker's gain per unit staked
    punter_wins: float  # share of games
    punter_loses: float
    void: float
    punter_bust: float  # share of games where the punter went over 31


@dataclass(frozen=True, slots=True)
class MonteCarlo:
    deals: int
    seed: int
    banker_stands_at: int
    edges: tuple[EdgeEstimate, ...]


def check_deals(deals: object, field: str = "monte_carlo") -> int:
    return check_samples(deals, MAX_DEALS, field, "deals")


def deck_seed(seed: int) -> bytes:
    if not 0 <= seed < 2**256:
        raise InvalidArgument("seed", "BAD_SEED", "must be at most 64 hexadecimal digits")
    return hashlib.sha256(PERSONALIZATION + seed.to_bytes(32, "big")).digest()


def play(
    rules: TableRules, shoe: Sequence[Card], stand_at: int, banker_stands_at: int, stake: int
) -> tuple[int, Outcome, bool]:
    """One game of the policies on ``shoe``: the punter's net gain, his outcome, whether he
    went over 31."""
    step = open_round(rules, (PUNTER, BANKER), BankerChoice(BANKER, BankerReason.KEPT), 2 * stake)
    step = place_stake(rules, step.round, PUNTER, stake)
    net = -sum(m.amount for m in step.movements if m.source is Role.PLAYER)
    step = deal(rules, step.round, shoe)
    round_ = step.round
    while round_.phase is Phase.PLAYING:
        player = round_.whose_turn
        assert player is not None
        hand = round_.hand_of(player)
        if player == PUNTER:
            draw = hand.value.total < stand_at and not hand.value.bust
        else:
            draw = not round_.hand_of(PUNTER).out and hand.value.total < banker_stands_at
        step = (carta if draw else me_planto)(rules, round_, player)
        net += _punter_money(step)
        round_ = step.round
    step = settle(rules, round_)
    net += _punter_money(step)
    settled = next(f for f in step.facts if isinstance(f, StakeSettled))
    return net, settled.outcome, round_.hand_of(PUNTER).value.bust


def _punter_money(step: Step) -> int:
    return players_net(step.movements).get(PUNTER, 0)


class _Tally:
    """Running sums of one policy's games."""

    def __init__(self) -> None:
        self.n = 0
        self.total = 0.0
        self.squares = 0.0
        self.outcomes = dict.fromkeys(Outcome, 0)
        self.bust = 0

    def add(self, gain: float, outcome: Outcome, bust: bool) -> None:
        self.n += 1
        self.total += gain
        self.squares += gain * gain
        self.outcomes[outcome] += 1
        self.bust += bust

    def estimate(self, stand_at: int) -> EdgeEstimate:
        n = self.n
        share = {o: k / n for o, k in self.outcomes.items()}
        return EdgeEstimate(
            stand_at,
            sample_mean(n, self.total, self.squares),
            share[Outcome.WON],
            share[Outcome.LOST],
            share[Outcome.VOID],
            self.bust / n,
        )


def run(
    rules: TableRules,
    deals: int,
    seed: int,
    stand_at: Sequence[int] = STAND_AT,
    banker_stands_at: int = BANKER_STANDS_AT,
    progress: Callable[[int], None] | None = None,
) -> MonteCarlo:
    """``deals`` decks, on each one game per punter's policy."""
    check_deals(deals)
    key = deck_seed(seed)
    stake = max(rules.min_stake, min(1000, rules.max_stake))
    tallies = {t: _Tally() for t in stand_at}
    for i in range(1, deals + 1):
        shoe = shuffle(key, UUID(int=i), DeckKind.SPANISH_40, 1)
        for t in stand_at:
            net, outcome, bust = play(rules, shoe, t, banker_stands_at, stake)
            tallies[t].add(-net / stake, outcome, bust)
        if progress is not None and (i % 100 == 0 or i == deals):  # the last count too
            progress(i)
    edges = tuple(tallies[t].estimate(t) for t in stand_at)
    return MonteCarlo(deals, seed, banker_stands_at, edges)
