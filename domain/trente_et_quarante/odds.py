"""Exact odds of Trente et Quarante, in rational arithmetic (``fractions.Fraction``).

The coup is the FIRST coup dealt from a full, freshly shuffled shoe (every order equally likely);
the cut card is never reached by it (a first coup uses at most a few dozen cards). See
docs/odds.md for the method, the proofs of the symmetries used and the published figures.

Method. A row is a multiset ``a`` of values whose order is valid when only its last card takes the
total past 30; for a total ``t`` the valid last cards are those of value >= t - 30, so a multiset
has ``(k - 1)! * S_t(a) / prod(a_v!)`` valid orders (``k`` cards, ``S_t(a)`` cards of value
>= t - 30). A given sequence of values with counts ``c`` opens the shoe with probability
``prod ff(n_v, c_v) / ff(T, |c|)``, so the Noir row ``a`` then the Rouge row ``b`` have probability

    (kA - 1)! (kB - 1)! S(a) S(b) / ff(T, kA + kB) * prod_v n_v! / (a_v! b_v! (n_v - a_v - b_v)!)

which factorises over the ten value classes except for ``kA``, ``kB`` and the two ``S``. A dynamic
programme over the classes (10 down to 1) with state ``(total_A, kA, total_B, kB)`` computes the
refait at each total ``t``; processing classes in descending order, ``S_t`` is the number of cards
counted when the classes >= t - 30 are done, so it is applied there as a factor.

Symmetries (exact, proved in docs/odds.md, checked by brute force in tests):
- the pair (Noir row, Rouge row) is exchangeable: P(Noir = x, Rouge = y) = P(Noir = y, Rouge = x);
  so the Rouge row's total has the Noir row's law and P(Noir wins) = P(Rouge wins);
- in a French deck each value has as many black as red cards, so the first card's colour is
  independent of every value dealt: P(Couleur) = P(Inverse) = (1 - P(refait)) / 2.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from math import comb, factorial

from domain.cards import check_deck_count
from domain.errors import InvalidArgument
from domain.trente_et_quarante.chances import Chance
from domain.trente_et_quarante.french_odds import FRENCH_SHOES
from domain.trente_et_quarante.rules import (
    ColourChancesOnRefait31,
    HouseRules,
    PrisonRefait31Rule,
    Refait31Rule,
)

VALUES = tuple(range(1, 11))  # card values; J, Q, K count 10
TOTALS = tuple(range(31, 41))  # a finished row's total
ROW_STOPS_ABOVE = 30
MIN_SHOE_VALUE = 2 * (ROW_STOPS_ABOVE + 10)  # enough value to finish both rows, whatever the order

_BITS = 6  # each of the four state fields (totals <= 40, card counts <= 40) fits in 6 bits
_MASK = (1 << _BITS) - 1


@dataclass(frozen=True, slots=True)
class Composition:
    """The shoe by value: ``counts[v - 1]`` cards of value ``v``; half of each value black."""

    counts: tuple[int, ...]
    label: str = ""

    def __post_init__(self) -> None:
        if len(self.counts) != len(VALUES):
            raise InvalidArgument("composition", "BAD_LENGTH", "needs a count for values 1 to 10")
        for value, count in zip(VALUES, self.counts, strict=True):
            if count < 0 or count % 2:
                raise InvalidArgument(
                    "composition",
                    "BAD_COUNT",
                    f"value {value}: count must be even and >= 0 (half black), got {count}",
                )
        if self.value_sum < MIN_SHOE_VALUE:
            raise InvalidArgument(
                "composition",
                "TOO_SMALL",
                f"the cards must add up to at least {MIN_SHOE_VALUE}, got {self.value_sum}",
            )

    @classmethod
    def french(cls, decks: int) -> Composition:
        """``decks`` 52-card decks: four of each value 1-9 and sixteen tens per deck."""
        check_deck_count(decks)
        return cls(tuple([4 * decks] * 9 + [16 * decks]), f"{decks} deck{'s' * (decks > 1)}")

    @classmethod
    def of(cls, counts: Mapping[int, int], label: str = "") -> Composition:
        """From ``{value: count}``; missing values have no card."""
        return cls(tuple(counts.get(v, 0) for v in VALUES), label)

    @property
    def size(self) -> int:
        return sum(self.counts)

    @property
    def value_sum(self) -> int:
        return sum(v * c for v, c in zip(VALUES, self.counts, strict=True))

    def count(self, value: int) -> int:
        return self.counts[value - 1]


@dataclass(frozen=True, slots=True)
class CoupOdds:
    """The laws of the first coup. ``row_total`` is the law of either row's total (equal laws)."""

    label: str
    row_total: Mapping[int, Fraction]  # P(Noir row = t) = P(Rouge row = t), t in 31..40
    refait: Mapping[int, Fraction]  # P(both rows = t)

    @property
    def noir_total(self) -> Mapping[int, Fraction]:
        return self.row_total

    @property
    def rouge_total(self) -> Mapping[int, Fraction]:
        return self.row_total

    @property
    def refait_any(self) -> Fraction:
        return sum(self.refait.values(), Fraction(0))

    @property
    def refait31(self) -> Fraction:
        return self.refait[31]

    @property
    def refait_high(self) -> Fraction:
        """A refait at 32..40: void for every stake."""
        return self.refait_any - self.refait31

    @property
    def decided(self) -> Fraction:
        """A row wins."""
        return 1 - self.refait_any

    @property
    def noir(self) -> Fraction:
        return self.decided / 2

    @property
    def rouge(self) -> Fraction:
        return self.decided / 2

    @property
    def couleur(self) -> Fraction:
        return self.decided / 2

    @property
    def inverse(self) -> Fraction:
        return self.decided / 2

    def chance_wins(self, chance: Chance) -> Fraction:
        return self.decided / 2

    def figures(self) -> dict[str, Fraction]:
        """Every figure by a stable name (the names the Monte-Carlo check uses)."""
        out: dict[str, Fraction] = {}
        for t in TOTALS:
            out[f"noir_total_{t}"] = self.row_total[t]
        for t in TOTALS:
            out[f"rouge_total_{t}"] = self.row_total[t]
        out["noir"] = self.noir
        out["rouge"] = self.rouge
        for t in TOTALS:
            out[f"refait_{t}"] = self.refait[t]
        out["couleur"] = self.couleur
        out["inverse"] = self.inverse
        return out


def _falling(n: int, k: int) -> int:
    out = 1
    for i in range(k):
        out *= n - i
    return out


def _capacity_after(counts: Sequence[int], order: tuple[int, ...]) -> list[int]:
    """capacity[i]: the most value the classes after ``order[i]`` can add."""
    cap = [0] * (len(order) + 1)
    for i in range(len(order) - 1, -1, -1):
        cap[i] = cap[i + 1] + order[i] * counts[order[i] - 1]
    return cap


_ORDER = tuple(reversed(VALUES))  # 10 down to 1


def row_law(counts: Sequence[int], t: int) -> Fraction:
    """P(a row dealt from a shoe of ``counts[v - 1]`` cards of value v totals ``t``) (any counts:
    colours play no part; the shoe must hold enough value to finish the row)."""
    if len(counts) != len(VALUES) or min(counts) < 0 or t not in TOTALS:
        raise InvalidArgument("counts", "BAD_COUNTS", "ten counts >= 0 and a total 31..40")
    if sum(v * c for v, c in zip(VALUES, counts, strict=True)) < ROW_STOPS_ABOVE + 10:
        raise InvalidArgument("counts", "TOO_SMALL", "not enough value to finish a row")
    tau = t - ROW_STOPS_ABOVE
    cap = _capacity_after(counts, _ORDER)
    states: dict[int, int] = {0: 1}  # key: total | k << 6
    for i, v in enumerate(_ORDER):
        n = counts[v - 1]
        if n:
            step = v + (1 << _BITS)
            binom = [comb(n, a) for a in range(n + 1)]
            new: dict[int, int] = {}
            for key, w in states.items():
                room = t - (key & _MASK)
                lo = max(0, -((cap[i + 1] - room) // v))
                for a in range(lo, min(n, room // v) + 1):
                    k2 = key + a * step
                    new[k2] = new.get(k2, 0) + w * binom[a]
            states = new
        if v == tau:
            states = {k: w * (k >> _BITS) for k, w in states.items() if k >> _BITS}
    total = Fraction(0)
    for key, w in states.items():
        k = key >> _BITS
        total += Fraction(w * factorial(k - 1), _falling(sum(counts), k))
    return total


def _refait_law(counts: Sequence[int], t: int) -> Fraction:
    """P(the Noir row and the Rouge row both total ``t``).

    A state is ``A | B << 12`` with ``A = total_A | kA << 6`` (``B`` likewise). The weights are
    symmetric in the two rows at every step, so only states with ``A <= B`` are kept: a move out
    of a kept state lands on a kept state or on the mirror of one, which it counts for too.
    """
    tau = t - ROW_STOPS_ABOVE
    cap = _capacity_after(counts, _ORDER)
    half = 2 * _BITS
    low = (1 << half) - 1
    states: dict[int, int] = {0: 1}
    for i, v in enumerate(_ORDER):
        n = counts[v - 1]
        if n:
            step = v + (1 << _BITS)  # one card of value v, in A's or in B's frame
            after = cap[i + 1]
            binom = [comb(n, a) for a in range(n + 1)]
            rest = [[comb(n - a, b) for b in range(n - a + 1)] for a in range(n + 1)]
            new: dict[int, int] = {}
            get = new.get
            for key, w in states.items():
                a0, b0 = key & low, key >> half
                mirrored = a0 != b0
                room_a = t - (a0 & _MASK)
                room_b = t - (b0 & _MASK)
                lo_b = max(0, -((after - room_b) // v))
                hi_b = room_b // v
                for a in range(max(0, -((after - room_a) // v)), min(n, room_a // v) + 1):
                    wa = w * binom[a]
                    a1 = a0 + a * step
                    row = rest[a]
                    top = min(n - a, hi_b)
                    gap = a1 - b0
                    cut = gap // step if gap >= 0 else -1  # b <= cut  <=>  B's part <= a1
                    for b in range(max(lo_b, cut + 1), top + 1):  # B > A: kept as it is
                        k = a1 | (b0 + b * step) << half
                        new[k] = get(k, 0) + wa * row[b]
                    if mirrored:  # B <= A: kept as its mirror
                        high = a1 << half
                        for b in range(lo_b, min(cut, top) + 1):
                            k = (b0 + b * step) | high
                            new[k] = get(k, 0) + wa * row[b]
                    if gap >= 0 and gap % step == 0 and lo_b <= cut <= top:  # B == A
                        k = a1 | a1 << half
                        new[k] = get(k, 0) + wa * row[cut]
            states = new
        if v == tau:
            states = {
                k: w * ((k & low) >> _BITS) * (k >> (half + _BITS))
                for k, w in states.items()
                if (k & low) >> _BITS and k >> (half + _BITS)
            }
    size = sum(counts)
    by_length: dict[tuple[int, int], int] = {}
    for key, w in states.items():
        a0, b0 = key & low, key >> half
        pair = (a0 >> _BITS, b0 >> _BITS)
        by_length[pair] = by_length.get(pair, 0) + (w if a0 == b0 else 2 * w)
    total = Fraction(0)
    for (ka, kb), w in by_length.items():
        total += Fraction(w * factorial(ka - 1) * factorial(kb - 1), _falling(size, ka + kb))
    return total


def coup_odds(comp: Composition) -> CoupOdds:
    """The exact laws of the first coup from a full shoe of composition ``comp``."""
    return CoupOdds(
        comp.label or f"{comp.size} cards",
        {t: row_law(comp.counts, t) for t in TOTALS},
        {t: _refait_law(comp.counts, t) for t in TOTALS},
    )


def french_coup_odds(decks: int) -> CoupOdds:
    """The laws of the first coup from ``decks`` French decks: ``coup_odds`` of them (seconds of
    arithmetic for a 6-deck shoe), read from the table it gave once,
    ``domain/trente_et_quarante/french_odds.py`` (tests recompute it; ``french_table_source``
    writes it again)."""
    check_deck_count(decks)
    row, refait = FRENCH_SHOES[decks]
    return CoupOdds(Composition.french(decks).label,
                    {t: Fraction(x) for t, x in zip(TOTALS, row, strict=True)},
                    {t: Fraction(x) for t, x in zip(TOTALS, refait, strict=True)})


def french_table_source(decks: Iterable[int] = range(1, 9)) -> str:
    """The text of ``domain/trente_et_quarante/french_odds.py``: ``coup_odds`` of each French
    shoe, exactly."""
    lines = ['"""The exact laws of the first coup from a French shoe of 1 to 8 decks, as',
             "``odds.coup_odds`` gives them (``french_table_source`` wrote this file;",
             "tests/domain/trente_et_quarante/test_french_odds.py recomputes it). Per deck",
             "count: P(a row totals t) and P(both rows total t), t = 31..40, as exact fractions."
             '"""', "",
             "FRENCH_SHOES: dict[int, tuple[tuple[str, ...], tuple[str, ...]]] = {"]
    for d in decks:
        odds = coup_odds(Composition.french(d))
        lines.append(f"    {d}: (")
        for law in (odds.row_total, odds.refait):
            lines.append("        (")
            lines += [f'            "{law[t]}",' for t in TOTALS]
            lines.append("        ),")
        lines.append("    ),")
    return "\n".join([*lines, "}", ""])


def infinite_coup_odds() -> CoupOdds:
    """Cards drawn with replacement: values 1..9 with 1/13 each, 10 with 4/13; rows independent."""
    p = {v: Fraction(1, 13) for v in range(1, 10)}
    p[10] = Fraction(4, 13)
    reach = [Fraction(0)] * (ROW_STOPS_ABOVE + 1)
    reach[0] = Fraction(1)
    law = {t: Fraction(0) for t in TOTALS}
    for s in range(ROW_STOPS_ABOVE + 1):
        for v, pv in p.items():
            if s + v <= ROW_STOPS_ABOVE:
                reach[s + v] += reach[s] * pv
            else:
                law[s + v] += reach[s] * pv
    return CoupOdds("infinite deck", law, {t: law[t] * law[t] for t in TOTALS})


# --- House edges --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Edge:
    """The house edge of one chance under one way of treating the refait at 31, in three
    conventions (docs/odds.md §4.1).

    ``loss_per_stake``: expected loss per unit staked, over the stake's whole life (carried
    through void coups and prisons until it leaves the layout). ``coups_per_stake``: expected
    number of coups it spends on the layout (void coups and prison coups count).
    ``coups_played``: expected number of coups it is played as placed (free), a push (a refait
    at 32..40, or a 31 for an insured stake) counting as a coup played: the coups it spends in
    prison are not counted, their outcome being the coup's that imprisoned it.

    - ``per_coup_played`` = loss_per_stake / coups_played: **the literature's figure**, the
      expected loss per coup played, pushes counted, the prison's outcome credited to the coup
      the stake was placed on;
    - ``per_coup`` = loss_per_stake / coups_per_stake: per coup the stake lies on the layout;
    - ``loss_per_stake``: per stake, over its life (pushes not counted as coups).
    """

    chance: Chance
    treatment: str  # partage, prison, prison_lost, returned, insured
    loss_per_stake: Fraction
    coups_per_stake: Fraction
    coups_played: Fraction
    default: bool = True  # the treatment a stake gets when its player chooses nothing

    @property
    def per_coup(self) -> Fraction:
        """Per coup on the layout (prison coups and pushes counted as coups)."""
        return self.loss_per_stake / self.coups_per_stake

    @property
    def per_coup_played(self) -> Fraction:
        """The literature's convention: per coup played, pushes counted, the prison's outcome
        credited to the coup the stake was placed on."""
        return self.loss_per_stake / self.coups_played


def _partage(odds: CoupOdds, chance: Chance) -> Edge:
    q = 1 - odds.refait_high  # the coup is not a void refait
    return Edge(chance, "partage", odds.refait31 / 2 / q, 1 / q, 1 / q)


def _returned(odds: CoupOdds, chance: Chance) -> Edge:
    q = 1 - odds.refait_high
    return Edge(chance, "returned", Fraction(0), 1 / q, 1 / q)


def _prison(odds: CoupOdds, chance: Chance, second: bool) -> Edge:
    """Later coups are taken to have the first coup's law (the steady-state approximation)."""
    w, r31, q = odds.chance_wins(chance), odds.refait31, 1 - odds.refait_high
    if second:
        # V1 = (w + r31 V2) / q, V2 = w V1 / q: what a stake in (first, second) prison returns.
        back = w * q / (q * q - r31 * w)
        # N1 = (1 + r31 N2) / q, N2 = (1 + w N1) / q: coups spent in (first, second) prison.
        in_prison = (q + r31) / (q * q - r31 * w)
    else:
        back = w / q
        in_prison = 1 / q
    loss = r31 * (1 - back) / q
    coups = (1 + r31 * in_prison) / q
    return Edge(chance, "prison" if second else "prison_lost", loss, coups, 1 / q)


def _insured(odds: CoupOdds, chance: Chance, rate: Fraction) -> Edge:
    """A stake insured on every coup it spends on the layout: the 31 is void for it."""
    moves = odds.decided  # only a decided coup takes it off the layout
    return Edge(chance, "insured", rate / moves, 1 / moves, 1 / moves)


def house_edges(odds: CoupOdds, rules: HouseRules) -> tuple[Edge, ...]:
    """Every chance the rules offer, under every treatment of the 31 they allow."""
    chances: Iterable[Chance] = (
        (Chance.NOIR, Chance.ROUGE)
        if rules.chances.value == "noir_rouge"
        else (Chance.NOIR, Chance.ROUGE, Chance.COULEUR, Chance.INVERSE)
    )
    second = rules.prison_refait31 is PrisonRefait31Rule.SECOND_PRISON
    out: list[Edge] = []
    for chance in chances:
        colour = chance in (Chance.COULEUR, Chance.INVERSE)
        returned = colour and rules.couleur_inverse_on_refait31 is ColourChancesOnRefait31.RETURNED
        if returned:
            out.append(_returned(odds, chance))
        elif rules.refait31 is Refait31Rule.PARTAGE:
            out.append(_partage(odds, chance))
        elif rules.refait31 is Refait31Rule.PRISON:
            out.append(_prison(odds, chance, second))
        else:  # player_choice: prison unless the player chooses partage
            out.append(_prison(odds, chance, second))
            p = _partage(odds, chance)
            out.append(replace(p, default=False))
        if rules.insurance_rate > 0 and not returned:  # insurance is not sold where a 31
            # returns the stake anyway (RULES.md §1, domain.trente_et_quarante.layout.insure)
            ins = _insured(odds, chance, rules.insurance_rate)
            out.append(replace(ins, default=False))
    return tuple(out)


# --- One coup of one stake: the house's result, its mean and variance ---------------------------

# What the house gains, per unit staked, from a stake's fate in ONE coup: the money that changes
# hands in that coup (an imprisoned stake's money moves only when it leaves the prison).
_GAIN_OF_FATE: dict[str, Fraction] = {
    "won": Fraction(-1),
    "lost": Fraction(1),
    "void": Fraction(0),
    "partage": Fraction(1, 2),
    "imprisoned": Fraction(0),
    "second_prison": Fraction(0),
    "released": Fraction(0),
    "back_to_prison": Fraction(0),
    "prison_lost": Fraction(1),
    "returned": Fraction(0),
}


@dataclass(frozen=True, slots=True)
class CoupLaw:
    """The house's result of one coup on a unit stake in a given state, counted as the money
    that changes hands in that coup (``gain``: won -1, lost +1, partage +1/2, prison lost +1;
    void, imprisoned, second prison, released, back to prison, returned 0). ``mean`` is its
    expectation (the stake's per-coup edge in that state) and ``variance`` its variance."""

    chance: Chance
    state: str  # status, then ":insured" and ":<choice>" when they apply
    gain: Mapping[str, Fraction]  # outcome (win, lose, refait31, void) -> gain
    mean: Fraction
    variance: Fraction


def stake_state(status: str, insured: bool = False, choice: str | None = None) -> str:
    """The name of a stake's state before a coup: ``free``, ``prison`` or ``second_prison``,
    followed by ``:insured`` and ``:partage`` / ``:prison`` (the player's choice)."""
    return status + (":insured" if insured else "") + (f":{choice}" if choice else "")


def parse_stake_state(state: str) -> tuple[str, bool, str | None]:
    """The inverse of :func:`stake_state`: (status, insured, choice)."""
    status, *rest = state.split(":")
    insured = "insured" in rest
    choices = [r for r in rest if r != "insured"]
    if status not in ("free", "prison", "second_prison") or len(choices) > 1 or (
        choices and choices[0] not in ("partage", "prison")
    ):
        raise InvalidArgument("state", "BAD_STATE", f"unknown stake state {state!r}")
    return status, insured, choices[0] if choices else None


def coup_law(odds: CoupOdds, rules: HouseRules, chance: Chance, state: str = "free") -> CoupLaw:
    """The house's result of the next coup on a unit stake on ``chance`` in ``state`` (see
    :func:`stake_state`), under ``rules``, the coup having the law ``odds`` (the first coup's:
    the approximation of §4.1). The fates are the engine's (``settlement``): a decided
    coup wins or loses the stake (or releases it, or loses it in prison); a refait at 31 does
    what ``fate_on_refait31`` says for that stake; a refait at 32..40 is void.

    Summed over a stake's life, the means add up to the treatment's ``Edge.loss_per_stake``
    (e.g. a free stake under prison loses nothing in the coup of the 31; its prison coups carry
    the loss), and ``Edge.per_coup`` is the average of the means over the coups of that life."""
    from domain.trente_et_quarante.layout import Refait31Choice, Stake, StakeStatus
    from domain.trente_et_quarante.settlement import DECIDED, fate_on_refait31

    status, insured, choice = parse_stake_state(state)
    st = StakeStatus(status)
    stake = Stake("s", "p", chance, 1, st, insured, Refait31Choice(choice) if choice else None)
    gain = {
        "win": _GAIN_OF_FATE[DECIDED[st, True].value],
        "lose": _GAIN_OF_FATE[DECIDED[st, False].value],
        "refait31": _GAIN_OF_FATE[fate_on_refait31(rules, stake).value],
        "void": Fraction(0),
    }
    w = odds.chance_wins(chance)
    p = {"win": w, "lose": odds.decided - w, "refait31": odds.refait31, "void": odds.refait_high}
    mean = sum((p[k] * g for k, g in gain.items()), Fraction(0))
    second = sum((p[k] * g * g for k, g in gain.items()), Fraction(0))
    return CoupLaw(chance, state, gain, mean, second - mean * mean)
