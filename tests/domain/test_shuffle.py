"""SABOT-SHUFFLE-1 against every SHUFFLE.md vector and the NIST known-answer test."""

from __future__ import annotations

from collections import Counter
from uuid import UUID

import pytest

from domain.cards import DeckKind, canonical_shoe
from domain.drbg import HmacDrbg
from domain.errors import InvalidArgument
from domain.shuffle import (
    check_cut,
    commitment,
    cut,
    load_sabot,
    order_digest,
    parse_seed,
    shuffle,
)
from services.cli import main

V1_SEED = bytes(range(32))
V1_SHOE = UUID("00000000-0000-0000-0000-000000000001")
V2_SEED = bytes.fromhex("2681de5d9808d4aac823a5a53ba27f2843cfbacbd0cbaa839f27ef876c6ef52a")
V2_SHOE = UUID("6f1c2a0e-5d4b-4c3a-9e8f-7a6b5c4d3e2f")
V3_SEED = b"\xff" * 32
V3_SHOE = UUID("00000000-0000-0000-0000-00000000000a")


def codes(cards: tuple[object, ...]) -> str:
    return " ".join(str(c) for c in cards)


def test_nist_hmac_drbg_known_answer() -> None:
    entropy = bytes.fromhex("ca851911349384bffe89de1cbdc46e6831e44d34a4fb935ee285dd14b71a7488")
    nonce = bytes.fromhex("659ba96c601dc69fc902940805ec0ca8")
    drbg = HmacDrbg(entropy, nonce)
    drbg.generate(128)
    second = drbg.generate(128)
    assert second.hex().startswith(
        "e528e9abf2dece54d47c7e75e5fe302149f817ea9fb4bee6f4199697d04d5b89"
    )


def test_vector1_before_and_after_the_cut() -> None:
    assert commitment(V1_SEED, V1_SHOE) == (
        "83d1adf40829c28c33ea56278de5c1071712c24681bd94923a7a1e5749cbdfac"
    )
    before = shuffle(V1_SEED, V1_SHOE, DeckKind.FRENCH_52, 6)
    assert len(before) == 312
    assert codes(before[:20]) == "6S TC 8H QC JH 8C 4D 3H 5H 2C JS 3H QH 4C 8S 7C QS AD 9D JD"
    assert codes(before[-5:]) == "4C 2D AD 5H 3S"
    assert order_digest(before) == (
        "9cf26214d18e067da6bc6fe5880fa677b741fcf1f91734ac2730f352ae99973a"
    )
    after = cut(before, 100)
    assert codes(after[:20]) == "6H 8D 7S QH QD 6C 8C AS 6D AD AD JH KD 6C 3D KH 3H 8C KS KS"
    assert order_digest(after) == (
        "c4970d79d2b00e9f93a4f3b36cbe7b7d020303c1015a14ca93c70a3af2b2a8b5"
    )
    assert load_sabot(V1_SEED, V1_SHOE, DeckKind.FRENCH_52, 6, 100).cards == after


def test_vector2() -> None:
    assert commitment(V2_SEED, V2_SHOE) == (
        "3b8dcfb1d1913082c5c7b2a193465f3fe343c283ce03d847c127f76bbf4f869a"
    )
    before = shuffle(V2_SEED, V2_SHOE, DeckKind.FRENCH_52, 1)
    assert codes(before[:20]) == "AC 5H 2C 9D 3C 6S KC QS 4C 7H 2D 5C 7S 3H JS QH 4D 9S TS KS"
    assert order_digest(before) == (
        "037b7e46079e0e358efd91493da76c4710bf7a1ae832096cf37360b2bc0ad475"
    )
    assert order_digest(cut(before, 26)) == (
        "3b63c4eda367d7f45acc8fcbf5ac1792ca0d7276706aa0a00d7413c9bfee7b1a"
    )


@pytest.mark.parametrize(
    ("kind", "first10", "digest"),
    [
        (
            DeckKind.FRENCH_40,
            "6S KC 2S 3H AS QH QS JH 5S 4S",
            "f32e0ee8be4d8b4c87d6454dad0ac4f8df8fcc58f7286af927c8441b93d8f6ca",
        ),
        (
            DeckKind.SPANISH_40,
            "6O 12B 2O 3C 1O 11C 11O 10C 5O 4O",
            "b61490a8d480a297320bf45634c3f600b06d93236c3cff3726f5b03b4c0a8161",
        ),
    ],
)
def test_vector3(kind: DeckKind, first10: str, digest: str) -> None:
    cards = shuffle(V3_SEED, V3_SHOE, kind, 1)
    assert codes(cards[:10]) == first10
    assert order_digest(cards) == digest


def test_a_shuffle_is_a_permutation_of_the_canonical_shoe() -> None:
    cards = shuffle(V1_SEED, V1_SHOE, DeckKind.FRENCH_52, 6)
    assert Counter(cards) == Counter(canonical_shoe(DeckKind.FRENCH_52, 6))


@pytest.mark.parametrize("position", [0, 312, -1])
def test_cut_out_of_range_is_invalid(position: int) -> None:
    with pytest.raises(InvalidArgument) as err:
        check_cut(position, 312)
    assert err.value.field == "cut"


@pytest.mark.parametrize("text", ["zz", "00", "00" * 33])
def test_bad_seed_is_invalid(text: str) -> None:
    with pytest.raises(InvalidArgument) as err:
        parse_seed(text)
    assert err.value.field == "seed"


def test_sabot_shuffle_command_on_vector1(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(
        [
            "shuffle",
            "--seed",
            V1_SEED.hex(),
            "--shoe-id",
            str(V1_SHOE),
            "--decks",
            "6",
            "--cut",
            "100",
        ]
    )
    out = capsys.readouterr().out.splitlines()
    assert rc == 0
    assert out[0].split() == ["algorithm", "SABOT-SHUFFLE-1"]
    assert out[1].split() == [
        "commitment",
        "83d1adf40829c28c33ea56278de5c1071712c24681bd94923a7a1e5749cbdfac",
    ]
    assert "9cf26214d18e067da6bc6fe5880fa677b741fcf1f91734ac2730f352ae99973a" in out[2]
    assert "c4970d79d2b00e9f93a4f3b36cbe7b7d020303c1015a14ca93c70a3af2b2a8b5" in out[3]
    assert out[4].startswith("6H 8D 7S QH QD 6C 8C AS 6D AD AD JH KD 6C 3D KH 3H 8C KS KS ")
    assert len(out[4].split()) == 312


def test_sabot_shuffle_bad_seed_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["shuffle", "--seed", "xyz", "--shoe-id", str(V1_SHOE)])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.strip() == "sabot: error: --seed: must be hexadecimal"
    assert "Traceback" not in err
