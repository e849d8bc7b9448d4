"""Exact odds (domain.odds), the Monte-Carlo through the engine (domain.montecarlo), the CLI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from fractions import Fraction
from functools import cache
from math import factorial, perm

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import services.cli as cli
from domain.errors import InvalidArgument
from domain.trente_et_quarante import montecarlo
from domain.trente_et_quarante.chances import Chance
from domain.trente_et_quarante.odds import (
    TOTALS,
    Composition,
    CoupOdds,
    coup_odds,
    french_coup_odds,
    house_edges,
    infinite_coup_odds,
    row_law,
)
from domain.trente_et_quarante.rules import house_rules

Joint = dict[tuple[int, int, bool], Fraction]  # (noir total, rouge total, first card black) -> P


def brute_force(counts: dict[int, int]) -> Joint:
    """The whole coup by plain sequential enumeration over the remaining cards (no symmetry, no
    factorisation): the first card by value and colour (half of each value black), then values."""
    values = tuple(sorted(counts))

    @cache
    def deal(rem: tuple[int, ...], second: bool, noir: int, running: int) -> Joint:
        out: Joint = {}
        left = sum(rem)
        for i, n in enumerate(rem):
            if not n:
                continue
            p = Fraction(n, left)
            after = (*rem[:i], n - 1, *rem[i + 1 :])
            s = running + values[i]
            if s <= 30:
                sub = deal(after, second, noir, s)
            elif not second:
                sub = deal(after, True, s, 0)
            else:
                sub = {(noir, s, True): Fraction(1)}
            for key, q in sub.items():
                out[key] = out.get(key, Fraction(0)) + p * q
        return out

    start = tuple(counts[v] for v in values)
    joint: Joint = {}
    total = sum(start)
    for i, n in enumerate(start):
        rem = (*start[:i], n - 1, *start[i + 1 :])
        for colour_black in (True, False):
            p = Fraction(n // 2, total)  # n // 2 black, n // 2 red cards of this value
            running = values[i]
            for (x, y, _), q in deal(rem, False, 0, running).items():
                key = (x, y, colour_black)
                joint[key] = joint.get(key, Fraction(0)) + p * q
    return joint


def assert_matches(odds: CoupOdds, joint: Joint) -> None:
    def p(cond: object) -> Fraction:
        return sum(
            (q for (x, y, black), q in joint.items() if cond(x, y, black)),  # type: ignore[operator]
            Fraction(0),
        )

    assert p(lambda x, y, b: True) == 1
    for t in TOTALS:
        assert p(lambda x, y, b, t=t: x == t) == odds.noir_total[t]
        assert p(lambda x, y, b, t=t: y == t) == odds.rouge_total[t]
        assert p(lambda x, y, b, t=t: x == y == t) == odds.refait[t]
    assert p(lambda x, y, b: x < y) == odds.noir
    assert p(lambda x, y, b: x > y) == odds.rouge
    assert p(lambda x, y, b: (x < y and b) or (x > y and not b)) == odds.couleur
    assert p(lambda x, y, b: (x < y and not b) or (x > y and b)) == odds.inverse


@pytest.fixture(scope="module")
def one_deck() -> CoupOdds:
    return french_coup_odds(1)


@pytest.fixture(scope="module")
def six_decks() -> CoupOdds:
    return french_coup_odds(6)


# --- exact laws ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "counts",
    [
        {10: 6, 9: 2, 5: 2, 2: 2},
        {10: 4, 9: 2, 7: 2, 4: 2, 3: 2, 1: 2},
    ],
)
def test_exact_equals_brute_force_on_tiny_decks(counts: dict[int, int]) -> None:
    assert_matches(coup_odds(Composition.of(counts)), brute_force(counts))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tens=st.sampled_from([4, 6]),
    others=st.lists(st.integers(1, 9), min_size=2, max_size=3, unique=True),
)
def test_exact_equals_brute_force_property(tens: int, others: list[int]) -> None:
    counts = {10: tens, **{v: 2 for v in others}}
    assume(sum(v * n for v, n in counts.items()) >= 80)
    assert_matches(coup_odds(Composition.of(counts)), brute_force(counts))


def _first_rows(counts: list[int], t: int) -> dict[tuple[int, ...], Fraction]:
    """Every Noir row of total ``t`` as a multiset, with its probability: the prefixes (total
    <= 30, any order valid) enumerated one by one, then the last card."""
    size = sum(counts)
    rows: dict[tuple[int, ...], Fraction] = {}

    def walk(v: int, total: int, prefix: list[int]) -> None:
        if v > 10:
            last = t - total
            if not 1 <= last <= 10 or prefix[last - 1] >= counts[last - 1]:
                return
            k = sum(prefix)
            ways = factorial(k)
            p = 1
            for value, c in enumerate(prefix, start=1):
                ways //= factorial(c)
                p *= perm(counts[value - 1], c)
            p *= counts[last - 1] - prefix[last - 1]
            row = tuple(c + (value == last) for value, c in enumerate(prefix, start=1))
            rows[row] = rows.get(row, Fraction(0)) + Fraction(ways * p, perm(size, k + 1))
            return
        for c in range(min(counts[v - 1], (30 - total) // v) + 1):
            walk(v + 1, total + c * v, [*prefix, c])

    walk(1, 0, [])
    return rows


def test_one_deck_refait_by_a_second_route(one_deck: CoupOdds) -> None:
    """For a real deck: the Noir rows totalling 31 enumerated one by one, each followed by the
    Rouge row's law on the cards it left, give the same fraction as the joint programme."""
    counts = list(Composition.french(1).counts)
    rows = _first_rows(counts, 31)
    assert sum(rows.values()) == one_deck.row_total[31]
    second = sum(
        (
            p * row_law([n - c for n, c in zip(counts, row, strict=True)], 31)
            for row, p in rows.items()
        ),
        Fraction(0),
    )
    assert second == one_deck.refait31


@pytest.mark.parametrize("fixture", ["one_deck", "six_decks"])
def test_probabilities_sum_to_one(fixture: str, request: pytest.FixtureRequest) -> None:
    odds: CoupOdds = request.getfixturevalue(fixture)
    assert sum(odds.noir_total.values()) == 1
    assert sum(odds.rouge_total.values()) == 1
    assert odds.noir + odds.rouge + odds.refait_any == 1
    assert odds.couleur + odds.inverse + odds.refait_any == 1
    assert all(0 < p < 1 for p in (*odds.row_total.values(), *odds.refait.values()))


def test_six_decks_match_the_classic_figures(six_decks: CoupOdds) -> None:
    # Poisson's 2.19 % for a refait at 31; Noir and Rouge exactly equal (exchangeable rows).
    assert abs(float(six_decks.refait31) - 0.0219) < 0.00005
    assert float(six_decks.refait31) == pytest.approx(0.02189137048657089, rel=1e-12)
    assert float(six_decks.refait_any) == pytest.approx(0.10959891316214038, rel=1e-12)
    assert six_decks.noir == six_decks.rouge == (1 - six_decks.refait_any) / 2
    # A low total is likelier than a high one, for a row and for a refait.
    rows = [six_decks.row_total[t] for t in TOTALS]
    refaits = [six_decks.refait[t] for t in TOTALS]
    assert rows == sorted(rows, reverse=True)
    assert refaits == sorted(refaits, reverse=True)


def test_depletion_moves_towards_the_infinite_deck(one_deck: CoupOdds, six_decks: CoupOdds) -> None:
    inf = infinite_coup_odds()
    assert sum(inf.row_total.values()) == 1
    assert inf.refait31 == inf.row_total[31] ** 2
    assert abs(six_decks.refait31 - inf.refait31) < abs(one_deck.refait31 - inf.refait31)
    assert abs(six_decks.refait_any - inf.refait_any) < abs(one_deck.refait_any - inf.refait_any)


def test_bad_compositions_are_refused() -> None:
    with pytest.raises(InvalidArgument) as err:
        Composition.of({10: 3, 9: 6})
    assert err.value.field == "composition"
    with pytest.raises(InvalidArgument):
        Composition.of({10: 2, 9: 2})  # cannot finish both rows
    with pytest.raises(InvalidArgument) as err:
        Composition.french(9)
    assert err.value.field == "decks"


# --- house edges -----------------------------------------------------------------------------


def _solve(a: list[list[Fraction]], b: list[Fraction]) -> list[Fraction]:
    """Gaussian elimination in rationals."""
    n = len(b)
    m = [[*row, b[i]] for i, row in enumerate(a)]
    for c in range(n):
        piv = next(r for r in range(c, n) if m[r][c] != 0)
        m[c], m[piv] = m[piv], m[c]
        for r in range(n):
            if r != c and m[r][c] != 0:
                f = m[r][c] / m[c][c]
                m[r] = [x - f * y for x, y in zip(m[r], m[c], strict=True)]
    return [m[i][n] / m[i][i] for i in range(n)]


def _prison_chain(odds: CoupOdds, second: bool) -> tuple[Fraction, Fraction]:
    """(expected loss, expected coups) of a free stake, from the chain free/prison/second prison:
    x = r + Q x, solved directly."""
    w = lose = odds.noir
    r31, rhi = odds.refait31, odds.refait_high
    # states 0 free, 1 prison, 2 second prison; rows: P(move to state) per coup
    q = [
        [rhi, r31, Fraction(0)],
        [Fraction(0), rhi, r31 if second else Fraction(0)],
        [Fraction(0), w, rhi],
    ]
    # free: -1 on a win, +1 on a loss; prison: the stake lost on a loss (and on a 31 if lost)
    loss_now = [lose - w, lose if second else lose + r31, lose + r31]
    eye = [[Fraction(int(i == j)) for j in range(3)] for i in range(3)]
    a = [[eye[i][j] - q[i][j] for j in range(3)] for i in range(3)]
    loss = _solve(a, loss_now)[0]
    coups = _solve(a, [Fraction(1)] * 3)[0]
    return loss, coups


@pytest.mark.parametrize("preset", ["francaise", "espanola", "italiana"])
def test_edges_follow_the_rules(preset: str, six_decks: CoupOdds) -> None:
    rules = house_rules(preset)
    edges = {(e.chance, e.treatment): e for e in house_edges(six_decks, rules)}
    r31, q = six_decks.refait31, 1 - six_decks.refait_high
    for chance in Chance:
        if preset == "francaise" and chance in (Chance.COULEUR, Chance.INVERSE):
            # a 31 returns them (couleur_inverse_on_refait31 = returned): no insurance is sold
            assert (chance, "insured") not in edges
            continue
        ins = edges[chance, "insured"]
        assert ins.per_coup == Fraction(1, 100) == ins.per_coup_played
        assert ins.loss_per_stake == Fraction(1, 100) / six_decks.decided
    if preset == "espanola":
        for chance in Chance:
            e = edges[chance, "partage"]
            assert e.per_coup == r31 / 2 and e.loss_per_stake == r31 / 2 / q
    else:
        loss, coups = _prison_chain(six_decks, second=True)
        for chance in (Chance.NOIR, Chance.ROUGE):
            e = edges[chance, "prison"]
            assert (e.loss_per_stake, e.coups_per_stake) == (loss, coups)
            assert e.default
        assert float(edges[Chance.NOIR, "prison"].per_coup) == pytest.approx(0.0108129, abs=1e-7)
    if preset == "francaise":
        assert edges[Chance.COULEUR, "returned"].per_coup == 0
        assert not edges[Chance.NOIR, "partage"].default
        assert (Chance.COULEUR, "prison") not in edges
    if preset == "italiana":
        assert edges[Chance.COULEUR, "prison"].per_coup == edges[Chance.NOIR, "prison"].per_coup


def test_prison_lost_is_dearer_than_second_prison(six_decks: CoupOdds) -> None:
    lost_rules = house_rules("italiana", {"prison_refait31": "lost"})
    lost = {e.treatment: e for e in house_edges(six_decks, lost_rules)}
    second = {e.treatment: e for e in house_edges(six_decks, house_rules("italiana"))}
    loss, coups = _prison_chain(six_decks, second=False)
    e = lost["prison_lost"]
    assert (e.loss_per_stake, e.coups_per_stake) == (loss, coups)
    assert lost["prison_lost"].per_coup > second["prison"].per_coup
    # per coup ON THE LAYOUT (prison coups counted as coups) second prison looks cheaper than
    # partage for the player; the insured stake pays 1 % flat
    assert second["prison"].per_coup < six_decks.refait31 / 2
    # in the literature's convention (per coup played, pushes counted, the prison's outcome
    # credited to the coup of the stake) both prisons cost MORE than partage (r31 / 2)
    assert lost["prison_lost"].per_coup_played > second["prison"].per_coup_played
    assert second["prison"].per_coup_played > six_decks.refait31 / 2


def _prison_value(odds: CoupOdds, second: bool) -> Fraction:
    """What a unit stake in first prison eventually returns, from the chain of prison states
    solved as a linear system: V1 = w + r_v V1 + r31 V2, V2 = w V1 + r_v V2 (a 31 in second
    prison, or in first prison under ``lost``, loses it)."""
    w, r31, rhi = odds.noir, odds.refait31, odds.refait_high
    if not second:
        return _solve([[1 - rhi]], [w])[0]
    return _solve([[1 - rhi, -r31], [-w, 1 - rhi]], [w, Fraction(0)])[0]


@pytest.mark.parametrize(("option", "treatment", "figure"), [
    ("second_prison", "prison", 0.011081756291), ("lost", "prison_lost", 0.011208337915)])
def test_the_literatures_figure_per_coup_played(
    six_decks: CoupOdds, option: str, treatment: str, figure: float
) -> None:
    """Per coup played, pushes counted, the prison's outcome credited to the coup of the 31:
    r31 (1 - V1), to 12 decimals the figures the literature quotes for 6 decks."""
    rules = house_rules("italiana", {"prison_refait31": option})
    edges = {(e.chance, e.treatment): e for e in house_edges(six_decks, rules)}
    e = edges[Chance.NOIR, treatment]
    v1 = _prison_value(six_decks, second=option == "second_prison")
    assert e.per_coup_played == six_decks.refait31 * (1 - v1)
    assert round(float(e.per_coup_played), 12) == figure
    q = 1 - six_decks.refait_high  # a coup played is a push with probability r_v
    assert e.per_coup_played == e.loss_per_stake * q
    assert e.per_coup < e.per_coup_played < e.loss_per_stake  # the three conventions differ
    for chance in Chance:  # the four chances alike under like_colours
        assert edges[chance, treatment].per_coup_played == e.per_coup_played


def test_partage_and_insurance_read_the_same_in_every_per_coup_convention(
    six_decks: CoupOdds
) -> None:
    edges = {(e.chance, e.treatment): e for e in house_edges(six_decks, house_rules("espanola"))}
    partage, insured = edges[Chance.NOIR, "partage"], edges[Chance.NOIR, "insured"]
    assert partage.per_coup_played == partage.per_coup == six_decks.refait31 / 2
    assert insured.per_coup_played == insured.per_coup == Fraction(1, 100)
    returned = {e.treatment: e for e in house_edges(six_decks, house_rules("francaise"))
                if e.chance is Chance.COULEUR}
    assert set(returned) == {"returned"} and returned["returned"].per_coup_played == 0


# --- Monte-Carlo through the engine -----------------------------------------------------------


@pytest.mark.parametrize(
    ("preset", "decks", "coups"), [("francaise", 6, 20_000), ("espanola", 1, 8_000)]
)
def test_monte_carlo_agrees_with_exact(preset: str, decks: int, coups: int) -> None:
    rules = house_rules(preset, {"decks": str(decks)})
    odds = french_coup_odds(decks)
    edges = house_edges(odds, rules)
    mc = montecarlo.run(rules, edges, coups, seed=0x5AB07)
    checks = montecarlo.checks(odds.figures(), mc, edges)
    assert len(checks) == len(odds.figures()) + 3 * len(edges)  # three conventions per edge
    assert [c.name for c in checks if c.flagged] == []
    assert all(c.estimate.n > 0 and c.estimate.se > 0 for c in checks)
    # every stake was settled many times, and the figures are tallies of these coups
    assert mc.figures["noir"].n == coups
    noir, rouge = mc.figures["noir"].value, mc.figures["rouge"].value
    refaits = sum(mc.figures[f"refait_{t}"].value for t in TOTALS)
    assert noir + rouge + refaits == pytest.approx(1)


def test_monte_carlo_is_deterministic_and_flags_a_wrong_figure() -> None:
    rules = house_rules("francaise")
    a = montecarlo.run(rules, (), 2000, seed=7)
    b = montecarlo.run(rules, (), 2000, seed=7)
    c = montecarlo.run(rules, (), 2000, seed=8)
    assert a.figures == b.figures
    assert a.figures != c.figures
    wrong = {"refait_31": Fraction(1, 10), "noir": Fraction(1, 2)}
    flagged = {ch.name for ch in montecarlo.checks(wrong, a, ()) if ch.flagged}
    assert flagged == {"refait_31", "noir"}


def test_monte_carlo_refuses_a_bad_count() -> None:
    with pytest.raises(InvalidArgument):
        montecarlo.run(house_rules("francaise"), (), 0, seed=1)


# --- the CLI ---------------------------------------------------------------------------------


@pytest.fixture
def sabot(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``sabot`` with only the odds command: the other commands' imports play no part here."""
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("services.cli.odds",))
    yield


@pytest.mark.usefixtures("sabot")
@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--decks", "0"], "--decks"),
        (["--option", "decks=9"], "decks"),
        (["--decks", "six"], "--decks"),
        (["--format", "xml"], "--format"),
        (["--monte-carlo", "0"], "--monte-carlo"),
        (["--monte-carlo", "many"], "--monte-carlo"),
        (["--seed", "xyz"], "--seed"),
        (["--preset", "nowhere"], "--preset"),
        (["--option", "refait31"], "--option"),
        (["--option", "refait31=sometimes"], "refait31"),
        (["--option", "colour=blue"], "colour"),
        (["--decks", "2", "--option", "decks=3"], "--decks"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(
    args: list[str], field: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["odds", *args]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("sabot: error: ") and field in lines[0]


@pytest.mark.usefixtures("sabot")
def test_cli_json_and_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["odds", "--preset", "espanola", "--decks", "1", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["preset"] == "espanola" and doc["decks"] == 1
    figs = doc["figures"]
    assert sum(Fraction(figs[f"noir_total_{t}"]["exact"]) for t in TOTALS) == 1
    assert Fraction(figs["refait_31"]["exact"]) == french_coup_odds(1).refait31
    assert {(e["chance"], e["treatment"]) for e in doc["edges"]} == {
        (c.value, t) for c in Chance for t in ("partage", "insured")
    }
    assert cli.main(["odds", "--decks", "1", "--monte-carlo", "500", "--seed", "ab"]) == 0
    out = capsys.readouterr().out
    assert "P(refait at 31)" in out and "monte-carlo: 500 coups" in out


@pytest.mark.usefixtures("sabot")
@pytest.mark.parametrize(("options", "treatment", "figure"), [
    ([], "prison", 0.011081756291),
    (["--option", "prison_refait31=lost"], "prison_lost", 0.011208337915),
])
def test_cli_prints_the_literatures_figure_first(
    options: list[str], treatment: str, figure: float, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's acceptance: ``sabot odds --preset italiana --decks 6 --format json``."""
    args = ["odds", "--preset", "italiana", "--decks", "6", *options]
    assert cli.main([*args, "--format", "json"]) == 0
    text = capsys.readouterr().out
    assert f'"decimal": "{figure:.12f}"' in text  # the figure, as text too
    doc = json.loads(text)
    rows = [e for e in doc["edges"] if e["treatment"] == treatment]
    assert len(rows) == 4  # the four chances, like_colours
    for row in rows:
        assert round(row["literature"]["value"], 12) == figure
        assert row["literature"]["decimal"] == f"{figure:.12f}"
        assert row["per_coup_played"] == row["literature"]
        assert list(row)[:4] == ["chance", "treatment", "default", "literature"]
        assert round(row["per_coup"]["value"], 12) < figure  # the other conventions beside it
    assert "per coup played" in doc["conventions"]["literature"]
    (said,) = doc["comparison"]
    assert "costs the player more than partage" in said
    assert cli.main(args) == 0
    table = capsys.readouterr().out
    head = next(line for line in table.splitlines() if line.startswith("chance "))
    assert head.split()[:3] == ["chance", "treatment", "literature"]
    assert f"{figure * 100:9.5f}%" in table and "costs the player more than partage" in table
