"""The console's JavaScript (services/web/static/verify.js) passes every SABOT-SHUFFLE-1
vector the project publishes (docs/sources/SHUFFLE.md), in Chromium, and agrees with the
Python shuffle on random shoes, and with the ledger's face-down commitments and banker's lot."""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

import pytest

from domain.cards import DeckKind
from domain.shuffle import shuffle
from domain.treinta_y_una.banker import draw_banker
from services.ledger.hidden import card_commitment, card_salt

VECTORS = [
    {"seed": bytes(range(32)).hex(), "shoe": "00000000-0000-0000-0000-000000000001",
     "kind": "FRENCH-52", "decks": 6, "cut": 100,
     "commitment": "83d1adf40829c28c33ea56278de5c1071712c24681bd94923a7a1e5749cbdfac",
     "first20": "6S TC 8H QC JH 8C 4D 3H 5H 2C JS 3H QH 4C 8S 7C QS AD 9D JD",
     "last5": "4C 2D AD 5H 3S",
     "digest": "9cf26214d18e067da6bc6fe5880fa677b741fcf1f91734ac2730f352ae99973a",
     "cut20": "6H 8D 7S QH QD 6C 8C AS 6D AD AD JH KD 6C 3D KH 3H 8C KS KS",
     "cut_digest": "c4970d79d2b00e9f93a4f3b36cbe7b7d020303c1015a14ca93c70a3af2b2a8b5"},
    {"seed": "2681de5d9808d4aac823a5a53ba27f2843cfbacbd0cbaa839f27ef876c6ef52a",
     "shoe": "6f1c2a0e-5d4b-4c3a-9e8f-7a6b5c4d3e2f", "kind": "FRENCH-52", "decks": 1, "cut": 26,
     "commitment": "3b8dcfb1d1913082c5c7b2a193465f3fe343c283ce03d847c127f76bbf4f869a",
     "first20": "AC 5H 2C 9D 3C 6S KC QS 4C 7H 2D 5C 7S 3H JS QH 4D 9S TS KS",
     "digest": "037b7e46079e0e358efd91493da76c4710bf7a1ae832096cf37360b2bc0ad475",
     "cut_digest": "3b63c4eda367d7f45acc8fcbf5ac1792ca0d7276706aa0a00d7413c9bfee7b1a"},
    {"seed": "ff" * 32, "shoe": "00000000-0000-0000-0000-00000000000a", "kind": "FRENCH-40",
     "decks": 1, "cut": 0, "first10": "6S KC 2S 3H AS QH QS JH 5S 4S",
     "digest": "f32e0ee8be4d8b4c87d6454dad0ac4f8df8fcc58f7286af927c8441b93d8f6ca"},
    {"seed": "ff" * 32, "shoe": "00000000-0000-0000-0000-00000000000a", "kind": "SPANISH-40",
     "decks": 1, "cut": 0, "first10": "6O 12B 2O 3C 1O 11C 11O 10C 5O 4O",
     "digest": "b61490a8d480a297320bf45634c3f600b06d93236c3cff3726f5b03b4c0a8161"},
]

RUN = """async (v) => {
  const V = globalThis.SabotVerify;
  const before = await V.shuffle(v.seed, v.shoe, v.kind, v.decks);
  const after = V.cut(before, v.cut);
  return { commitment: await V.commitment(v.seed, v.shoe), before, after,
           digest: await V.orderDigest(before), cut_digest: await V.orderDigest(after) };
}"""


@pytest.fixture(scope="module")
def page(browser: Any, console: str) -> Any:
    """A page of the console (a secure context: WebCrypto is there) with verify.js as the
    console serves it (its CSP allows scripts from its own origin only)."""
    page = browser.new_page()
    page.goto(f"{console}/signin")
    page.add_script_tag(url="/static/verify.js")
    assert page.evaluate("typeof globalThis.SabotVerify") == "object"
    yield page
    page.close()


@pytest.mark.parametrize("v", VECTORS, ids=lambda v: f"{v['kind']}-{v['shoe'][-2:]}")
def test_every_published_vector(page: Any, v: dict[str, Any]) -> None:
    got = page.evaluate(RUN, v)
    if "commitment" in v:
        assert got["commitment"] == v["commitment"]
    if "first20" in v:
        assert " ".join(got["before"][:20]) == v["first20"]
    if "first10" in v:
        assert " ".join(got["before"][:10]) == v["first10"]
    if "last5" in v:
        assert " ".join(got["before"][-5:]) == v["last5"]
    if "cut20" in v:
        assert " ".join(got["after"][:20]) == v["cut20"]
    assert got["digest"] == v["digest"]
    if "cut_digest" in v:
        assert got["cut_digest"] == v["cut_digest"]


def test_the_drbg_known_answer(page: Any) -> None:
    """NIST CAVP HMAC_DRBG (SHA-256, no reseed, COUNT 0), as SHUFFLE.md quotes it."""
    got = page.evaluate("""async () => {
      const V = globalThis.SabotVerify;
      const d = await V.Drbg.create(
        V.unhex("ca851911349384bffe89de1cbdc46e6831e44d34a4fb935ee285dd14b71a7488"),
        V.unhex("659ba96c601dc69fc902940805ec0ca8"), new Uint8Array(0));
      await d.generate(128);
      return V.hex(await d.generate(128));
    }""")
    assert got.startswith("e528e9abf2dece54d47c7e75e5fe302149f817ea9fb4bee6f4199697d04d5b89")


def test_random_shoes_agree_with_python(page: Any) -> None:
    rng = random.Random(7)
    for kind in (DeckKind.FRENCH_52, DeckKind.FRENCH_40, DeckKind.SPANISH_40):
        seed, shoe = rng.randbytes(32), uuid.UUID(int=rng.getrandbits(128))
        got = page.evaluate(RUN, {"seed": seed.hex(), "shoe": str(shoe), "kind": kind.value,
                                  "decks": 2, "cut": 0})
        assert got["before"] == [str(c) for c in shuffle(seed, shoe, kind, 2)], kind
        assert json.dumps(got["before"])  # plain strings, as the page shows them


def test_face_down_commitments_and_the_lot_agree_with_python(page: Any) -> None:
    """SABOT-HIDDEN-1's salt and commitment and Treinta y Una's banker by lot, as gamecheck.js
    computes them, are the ledger's."""
    rng = random.Random(11)
    for n in range(1, 9):
        seed, shoe, position = rng.randbytes(32), uuid.UUID(int=rng.getrandbits(128)), n * 3
        got = page.evaluate("""async (v) => {
          const V = globalThis.SabotVerify;
          const salt = await V.hiddenSalt(v.seed, v.shoe, v.position);
          return { salt, commitment: await V.hiddenCommitment(salt, v.position, "12B"),
                   lot: await V.bankLot(v.seed, v.shoe, v.seats) };
        }""", {"seed": seed.hex(), "shoe": str(shoe), "position": position, "seats": n})
        salt = card_salt(seed, shoe, position)
        assert got["salt"] == salt.hex()
        assert got["commitment"] == card_commitment(salt, position, "12B")
        seats = [f"p{i}" for i in range(n)]
        lot = draw_banker(seed, shoe, seats).lot
        assert lot is not None and got["lot"] == lot.index
