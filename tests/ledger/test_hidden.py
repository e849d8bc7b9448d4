"""Face-down cards (services/ledger/hidden.py): recorded by position, shown with a proof,
checked against the commitment and the seed, the holder's view only his."""

from __future__ import annotations

import hashlib
import hmac
import json
import struct
from dataclasses import dataclass
from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.cards import DeckKind, canonical_deck
from services.ledger.actor import SYSTEM, Actor
from services.ledger.errors import PermissionDenied
from services.ledger.hidden import (
    Faces,
    HiddenCard,
    ShownCard,
    Slot,
    assert_public,
    card_commitment,
    card_salt,
    check_against_seed,
    check_shown,
    face_up_slot,
    hidden_slot,
    public_slots,
    shoe_order,
    slots_for,
)
from services.ledger.seal import seal

KEY = bytes(range(32))
SEED = hashlib.sha256(b"a seed").digest()
SHOE_ID = UUID("00000000-0000-4000-8000-000000000031")
SPANISH = DeckKind.SPANISH_40.value


@dataclass
class FakeShoe:
    id: UUID
    sealed_seed: str
    deck_kind: str = SPANISH
    decks: int = 1
    cut_position: int | None = None


def shoe(seed: bytes = SEED, shoe_id: UUID = SHOE_ID, cut: int | None = None) -> FakeShoe:
    return FakeShoe(shoe_id, seal(KEY, seed, shoe_id), cut_position=cut)


def player(name: str) -> Actor:
    return Actor(name, "player", account=name)


def test_the_salt_and_commitment_are_the_published_formulas() -> None:
    p = 7
    salt = hmac.new(SEED, b"SABOT-HIDDEN-1" + SHOE_ID.bytes + struct.pack(">I", p),
                    hashlib.sha256).digest()
    assert card_salt(SEED, SHOE_ID, p) == salt
    code = shoe_order(SEED, SHOE_ID, SPANISH, 1, None)[p].code
    assert card_commitment(salt, p, code) == hashlib.sha256(
        b"SABOT-HIDDEN-1" + salt + struct.pack(">I", p) + code.encode()
    ).hexdigest()


def test_a_hidden_card_records_no_face_and_the_shown_one_proves_it() -> None:
    faces = Faces(KEY)
    s = shoe()
    cards = faces.order(s)
    assert cards == shoe_order(SEED, SHOE_ID, SPANISH, 1, None)
    hidden = faces.hide(s, 3, "ana")
    record = json.dumps(hidden.to_dict())
    assert set(hidden.to_dict()) == {"position", "holder", "commitment"}
    assert f'"{cards[3].code}"' not in record
    shown = faces.show(s, hidden)
    assert shown.code == cards[3].code and shown.position == 3 and shown.holder == "ana"
    assert check_shown(shown, hidden)
    assert HiddenCard.from_dict(hidden.to_dict()) == hidden
    assert ShownCard.from_dict(shown.to_dict()) == shown
    assert check_against_seed(SEED, SHOE_ID, SPANISH, 1, None, [shown], [hidden]) == []


def test_a_changed_card_is_found_at_its_position() -> None:
    faces = Faces(KEY)
    s = shoe()
    cards = faces.order(s)
    hidden = faces.hide(s, 5, "ana")
    shown = faces.show(s, hidden)
    other = next(c.code for c in cards if c.code != shown.code)
    forged = ShownCard(5, "ana", other, shown.salt)
    assert not check_shown(forged, hidden)
    problems = check_against_seed(SEED, SHOE_ID, SPANISH, 1, None, [forged])
    assert problems == [f"position 5: shown {other}, the seed deals {shown.code}"]
    assert not check_shown(ShownCard(5, "bea", shown.code, shown.salt), hidden)
    assert not check_shown(ShownCard(5, "ana", shown.code, "zz"), hidden)
    bad_salt = ShownCard(5, "ana", shown.code, "00" * 32)
    assert check_against_seed(SEED, SHOE_ID, SPANISH, 1, None, [bad_salt]) == [
        "position 5: the salt is not the seed's"
    ]
    bad_commit = HiddenCard(5, "ana", "00" * 32)
    assert check_against_seed(SEED, SHOE_ID, SPANISH, 1, None, [], [bad_commit]) == [
        "position 5: the commitment is not the seed's card"
    ]


def test_the_cut_is_honoured() -> None:
    faces = Faces(KEY)
    cut = faces.order(shoe(cut=10))
    plain = faces.order(shoe())
    assert cut == plain[10:] + plain[:10]


@given(st.integers(min_value=0, max_value=39))
def test_a_commitment_binds_exactly_one_face(position: int) -> None:
    cards = shoe_order(SEED, SHOE_ID, SPANISH, 1, None)
    salt = card_salt(SEED, SHOE_ID, position)
    hidden = HiddenCard(position, "ana",
                        card_commitment(salt, position, cards[position].code))
    opens = [c.code for c in canonical_deck(DeckKind.SPANISH_40)
             if check_shown(ShownCard(position, "ana", c.code, salt.hex()), hidden)]
    assert opens == [cards[position].code]


def test_only_the_holder_sees_his_own_faces() -> None:
    faces = Faces(KEY)
    s = shoe()
    mine = [faces.hide(s, p, "ana") for p in (0, 4, 8)]
    theirs = [faces.hide(s, p, "bea") for p in (1, 5, 9)]
    got = faces.for_holder(s, mine + theirs, player("ana"), "ana")
    assert [g.position for g in got] == [0, 4, 8]
    assert [g.code for g in got] == [faces.order(s)[p].code for p in (0, 4, 8)]
    for who in (player("bea"), Actor("c-1", "croupier"), Actor("bo", "back_office"),
                Actor("root", "admin"), SYSTEM, Actor("ana", "croupier", account="ana")):
        with pytest.raises(PermissionDenied) as info:
            faces.for_holder(s, mine, who, "ana")
        assert info.value.field == "player" and info.value.reason == "NOT_YOUR_HAND"


def test_views_carry_positions_until_shown() -> None:
    faces = Faces(KEY)
    s = shoe()
    hidden = [faces.hide(s, p, "ana") for p in (0, 4, 8)]
    slots = [hidden_slot(h) for h in hidden] + [face_up_slot(12, "ana", "7O")]
    public = public_slots(slots)
    assert [x.code for x in public] == [None, None, None, "7O"]
    assert all(x.hidden for x in public[:3])
    assert_public(public)
    own = slots_for(public, faces.for_holder(s, hidden, player("ana"), "ana"))
    assert [x.code for x in own[:3]] == [faces.order(s)[p].code for p in (0, 4, 8)]
    with pytest.raises(AssertionError):
        assert_public(own)
    shown = [faces.show(s, h) for h in hidden]
    after = public_slots(slots, shown)
    assert [x.code for x in after[:3]] == [c.code for c in shown]
    assert_public(after, shown)
    # another holder's faces never fill a hand
    other = [faces.show(s, faces.hide(s, 0, "bea"))]
    assert slots_for(public, other) == public
    with pytest.raises(ValueError):
        slots_for(public, shown + other)
    assert Slot(1, "x", False, "1O").hidden is False
