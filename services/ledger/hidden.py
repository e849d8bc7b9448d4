"""Face-down cards: recorded by shoe position only, shown at the showdown, provable against
the seed. Game-neutral (Treinta y Una's deal, Cuarenta's hands).

A shoe's seed is sealed in ``Shoe.Shuffled`` (``services/ledger/seal.py``) and escrowed to the
regulator. A card dealt face down is RECORDED BY ITS SHOE POSITION ONLY, with to whom it went
and a commitment that binds the face without telling it (``HiddenCard``): no event, answer,
view, stream or log line names its face. The ledger derives faces from the unsealed seed when it
needs them (``Faces``): for a rule that needs a total, for the holder asking for his own hand
(``Faces.for_holder``: the holder's principal only), and at the showdown, where an event records
each face shown (``ShownCard``) with the salt of its commitment. Anyone can then check a shown
card against the commitment recorded at the deal (``check_shown``, no seed needed), and, once the
seed is revealed (``Shoe.Closed``) or opened from the escrow by the regulator, against the seed
itself (``check_against_seed``): a changed card is found at its position.

SABOT-HIDDEN-1, for position ``p`` (0-based, in the dealt order of ``load_sabot``) of shoe
``shoe_id`` with seed ``seed`` (32 bytes):

    salt(p)       = HMAC-SHA256(key = seed, msg = b"SABOT-HIDDEN-1" || shoe_id.bytes || u32be(p))
    commitment(p) = SHA-256(b"SABOT-HIDDEN-1" || salt(p) || u32be(p) || code(card at p))

as lower-case hex. The salt is secret until its card is shown (it is derived from the sealed
seed, so nobody can try the 40 faces against the commitment) and tells nothing of the other
cards (HMAC is a PRF); showing one card reveals its salt only.

The views filter (``Slot``, ``public_slots``, ``slots_for``): a hand as read models and streams
carry it lists positions, face-up cards with their face, face-down ones with ``code = None``
until shown; only the holder's own view (made by the ledger from the seed) fills his faces in.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol
from uuid import UUID

from domain.cards import Card, DeckKind
from domain.errors import FailedPrecondition, InvalidArgument
from domain.shuffle import load_sabot
from services.ledger.actor import Actor
from services.ledger.errors import PermissionDenied
from services.ledger.seal import unseal

HIDDEN_ID = b"SABOT-HIDDEN-1"
_CACHE = 256


def _position(position: int) -> bytes:
    if not isinstance(position, int) or isinstance(position, bool) or position < 0:
        raise InvalidArgument("position", "BAD_POSITION", "must be a shoe position, at least 0")
    return struct.pack(">I", position)


def card_salt(seed: bytes, shoe_id: UUID, position: int) -> bytes:
    """The salt of the commitment of the card at ``position`` (32 bytes)."""
    return hmac.new(seed, HIDDEN_ID + shoe_id.bytes + _position(position), hashlib.sha256).digest()


def card_commitment(salt: bytes, position: int, code: str) -> str:
    """SHA-256 over the salt, the position and the card's code, hex."""
    body = HIDDEN_ID + salt + _position(position) + code.encode("ascii")
    return hashlib.sha256(body).hexdigest()


@dataclass(frozen=True, slots=True)
class HiddenCard:
    """A card dealt face down, as recorded: its position, its holder, its commitment."""

    position: int
    holder: str
    commitment: str

    def to_dict(self) -> dict[str, Any]:
        return {"position": self.position, "holder": self.holder, "commitment": self.commitment}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HiddenCard:
        return cls(int(data["position"]), str(data["holder"]), str(data["commitment"]))


@dataclass(frozen=True, slots=True)
class ShownCard:
    """A face-down card shown: its position, holder, face and the salt of its commitment."""

    position: int
    holder: str
    code: str
    salt: str  # hex

    def to_dict(self) -> dict[str, Any]:
        return {"position": self.position, "holder": self.holder, "code": self.code,
                "salt": self.salt}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ShownCard:
        return cls(int(data["position"]), str(data["holder"]), str(data["code"]),
                   str(data["salt"]))


def check_shown(shown: ShownCard, hidden: HiddenCard) -> bool:
    """Whether a shown card is the one committed at the deal (same position and holder, and
    the commitment opens with its salt and face). Needs no seed."""
    if shown.position != hidden.position or shown.holder != hidden.holder:
        return False
    try:
        salt = bytes.fromhex(shown.salt)
    except ValueError:
        return False
    expected = card_commitment(salt, shown.position, shown.code)
    return hmac.compare_digest(expected, hidden.commitment)


def shoe_order(seed: bytes, shoe_id: UUID, deck_kind: str, decks: int,
               cut_position: int | None) -> tuple[Card, ...]:
    """The cards in dealing order (SABOT-SHUFFLE-1, then the cut if any)."""
    return load_sabot(seed, shoe_id, DeckKind(deck_kind), decks, cut_position).cards


def check_against_seed(seed: bytes, shoe_id: UUID, deck_kind: str, decks: int,
                       cut_position: int | None, shown: Iterable[ShownCard],
                       hidden: Iterable[HiddenCard] = ()) -> list[str]:
    """Every disagreement between what was recorded and what the seed deals: a shown face or
    salt that is not the seed's, a commitment that is not the seed's, each naming its position
    (empty: all agree)."""
    cards = shoe_order(seed, shoe_id, deck_kind, decks, cut_position)
    problems: list[str] = []
    for s in shown:
        if not 0 <= s.position < len(cards):
            problems.append(f"position {s.position}: outside the shoe of {len(cards)} cards")
            continue
        if cards[s.position].code != s.code:
            problems.append(f"position {s.position}: shown {s.code}, the seed deals "
                            f"{cards[s.position].code}")
        if card_salt(seed, shoe_id, s.position).hex() != s.salt:
            problems.append(f"position {s.position}: the salt is not the seed's")
    for h in hidden:
        if not 0 <= h.position < len(cards):
            problems.append(f"position {h.position}: outside the shoe of {len(cards)} cards")
            continue
        salt = card_salt(seed, shoe_id, h.position)
        if card_commitment(salt, h.position, cards[h.position].code) != h.commitment:
            problems.append(f"position {h.position}: the commitment is not the seed's card")
    return problems


class SealedShoe(Protocol):
    """What ``Faces`` reads of a shoe (``services.ledger.shoe.Shoe`` has it)."""

    @property
    def id(self) -> UUID: ...

    sealed_seed: str
    deck_kind: str
    decks: int
    cut_position: int | None


class Faces:
    """The ledger's private access to the faces of its shoes, from their sealed seeds. Never
    hand what it answers to anyone but the ledger's rules, the showdown, or the holder."""

    def __init__(self, seal_key: bytes) -> None:
        self._key = seal_key
        self._orders: dict[tuple[UUID, str, int | None], tuple[bytes, tuple[Card, ...]]] = {}

    def _open(self, shoe: SealedShoe) -> tuple[bytes, tuple[Card, ...]]:
        key = (shoe.id, shoe.sealed_seed, shoe.cut_position)
        found = self._orders.get(key)
        if found is None:
            seed = unseal(self._key, shoe.sealed_seed, shoe.id)
            found = (seed, shoe_order(seed, shoe.id, shoe.deck_kind, shoe.decks,
                                      shoe.cut_position))
            if len(self._orders) >= _CACHE:
                self._orders.clear()
            self._orders[key] = found
        return found

    def order(self, shoe: SealedShoe) -> tuple[Card, ...]:
        """Every card in dealing order (for the rules: a total, a bust, the showdown)."""
        return self._open(shoe)[1]

    def card(self, shoe: SealedShoe, position: int) -> Card:
        cards = self.order(shoe)
        if not isinstance(position, int) or not 0 <= position < len(cards):
            raise FailedPrecondition("shoe", "SHOE_EXHAUSTED", f"no card at position {position}")
        return cards[position]

    def hide(self, shoe: SealedShoe, position: int, holder: str) -> HiddenCard:
        """The record of the card at ``position`` dealt face down to ``holder``."""
        seed, _ = self._open(shoe)
        code = self.card(shoe, position).code
        salt = card_salt(seed, shoe.id, position)
        return HiddenCard(position, holder, card_commitment(salt, position, code))

    def show(self, shoe: SealedShoe, hidden: HiddenCard) -> ShownCard:
        """The face of a hidden card, with its proof, for the showdown's event."""
        seed, _ = self._open(shoe)
        code = self.card(shoe, hidden.position).code
        return ShownCard(hidden.position, hidden.holder, code,
                         card_salt(seed, shoe.id, hidden.position).hex())

    def for_holder(self, shoe: SealedShoe, cards: Iterable[HiddenCard], actor: Actor,
                   holder: str) -> tuple[ShownCard, ...]:
        """The faces of ``holder``'s face-down cards, for ``holder`` himself: a player's actor
        bound to that account. Anyone else (another player, the croupier, the back office, an
        admin) is refused (PERMISSION_DENIED, field ``player``): until the showdown nobody but
        the holder learns a face-down card (the regulator opens the escrow himself)."""
        if not (actor.is_player and actor.account == holder):
            raise PermissionDenied(
                "player", "NOT_YOUR_HAND", "a face-down card is shown to its holder only"
            )
        return tuple(self.show(shoe, c) for c in cards if c.holder == holder)


# --- the views' filter ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Slot:
    """One card of a hand as views carry it: its position, whether it was dealt face down,
    its face (``None`` while face down and not shown) and, for a face-down card, its
    commitment."""

    position: int
    holder: str
    face_down: bool
    code: str | None
    commitment: str = ""

    @property
    def hidden(self) -> bool:
        return self.face_down and self.code is None


def hidden_slot(card: HiddenCard) -> Slot:
    return Slot(card.position, card.holder, True, None, card.commitment)


def face_up_slot(position: int, holder: str, code: str) -> Slot:
    return Slot(position, holder, False, code)


def public_slots(slots: Sequence[Slot], shown: Iterable[ShownCard] = ()) -> tuple[Slot, ...]:
    """The slots everyone may see: face-down cards by position only, unless shown (``shown``:
    the showdown's records)."""
    faces = {s.position: s.code for s in shown}
    out: list[Slot] = []
    for slot in slots:
        if slot.face_down:
            slot = replace(slot, code=faces.get(slot.position))
        out.append(slot)
    return tuple(out)


def slots_for(slots: Sequence[Slot], own: Iterable[ShownCard]) -> tuple[Slot, ...]:
    """The holder's own view: ``public_slots`` with his faces (from ``Faces.for_holder``)."""
    mine = list(own)
    holders = {s.holder for s in mine}
    if len(holders) > 1:
        raise ValueError("the faces of one holder only")
    faces = {s.position: s.code for s in mine}
    return tuple(
        replace(s, code=faces[s.position])
        if s.face_down and s.position in faces and s.holder in holders else s
        for s in slots
    )


def assert_public(slots: Iterable[Slot], shown: Iterable[ShownCard] = ()) -> None:
    """Refuse a view that would name a face-down card not shown (a guard for views)."""
    open_positions = {s.position for s in shown}
    for slot in slots:
        if slot.face_down and slot.code is not None and slot.position not in open_positions:
            raise AssertionError(f"face-down card at position {slot.position} in a public view")
