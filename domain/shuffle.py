"""SABOT-SHUFFLE-1, the published shuffle (SHUFFLE.md): commitment, Fisher–Yates, cut, digest."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from domain.cards import Card, DeckKind, canonical_shoe
from domain.drbg import HmacDrbg
from domain.errors import InvalidArgument

ALGORITHM_ID = "SABOT-SHUFFLE-1"
_PERSONALIZATION = ALGORITHM_ID.encode("ascii")
SEED_BYTES = 32


def check_seed(seed: bytes, field: str = "seed") -> None:
    if len(seed) != SEED_BYTES:
        raise InvalidArgument(field, "BAD_SEED", f"must be {SEED_BYTES} bytes, got {len(seed)}")


def parse_seed(text: str, field: str = "seed") -> bytes:
    try:
        seed = bytes.fromhex(text)
    except ValueError:
        raise InvalidArgument(field, "BAD_SEED", "must be hexadecimal") from None
    check_seed(seed, field)
    return seed


def commitment(seed: bytes, shoe_id: UUID) -> str:
    """SHA-256(b"SABOT-SHUFFLE-1" || shoe_id.bytes || seed), lower-case hex."""
    check_seed(seed)
    return hashlib.sha256(_PERSONALIZATION + shoe_id.bytes + seed).hexdigest()


def shuffle(seed: bytes, shoe_id: UUID, kind: DeckKind, decks: int) -> tuple[Card, ...]:
    """The shoe before the cut: Durstenfeld's Fisher–Yates over the canonical shoe."""
    check_seed(seed)
    cards = list(canonical_shoe(kind, decks))
    drbg = HmacDrbg(seed, shoe_id.bytes, _PERSONALIZATION)
    top = len(cards) - 1
    # for i from top down to 1: j = drbg.uniform(i + 1), the draws taken in one stream
    for i, j in zip(range(top, 0, -1), drbg.uniforms(range(top + 1, 1, -1)), strict=True):
        cards[i], cards[j] = cards[j], cards[i]
    return tuple(cards)


def check_cut(position: int, shoe_size: int, field: str = "cut") -> None:
    if not 1 <= position <= shoe_size - 1:
        raise InvalidArgument(
            field, "OUT_OF_RANGE", f"cut must be 1 to {shoe_size - 1}, got {position}"
        )


def cut(cards: Sequence[Card], position: int) -> tuple[Card, ...]:
    """The shoe after a cut at ``position``: ``a[c:] + a[:c]``."""
    check_cut(position, len(cards))
    return tuple(cards[position:]) + tuple(cards[:position])


def order_digest(cards: Sequence[Card]) -> str:
    """SHA-256 of the card codes joined by single spaces, lower-case hex."""
    return hashlib.sha256(" ".join(c.code for c in cards).encode("ascii")).hexdigest()


@dataclass(frozen=True, slots=True)
class Sabot:
    """A shuffled and cut shoe, as loaded in the sabot: the cards in dealing order."""

    shoe_id: UUID
    kind: DeckKind
    decks: int
    cut_position: int | None
    cards: tuple[Card, ...]

    @property
    def size(self) -> int:
        return len(self.cards)


def load_sabot(
    seed: bytes, shoe_id: UUID, kind: DeckKind, decks: int, cut_position: int | None
) -> Sabot:
    """Shuffle, then cut (``None``: no cut), exactly as a regulator would rebuild the shoe."""
    cards = shuffle(seed, shoe_id, kind, decks)
    if cut_position is not None:
        cards = cut(cards, cut_position)
    return Sabot(shoe_id, kind, decks, cut_position, cards)
