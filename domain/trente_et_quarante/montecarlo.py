"""Monte-Carlo of the first coup, played through the real engine, to check the exact odds.

Every coup is the first coup of a freshly shuffled shoe. SABOT-SHUFFLE-1 costs about a
millisecond a shoe, so for sampling the shoe's opening is drawn with a local, seeded
``random.Random`` (deterministic; never the global generator): ``rng.sample`` gives the first
``OPENING`` cards of a uniformly random order, and on the rare coup that needs more cards the
rest of the shoe follows in a random order, so every order stays equally likely. The cards then
go through ``deal.deal_coup`` and ``outcome.judge``.

House edges: on the same coups, one stake per (chance, treatment of the 31) lies on a layout and
is settled by ``settlement.settle`` until it leaves the layout (win, loss, release, prison
loss, partage, return); then a fresh stake replaces it. Later coups of a stake's life are fresh
first coups too: the same steady-state approximation as the exact prison figures.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from domain.cards import Card, DeckKind, canonical_shoe
from domain.errors import InvalidArgument
from domain.estimates import Estimate, check_samples, proportion, sample_mean
from domain.money import players_net
from domain.trente_et_quarante.chances import Chance
from domain.trente_et_quarante.deal import deal_coup
from domain.trente_et_quarante.layout import (
    Fate,
    Layout,
    Refait31Choice,
    StakeStatus,
    Step,
    close_betting,
    insure,
    place_stake,
    withdraw_stake,
)
from domain.trente_et_quarante.odds import TOTALS, Edge
from domain.trente_et_quarante.outcome import Outcome, Result, judge
from domain.trente_et_quarante.rules import CutCardRule, HouseRules, Refait31Rule
from domain.trente_et_quarante.settlement import settle

OPENING = 32  # cards drawn per coup before falling back to the rest of the shoe
Z_LIMIT = 3  # an exact figure further than this many standard errors is flagged
MAX_COUPS = 100_000_000


@dataclass(frozen=True, slots=True)
class Check:
    """An exact figure beside its estimate; ``flagged`` when more than Z_LIMIT SE apart."""

    name: str
    exact: Fraction
    estimate: Estimate

    @property
    def z(self) -> float:
        se = self.estimate.se
        if se == 0:
            p = float(self.exact)
            se = math.sqrt(max(p * (1 - p), 1e-300) / max(self.estimate.n, 1))
        return (self.estimate.value - float(self.exact)) / se

    @property
    def flagged(self) -> bool:
        return abs(self.z) > Z_LIMIT


def check_coups(coups: int, field_name: str = "monte_carlo") -> int:
    return check_samples(coups, MAX_COUPS, field_name, "coups")


class FirstCoups:
    """First coups of freshly shuffled shoes of ``decks`` decks, from a seeded local generator."""

    def __init__(self, decks: int, seed: int) -> None:
        self._shoe: tuple[Card, ...] = canonical_shoe(DeckKind.FRENCH_52, decks)
        self._rng = random.Random(seed)
        self._positions = range(len(self._shoe))

    def deal(self) -> Outcome:
        shoe, rng = self._shoe, self._rng
        order = rng.sample(self._positions, min(OPENING, len(shoe)))
        coup = deal_coup([shoe[i] for i in order], 0, CutCardRule.FINISH_COUP)
        if not coup.complete:  # rare: the coup needs more than OPENING cards
            drawn = set(order)
            rest = [i for i in self._positions if i not in drawn]
            rng.shuffle(rest)
            coup = deal_coup([shoe[i] for i in order + rest], 0, CutCardRule.FINISH_COUP)
        return judge(coup)


class _Tally:
    """Counts of the coup figures (the names of ``CoupOdds.figures``)."""

    def __init__(self) -> None:
        self.n = 0
        self.counts: dict[str, int] = {}

    def add(self, outcome: Outcome) -> None:
        self.n += 1
        c = self.counts
        names = [f"noir_total_{outcome.noir_total}", f"rouge_total_{outcome.rouge_total}"]
        if outcome.result is Result.REFAIT:
            names.append(f"refait_{outcome.refait_total}")
        elif outcome.decided:
            names.append(outcome.result.value)
            names.append("couleur" if outcome.couleur else "inverse")
        for name in names:
            c[name] = c.get(name, 0) + 1

    def estimates(self) -> dict[str, Estimate]:
        names = [f"noir_total_{t}" for t in TOTALS] + [f"rouge_total_{t}" for t in TOTALS]
        names += ["noir", "rouge"] + [f"refait_{t}" for t in TOTALS] + ["couleur", "inverse"]
        out: dict[str, Estimate] = {}
        for name in names:
            out[name] = proportion(self.counts.get(name, 0), self.n)
        return out


@dataclass
class _Life:
    """One stake's life on the layout: the player's money in and out, and the coups seen."""

    stake_id: str
    net: int = 0  # minor units the player got back minus what he paid
    coups: int = 0
    played: int = 0  # the coups it was played free (not in prison), pushes included


@dataclass
class _LifeStats:
    """Running sums over finished lives (no per-life storage): loss per unit x, coups c."""

    n: int = 0
    sx: float = 0.0
    sxx: float = 0.0
    sc: int = 0
    scc: int = 0
    sxc: float = 0.0
    sp: int = 0  # coups played (free), and their products, as for the coups
    spp: int = 0
    sxp: float = 0.0

    def add(self, loss: float, coups: int, played: int) -> None:
        self.n += 1
        self.sx += loss
        self.sxx += loss * loss
        self.sc += coups
        self.scc += coups * coups
        self.sxc += loss * coups
        self.sp += played
        self.spp += played * played
        self.sxp += loss * played

    def per_stake(self) -> Estimate:
        n = self.n
        if n < 2:
            return Estimate(math.nan, math.nan, n)
        return sample_mean(n, self.sx, self.sxx)

    def per_coup(self) -> Estimate:
        """The ratio estimator sum(x) / sum(c), its SE by the delta method."""
        return self._ratio(self.sc, self.scc, self.sxc)

    def per_coup_played(self) -> Estimate:
        """The literature's figure: sum(x) / sum(coups played), its SE by the delta method."""
        return self._ratio(self.sp, self.spp, self.sxp)

    def _ratio(self, sc: float, scc: float, sxc: float) -> Estimate:
        n = self.n
        if n < 2 or sc == 0:
            return Estimate(math.nan, math.nan, n)
        r = self.sx / sc
        resid = max(self.sxx - 2 * r * sxc + r * r * scc, 0.0)
        return Estimate(r, math.sqrt(resid * n / (n - 1)) / sc, n)


def stake_amount(rules: HouseRules) -> int:
    """An even stake within the limits on which the premium is exactly ``amount * rate``."""
    unit = 2 * (rules.insurance_rate.denominator if rules.insurance_rate else 1)
    amount = max(rules.min_stake, 1000)
    amount = -(-amount // unit) * unit
    if amount > rules.max_stake:
        raise InvalidArgument(
            "max_stake", "TOO_LOW", f"no stake of a multiple of {unit} fits the table limits"
        )
    return amount


def _player_money(step: Step, players: Mapping[str, _Life]) -> None:
    for player, net in players_net(step.movements).items():
        life = players.get(player)
        if life is not None:
            life.net += net


class _EdgeTable:
    """A layout with one player per (chance, treatment); each keeps one stake in play."""

    def __init__(self, rules: HouseRules, edges: Sequence[Edge]) -> None:
        self.rules = rules
        self.amount = stake_amount(rules)
        self.layout = Layout()
        self.keys = [(e.chance, e.treatment) for e in edges]
        self.player_of = {key: f"p{i}" for i, key in enumerate(self.keys)}
        self.key_of = {p: key for key, p in self.player_of.items()}
        self.lives: dict[str, _Life] = {}
        self.stats = {key: _LifeStats() for key in self.keys}
        self._serial = 0
        for key in self.keys:
            self._place(key)

    def _apply(self, step: Step) -> None:
        _player_money(step, self.lives)
        self.layout = step.layout

    def _place(self, key: tuple[Chance, str]) -> None:
        chance, treatment = key
        player = self.player_of[key]
        self._serial += 1
        sid = f"s{self._serial}"
        choice = None
        if self.rules.refait31 is Refait31Rule.PLAYER_CHOICE:
            choice = Refait31Choice.PARTAGE if treatment == "partage" else Refait31Choice.PRISON
        self.lives[player] = _Life(sid)
        self._apply(place_stake(self.rules, self.layout, sid, player, chance, self.amount, choice))

    def play(self, outcome: Outcome) -> None:
        rules = self.rules
        self._apply(close_betting(rules, self.layout))
        for stake in self.layout.stakes:
            if self.key_of[stake.player][1] == "insured":
                self._apply(insure(rules, self.layout, stake.stake_id))
        free = {s.player for s in self.layout.stakes if s.status is StakeStatus.FREE}
        for player, life in self.lives.items():
            life.coups += 1
            life.played += player in free
        step = settle(rules, self.layout, outcome)
        self._apply(step)
        for fate in step.fates:
            if fate.status_after is None:
                self._end(fate.player)
            elif fate.fate is Fate.PARTAGE:  # the house has its half: the rest goes back
                self._apply(withdraw_stake(rules, self.layout, fate.stake_id))
                self._end(fate.player)

    def _end(self, player: str) -> None:
        key = self.key_of[player]
        life = self.lives.pop(player)
        self.stats[key].add(-life.net / self.amount, life.coups, life.played)
        self._place(key)


@dataclass(frozen=True, slots=True)
class MonteCarlo:
    """The estimates of one run: coup figures by name, and edges by (chance, treatment)."""

    coups: int
    decks: int
    seed: int
    figures: Mapping[str, Estimate]
    edges_per_coup: Mapping[tuple[Chance, str], Estimate]
    edges_per_stake: Mapping[tuple[Chance, str], Estimate]
    edges_per_coup_played: Mapping[tuple[Chance, str], Estimate]  # the literature's figure


PROGRESS_EVERY = 10_000  # coups between two calls of run's ``progress``


def run(
    rules: HouseRules,
    edges: Sequence[Edge],
    coups: int,
    seed: int,
    progress: Callable[[int], None] | None = None,
) -> MonteCarlo:
    """Play ``coups`` first coups of ``rules.decks``-deck shoes; settle the ``edges``' stakes."""
    check_coups(coups)
    source = FirstCoups(rules.decks, seed)
    tally = _Tally()
    table = _EdgeTable(rules, edges) if edges else None
    for i in range(coups):
        outcome = source.deal()
        tally.add(outcome)
        if table is not None:
            table.play(outcome)
        if progress is not None and (i + 1) % PROGRESS_EVERY == 0:
            progress(i + 1)
    per_coup = {k: s.per_coup() for k, s in table.stats.items()} if table else {}
    per_stake = {k: s.per_stake() for k, s in table.stats.items()} if table else {}
    played = {k: s.per_coup_played() for k, s in table.stats.items()} if table else {}
    return MonteCarlo(coups, rules.decks, seed, tally.estimates(), per_coup, per_stake, played)


def checks(exact: Mapping[str, Fraction], mc: MonteCarlo, edges: Sequence[Edge]) -> list[Check]:
    """Every exact figure beside its estimate: coup figures, then each edge in its three
    conventions (per coup played: the literature's; per coup on the layout; per stake)."""
    out = [Check(name, value, mc.figures[name]) for name, value in exact.items()]
    for e in edges:
        key = (e.chance, e.treatment)
        if key in mc.edges_per_coup:
            name = f"edge_{e.chance.value}_{e.treatment}"
            out.append(Check(f"{name}_per_coup", e.per_coup, mc.edges_per_coup[key]))
            out.append(Check(f"{name}_per_stake", e.loss_per_stake, mc.edges_per_stake[key]))
            out.append(Check(f"{name}_per_coup_played", e.per_coup_played,
                             mc.edges_per_coup_played[key]))
    return out
