"""Fixtures of the rule book's tests: the SHUFFLE.md vectors and hand-built sabots."""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

import pytest

from domain.cards import Card, DeckKind, card_from_code
from domain.shuffle import Sabot, load_sabot

VECTOR1_SEED = bytes(range(32))
VECTOR1_SHOE = UUID("00000000-0000-0000-0000-000000000001")
VECTOR2_SEED = bytes.fromhex("2681de5d9808d4aac823a5a53ba27f2843cfbacbd0cbaa839f27ef876c6ef52a")
VECTOR2_SHOE = UUID("6f1c2a0e-5d4b-4c3a-9e8f-7a6b5c4d3e2f")


@pytest.fixture(scope="session")
def vector1() -> Sabot:
    return load_sabot(VECTOR1_SEED, VECTOR1_SHOE, DeckKind.FRENCH_52, 6, 100)


@pytest.fixture(scope="session")
def vector2() -> Sabot:
    return load_sabot(VECTOR2_SEED, VECTOR2_SHOE, DeckKind.FRENCH_52, 1, 26)


@pytest.fixture
def cards() -> Callable[[str], tuple[Card, ...]]:
    """``cards("6H 8D 7S")``: a hand-built sabot from card codes."""

    def build(codes: str) -> tuple[Card, ...]:
        return tuple(card_from_code(code) for code in codes.split())

    return build
