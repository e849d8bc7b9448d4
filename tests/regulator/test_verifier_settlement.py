"""The verifier's independent settlement agrees with the domain's on random layouts and outcomes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from sabot_verify.coup import Outcome as VOutcome
from sabot_verify.settle import Stake as VStake
from sabot_verify.settle import settle as v_settle

from domain.trente_et_quarante.chances import Chance
from domain.trente_et_quarante.layout import Layout, Refait31Choice, Stake, StakeStatus
from domain.trente_et_quarante.outcome import Outcome, Result
from domain.trente_et_quarante.rules import house_rules
from domain.trente_et_quarante.settlement import settle

OVERRIDES = st.fixed_dictionaries(
    {},
    optional={
        "prison_refait31": st.sampled_from(["lost", "second_prison"]),
        "couleur_inverse_on_refait31": st.sampled_from(["like_colours", "returned"]),
    },
)


@st.composite
def stakes(draw: st.DrawFn) -> list[Stake]:
    n = draw(st.integers(0, 6))
    out = []
    for i in range(n):
        status = draw(st.sampled_from(list(StakeStatus)))
        out.append(Stake(
            stake_id=f"s{i}",
            player=f"p{i % 3}",
            chance=draw(st.sampled_from(list(Chance))),
            amount=draw(st.integers(1, 10**6)),
            status=status,
            insured=draw(st.booleans()),
            choice=draw(st.sampled_from([None, *Refait31Choice])),
        ))
    return out


@st.composite
def outcomes(draw: st.DrawFn) -> Outcome:
    kind = draw(st.sampled_from(["noir", "rouge", "refait31", "refait", "void"]))
    if kind in ("noir", "rouge"):
        couleur = draw(st.booleans())
        row = Chance.NOIR if kind == "noir" else Chance.ROUGE
        won = frozenset({row, Chance.COULEUR if couleur else Chance.INVERSE})
        noir, rouge = (31, 35) if kind == "noir" else (36, 33)
        return Outcome(Result(kind), noir, rouge, None, couleur, won, "")
    if kind == "refait31":
        return Outcome(Result.REFAIT, 31, 31, 31, None, frozenset(), "")
    if kind == "refait":
        t = draw(st.integers(32, 40))
        return Outcome(Result.REFAIT, t, t, t, None, frozenset(), "")
    return Outcome(Result.VOID, None, None, None, None, frozenset(), "")


def _v(s: Stake) -> VStake:
    return VStake(s.stake_id, s.chance.value, s.amount, s.status.value, s.insured,
                  s.choice.value if s.choice else None, s.awaiting_choice)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["francaise", "espanola", "italiana"]), OVERRIDES, stakes(), outcomes())
def test_settlement_agrees(
    preset: str, overrides: dict[str, str], layout: list[Stake], o: Outcome
) -> None:
    rules = house_rules(preset, overrides)
    step = settle(rules, Layout(tuple(layout)), o)
    vo = VOutcome(o.result.value, o.noir_total, o.rouge_total, o.couleur)
    left, moves, fates = v_settle(rules.options(), [_v(s) for s in layout], vo)
    assert moves == [(m.kind.value, m.stake_id, m.amount) for m in step.movements]
    assert fates == {f.stake_id: f.fate.value for f in step.fates}
    assert left == [_v(s) for s in step.layout.stakes]
