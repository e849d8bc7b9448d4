"""Settlement of a coup: what each stake becomes and the ordered money movements.

Order (RULES.md, seed 000): what the house takes (collections, partage, prison losses) before
what it gives (returns, payments); within each, Couleur/Inverse before Rouge/Noir; then layout
order. The movements of a coup sum to zero between players and the house.

API CONTRACT (implementation owned by the domain helper; keep these names and signatures).
"""

from __future__ import annotations

from domain.layout import Layout, Step
from domain.outcome import Outcome
from domain.rules import HouseRules


def settle(rules: HouseRules, layout: Layout, outcome: Outcome) -> Step:
    """Settle every stake on the layout against the outcome; insurance ends with the coup."""
    raise NotImplementedError
