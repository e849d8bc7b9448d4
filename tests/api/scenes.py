"""Shoes whose deal the rules tests need, found once by search and pinned here: a seed, a shoe
id and a cut fix the order of the cards (SHUFFLE.md), so each scene's outcomes are known in
advance; ``outcomes`` recomputes them, and each test asserts them before relying on them."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from domain.cards import DeckKind
from domain.shuffle import load_sabot
from domain.trente_et_quarante.deal import CoupDeal, deal_shoe
from domain.trente_et_quarante.outcome import Outcome, judge
from domain.trente_et_quarante.rules import CutCardRule

from .conftest import SEED as API_SEED  # the seed of every shoe the test server shuffles


@dataclass(frozen=True)
class Scene:
    seed: bytes
    shoe_id: UUID
    cut: int
    decks: int
    cut_card: CutCardRule = CutCardRule.VOID_COUP

    def deals(self) -> tuple[CoupDeal, ...]:
        cards = load_sabot(self.seed, self.shoe_id, DeckKind.FRENCH_52, self.decks, self.cut)
        return deal_shoe(cards.cards, self.cut_card)

    def outcomes(self) -> list[Outcome]:
        return [judge(d) for d in self.deals()]

    def pattern(self) -> str:
        """One letter a coup: ``A`` a refait at 31, ``.`` void (a refait at 32..40, or
        unfinished), ``d`` decided."""
        return "".join("A" if o.is_refait31 else "d" if o.decided else "."
                       for o in self.outcomes())


def _id(n: int) -> UUID:
    return UUID(int=(1 << 64) + n)  # far from the ids the ledgers' tests generate


# The API's tests (its server's seed)
API_TWIN_31 = Scene(API_SEED, _id(14), 73, 6)  # coups 1 and 2: refaits at 31
API_FIRST_31 = Scene(API_SEED, _id(4), 12, 1)  # one deck; coup 1: a refait at 31
API_SHORT = Scene(API_SEED, _id(1), 3, 1, CutCardRule.FINISH_COUP)  # "dddd."
