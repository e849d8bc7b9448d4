"""The standalone verifier's re-implementation against SHUFFLE.md's vectors and the domain."""

from __future__ import annotations

from uuid import UUID

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sabot_verify.coup import deal
from sabot_verify.coup import judge as v_judge
from sabot_verify.shoe import Drbg, commitment, cut, digest, shuffled

from domain.cards import DeckKind
from domain.shuffle import load_sabot
from domain.trente_et_quarante.deal import deal_coup
from domain.trente_et_quarante.outcome import Result, judge
from domain.trente_et_quarante.rules import CutCardRule

V1_SEED = bytes(range(32))
V1_SHOE = UUID("00000000-0000-0000-0000-000000000001")


def test_drbg_known_answer() -> None:
    g = Drbg(
        bytes.fromhex("ca851911349384bffe89de1cbdc46e6831e44d34a4fb935ee285dd14b71a7488"),
        bytes.fromhex("659ba96c601dc69fc902940805ec0ca8"),
    )
    g.generate(128)
    assert g.generate(128).hex().startswith(
        "e528e9abf2dece54d47c7e75e5fe302149f817ea9fb4bee6f4199697d04d5b89"
    )


def test_vector_1() -> None:
    a = shuffled(V1_SEED, V1_SHOE, "FRENCH-52", 6)
    assert commitment(V1_SEED, V1_SHOE) == (
        "83d1adf40829c28c33ea56278de5c1071712c24681bd94923a7a1e5749cbdfac"
    )
    assert " ".join(a[:20]) == "6S TC 8H QC JH 8C 4D 3H 5H 2C JS 3H QH 4C 8S 7C QS AD 9D JD"
    assert " ".join(a[-5:]) == "4C 2D AD 5H 3S"
    assert digest(a) == "9cf26214d18e067da6bc6fe5880fa677b741fcf1f91734ac2730f352ae99973a"
    s = cut(a, 100)
    assert digest(s) == "c4970d79d2b00e9f93a4f3b36cbe7b7d020303c1015a14ca93c70a3af2b2a8b5"
    pos, seen = 0, []
    for _ in range(3):
        d = deal(s, pos, "void_coup")
        seen.append((d.noir, d.rouge, v_judge(d).result))
        pos = d.next_position
    assert seen == [(31, 31, "refait"), (31, 31, "refait"), (37, 38, "noir")]
    assert v_judge(d).couleur is True


def test_vector_2() -> None:
    seed = bytes.fromhex("2681de5d9808d4aac823a5a53ba27f2843cfbacbd0cbaa839f27ef876c6ef52a")
    shoe = UUID("6f1c2a0e-5d4b-4c3a-9e8f-7a6b5c4d3e2f")
    a = shuffled(seed, shoe, "FRENCH-52", 1)
    assert commitment(seed, shoe) == (
        "3b8dcfb1d1913082c5c7b2a193465f3fe343c283ce03d847c127f76bbf4f869a"
    )
    assert digest(a) == "037b7e46079e0e358efd91493da76c4710bf7a1ae832096cf37360b2bc0ad475"
    s = cut(a, 26)
    assert digest(s) == "3b63c4eda367d7f45acc8fcbf5ac1792ca0d7276706aa0a00d7413c9bfee7b1a"
    d = deal(s, 0, "void_coup")
    want = ["3D", "9H", "4H", "8C", "KH", "8H", "8S", "5S", "AD", "7C", "TH"]
    assert [c[1] for c in d.cards] == want
    o = v_judge(d)
    assert (o.result, o.noir, o.rouge, o.couleur) == ("noir", 34, 39, False)


@pytest.mark.parametrize(
    ("kind", "first", "dg"),
    [
        ("FRENCH-40", "6S KC 2S 3H AS QH QS JH 5S 4S",
         "f32e0ee8be4d8b4c87d6454dad0ac4f8df8fcc58f7286af927c8441b93d8f6ca"),
        ("SPANISH-40", "6O 12B 2O 3C 1O 11C 11O 10C 5O 4O",
         "b61490a8d480a297320bf45634c3f600b06d93236c3cff3726f5b03b4c0a8161"),
    ],
)
def test_vector_3(kind: str, first: str, dg: str) -> None:
    a = shuffled(b"\xff" * 32, UUID("00000000-0000-0000-0000-00000000000a"), kind, 1)
    assert " ".join(a[:10]) == first and digest(a) == dg


@settings(max_examples=15, deadline=None)
@given(st.binary(min_size=32, max_size=32), st.integers(1, 311), st.sampled_from(list(CutCardRule)))
def test_whole_shoe_agrees_with_domain(seed: bytes, c: int, rule: CutCardRule) -> None:
    shoe = UUID(int=int.from_bytes(seed[:16], "big"))
    sabot = load_sabot(seed, shoe, DeckKind.FRENCH_52, 6, c)
    mine = cut(shuffled(seed, shoe, "FRENCH-52", 6), c)
    assert mine == [x.code for x in sabot.cards]
    pos = 0
    while True:
        theirs = deal_coup(sabot.cards, pos, rule)
        d = deal(mine, pos, rule.value)
        assert [(x.row.value, x.card.code, x.position, x.running_total) for x in theirs.cards] == (
            d.cards
        )
        o, vo = judge(theirs), v_judge(d)
        assert (o.result.value, o.noir_total, o.rouge_total) == (vo.result, vo.noir, vo.rouge)
        if o.result in (Result.NOIR, Result.ROUGE):
            assert o.couleur == vo.couleur
            assert {c.value for c in o.winning_chances} == vo.winners()
        assert theirs.cut_card_reached == d.cut_card_reached
        if d.cut_card_reached:
            break
        pos = d.next_position
