"""``domain.odds.coup_law``: the law of one coup for a stake in a given state, against the
treatments' edges (``house_edges``) and against the engine's own settlement."""

from __future__ import annotations

from fractions import Fraction

import pytest

from domain.errors import InvalidArgument
from domain.trente_et_quarante.chances import Chance
from domain.trente_et_quarante.layout import Layout, Refait31Choice, Stake, StakeStatus
from domain.trente_et_quarante.odds import (
    CoupOdds,
    coup_law,
    house_edges,
    infinite_coup_odds,
    parse_stake_state,
    stake_state,
)
from domain.trente_et_quarante.outcome import Outcome, _decided, _refait
from domain.trente_et_quarante.rules import HouseRules, house_rules
from domain.trente_et_quarante.settlement import settle

ODDS = infinite_coup_odds()  # fast; the formulas do not depend on the composition


def _prison_life(odds: CoupOdds, rules: HouseRules, chance: Chance) -> tuple[Fraction, Fraction]:
    """(expected loss, expected coups) of a stake from the coup it enters first prison, each
    coup's expected result from ``coup_law``. Solved by hand: a void coup keeps the state;
    first prison: won or lost ends it, a 31 sends it to second prison (ends it under
    ``lost``); second prison: won sends it back to first prison, lost or 31 ends it.
    L_p = (m_p + r31 L_s) / q and L_s = (m_s + w L_p) / q (N likewise with 1 for m)."""
    w, r31, q = odds.decided / 2, odds.refait31, 1 - odds.refait_high
    mp = coup_law(odds, rules, chance, "prison").mean
    if rules.prison_refait31.value == "lost":
        return mp / q, 1 / q
    ms = coup_law(odds, rules, chance, "second_prison").mean
    det = q * q - r31 * w
    return (q * mp + r31 * ms) / det, (q + r31) / det


def _free_life(odds: CoupOdds, rules: HouseRules, chance: Chance, state: str,
               ) -> tuple[Fraction, Fraction]:
    """A free stake in ``state``: void coups keep it (and a 31 keeps an insured stake); a
    decided coup ends its life; a 31 partages it (the rest counted as given back, as
    docs/odds.md §4.1 does), returns it, or imprisons it."""
    law = coup_law(odds, rules, chance, state)
    insured = state.endswith(":insured")
    q = odds.decided if insured else 1 - odds.refait_high
    colour_returned = chance in (Chance.COULEUR, Chance.INVERSE) and (
        rules.couleur_inverse_on_refait31.value == "returned")
    if law.gain["refait31"] == 0 and not insured and not colour_returned:  # imprisoned
        lp, np_ = _prison_life(odds, rules, chance)
        return (law.mean + odds.refait31 * lp) / q, (1 + odds.refait31 * np_) / q
    return law.mean / q, 1 / q


@pytest.mark.parametrize(("preset", "overrides"), [
    ("francaise", {}), ("italiana", {}), ("espanola", {}),
    ("italiana", {"prison_refait31": "lost"}),
])
@pytest.mark.parametrize("chance", [Chance.NOIR, Chance.COULEUR])
def test_a_life_of_coups_adds_up_to_the_treatments_edge(
    preset: str, overrides: dict[str, str], chance: Chance,
) -> None:
    """Summed over a stake's life, the per-coup means are the treatment's loss per stake, and
    the coups its coups per stake (so per_coup is their ratio), for every treatment."""
    rules = house_rules(preset, overrides)
    edges = {e.treatment: e for e in house_edges(ODDS, rules) if e.chance is chance}
    states = {"partage": "free:partage" if rules.refait31.value == "player_choice" else "free",
              "prison": "free", "prison_lost": "free", "returned": "free",
              "insured": "free:insured"}
    for treatment, e in edges.items():
        loss, coups = _free_life(ODDS, rules, chance, states[treatment])
        if treatment == "insured":
            # the game's part of an insured stake is nothing; the premium is the whole edge
            assert loss == 0 and coups == e.coups_per_stake
            assert e.per_coup == rules.insurance_rate
            continue
        assert (loss, coups) == (e.loss_per_stake, e.coups_per_stake), treatment


def test_partage_state_mean_is_the_partage_edge() -> None:
    rules = house_rules("espanola")
    law = coup_law(ODDS, rules, Chance.NOIR, "free")
    w, r31 = ODDS.decided / 2, ODDS.refait31
    assert law.mean == r31 / 2
    assert law.variance == 2 * w + r31 / 4 - r31 * r31 / 4
    assert law.variance < 1


@pytest.mark.parametrize("preset", ["francaise", "italiana", "espanola"])
def test_gains_are_the_engines_movements(preset: str) -> None:
    """Each state's gains are what ``settle`` moves for a stake of 2 units in that state."""
    rules = house_rules(preset)
    for status in StakeStatus:
        for insured in (False, True):
            for choice in (None, *Refait31Choice):
                for chance in (Chance.NOIR, Chance.COULEUR):
                    state = stake_state(status.value, insured, choice.value if choice else None)
                    assert parse_stake_state(state) == (status.value, insured,
                                                        choice.value if choice else None)
                    law = coup_law(ODDS, rules, chance, state)
                    stake = Stake("s1", "ana", chance, 2, status, insured, choice)
                    for outcome, key in _outcomes(chance):
                        step = settle(rules, Layout((stake,)), outcome)
                        gain = Fraction(0)
                        for mv in step.movements:
                            if mv.kind.value in ("collection", "partage", "prison_loss"):
                                gain += mv.amount
                            elif mv.kind.value == "payment":
                                gain -= mv.amount
                        assert gain / 2 == law.gain[key], (state, chance, key)


def _outcomes(chance: Chance) -> list[tuple[Outcome, str]]:
    out: list[tuple[Outcome, str]] = []
    for o in (_decided(31, 35, True), _decided(35, 31, True), _decided(31, 35, False),
              _decided(35, 31, False), _refait(31), _refait(34)):
        if o.is_refait31:
            key = "refait31"
        elif not o.decided:
            key = "void"
        else:
            key = "win" if chance in o.winning_chances else "lose"
        out.append((o, key))
    return out


def test_bad_state_is_refused() -> None:
    with pytest.raises(InvalidArgument):
        parse_stake_state("free:maybe")
    with pytest.raises(InvalidArgument):
        parse_stake_state("jail")
